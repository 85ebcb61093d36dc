// lmscope-sample: the next token's distribution, processor by processor, as HF's sampling
// chain builds it (repetition penalty, temperature, top-k, top-p, min-p); a temperature sweep;
// and many seeded draws of the sampler against the probabilities it claims (docs/sampling.md).
//
// One command line (a backslash at the end of a // comment would continue the comment):
//   lmscope-sample --model models/SmolLM2-135M-Instruct.Q4_1.gguf --chat --prompt "What is the capital of France?"
//       --temperature 0.7 --top-k 50 --top-p 0.9 --sweep 0.2,0.7,1.0,1.5 --draws 1000 --seed 1
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runs/run.h"
#include "generate/batch.h"
#include "generate/distribution.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"
#include "tools/sampling_args.h"

using namespace lmscope;

namespace {

std::vector<float> parse_sweep(const std::string& s) {
  std::vector<float> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !(v > 0) || !std::isfinite(v) || v > 1e30)
      throw std::invalid_argument("--sweep: '" + item + "' is not a temperature > 0 (give e.g. 0.2,0.7,1.0,1.5)");
    out.push_back(float(v));
  }
  if (out.empty()) throw std::invalid_argument("--sweep: no temperature given");
  return out;
}

std::string bar(double p) { return std::string(size_t(std::lround(p * 40)), '#'); }

