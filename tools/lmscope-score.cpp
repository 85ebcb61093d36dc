// lmscope-score: how surprised is the model by a text? One forward over the text (teacher
// forcing), then per token its probability given the prefix, its NLL, the model's own top
// choice there, and the mean loss and perplexity exactly as HF's model(ids, labels=ids).loss
// (docs/score.md).
//
//   lmscope-score --model models/SmolLM2-135M-Instruct.Q4_1.gguf --text "The capital of France is Paris."
//   lmscope-score --model golden/models/tiny-qwen2 --ids 330,749,537 --ids 42,308 --json
//   lmscope-score --model ... --text "..." --intervene 'layers.17.attn.z[head=3]=zero'   (the same
//   forward with an edit: docs/interventions.md)
//   lmscope-score --model ... --data corpus.jsonl [--field text] [--per-doc docs.jsonl]   (loss over a
//   corpus, read by lmscope-collect's reader: docs/score.md "Over a corpus")
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <climits>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "generate/score.h"
#include "generate/score_corpus.h"
#include "intervene/record.h"
#include "io/format_number.h"
#include "io/output_target.h"
#include "io/text_file.h"
#include "runs/run.h"
#include "tokenizer/chat.h"
#include "tokenizer/corpus.h"
#include "tools/cli_common.h"
#include "tools/intervention_args.h"
#include "tools/model_args.h"

using namespace lmscope;

