#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "io/gguf.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace lmscope::tok {

namespace {

using nlohmann::json;

// The regexes of the tokenizer.json files these names come from (HF tokenizers runs them with
// Split(behavior=Isolated) before a ByteLevel that does no splitting of its own).
const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json split_then_byte_level(const char* pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"},
                         {"pattern", {{"Regex", pattern}}},
                         {"behavior", "Isolated"},
                         {"invert", false}},
                        byte_level(false)})}};
}

// What a tokenizer.ggml.pre name stands for.
struct PreSpec {
  json normalizer;      // null: none
  json pre_tokenizer;
  bool ignore_merges = false;
};

enum class PreKind { Gpt2, SmolLM, Qwen2, Llama3 };

const std::vector<std::pair<std::string, PreKind>>& pre_table() {
  static const std::vector<std::pair<std::string, PreKind>> t = {
      // GPT-2's own ByteLevel regex. transformers treats "default" (and a file without the
      // key) the same way; llama.cpp's "default" runs a different regex list of its own.
      {"gpt2", PreKind::Gpt2},
      {"gpt-2", PreKind::Gpt2},
      {"default", PreKind::Gpt2},
      // SmolLM / SmolLM2 (llama.cpp: "\p{N}" then the GPT-2 regex; the models' tokenizer.json:
      // Digits(individual_digits) then ByteLevel). transformers 5.23 has no entry for it and
      // falls back to GPT-2's regex, which keeps digit runs together: see docs/tokenizer.md.
      {"smollm", PreKind::SmolLM},
      // Qwen2/2.5 and DeepSeek-R1-Distill-Qwen: their tokenizer.json has an NFC normalizer.
      {"qwen2", PreKind::Qwen2},
      {"deepseek-r1-qwen", PreKind::Qwen2},
      // Llama 3: its tokenizer.json sets ignore_merges (llama.cpp does too for this type).
      {"llama-bpe", PreKind::Llama3},
      {"llama3", PreKind::Llama3},
      {"llama-v3", PreKind::Llama3},
  };
  return t;
}

const PreKind* find_pre(const std::string& name) {
  for (const auto& [n, k] : pre_table())
    if (n == name) return &k;
  return nullptr;
}

PreSpec pre_spec(PreKind kind) {
  PreSpec s;
  switch (kind) {
    case PreKind::Gpt2:
      s.pre_tokenizer = byte_level(true);
      break;
    case PreKind::SmolLM:
      s.pre_tokenizer = {{"type", "Sequence"},
                         {"pretokenizers",
                          json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)})}};
      break;
    case PreKind::Qwen2:
      s.normalizer = {{"type", "NFC"}};
      s.pre_tokenizer = split_then_byte_level(kQwen2Pattern);
      break;
    case PreKind::Llama3:
      s.pre_tokenizer = split_then_byte_level(kLlama3Pattern);
      s.ignore_merges = true;
      break;
  }
  return s;
}

// Added tokens that llama.cpp's converter stores as CONTROL although the model's own
// tokenizer.json marks them "special": false. convert_hf_to_gguf.py makes every added token
// that "looks special" (<|...|>, <｜...｜>) CONTROL whatever its flag, and a GGUF has no other
// place for the flag. HF decode(skip_special_tokens=True) keeps these tokens, so we do too: the
// model's tokenizer is the reference (docs/tokenizer.md, "Special tokens in a GGUF").
//
// deepseek-r1-qwen: DeepSeek-R1-Distill-Qwen, tokenizer.json "added_tokens"
// (huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B/blob/main/tokenizer.json; the 7B
// GGUF has the same added tokens and ids): 151644, 151645, 151647 and 151659..151664 are
// "special": false; 151643 (EOS), 151646 (BOS) and 151650..151656 (quad/vision/image/video) are
// "special": true; <think>, </think>, <tool_call>, </tool_call> are "special": false and
// USER_DEFINED in the GGUF already.
const std::vector<std::string>& control_tokens_not_special(const std::string& pre) {
  static const std::vector<std::string> none;
  static const std::vector<std::string> deepseek_r1_qwen = {
      "<｜User｜>",       "<｜Assistant｜>", "<|EOT|>",       "<|fim_prefix|>", "<|fim_middle|>",
      "<|fim_suffix|>", "<|fim_pad|>",     "<|repo_name|>", "<|file_sep|>"};
  return pre == "deepseek-r1-qwen" ? deepseek_r1_qwen : none;
}