const char* stage_title(const std::string& name) {
  if (name == "raw") return "raw softmax";
  if (name == "repetition_penalty") return "repetition penalty";
  if (name == "top_k") return "top-k";
  if (name == "top_p") return "top-p";
  if (name == "min_p") return "min-p";
  return "temperature";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-sample: the next token's distribution after each sampling processor, a temperature sweep, "
               "and seeded draws against the probabilities"};
  cli::ModelArgs margs;
  margs.add_to(app);
  SamplingConfig sc;
  sc.do_sample = true;   // the warpers run only when sampling (HF): this tool shows sampling
  cli::add_sampling_options(app, sc, /*with_do_sample=*/false);
  int top = 10;
  int64_t draws = 0;
  std::string sweep;
  bool json = false;
  app.add_option("--top", top, "entries shown per stage")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--sweep", sweep, "temperatures to compare, e.g. 0.2,0.7,1.0,1.5 (the other settings kept)");
  // Each draw reads the whole vocabulary: 10^8 draws took 38 min on SmolLM2 with no output.
  app.add_option("--draws", draws, "draw this many tokens from the final distribution (with --seed), at most 1000000")
      ->check(CLI::Range(int64_t(1), int64_t(1000000)));
  app.add_flag("--json", json, "print one JSON object (for plots)");
  if (auto code = cli::parse(app, argc, argv, "lmscope-sample")) return *code;
  if (auto code = cli::check_sampling("lmscope-sample", sc)) return *code;
  std::vector<float> temps;
  if (!sweep.empty() || app.count("--sweep")) try {
      temps = parse_sweep(sweep);
    } catch (const std::invalid_argument& e) {
      return cli::usage_error("lmscope-sample", e.what());
    }
  if (margs.prompts.size() + margs.prompt_ids.size() != 1)
    return cli::usage_error("lmscope-sample", "give exactly one prompt (--prompt or --prompt-ids)");

  return cli::run_tool("lmscope-sample", [&] {
    auto tm = cli::load_tool_model(margs, argc, argv);
    const std::vector<int32_t>& prompt = tm->prompts[0];
    const Batch batch = Batch::from_prompts({prompt}, PaddingSide::Left, tm->special.pad_id);
    const StepInput in{batch.ids_tensor(), batch.position_ids(), batch.mask_tensor()};
    const Tensor logits = tm->decoder->forward(in, nullptr, nullptr, LogitsFor::LastPosition);   // [1,1,V]
    const int64_t V = logits.dim(2);
    const std::span<const float> raw(logits.f32(), size_t(V));

    const ScoreStages stages = process_scores(raw, prompt, sc);
    const std::vector<StageSummary> sums = summarize_stages(stages, sc, top);
    const int32_t greedy = argmax(stages.penalized);   // HF do_sample=False: argmax after the penalty
    std::vector<SweepPoint> sw;
    if (!temps.empty()) sw = temperature_sweep(raw, prompt, sc, temps);
    DrawCheck dc;
    if (draws > 0) dc = check_draws(stages.final_scores(), sc, draws);
    const std::vector<double> final_p = softmax(stages.final_scores());

    const tok::Tokenizer* t = tm->tokenizer ? &*tm->tokenizer : nullptr;
    const PieceFn text = cli::piece_fn(t);
    auto quoted = [&](int32_t id) { return quoted_piece(text(id), 0); };   // a leading space shows

    if (json) {
      using J = nlohmann::ordered_json;
      J j;
      j["model"] = margs.model;
      j["prompt"] = tm->prompt_texts[0];
      j["prompt_ids"] = prompt;
      j["settings"] = {{"temperature", sc.temperature}, {"top_k", sc.top_k},
                       {"top_p", sc.top_p},             {"min_p", sc.min_p},
                       {"repetition_penalty", sc.repetition_penalty}};
      j["greedy"] = {{"id", greedy}, {"text", text(greedy)}};
      for (const StageSummary& s : sums) {
        J st = {{"stage", s.name},        {"setting", s.setting},     {"active", s.active},
                {"entropy_bits", json_num(s.entropy_bits)}, {"survivors", s.survivors}, {"kept_mass", json_num(s.kept_mass)}};
        st["top"] = J::array();
        for (const Entry& e : s.top) st["top"].push_back({{"id", e.id}, {"text", text(e.id)}, {"p", e.p}});
        j["stages"].push_back(st);
      }
      for (const SweepPoint& p : sw)
        j["sweep"].push_back({{"temperature", p.temperature}, {"entropy_bits", json_num(p.entropy_bits)},
                              {"survivors", p.survivors}, {"best", {{"id", p.best.id}, {"text", text(p.best.id)}, {"p", p.best.p}}}});
      if (draws > 0) {
        J d = {{"n", dc.n}, {"seed", dc.seed}, {"chi2", dc.chi2}, {"dof", dc.dof}, {"p_value", json_num(dc.p_value)},
               {"max_deviation", dc.max_deviation}, {"pooled_ids", dc.pooled_ids}};
        d["counts"] = J::array();
        for (int64_t i = 0; i < V; ++i)
          if (dc.counts[size_t(i)] > 0 || final_p[size_t(i)] > 0)
            d["counts"].push_back({{"id", i}, {"text", text(int32_t(i))}, {"count", dc.counts[size_t(i)]}, {"p", final_p[size_t(i)]}});
        j["draws"] = d;
      }
      std::cout << j.dump() << "\n";
      return 0;
    }

    std::printf("prompt: %s (%zu tokens)\n", tm->prompt_texts[0].empty() ? cli::join_ids(prompt).c_str()
                                                                         : tm->prompt_texts[0].c_str(), prompt.size());
    std::printf("next token, vocabulary %lld; greedy (do_sample=False) picks %s (id %d)\n\n", (long long)V,
                quoted(greedy).c_str(), greedy);
    for (size_t i = 0; i < sums.size(); ++i) {
      const StageSummary& s = sums[i];
      const std::string setting = s.setting.empty() ? "" : s.setting == "off" ? " (off)" : " " + s.setting;
      std::printf("%zu. %s%s: entropy %s bits, %lld survivors, kept mass %s\n", i + 1, stage_title(s.name),
                  setting.c_str(), fmt_num(s.entropy_bits).c_str(),
                  (long long)s.survivors, fmt_num(s.kept_mass).c_str());
      if (!s.active && i > 0) {
        std::printf("   (off: as above)\n");
        continue;
      }
      for (const Entry& e : s.top)
        std::printf("   %-16s %6d  %.4f %s\n", quoted(e.id).c_str(), e.id, e.p, bar(e.p).c_str());
    }
    if (!sw.empty()) {
      std::printf("\ntemperature sweep (other settings as above):\n   T       entropy  survivors  best token        p\n");
      for (const SweepPoint& p : sw)
        std::printf("   %-7g %-8s %-10lld %-16s %.4f\n", p.temperature, fmt_num(p.entropy_bits).c_str(),
                    (long long)p.survivors, quoted(p.best.id).c_str(), p.best.p);
    }
    if (draws > 0) {
      std::printf("\n%lld draws, seed %llu, from the final distribution:\n   %-16s %6s  %7s %9s  %s\n", (long long)dc.n,
                  (unsigned long long)dc.seed, "token", "id", "drawn", "expected", "drawn share");
      for (const Entry& e : top_entries(final_p, top)) {
        const int64_t c = dc.counts[size_t(e.id)];
        std::printf("   %-16s %6d  %7lld %9.1f  %s\n", quoted(e.id).c_str(), e.id, (long long)c, e.p * double(dc.n),
                    bar(double(c) / double(dc.n)).c_str());
      }
      if (dc.dof > 0)
        std::printf("chi-square %s, dof %d, p-value %s (%lld tokens with expected count < 5 pooled); max |freq - p| %s\n",
                    fmt_num(dc.chi2).c_str(), dc.dof, fmt_num(dc.p_value).c_str(), (long long)dc.pooled_ids,
                    fmt_num(dc.max_deviation).c_str());
      else
        std::printf("one bin (a single survivor): no chi-square; max |freq - p| %s\n", fmt_num(dc.max_deviation).c_str());
    }
    return 0;
  });
}
