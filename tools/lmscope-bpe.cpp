// lmscope-bpe: tokenize text and show every merge, word by word (docs/tokenizer.md).
//
//   lmscope-bpe --tokenizer golden/tokenizers/qwen-bpe "中华人民共和国成立于 1949 年。"
//   lmscope-bpe --tokenizer models/SmolLM2-135M-Instruct.Q4_1.gguf "What is 12345?"   (a GGUF's tokenizer)
//   lmscope-bpe --tokenizer models/gemma-3-270m-q4_k_m.gguf "emoji 🍕"   (SentencePiece: merges by score, byte fallback)
//   lmscope-bpe --tokenizer DIR --json --file prompt.txt
//   lmscope-bpe --tokenizer DIR --decode 104811,100000
//   lmscope-bpe --tokenizer DIR --chat --system "Be brief." "What is BPE?"
//   lmscope-bpe --tokenizer DIR --bench --file big.txt        (encode throughput, MB/s)
//   lmscope-bpe --train walkthroughs/data/zh-en-corpus.txt --merges 500 --watch 中华人民共和国 [--save tokenizer.json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/format_number.h"
#include "io/output_target.h"
#include "io/regular_file.h"
#include "io/text_file.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chat.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tools/cli_common.h"
#include "trace/trace_writer.h"

using namespace lmscope;

namespace {

std::string quoted(const std::string& readable) { return "\"" + readable + "\""; }

std::string shown_symbols(const std::vector<int32_t>& ids, const std::function<std::string(int32_t)>& bytes) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += quoted(utf8::readable(bytes(id)));
  }
  return out;
}

// Pieces that hold part of a character (a byte-level vocabulary without merges for a script):
// show them as the vocabulary strings they are and the text their bytes add up to.
void print_partial_pieces(const tok::Tokenizer& t, const WordTrace& wt) {
  std::string strings, bytes;
  bool partial = false;
  for (int32_t id : wt.ids) {
    const std::string b = t.token_bytes(id);
    partial |= utf8::invalid_offset(b) != std::string::npos;
    if (!strings.empty()) strings += ' ';
    strings += quoted(t.token_text(id));
    bytes += b;
  }
  if (!partial) return;
  std::printf("     vocabulary strings: %s\n", strings.c_str());
  const auto chars = std::count_if(bytes.begin(), bytes.end(), [](unsigned char c) { return (c & 0xC0) != 0x80; });
  std::printf("     their bytes add up to %s: %zu characters in %zu tokens\n", quoted(utf8::readable(bytes)).c_str(),
              size_t(chars), wt.ids.size());
}

// The human-readable walk through one encoding (columns: docs/tokenizer.md, "Reading the trace").
void print_trace(const tok::Tokenizer& t, const EncodeTrace& tr, bool steps) {
  auto bytes = [&t](int32_t id) { return t.token_bytes(id); };
  std::printf("text: %s (%zu bytes)\n", quoted(utf8::readable(tr.text)).c_str(), tr.text.size());
  for (size_t w = 0; w < tr.words.size(); ++w) {
    const WordTrace& wt = tr.words[w];
    std::printf("\n[%zu] %s", w, quoted(utf8::readable(wt.text)).c_str());
    if (wt.kind != WordTrace::Kind::Bpe) {
      std::printf("  %s token -> %d\n", wt.kind == WordTrace::Kind::Added ? "added" : "post-processor", wt.ids[0]);
      continue;
    }
    std::printf("  %zu symbols, %zu merges%s\n", wt.symbols.size(), wt.merges.size(),
                wt.whole_word ? " (whole word in the vocabulary: ignore_merges)" : "");
    std::printf("     symbols: %s\n", shown_symbols(wt.symbols, bytes).c_str());
    // SentencePiece: each character no token spells, and the byte tokens that stand for it.
    for (const std::string& c : wt.byte_fallback)
      std::printf("     byte fallback: %s is no token -> %s\n", quoted(utf8::readable(c)).c_str(),
                  tok::byte_token_names(c).c_str());
    std::vector<int32_t> now = wt.symbols;
    for (size_t m = 0; m < wt.merges.size(); ++m) {
      const MergeStep& ms = wt.merges[m];
      // BPE: the merge's rank in the merge list; SentencePiece: the merged token's score.
      const std::string chosen_by =
          tr.by_score ? "score " + fmt("%g", double(ms.score)) : "rank " + std::to_string(ms.rank);
      std::printf("     %3zu. %s + %s -> %s   %s, at %d\n", m + 1, quoted(t.token_display(ms.left)).c_str(),
                  quoted(t.token_display(ms.right)).c_str(), quoted(t.token_display(ms.merged)).c_str(),
                  chosen_by.c_str(), ms.position);
      if (!steps) continue;
      now[size_t(ms.position)] = ms.merged;
      now.erase(now.begin() + ms.position + 1);
      std::printf("          %s\n", shown_symbols(now, bytes).c_str());
    }
    std::string ids;
    for (int32_t id : wt.ids) ids += (ids.empty() ? "" : " | ") + std::to_string(id) + " " + quoted(t.token_display(id));
    std::printf("     => %s\n", ids.c_str());
    print_partial_pieces(t, wt);
  }
  std::printf("\n%zu ids: %s\n", tr.ids.size(), cli::join_ids(tr.ids).c_str());
}

