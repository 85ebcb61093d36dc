// The tokenizer of a GGUF file (lib/tokenizer/gguf_tokenizer.h):
//  * SmolLM2-135M-Instruct.Q4_1.gguf: every corpus string (and a few more) gives SmolLM2's own
//    ids, decode and chat prompts, as golden/make_gguf_tokenizer_refs.py committed them
//    (skipped, with the reason printed, when scripts/fetch-model.sh has not fetched the file);
//  * GGUF files written here from the shipped tokenizer.json files: tokenizer.ggml.pre "qwen2"
//    gives HF's ids for the whole corpus, and each supported name the pre-tokenizer it stands for;
//  * broken tokenizer metadata is refused in one line naming the key.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "io/gguf.h"
#include "tests/gguf/gguf_test_util.h"
#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/utf8.h"

using namespace lmscope;
using namespace lmscope::tok_test;
using nlohmann::json;

namespace {

const std::string kSmolLM2 = kRoot + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

#define SKIP_WITHOUT_SMOLLM2() SKIP_WITHOUT_FILE(kSmolLM2, "scripts/fetch-model.sh")

const tok::Tokenizer& smollm2() {
  static const std::unique_ptr<tok::Tokenizer> t =
      std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_gguf(GgufFile::open(kSmolLM2)));
  return *t;
}

const json& smollm2_refs() { return refs("smollm2-gguf"); }

// The text of case i: a corpus string, or an extra one that carries its text.
std::string case_text(size_t i) {
  const json& c = smollm2_refs()["cases"][i];
  return c.contains("text") ? c["text"].get<std::string>() : corpus().at(i);
}

std::vector<tok::ChatMessage> conversation(size_t i) {
  static const json convs = read_json("golden/tokenizers/chat/conversations.json");
  return tok::parse_chat_json(convs[i].dump(), "conversation " + std::to_string(i));
}

// ---- SmolLM2 ------------------------------------------------------------------------------

