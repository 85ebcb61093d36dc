// lmscope-bpe: tokenize text and show every merge, word by word (docs/tokenizer.md).
//
//   lmscope-bpe --tokenizer golden/tokenizers/qwen-bpe "中华人民共和国成立于 1949 年。"
//   lmscope-bpe --tokenizer models/SmolLM2-135M-Instruct.Q4_1.gguf "What is 12345?"   (a GGUF's tokenizer)
//   lmscope-bpe --tokenizer DIR --json --file prompt.txt
//   lmscope-bpe --tokenizer DIR --decode 104811,100000
//   lmscope-bpe --tokenizer DIR --chat --system "Be brief." "What is BPE?"
//   lmscope-bpe --tokenizer DIR --bench --file big.txt        (encode throughput, MB/s)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/chat.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tools/cli_common.h"
#include "trace/trace_writer.h"

using namespace lmscope;

namespace {

std::string read_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(option + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quoted(const std::string& readable) { return "\"" + readable + "\""; }

// The human-readable walk through one encoding.
void print_trace(const tok::Tokenizer& t, const EncodeTrace& tr) {
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
    std::string syms;
    for (int32_t s : wt.symbols) syms += (syms.empty() ? "" : " ") + quoted(t.token_display(s));
    std::printf("     symbols: %s\n", syms.c_str());
    for (size_t m = 0; m < wt.merges.size(); ++m) {
      const MergeStep& ms = wt.merges[m];
      std::printf("     %3zu. %s + %s -> %s   rank %d, at %d\n", m + 1, quoted(t.token_display(ms.left)).c_str(),
                  quoted(t.token_display(ms.right)).c_str(), quoted(t.token_display(ms.merged)).c_str(), ms.rank,
                  ms.position);
    }
    std::string ids;
    for (int32_t id : wt.ids) ids += (ids.empty() ? "" : " | ") + std::to_string(id) + " " + quoted(t.token_display(id));
    std::printf("     => %s\n", ids.c_str());
  }
  std::printf("\n%zu ids: %s\n", tr.ids.size(), cli::join_ids(tr.ids).c_str());
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
  CLI::App app{"lmscope-bpe: byte-level BPE, merge by merge (exact against Hugging Face tokenizers)"};
  std::string tokenizer_path, text, file, decode_ids, out_h5, system, chat_json, chat_format = "template",
                                                                          chat_template_file;
  bool json = false, no_special = false, skip_special = false, info = false, chat = false, no_gen = false,
       do_bench = false;
  int repeat = 5;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json, a directory holding it, or a .gguf model file")->required();
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
  app.add_option("--chat-format", chat_format, "template (the tokenizer's own), chatml or deepseek-r1")
      ->capture_default_str();
  app.add_option("--chat-template", chat_template_file, "a Jinja chat template file to use instead");
  app.add_flag("--no-generation-prompt", no_gen, "with --chat: do not open the assistant's turn");
  app.add_flag("--bench", do_bench, "encode every line of --file (or TEXT), report MB/s");
  app.add_option("--repeat", repeat, "with --bench: timed passes after one warm-up pass")->capture_default_str();
  if (auto code = cli::parse(app, argc, argv, "lmscope-bpe")) return *code;

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
    if (!file.empty()) text = read_file(file, "--file");
    bool add_special = !no_special;
    if (chat || !chat_json.empty()) {
      std::vector<tok::ChatMessage> messages;
      if (!chat_json.empty()) messages = tok::parse_chat_json(read_file(chat_json, "--chat-json"), chat_json);
      if (!system.empty()) messages.insert(messages.begin(), {"system", system});
      if (chat && (!text.empty() || messages.empty())) messages.push_back({"user", text});
      std::string tmpl = chat_template_file.empty() ? "" : read_file(chat_template_file, "--chat-template");
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
    else print_trace(t, trace);
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