// --train: learns `merges` merges, one line each (columns: docs/tokenizer.md, "Training").
int train(const std::string& corpus_path, int merges, const std::string& watch, bool steps, const std::string& save) {
  if (!save.empty()) require_output_target(save);   // before the training, not after it
  tok::BpeTrainer tr(read_regular_file(corpus_path, "--train"), corpus_path);
  auto bytes = [&tr](int32_t id) { return tr.token_bytes(id); };
  std::printf("corpus: %s, %zu lines, %lld words (%zu different)\n", corpus_path.c_str(), tr.lines(),
              (long long)tr.total_words(), tr.distinct_words());
  std::vector<std::vector<int32_t>> watched = tr.initial_symbols(watch);
  auto watched_line = [&] {
    std::string s;
    size_t n = 0;
    for (const auto& w : watched) {
      s += (s.empty() ? "" : " | ") + shown_symbols(w, bytes);
      n += w.size();
    }
    return s + "  (" + std::to_string(n) + (n == 1 ? " symbol)" : " symbols)");
  };
  if (!watch.empty()) std::printf("watch: %s\n", watched_line().c_str());
  std::printf("%5s %8s  %s\n", "rank", "count", "left + right -> merged  (the merged token's text)");
  int learned = 0;
  for (; learned < merges; ++learned) {
    std::optional<tok::LearnedMerge> m = tr.step();
    if (!m) break;
    std::printf("%5d %8lld  %s + %s -> %s  (%s)\n", m->rank, (long long)m->count, quoted(tr.token(m->left)).c_str(),
                quoted(tr.token(m->right)).c_str(), quoted(tr.token(m->merged)).c_str(),
                quoted(utf8::readable(tr.token_bytes(m->merged))).c_str());
    bool changed = false;
    for (auto& w : watched) {
      const size_t before = w.size();
      tok::BpeTrainer::apply(w, *m);
      changed |= w.size() != before;
    }
    if (changed || (steps && !watch.empty())) std::printf("%15s watch: %s\n", "", watched_line().c_str());
  }
  if (learned < merges) std::printf("stopped after %d merges: every word is a single symbol\n", learned);
  std::printf("learned %d merges; vocabulary: 256 byte symbols + %zu tokens = %zu\n", learned,
              tr.vocab_size() - 256, tr.vocab_size());
  if (!watch.empty()) std::printf("watch after %d merges: %s\n", learned, watched_line().c_str());
  if (!save.empty()) {
    write_file_atomic(save, tr.tokenizer_json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    std::printf("wrote %s (a tokenizer.json: lmscope-bpe --tokenizer and HF tokenizers load it)\n", save.c_str());
  }
  return 0;
}

// Encodes every line of `text` (split on '\n'), once to warm the cache, then `repeat`
// times timed. The Python side (golden/bench_tokenizer.py) does the same with HF.
nlohmann::json bench(const tok::Tokenizer& t, const std::string& text, int repeat) {
  std::vector<std::string_view> lines;
  size_t start = 0, bytes = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(std::string_view(text).substr(start, nl - start));
    bytes += nl - start;
    start = nl + 1;
  }
  size_t n_ids = 0;
  for (std::string_view l : lines) n_ids += t.encode(l, false).size();
  auto t0 = std::chrono::steady_clock::now();
  size_t check = 0;
  for (int r = 0; r < repeat; ++r)
    for (std::string_view l : lines) check += t.encode(l, false).size();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (check != n_ids * size_t(repeat)) throw std::runtime_error("bench: encoding is not deterministic");
  return {{"bytes", bytes},     {"lines", lines.size()}, {"repeat", repeat},
          {"ids", n_ids},       {"seconds", secs},       {"mb_per_s", double(bytes) * repeat / secs / 1e6}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-bpe: byte-level BPE and SentencePiece, merge by merge (exact against Hugging Face tokenizers)"};
  std::string tokenizer_path, text, file, decode_ids, out_h5, system, chat_json, chat_format = "template",
                                                                          chat_template_file;
  bool json = false, no_special = false, skip_special = false, info = false, chat = false, no_gen = false,
       do_bench = false;
  int repeat = 5;
  std::string train_path, watch, save;
  int merges = 500;
  bool steps = false;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json, a directory holding it, or a .gguf model file");
  // An empty TEXT ("") is a valid input: count() tells it from no TEXT at all.
  CLI::Option* text_opt = app.add_option("text", text, "text to tokenize (may be empty: \"\")");
  app.add_option("--file", file, "read the text from a file (raw bytes, must be UTF-8)");
  app.add_flag("--json", json, "print one JSON object (ids, tokens, words with their merges)");
  app.add_flag("--no-special", no_special, "do not let the post-processor add BOS/EOS (add_special_tokens=False)");
  app.add_option("--decode", decode_ids, "decode these ids (e.g. 1,2,3) instead of encoding");
  app.add_flag("--skip-special", skip_special, "with --decode: drop special tokens");
  app.add_option("--h5", out_h5, "also write the merge trace to this HDF5 file (/tokenizer/row_0)");
  app.add_flag("--info", info, "describe the tokenizer's components and exit");
  app.add_flag("--chat", chat, "treat TEXT as a user message and apply the chat format first");
  app.add_option("--system", system, "with --chat: a system message before it");
  app.add_option("--chat-json", chat_json, "a conversation file: [{\"role\": ..., \"content\": ...}, ...]");
  app.add_option("--chat-format", chat_format, "template (the tokenizer's own), chatml, deepseek-r1 or gemma")
      ->capture_default_str();
  app.add_option("--chat-template", chat_template_file, "a Jinja chat template file to use instead");
  app.add_flag("--no-generation-prompt", no_gen, "with --chat: do not open the assistant's turn");
  app.add_flag("--bench", do_bench, "encode every line of --file (or TEXT), report MB/s");
  app.add_option("--repeat", repeat, "with --bench: timed passes after one warm-up pass")->capture_default_str();
  app.add_flag("--steps", steps, "show the word's symbols after every merge (encoding and --train --watch)");
  app.add_option("--train", train_path, "learn byte-level BPE merges from this text file (UTF-8, one text a line)");
  app.add_option("--merges", merges, "with --train: how many merges to learn")->capture_default_str();
  app.add_option("--watch", watch, "with --train: show this text's symbols whenever a merge changes them");
  app.add_option("--save", save, "with --train: write the learned tokenizer as a tokenizer.json")->check(cli::output_path());
  app.footer(R"(Encoding output, per pre-tokenized word [i]:
  symbols: the word's bytes, one symbol each ("\xE4" is a byte that is part of a character)
  N. "a" + "b" -> "ab"   rank R, at P
      N: the Nth merge applied to this word; rank R: the merge's index in the tokenizer's merge
      list (lower ranks were learned earlier and are applied first); at P: index of the left
      symbol among the word's symbols at that moment (0 = first)
      with --steps, the next line is the word's symbols after that merge
  => id "piece" | ...: the word's final tokens
A SentencePiece tokenizer (a GGUF whose tokenizer.ggml.model is "llama": Gemma 3) has no words:
  the text between special tokens is one [i], its symbols are its characters ("▁" is a space),
  and each merge shows "score S" instead of a rank: the pair whose joined text is the token of the
  highest score is merged first (ties: the leftmost). "byte fallback: "c" is no token -> <0xNN> ...":
  a character no token spells, written as one token per byte.
  vocabulary strings, "their bytes add up to": only when a token holds part of a character:
      the tokens as the vocabulary writes them, and the text all their bytes make together
--train output, per merge: rank (0 = first learned), count (how often the pair occurs in the
  corpus at that moment), the pair and the new token as vocabulary strings ("Ġ" is a space byte,
  "ä¸Ń" the three bytes of 中), and in parentheses the text the new token stands for;
  "watch:" the --watch text's symbols after a merge that changed them (every merge with --steps).)");
  if (auto code = cli::parse(app, argc, argv, "lmscope-bpe")) return *code;
  if (!train_path.empty()) {
    if (merges < 1) return cli::usage_error("lmscope-bpe", "--merges must be at least 1, got " + std::to_string(merges));
    if (!tokenizer_path.empty()) return cli::usage_error("lmscope-bpe", "--train learns a tokenizer: do not give --tokenizer");
    return cli::run_tool("lmscope-bpe", [&] { return train(train_path, merges, watch, steps, save); });
  }
  if (tokenizer_path.empty()) return cli::usage_error("lmscope-bpe", "--tokenizer is required (or --train CORPUS)");
  for (const char* opt : {"--merges", "--watch", "--save"})
    if (app.count(opt)) return cli::usage_error("lmscope-bpe", std::string(opt) + " needs --train");

  return cli::run_tool("lmscope-bpe", [&] {
    tok::Tokenizer t = tok::Tokenizer::load(tokenizer_path);
    if (info) {
      std::printf("%s\n%s", t.source().c_str(), t.describe().c_str());
      return 0;
    }
    if (!decode_ids.empty()) {
      std::vector<int32_t> ids = cli::parse_ids(decode_ids, "--decode");
      std::string out = t.decode(ids, skip_special);
      if (json) {
        nlohmann::json j{{"ids", ids}, {"text", out}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else {
        std::printf("%s\n", out.c_str());
      }
      return 0;
    }
    const bool has_text = text_opt->count() > 0;
    if (!file.empty() && has_text) throw std::runtime_error("give either TEXT or --file, not both");
    if (!file.empty()) text = read_regular_file(file, "--file");
    bool add_special = !no_special;
    if (chat || !chat_json.empty()) {
      std::vector<tok::ChatMessage> messages;
      if (!chat_json.empty()) messages = tok::parse_chat_json(read_regular_file(chat_json, "--chat-json"), chat_json);
      if (!system.empty()) messages.insert(messages.begin(), {"system", system});
      if (chat && (!text.empty() || messages.empty())) messages.push_back({"user", text});
      std::string tmpl = chat_template_file.empty() ? "" : read_regular_file(chat_template_file, "--chat-template");
      text = tok::format_chat(t, messages, !no_gen, tok::parse_chat_format(chat_format), tmpl);
      add_special = false;   // as apply_chat_template(tokenize=True): the template has them
    } else if (file.empty() && !has_text && !do_bench) {
      throw std::runtime_error("nothing to tokenize: give TEXT, --file, --chat or --decode (see --help)");
    }
    if (do_bench) {
      if (text.empty()) throw std::runtime_error("--bench needs --file or TEXT");
      std::printf("%s\n", bench(t, text, std::max(1, repeat)).dump().c_str());
      return 0;
    }
    EncodeTrace trace;
    t.encode(text, add_special, &trace);
    if (json) std::printf("%s\n", trace_to_json(t, trace).c_str());
    else print_trace(t, trace, steps);
    if (!out_h5.empty()) {
      TraceWriter w(out_h5);
      w.set_root_attr("producer", std::string("lmscope-bpe ") + LMSCOPE_VERSION);
      w.set_root_attr("command_line", cli::command_line(argc, argv));
      w.set_root_attr("tokenizer_path", tokenizer_path);
      write_tokenizer_trace(w, 0, trace, t);
      w.commit();
    }
    return 0;
  });
}