TEST(GgufTokenizerSmolLM2, MetadataAsTransformersReadsIt) {
  SKIP_WITHOUT_SMOLLM2();
  const tok::Tokenizer& t = smollm2();
  const json& meta = smollm2_refs()["meta"];
  EXPECT_EQ(t.vocab_size(), meta["vocab_size"].get<int32_t>());
  EXPECT_EQ(t.model().merge_count(), meta["merges"].get<size_t>());
  EXPECT_EQ(t.bos_id(), meta["bos_token_id"].get<int32_t>());
  EXPECT_EQ(t.eos_id(), meta["eos_token_id"].get<int32_t>());
  EXPECT_EQ(t.pad_id(), meta["pad_token_id"].get<int32_t>());
  for (const char* k : {"bos_token", "eos_token", "unk_token", "pad_token"})
    EXPECT_EQ(t.special_token_strings().at(k), meta[k].get<std::string>()) << k;
  std::vector<int32_t> special;
  for (int32_t id = 0; id < t.vocab_size(); ++id)
    if (t.is_special(id)) special.push_back(id);
  EXPECT_EQ(special, meta["special_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(t.chat_template(), meta["chat_template"].get<std::string>());
  // The pre-tokenizer the refs were made with: Digits(individual) then ByteLevel's GPT-2 regex.
  EXPECT_EQ(smollm2_refs()["pre_tokenizer"]["pretokenizers"][0]["type"], "Digits");
  EXPECT_NE(t.describe().find("Digits(individual_digits=true)"), std::string::npos) << t.describe();
  EXPECT_EQ(t.encode("What is 12345?"), (std::vector<int32_t>{1780, 314, 216, 33, 34, 35, 36, 37, 47}));
}

TEST(GgufTokenizerSmolLM2, RefsCoverTheCorpus) {
  SKIP_WITHOUT_SMOLLM2();
  EXPECT_GE(smollm2_refs()["cases"].size(), corpus().size());
  for (size_t i = 0; i < corpus().size(); ++i)
    EXPECT_FALSE(smollm2_refs()["cases"][i].contains("text")) << "rerun golden/make_gguf_tokenizer_refs.py";
}

TEST(GgufTokenizerSmolLM2, EncodeMatchesSmolLM2OnEveryString) {
  SKIP_WITHOUT_SMOLLM2();
  const tok::Tokenizer& t = smollm2();
  const json& cases = smollm2_refs()["cases"];
  int exact = 0, hf_differs = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string s = case_text(i);
    auto want = cases[i]["ids"].get<std::vector<int32_t>>();
    auto got = t.encode(s, true);
    EXPECT_EQ(got, want) << "string " << i << " \"" << utf8::readable(s.substr(0, 80)) << "\"\n  ours " << ids_str(got)
                         << "\n  want " << ids_str(want);
    EXPECT_EQ(t.encode(s, false), want) << "string " << i << " (add_special=false; the file adds no BOS)";
    exact += got == want;
    if (cases[i].contains("hf_gguf")) {
      ++hf_differs;
      EXPECT_NE(got, cases[i]["hf_gguf"].get<std::vector<int32_t>>());
    }
  }
  EXPECT_EQ(exact, int(cases.size()));
  EXPECT_EQ(hf_differs, smollm2_refs()["hf_gguf_differs"].get<int>());
  std::printf("[ smollm2-gguf ] %d / %zu strings exact (transformers' own GGUF tokenizer differs on %d: digits)\n", exact,
              cases.size(), hf_differs);
}

TEST(GgufTokenizerSmolLM2, DecodeMatches) {
  SKIP_WITHOUT_SMOLLM2();
  const tok::Tokenizer& t = smollm2();
  const json& cases = smollm2_refs()["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    auto ids = cases[i]["ids"].get<std::vector<int32_t>>();
    std::string want = cases[i].contains("decoded") ? cases[i]["decoded"].get<std::string>() : case_text(i);
    EXPECT_EQ(t.decode(ids), want) << "string " << i;
  }
  const json& sample = smollm2_refs()["sample"];
  auto ids = t.encode(sample["text"].get<std::string>());
  ASSERT_EQ(ids, sample["ids"].get<std::vector<int32_t>>());
  auto tokens = sample["tokens"].get<std::vector<std::string>>();
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(t.token_text(ids[i]), tokens[i]);
}

TEST(GgufTokenizerSmolLM2, ChatTemplateFromTheFileRendersLikeTransformers) {
  SKIP_WITHOUT_SMOLLM2();
  const tok::Tokenizer& t = smollm2();
  int checked = 0;
  for (const json& r : smollm2_refs()["chat"]) {
    auto conv = conversation(r["conversation"].get<size_t>());
    const bool gen = r["add_generation_prompt"].get<bool>();
    std::string text = tok::format_chat(t, conv, gen);
    EXPECT_EQ(text, r["text"].get<std::string>()) << "conversation " << r["conversation"] << " gen " << gen;
    EXPECT_EQ(t.encode(text, false), r["ids"].get<std::vector<int32_t>>()) << "conversation " << r["conversation"];
    ++checked;
  }
  EXPECT_EQ(checked, 22);
}

TEST(GgufTokenizerSmolLM2, LoadAcceptsTheGgufPath) {
  SKIP_WITHOUT_SMOLLM2();
  tok::Tokenizer t = tok::Tokenizer::load(kSmolLM2);
  EXPECT_EQ(t.source(), kSmolLM2);
  EXPECT_EQ(t.encode("x  123"), smollm2().encode("x  123"));
  EXPECT_EQ(t.vocab_size(), 49152);
}

using testing_util::CliRun;

CliRun run_bpe(const std::string& args) { return testing_util::run_cli(kBin + "/lmscope-bpe " + args); }

TEST(GgufTokenizerSmolLM2, BpeCliTakesTheGgufFile) {
  SKIP_WITHOUT_SMOLLM2();
  CliRun r = run_bpe("--tokenizer " + kSmolLM2 + " 'What is 12345?'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("9 ids: 1780,314,216,33,34,35,36,37,47"), std::string::npos) << r.out;
  r = run_bpe("--tokenizer " + kSmolLM2 + " --json 'x  123'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json::parse("[104, 256, 33, 34, 35]"));
  r = run_bpe("--tokenizer " + kSmolLM2 + " --info");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("48900 merges"), std::string::npos) << r.out;
}

// ---- GGUF files written from tokenizer.json files ------------------------------------------

struct GgufFromJson {
  std::string pre = "qwen2";   // "" = no tokenizer.ggml.pre key
  bool add_bos = false, add_eos = false;
};

// The tokenizer.ggml.* keys convert_hf_to_gguf would write for a tokenizer.json (+ its
// tokenizer_config.json): tokens by id, control/user-defined types for the added tokens,
// merges as "a b", the special token ids, the chat template.
std::string write_gguf_from_json(const testing_util::TempDir& tmp, const std::string& dir, const GgufFromJson& o) {
  const json tj = read_json(dir + "/tokenizer.json");
  const json cfg = read_json(dir + "/tokenizer_config.json");
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  auto put = [&](int64_t id, const std::string& s, int32_t type) {
    if (size_t(id) >= tokens.size()) {
      tokens.resize(size_t(id) + 1);
      types.resize(size_t(id) + 1, 1);
    }
    tokens[size_t(id)] = s;
    types[size_t(id)] = type;
  };
  for (const auto& [tok_str, id] : tj["model"]["vocab"].items()) put(id.get<int64_t>(), tok_str, 1);
  for (const json& a : tj["added_tokens"]) put(a["id"].get<int64_t>(), a["content"].get<std::string>(), a["special"].get<bool>() ? 3 : 4);
  std::vector<std::string> merges;
  for (const json& m : tj["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  auto id_of = [&](const std::string& s) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == s) return uint32_t(i);
    throw std::runtime_error("no token " + s);
  };

  ggtest::Writer w;
  w.kv_str("general.architecture", "qwen2");
  w.kv_str("tokenizer.ggml.model", "gpt2");
  if (!o.pre.empty()) w.kv_str("tokenizer.ggml.pre", o.pre);
  w.kv_str_array("tokenizer.ggml.tokens", tokens);
  w.kv_i32_array("tokenizer.ggml.token_type", types);
  w.kv_str_array("tokenizer.ggml.merges", merges);
  for (const auto& [cfg_key, key] : std::vector<std::pair<std::string, std::string>>{
           {"bos_token", "tokenizer.ggml.bos_token_id"},
           {"eos_token", "tokenizer.ggml.eos_token_id"},
           {"pad_token", "tokenizer.ggml.padding_token_id"}})
    if (cfg.contains(cfg_key) && cfg[cfg_key].is_string()) w.kv_u32(key, id_of(cfg[cfg_key].get<std::string>()));
  if (o.add_bos) w.kv_bool("tokenizer.ggml.add_bos_token", true);
  if (o.add_eos) w.kv_bool("tokenizer.ggml.add_eos_token", true);
  if (cfg.contains("chat_template")) w.kv_str("tokenizer.chat_template", cfg["chat_template"].get<std::string>());
  const std::string path = tmp.file("tok.gguf");
  iotest::write_file(path, w.build());
  return path;
}

// qwen-bpe written as a GGUF with pre "qwen2", loaded once.
const tok::Tokenizer& qwen_gguf() {
  static const std::unique_ptr<tok::Tokenizer> t = [] {
    testing_util::TempDir tmp;
    return std::make_unique<tok::Tokenizer>(
        tok::Tokenizer::from_gguf(GgufFile::open(write_gguf_from_json(tmp, "golden/tokenizers/qwen-bpe", {}))));
  }();
  return *t;
}

TEST(GgufTokenizerFromJson, Qwen2PreGivesHuggingFaceIdsOnTheWholeCorpus) {
  // qwen-bpe (Qwen3's vocabulary, 151,669 ids) written as a GGUF with pre "qwen2" must give what
  // HF tokenizers gives with the real tokenizer.json: NFC, the Qwen2 split, its added tokens.
  const tok::Tokenizer& t = qwen_gguf();
  const tok::Tokenizer& from_json = tokenizer("qwen-bpe");
  EXPECT_EQ(t.vocab_size(), from_json.vocab_size());
  EXPECT_EQ(t.eos_id(), from_json.eos_id());
  EXPECT_EQ(t.pad_id(), from_json.pad_id());
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.chat_template(), from_json.chat_template());
  const json& cases = refs("qwen-bpe")["cases"];
  int exact = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    auto want = cases[i]["ids"].get<std::vector<int32_t>>();
    auto got = t.encode(corpus()[i], true);
    EXPECT_EQ(got, want) << "string " << i << " \"" << utf8::readable(corpus()[i].substr(0, 80)) << "\"";
    std::string dec = cases[i].contains("decoded") ? cases[i]["decoded"].get<std::string>() : corpus()[i];
    EXPECT_EQ(t.decode(got), dec) << "string " << i;
    exact += got == want;
  }
  EXPECT_EQ(exact, int(corpus().size()));
  std::printf("[ qwen-bpe as GGUF ] %d / %zu strings exact\n", exact, corpus().size());
  for (int32_t id = 151643; id < t.vocab_size(); ++id) EXPECT_EQ(t.is_special(id), from_json.is_special(id)) << id;
}

TEST(GgufTokenizerFromJson, ChatTemplateOfTheFileRendersTheQwen3Refs) {
  const tok::Tokenizer& t = qwen_gguf();
  const json chat = read_json("golden/tokenizers/chat/refs.json");
  int checked = 0;
  for (const json& r : chat["templates"]["qwen3.jinja"]["renders"]) {
    if (!r.contains("text")) continue;
    auto conv = conversation(r["conversation"].get<size_t>());
    std::string text = tok::format_chat(t, conv, r["add_generation_prompt"].get<bool>());
    EXPECT_EQ(text, r["text"].get<std::string>());
    EXPECT_EQ(t.encode(text, false), r["ids"].get<std::vector<int32_t>>());
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// tiny-qwen2's tokenizer.json with another pre-tokenizer (and normalizer, ignore_merges): what
// each tokenizer.ggml.pre name must be equivalent to.
tok::Tokenizer tiny_with(const json& normalizer, const json& pre_tokenizer, bool ignore_merges) {
  json tj = read_json("golden/models/tiny-qwen2/tokenizer.json");
  tj["normalizer"] = normalizer;
  tj["pre_tokenizer"] = pre_tokenizer;
  tj["model"]["ignore_merges"] = ignore_merges;
  tj["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  return tok::Tokenizer::from_json(tj, "tiny-qwen2 variant", read_json("golden/models/tiny-qwen2/tokenizer_config.json"), "config");
}

TEST(GgufTokenizerFromJson, EveryPreNameIsThePreTokenizerItStandsFor) {
  const json byte_level_regex = json::parse(R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})");
  const json smollm = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Digits", "individual_digits": true},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]})");
  const json llama3 = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "behavior": "Isolated", "invert": false, "pattern": {"Regex":
       "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  const json tiny = read_json("golden/models/tiny-qwen2/tokenizer.json");
  struct Case {
    std::string pre;
    tok::Tokenizer want;
  };
  std::vector<Case> cases;
  for (const char* pre : {"gpt2", "gpt-2", "default", ""}) cases.push_back({pre, tiny_with(nullptr, byte_level_regex, false)});
  cases.push_back({"smollm", tiny_with(nullptr, smollm, false)});
  for (const char* pre : {"qwen2", "deepseek-r1-qwen"}) cases.push_back({pre, tiny_with(tiny["normalizer"], tiny["pre_tokenizer"], false)});
  for (const char* pre : {"llama-bpe", "llama3", "llama-v3"}) cases.push_back({pre, tiny_with(nullptr, llama3, true)});
  EXPECT_EQ(cases.size(), tok::gguf_supported_pre_names().size() + 1);   // + the absent key

  for (const Case& c : cases) {
    testing_util::TempDir tmp;
    tok::Tokenizer t = tok::Tokenizer::from_gguf(GgufFile::open(write_gguf_from_json(tmp, "golden/models/tiny-qwen2", {c.pre})));
    EXPECT_EQ(t.describe().substr(t.describe().find("normalizer:")), c.want.describe().substr(c.want.describe().find("normalizer:")))
        << "pre '" << c.pre << "'";
    EXPECT_EQ(t.model().ignore_merges(), c.want.model().ignore_merges()) << c.pre;
    int same = 0;
    for (const std::string& s : corpus()) same += t.encode(s) == c.want.encode(s);
    EXPECT_EQ(same, int(corpus().size())) << "pre '" << c.pre << "'";
  }
  // The names really differ where they should: digits, a space before digits, NFC.
  testing_util::TempDir a, b, q;
  tok::Tokenizer gpt2 = tok::Tokenizer::load(write_gguf_from_json(a, "golden/models/tiny-qwen2", {"gpt2"}));
  tok::Tokenizer smol = tok::Tokenizer::load(write_gguf_from_json(b, "golden/models/tiny-qwen2", {"smollm"}));
  tok::Tokenizer qwen = tok::Tokenizer::load(write_gguf_from_json(q, "golden/models/tiny-qwen2", {"qwen2"}));
  EXPECT_NE(gpt2.encode("x  12"), smol.encode("x  12"));
  EXPECT_EQ(qwen.encode("e\xCC\x81"), qwen.encode("\xC3\xA9"));   // NFC: e + U+0301 == é
  EXPECT_NE(gpt2.encode("e\xCC\x81"), gpt2.encode("\xC3\xA9"));
}

TEST(GgufTokenizerFromJson, AddBosAndAddEosBecomeThePostProcessor) {
  testing_util::TempDir tmp;
  GgufFromJson o;
  o.add_bos = o.add_eos = true;
  tok::Tokenizer t = tok::Tokenizer::load(write_gguf_from_json(tmp, "golden/models/tiny-qwen2", o));
  auto plain = t.encode("hello", false);
  auto with = t.encode("hello", true);
  ASSERT_EQ(with.size(), plain.size() + 2);
  EXPECT_EQ(with.front(), t.bos_id());
  EXPECT_EQ(with.back(), t.eos_id());
  EXPECT_EQ(std::vector<int32_t>(with.begin() + 1, with.end() - 1), plain);
  EXPECT_NE(t.describe().find("TemplateProcessing(<|endoftext|> $A <|endoftext|>)"), std::string::npos) << t.describe();
}

// ---- errors --------------------------------------------------------------------------------

// A small valid tokenizer: "a" "b" "ab" "<s>" "<t>", one merge; `edit` changes one thing.
std::string small_gguf(const testing_util::TempDir& tmp, const std::function<void(ggtest::Writer&)>& edit, bool with_tokens = true,
                       bool with_merges = true, bool with_model = true) {
  ggtest::Writer w;
  w.kv_str("general.architecture", "llama");
  if (with_model) w.kv_str("tokenizer.ggml.model", "gpt2");
  if (with_tokens) {
    w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>", "<t>"});
    w.kv_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 3, 4});
  }
  if (with_merges) w.kv_str_array("tokenizer.ggml.merges", {"a b"});
  w.kv_u32("tokenizer.ggml.bos_token_id", 3);
  edit(w);
  const std::string path = tmp.file("small.gguf");
  iotest::write_file(path, w.build());
  return path;
}

std::string load_error(const std::string& path) {
  try {
    tok::Tokenizer::load(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const std::string& what, const std::vector<std::string>& needles) {
  for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "missing '" << n << "' in: " << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
}

TEST(GgufTokenizerErrors, TheSmallFileLoads) {
  testing_util::TempDir tmp;
  tok::Tokenizer t = tok::Tokenizer::load(small_gguf(tmp, [](ggtest::Writer&) {}));
  EXPECT_EQ(t.encode("ab<s>b<t>"), (std::vector<int32_t>{2, 3, 1, 4}));
  EXPECT_TRUE(t.is_special(3));
  EXPECT_FALSE(t.is_special(4));
  EXPECT_TRUE(t.is_added(4));
  EXPECT_EQ(t.bos_id(), 3);
  EXPECT_EQ(t.encode("ab", true), (std::vector<int32_t>{2}));   // no add_bos_token: no BOS
  EXPECT_EQ(t.decode({2, 3, 1}, true), "abb");
}

TEST(GgufTokenizerErrors, MissingKeys) {
  testing_util::TempDir tmp;
  auto none = [](ggtest::Writer&) {};
  const std::string p1 = small_gguf(tmp, none, /*with_tokens=*/false);
  expect_error(load_error(p1), {p1, "'tokenizer.ggml.tokens'", "missing"});
  const std::string p2 = small_gguf(tmp, none, true, /*with_merges=*/false);
  expect_error(load_error(p2), {p2, "'tokenizer.ggml.merges'", "missing"});
  const std::string p3 = small_gguf(tmp, none, true, true, /*with_model=*/false);
  expect_error(load_error(p3), {p3, "'tokenizer.ggml.model'", "missing", "no tokenizer"});
}

TEST(GgufTokenizerErrors, UnknownPreAndModelAreRefusedByName) {
  testing_util::TempDir tmp;
  std::string p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str("tokenizer.ggml.pre", "falcon"); });
  expect_error(load_error(p), {p, "'tokenizer.ggml.pre'", "'falcon'", "supported", "smollm", "qwen2", "llama-bpe"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str("tokenizer.ggml.model", "rwkv"); }, true, true, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.model'", "'rwkv'", "gpt2", "llama"});
  // SentencePiece ("llama") merges by score: a file without scores is refused by that key.
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str("tokenizer.ggml.model", "llama"); }, true, true, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.scores'", "is missing"});
  p = small_gguf(tmp, [](ggtest::Writer& w) {
    w.kv_str("tokenizer.ggml.model", "llama");
    w.kv_f32_array("tokenizer.ggml.scores", {-1, -1, -2});
  }, true, true, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.scores'", "3 entries for 5 tokens"});
}

// A SentencePiece GGUF (tokenizer.ggml.model "llama") loads through Tokenizer::load: "ab" has the
// higher score, so "aab" is a + ab; "<s>" (control) is BOS and special; "▁" is a space.
TEST(GgufTokenizer, SentencePieceFile) {
  testing_util::TempDir tmp;
  ggtest::Writer w;
  w.kv_str("general.architecture", "gemma3");
  w.kv_str("tokenizer.ggml.model", "llama");
  w.kv_str_array("tokenizer.ggml.tokens", {"<s>", "a", "b", "aa", "ab", "\xE2\x96\x81"});
  w.kv_f32_array("tokenizer.ggml.scores", {0, -1, -1, -5, -3, -1});
  w.kv_i32_array("tokenizer.ggml.token_type", {3, 1, 1, 1, 1, 1});
  w.kv_u32("tokenizer.ggml.bos_token_id", 0);
  w.kv_bool("tokenizer.ggml.add_space_prefix", false);
  const std::string path = tmp.file("spm.gguf");
  iotest::write_file(path, w.build());
  const tok::Tokenizer t = tok::Tokenizer::load(path);
  EXPECT_TRUE(t.is_sentencepiece());
  EXPECT_EQ(t.encode("aab a"), (std::vector<int32_t>{0, 1, 4, 5, 1}));
  EXPECT_EQ(t.decode({0, 1, 4, 5, 1}, true), "aab a");
  EXPECT_TRUE(t.is_special(0));
  EXPECT_EQ(t.bos_id(), 0);
}

TEST(GgufTokenizerErrors, MalformedMerges) {
  testing_util::TempDir tmp;
  struct Bad {
    std::vector<std::string> merges;
    std::vector<std::string> needles;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"a b", "a b b"}, {"'tokenizer.ggml.merges' [1]", "'a b b'", "two tokens separated by one space"}},
           {{"ab"}, {"[0]", "'ab'", "two tokens"}},
           {{"a "}, {"[0]", "two tokens"}},
           {{" a"}, {"[0]", "two tokens"}},
           {{"a b", "a c"}, {"[1]", "token 'c' is not in tokenizer.ggml.tokens"}},
           {{"b a"}, {"[0]", "merged token 'ba' is not in tokenizer.ggml.tokens"}},
       }) {
    const std::string p = small_gguf(tmp, [&](ggtest::Writer& w) { w.kv_str_array("tokenizer.ggml.merges", b.merges); }, true, false);
    std::vector<std::string> needles = b.needles;
    needles.push_back(p);
    expect_error(load_error(p), needles);
  }
}