std::string squote(std::string_view s) {
  std::string out(1, '\'');
  out += utf8::readable(s);
  out += '\'';
  return out;
}

[[noreturn]] void fail_elem(const GgufFile& f, const std::string& key, size_t i, std::string_view value,
                            const std::string& what) {
  throw std::runtime_error(f.path() + ": key '" + key + "' [" + std::to_string(i) + "] " + squote(value) + ": " + what);
}

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kChatTemplate = "tokenizer.chat_template";

}  // namespace

const std::vector<std::string>& gguf_supported_pre_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, kind] : pre_table()) n.push_back(name);
    return n;
  }();
  return names;
}

GgufTokenizerSpec gguf_tokenizer_spec(const GgufFile& f) {
  GgufTokenizerSpec spec;

  // ---- model and pre-tokenizer ----
  if (!f.has(kModel)) fail_key(f, kModel, "is missing: the file carries no tokenizer");
  const std::string model = f.get_string(kModel);
  if (model != "gpt2")
    fail_key(f, kModel, "is " + squote(model) + ": only byte-level BPE ('gpt2') and SentencePiece ('llama') tokenizers are supported");
  spec.pre = f.get_string(kPre, "");
  const std::string pre_name = spec.pre.empty() ? "default" : spec.pre;
  const PreKind* kind = find_pre(pre_name);
  if (!kind) {
    std::string names;
    for (const auto& n : gguf_supported_pre_names()) names += (names.empty() ? "" : ", ") + n;
    fail_key(f, kPre, "is " + squote(spec.pre) + ": no pre-tokenizer known for it (supported: " + names + ")");
  }
  PreSpec pre = pre_spec(*kind);

  // ---- vocabulary ----
  if (!f.has(kTokens)) fail_key(f, kTokens, "is missing: a BPE tokenizer needs its vocabulary");
  const std::vector<std::string> tokens = f.get_string_array(kTokens);
  if (tokens.empty()) fail_key(f, kTokens, "is empty");
  if (tokens.size() > size_t(INT32_MAX / 2)) fail_key(f, kTokens, "has too many tokens (" + std::to_string(tokens.size()) + ")");
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(tokens.size());
  json vocab = json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (utf8::invalid_offset(t) != utf8::npos) fail_elem(f, kTokens, i, t, "not valid UTF-8");
    auto [it, inserted] = index.emplace(t, i);
    if (!inserted) fail_elem(f, kTokens, i, t, "the same token as [" + std::to_string(it->second) + "]");
    vocab[t] = int64_t(i);
  }

  std::vector<int64_t> types;
  if (f.has(kTypes)) {
    types = f.get_int_array(kTypes);
    if (types.size() != tokens.size())
      fail_key(f, kTypes, "has " + std::to_string(types.size()) + " entries for " + std::to_string(tokens.size()) + " tokens");
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i] < kUndefined || types[i] > kByte)
        fail_key(f, kTypes, "[" + std::to_string(i) + "] is " + std::to_string(types[i]) +
                                " (token types are 0..6: undefined, normal, unknown, control, user-defined, unused, byte)");
  }

  // ---- merges ----
  if (!f.has(kMerges)) fail_key(f, kMerges, "is missing: a BPE tokenizer needs its merges");
  const std::vector<std::string> merges_in = f.get_string_array(kMerges);
  json merges = json::array();
  for (size_t i = 0; i < merges_in.size(); ++i) {
    const std::string& m = merges_in[i];
    const size_t sp = m.find(' ');
    if (sp == std::string::npos || m.find(' ', sp + 1) != std::string::npos || sp == 0 || sp + 1 == m.size())
      fail_elem(f, kMerges, i, m, "expected two tokens separated by one space");
    const std::string_view a(m.data(), sp), b(m.data() + sp + 1, m.size() - sp - 1);
    for (std::string_view part : {a, b})
      if (!index.count(part)) fail_elem(f, kMerges, i, m, "token " + squote(part) + " is not in tokenizer.ggml.tokens");
    std::string merged = std::string(a) + std::string(b);
    if (!index.count(merged))
      fail_elem(f, kMerges, i, m, "the merged token " + squote(merged) + " is not in tokenizer.ggml.tokens");
    merges.push_back(m);
  }

  // ---- added tokens: control (special) and user-defined (not special), matched whole ----
  const std::vector<std::string>& not_special = control_tokens_not_special(pre_name);
  json added = json::array();
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != kControl && types[i] != kUserDefined) continue;
    if (tokens[i].empty()) continue;   // nothing to match in text
    const bool special = types[i] == kControl &&
                         std::find(not_special.begin(), not_special.end(), tokens[i]) == not_special.end();
    added.push_back({{"id", int64_t(i)}, {"content", tokens[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", special}});
  }

  // ---- special tokens, BOS/EOS ----
  json config = json::object();
  std::string bos, eos;
  for (const auto& [config_key, gguf_key] :
       std::vector<std::pair<std::string, std::string>>{{"bos_token", "tokenizer.ggml.bos_token_id"},
                                                        {"eos_token", "tokenizer.ggml.eos_token_id"},
                                                        {"unk_token", "tokenizer.ggml.unknown_token_id"},
                                                        {"pad_token", "tokenizer.ggml.padding_token_id"}}) {
    if (!f.has(gguf_key)) continue;
    const uint64_t id = f.get_uint(gguf_key);
    if (id >= tokens.size())
      fail_key(f, gguf_key, "is " + std::to_string(id) + ", past the " + std::to_string(tokens.size()) + " tokens");
    config[config_key] = tokens[id];
    if (config_key == "bos_token") bos = tokens[id];
    if (config_key == "eos_token") eos = tokens[id];
  }
  const bool add_bos = f.get_bool(kAddBos, false), add_eos = f.get_bool(kAddEos, false);
  json post = byte_level(true);
  if (add_bos || add_eos) {
    json single = json::array(), specials = json::object();
    auto special = [&](const std::string& content, const char* flag, const char* id_key) {
      if (content.empty()) fail_key(f, flag, "is true, but the file has no " + std::string(id_key));
      single.push_back({{"SpecialToken", {{"id", content}, {"type_id", 0}}}});
      specials[content] = {{"id", content}, {"ids", json::array({index.at(content)})}, {"tokens", json::array({content})}};
    };
    if (add_bos) special(bos, kAddBos, "tokenizer.ggml.bos_token_id");
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (add_eos) special(eos, kAddEos, "tokenizer.ggml.eos_token_id");
    post = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
  }
  if (f.has(kChatTemplate)) config["chat_template"] = f.get_string(kChatTemplate);

  // The BPE model has no unk token even when the file names one (tokenizer.ggml.unknown_token_id
  // is the tokenizer_config's unk_token): a byte the vocabulary lacks is dropped, as HF does for
  // byte-level BPE vocabularies.
  spec.tokenizer_json = {
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      {"normalizer", pre.normalizer},
      {"pre_tokenizer", pre.pre_tokenizer},
      {"post_processor", std::move(post)},
      {"decoder", byte_level(true)},
      {"model", bpe_model_json(std::move(vocab), std::move(merges), pre.ignore_merges)},
  };
  spec.config = std::move(config);
  return spec;
}

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
  if (f.has(kModel) && f.get_string(kModel) == "llama") return from_sentencepiece(load_spm_vocab(f), f.path());
  GgufTokenizerSpec spec = gguf_tokenizer_spec(f);
  return from_json(spec.tokenizer_json, f.path(), spec.config, f.path());
}

json gguf_pre_tokenizer(const std::string& pre) {
  const PreKind* kind = find_pre(pre);
  if (!kind) throw std::runtime_error("no pre-tokenizer known for '" + pre + "'");
  PreSpec spec = pre_spec(*kind);
  return {{"normalizer", spec.normalizer}, {"pre_tokenizer", spec.pre_tokenizer}, {"ignore_merges", spec.ignore_merges}};
}

json bpe_model_json(json vocab, json merges, bool ignore_merges) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", ignore_merges},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

}  // namespace lmscope::tok