namespace {

// "A:B" -> {A, B}; "A:" -> {A, max}; ":B" -> {1, B}. Positions are decimal digits.
std::pair<int64_t, int64_t> parse_range(const std::string& spec) {
  const size_t colon = spec.find(':');
  auto num = [&](const std::string& part, int64_t dflt) -> int64_t {
    if (part.empty()) return dflt;
    if (part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("--range '" + spec + "': '" + part + "' is not a position (expected e.g. 24:26)");
    return std::stoll(part);
  };
  if (colon == std::string::npos || spec == ":")
    throw std::runtime_error("--range '" + spec + "': expected A:B, A: or :B (positions, e.g. 24:26)");
  const int64_t from = num(spec.substr(0, colon), 1), to = num(spec.substr(colon + 1), INT64_MAX);
  if (from > to) throw std::runtime_error("--range '" + spec + "': the start is after the end");
  return {from, to};
}

struct CorpusArgs {
  std::string data, format = "auto", field = "text", per_doc;
  int batch = 8;
  bool quiet = false;
};

// A progress line on stderr: in place on a terminal, else a line every tenth of the corpus.
struct CorpusProgress {
  int64_t docs = 0, tokens = 0;   // the corpus's totals (predicted tokens)
  bool tty = ::isatty(2) != 0;
  int64_t next_line = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void operator()(int64_t docs_done, int64_t tokens_done) {
    if (!tty && docs_done < next_line && docs_done < docs) return;
    next_line = docs_done + std::max<int64_t>(1, docs / 10);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = double(tokens_done) / std::max(elapsed, 1e-9);
    std::fprintf(stderr, "%sscore: %lld/%lld documents, %lld/%lld tokens, %.0f tok/s, ETA %.0f s%s", tty ? "\r" : "",
                 (long long)docs_done, (long long)docs, (long long)tokens_done, (long long)tokens, rate,
                 double(tokens - tokens_done) / std::max(rate, 1e-9), tty ? "   " : "\n");
    if (tty && docs_done == docs) std::fprintf(stderr, "\n");
  }
};

// --data: the corpus's documents as the tools encode a --text (BOS, or the chat template),
// then score_corpus.
int score_data(cli::ToolModel& tm, const cli::ModelArgs& margs, const CorpusArgs& ca, const cli::InterventionArgs& iargs,
               bool json) {
  const ModelConfig& cfg = tm.loaded.cfg;
  const Corpus corpus = read_corpus(ca.data, corpus_kind(ca.data, ca.format), ca.field, cfg.vocab_size);
  if (corpus.documents[0].ids.empty() && !tm.tokenizer)
    throw std::runtime_error(ca.data + ": a text corpus needs the model's tokenizer; none beside '" + margs.model + "'");
  std::vector<std::vector<int32_t>> docs;
  std::vector<int64_t> ids;
  int64_t one_token = 0, tokens = 0;
  for (const CorpusDocument& d : corpus.documents) {
    std::vector<int32_t> t = d.ids;
    if (t.empty()) {
      t = margs.chat ? tm.tokenizer->encode(tok::format_chat(*tm.tokenizer, {tok::ChatMessage{"user", d.text}}, true,
                                                             tok::parse_chat_format(margs.chat_format)),
                                            false)
                     : tm.tokenizer->encode(d.text, true);
    }
    const std::string where = ca.data + ":" + std::to_string(d.doc + 1);
    if (cfg.max_position_embeddings > 0 && int64_t(t.size()) > cfg.max_position_embeddings)
      throw std::runtime_error(where + ": " + std::to_string(t.size()) + " tokens, more than the model's " +
                               std::to_string(cfg.max_position_embeddings) + " positions (split the document)");
    if (t.size() < 2) {   // nothing to predict: no label, as in HF's loss
      ++one_token;
      continue;
    }
    tokens += int64_t(t.size()) - 1;
    docs.push_back(std::move(t));
    ids.push_back(d.doc);
  }
  if (docs.empty()) throw std::runtime_error(ca.data + ": no document has two tokens: nothing to predict");
  if (!ca.per_doc.empty()) require_output_target(ca.per_doc);
  const std::unique_ptr<Interventions> interventions = iargs.build(cfg);
  CorpusProgress progress;
  progress.docs = int64_t(docs.size());
  progress.tokens = tokens;
  CorpusProgressFn on_batch;
  if (!ca.quiet) on_batch = std::ref(progress);
  const CorpusScore s = score_corpus(*tm.decoder, docs, ids, tm.special.pad_id, ca.batch, interventions.get(), on_batch);

  if (!ca.per_doc.empty()) {
    std::string lines;
    for (const DocumentScore& d : s.docs) {
      nlohmann::ordered_json j;
      j["doc"] = d.doc;
      j["predicted"] = d.predicted;
      j["nll_sum"] = d.nll_sum;
      j["loss"] = d.nll_sum / double(d.predicted);
      if (s.edited) {
        j["nll_sum_intervened"] = d.nll_sum_edited;   // summed as the corpus's loss is (sweep.py)
        j["loss_intervened"] = d.nll_sum_edited / double(d.predicted);
        j["difference"] = (d.nll_sum_edited - d.nll_sum) / double(d.predicted);
      }
      lines += j.dump() + "\n";
    }
    write_file_atomic(ca.per_doc, lines);
  }
  if (json) {
    nlohmann::ordered_json j;
    j["corpus"] = ca.data;
    j["documents"] = s.docs.size();
    j["blank_lines"] = corpus.blank_lines;
    j["one_token_documents"] = one_token;
    j["predicted"] = s.predicted;
    j["loss"] = json_num(s.loss);
    j["perplexity"] = json_num(s.perplexity);
    if (s.edited) {
      j["interventions"] = nlohmann::ordered_json::parse(interventions->record_json());
      j["loss_intervened"] = json_num(s.loss_edited);
      j["perplexity_intervened"] = json_num(s.perplexity_edited);
      j["difference"] = json_num(s.loss_edited - s.loss);
    }
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::printf("corpus %s: %zu documents, %lld predicted tokens (skipped: %lld blank lines, %lld one-token documents)\n",
              ca.data.c_str(), s.docs.size(), (long long)s.predicted, (long long)corpus.blank_lines, (long long)one_token);
  std::printf("loss %s, perplexity %s\n", fmt("%.4f", s.loss).c_str(), fmt("%.2f", s.perplexity).c_str());
  if (s.edited) {
    std::printf("%s\n", interventions_line(interventions->record_json()).c_str());
    std::printf("intervened: loss %s, perplexity %s, difference %s\n", fmt("%.4f", s.loss_edited).c_str(),
                fmt("%.2f", s.perplexity_edited).c_str(), fmt("%+.4f", s.loss_edited - s.loss).c_str());
  }
  if (!ca.per_doc.empty()) std::printf("wrote %s\n", ca.per_doc.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-score: per-token probability, NLL, loss and perplexity of a text under the model"};
  cli::ModelArgs margs;
  margs.add_to(app);
  // The shared model options (--model, --chat, --chat-format, --pad-id, --backend, --dtype)
  // stay; here the input is named for what it is: text to score, not a prompt to continue.
  app.remove_option(app.get_option("--prompt"));
  app.remove_option(app.get_option("--prompt-ids"));
  app.add_option("--text", margs.prompts,
                 "a text to score, encoded by the model's tokenizer with its default special tokens "
                 "(repeat for a batch)");
  app.add_option("--ids", margs.prompt_ids, "a text as token ids, e.g. 1,2,3 (repeat for a batch)");
  app.get_option("--chat")->description("wrap each --text as a user message in the chat template");
  std::vector<std::string> range_specs;
  app.add_option("--range", range_specs,
                 "also summarize positions A..B of each text (A:B, inclusive; A: or :B open-ended): count, "
                 "mean NLL, perplexity, mean p, top choice right (repeat for more ranges)");
  bool json = false;
  app.add_flag("--json", json, "print one JSON object: per-token rows and the summary");
  cli::InterventionArgs iargs;   // the score of an intervened forward (docs/interventions.md)
  iargs.add_to(app);
  CorpusArgs ca;
  app.add_option("--data", ca.data,
                 "score a corpus, one document a line (text, JSONL or ids, as lmscope-collect reads it): loss and "
                 "perplexity over every predicted token; with --intervene, clean and intervened");
  app.add_option("--format", ca.format, "--data: auto (by the file name), text, jsonl or ids")->capture_default_str();
  app.add_option("--field", ca.field, "--data: the JSONL field holding the text")->capture_default_str();
  app.add_option("--batch", ca.batch, "--data: documents per forward")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--per-doc", ca.per_doc, "--data: write each document's loss as JSONL to this file")->check(cli::output_path());
  app.add_flag("-q,--quiet", ca.quiet, "--data: no progress line");
  if (auto code = cli::parse(app, argc, argv, "lmscope-score")) return *code;
  if (!ca.data.empty() && (!margs.prompts.empty() || !margs.prompt_ids.empty() || !range_specs.empty()))
    return cli::usage_error("lmscope-score", "--data scores a corpus: no --text, --ids or --range beside it");
  if (ca.data.empty() && !ca.per_doc.empty()) return cli::usage_error("lmscope-score", "--per-doc needs --data");
  std::vector<std::pair<int64_t, int64_t>> ranges;
  try {
    for (const std::string& s : range_specs) ranges.push_back(parse_range(s));
    iargs.parse();
  } catch (const std::exception& e) {
    return cli::usage_error("lmscope-score", e.what());
  }

  return cli::run_tool("lmscope-score", [&] {
    if (!ca.data.empty()) {
      cli::ModelArgs load_args = margs;
      load_args.chat = false;   // --chat wraps the corpus's documents (score_data), not --prompt
      auto tm = cli::load_tool_model(load_args, argc, argv, false);
      return score_data(*tm, margs, ca, iargs, json);
    }
    // Input errors that need no model, named by this tool's options.
    if (margs.prompts.empty() && margs.prompt_ids.empty()) throw std::runtime_error("nothing to score: give --text or --ids");
    for (const std::string& t : margs.prompts)
      if (t.empty()) throw std::runtime_error("--text is empty: nothing to score");
    for (const std::string& s : margs.prompt_ids) cli::parse_ids(s, "--ids");
    if (margs.chat && margs.prompts.empty()) throw std::runtime_error("--chat wraps --text; no --text given");

    auto tm = cli::load_tool_model(margs, argc, argv);
    // Rows come in load_tool_model's order: every --ids, then every --text.
    std::vector<std::string> texts(margs.prompt_ids.size());
    texts.insert(texts.end(), margs.prompts.begin(), margs.prompts.end());
    const std::unique_ptr<Interventions> interventions = iargs.build(tm->loaded.cfg);
    if (interventions && !json) std::cout << interventions_line(interventions->record_json()) << "\n";
    ScoreResult r = score_rows(*tm->decoder, tm->prompts, tm->special.pad_id, interventions.get());
    if (interventions) r.interventions_json = interventions->record_json();

    const PieceFn piece = cli::piece_fn(tm->tokenizer ? &*tm->tokenizer : nullptr);
    std::vector<RangeSummary> sums;
    for (const auto& [from, to] : ranges)
      for (size_t b = 0; b < r.rows.size(); ++b) sums.push_back(summarize_range(r, int64_t(b), from, to));
    std::cout << (json ? score_report_json(r, texts, piece, sums) + "\n" : score_report_text(r, texts, piece, sums));
    return 0;
  });
}