TEST(GgufTokenizerErrors, BadTokensTypesAndIds) {
  testing_util::TempDir tmp;
  std::string p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_i32_array("tokenizer.ggml.tokens", {1, 2}); }, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.tokens'", "array of string"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "a"}); }, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.tokens' [3] 'a'", "same token as [0]"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xFF"}); }, false);
  expect_error(load_error(p), {p, "[3]", "UTF-8"});
  p = small_gguf(tmp, [](ggtest::Writer& w) {
    w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>"});
    w.kv_i32_array("tokenizer.ggml.token_type", {1, 1, 1});
  }, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.token_type'", "3 entries for 4 tokens"});
  p = small_gguf(tmp, [](ggtest::Writer& w) {
    w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>"});
    w.kv_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 9});
  }, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.token_type'", "[3] is 9"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_u32("tokenizer.ggml.eos_token_id", 5); });
  expect_error(load_error(p), {p, "'tokenizer.ggml.eos_token_id'", "is 5, past the 5 tokens"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_bool("tokenizer.ggml.add_eos_token", true); });
  expect_error(load_error(p), {p, "'tokenizer.ggml.add_eos_token'", "no tokenizer.ggml.eos_token_id"});
  p = small_gguf(tmp, [](ggtest::Writer& w) { w.kv_str_array("tokenizer.ggml.tokens", {}); }, false);
  expect_error(load_error(p), {p, "'tokenizer.ggml.tokens'", "empty"});
}

TEST(GgufTokenizerErrors, ANonTokenizerGgufAndTheCli) {
  testing_util::TempDir tmp;
  ggtest::Writer w;
  w.kv_str("general.architecture", "llama");
  const std::string p = tmp.file("weights-only.gguf");
  iotest::write_file(p, w.build());
  expect_error(load_error(p), {p, "'tokenizer.ggml.model'", "no tokenizer"});
  CliRun r = run_bpe("--tokenizer " + p + " hello");
  EXPECT_EQ(r.code, 1);
  expect_error(r.err.substr(0, r.err.size() - (r.err.empty() || r.err.back() != '\n' ? 0 : 1)), {"'tokenizer.ggml.model'"});
}

}  // namespace
