// lmscope-step: walk a stored trace page by page in the terminal, as lmscope-trace --step walks
// a live run, without loading or running the model (stepper/step_replay.h).
//
//   lmscope-trace --model golden/models/tiny-qwen2 --prompt-ids 42,308,333,746,3 --max-new-tokens 2 --out t.h5
//   lmscope-step t.h5
#include <CLI/CLI.hpp>
#include <cstdio>
#include <tuple>
#include <filesystem>
#include <unistd.h>

#include "stepper/step_replay.h"
#include "stepper/stepper.h"
#include "intervene/record.h"
#include "trace/trace_reader.h"
#include "tools/cli_common.h"
#include "tools/contained.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-step: walk a trace's stored hooks page by page, without running the model"};
  std::string trace_path, model;
  int row = 0;
  app.add_option("trace", trace_path, "trace file written by lmscope-trace or lmscope-hf-trace")->required();
  app.add_option("--model", model,
                 "where the tokenizer is read from, for token text (default: the trace's model_path when it "
                 "exists; without one tokens show as #id)");
  app.add_option("--row", row, "the batch row whose layers are drawn")->capture_default_str();
  if (auto code = cli::parse(app, argc, argv, "lmscope-step")) return *code;

  // A crash inside libhdf5 on a damaged trace: one line from the parent (tools/contained.h).
  return cli::run_contained("lmscope-step", trace_path, 1, [&] {
    TraceReader tr(trace_path);
    const ModelConfig cfg = trace_model_config(tr);
    const int rows = trace_rows(tr);
    if (row < 0 || row >= rows)
      throw std::runtime_error("--row " + std::to_string(row) + ": the trace has " + std::to_string(rows) + " row(s)");
    std::optional<tok::Tokenizer> tokenizer;
    const std::string tok_path = !model.empty() ? model : tr.has_root_attr("model_path") ? tr.root_attr_string("model_path") : "";
    std::error_code ec;
    if (!tok_path.empty() && std::filesystem::exists(tok_path, ec)) tokenizer = cli::load_tool_tokenizer(tok_path);
    else if (!model.empty()) throw std::runtime_error("--model '" + model + "': no such file or directory");

    StepperOptions so;
    so.interactive = ::isatty(0) && ::isatty(1);
    std::tie(so.screen_rows, so.screen_cols) = terminal_size(1);   // a screen when interactive and known
    so.row = row;
    so.sampling = trace_sampling(tr);
    if (tokenizer) {
      const tok::Tokenizer* tk = &*tokenizer;
      so.token_text = [tk](int32_t id) { return id >= 0 && id < tk->vocab_size() ? tk->token_display(id) : std::string(); };
    } else {
      const std::string where = tok_path.empty() ? "the trace names no model_path" : "no tokenizer at '" + tok_path + "'";
      std::fprintf(stderr, "lmscope-step: %s: tokens show as #id (give --model)\n", where.c_str());
    }
    so.intro_pages = trace_intro_pages(tr, so.token_text);
    if (const std::string iv = interventions_line(tr); !iv.empty()) so.intro_pages.insert(so.intro_pages.begin(), iv + "\n");
    Stepper stepper(cfg, so);
    try {
      replay_trace(tr, stepper);
    } catch (const StepperQuit&) {
      std::printf("\n(quit)\n");
      return 0;
    }
    if (tr.has_generated_ids()) {
      const HookData g = tr.generated_ids();
      const int64_t B = g.shape[0], N = g.shape[1];
      for (int64_t b = 0; b < B; ++b) {
        std::vector<int32_t> ids;
        for (int64_t n = 0; n < N; ++n) ids.push_back(int32_t(g.values[size_t(b * N + n)]));
        std::printf("row %lld: %s\n", (long long)b, cli::join_ids(ids).c_str());
      }
    }
    return 0;
  });
}
