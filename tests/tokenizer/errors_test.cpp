// Bad input: invalid UTF-8 is refused with its byte offset; a tokenizer.json with a missing
// or malformed field, or a component we do not support, is refused with the field named.
#include <gtest/gtest.h>

#include <functional>

#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"

using namespace lmscope;
using namespace lmscope::tok_test;
using nlohmann::json;

namespace {

void expect_contains(const std::string& what, const std::vector<std::string>& needles) {
  for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "missing '" << n << "' in: " << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
}

TEST(Utf8Input, RefusedWithTheByteOffset) {
  const tok::Tokenizer& t = tokenizer("qwen-bpe");
  expect_contains(error_of([&] { t.encode("abc\xFF" "def"); }), {"not valid UTF-8", "0xFF", "byte offset 3"});
  expect_contains(error_of([&] { t.encode("中\xE4\xB8"); }), {"byte offset 3", "incomplete"});
  expect_contains(error_of([&] { t.encode("ok \xC0\xAF"); }), {"byte offset 3"});        // overlong '/'
  expect_contains(error_of([&] { t.encode("\xED\xA0\x80 surrogate"); }), {"byte offset 0"});
  expect_contains(error_of([&] { t.encode("x\xF4\x90\x80\x80"); }), {"byte offset 1"});  // > U+10FFFF
  expect_contains(error_of([&] { t.encode(std::string("a\0b\x80", 4)); }), {"byte offset 3"});
  EXPECT_NO_THROW(t.encode(std::string("a\0b", 3)));   // U+0000 is valid UTF-8
}

TEST(Decode, UnknownIdIsAnError) {
  const tok::Tokenizer& t = tokenizer("tiny-qwen2");
  expect_contains(error_of([&] { t.decode({5, 1024}); }), {"1024", "not in the vocabulary", "0..1023"});
  expect_contains(error_of([&] { t.decode({-1}); }), {"-1"});
}

// Writes tiny-qwen2's tokenizer.json with `edit` applied and loads it.
class BadTokenizerJson : public ::testing::Test {
 protected:
  std::string load_error(const std::function<void(json&)>& edit, const std::string& config = "") {
    json j = read_json("golden/models/tiny-qwen2/tokenizer.json");
    edit(j);
    std::string dir = tmp_.path().string();
    std::ofstream(dir + "/tokenizer.json") << j.dump();
    if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
    return error_of([&] { tok::Tokenizer::load(dir); });
  }
  testing_util::TempDir tmp_;
};

TEST_F(BadTokenizerJson, MissingOrMalformedFieldsAreNamed) {
  expect_contains(load_error([](json& j) { j.erase("model"); }), {"tokenizer.json", "model", "missing"});
  expect_contains(load_error([](json& j) { j["model"].erase("vocab"); }), {"model.vocab", "missing"});
  expect_contains(load_error([](json& j) { j["model"]["vocab"] = json::array(); }), {"model.vocab", "expected an object"});
  expect_contains(load_error([](json& j) { j["model"]["vocab"]["Ġthe"] = "x"; }), {"model.vocab[\"Ġthe\"]", "expected an integer"});
  expect_contains(load_error([](json& j) { j["model"].erase("merges"); }), {"model.merges", "missing"});
  expect_contains(load_error([](json& j) { j["model"]["merges"][3] = "a b c"; }), {"model.merges[3]", "left right"});
  expect_contains(load_error([](json& j) { j["model"]["merges"][4] = json::array({"Ġ", "zzz"}); }),
                  {"model.merges[4]", "'zzz' is not in the vocabulary"});
  expect_contains(load_error([](json& j) { j["model"]["merges"][5] = 7; }), {"model.merges[5]", "expected"});
  expect_contains(load_error([](json& j) { j["model"]["type"] = "WordPiece"; }), {"model.type", "WordPiece"});
  expect_contains(load_error([](json& j) { j["model"]["byte_fallback"] = true; }), {"model.byte_fallback", "not supported"});
  expect_contains(load_error([](json& j) { j["model"]["dropout"] = 0.1; }), {"model.dropout", "not supported"});
  expect_contains(load_error([](json& j) { j["model"]["unk_token"] = "<unk>"; }), {"model.unk_token", "<unk>"});
  expect_contains(load_error([](json& j) { j["added_tokens"][1].erase("id"); }), {"added_tokens[1].id", "missing"});
  expect_contains(load_error([](json& j) { j["added_tokens"][0]["content"] = 5; }), {"added_tokens[0].content", "expected a string"});
  expect_contains(load_error([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }), {"normalizer.type", "Lowercase"});
  expect_contains(load_error([](json& j) { j["normalizer"] = {{"kind", "NFC"}}; }), {"normalizer.type", "missing"});
  expect_contains(load_error([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Metaspace"; }),
                  {"pre_tokenizer.pretokenizers[0].type", "Metaspace"});
  expect_contains(load_error([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}}; }),
                  {"pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"});
  expect_contains(load_error([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; }),
                  {"pre_tokenizer.pretokenizers[0].behavior", "Sideways"});
  expect_contains(load_error([](json& j) {
                    auto bl = j["pre_tokenizer"]["pretokenizers"][1];
                    j["pre_tokenizer"]["pretokenizers"] = json::array({bl, j["pre_tokenizer"]["pretokenizers"][0]});
                  }),
                  {"pre_tokenizer", "ByteLevel must be last"});
  expect_contains(load_error([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }), {"decoder.type", "WordPiece"});
  expect_contains(load_error([](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }),
                  {"post_processor.type", "RobertaProcessing"});
  expect_contains(load_error([](json& j) {
                    j["post_processor"] = {{"type", "TemplateProcessing"},
                                           {"single", json::array({{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}})},
                                           {"special_tokens", json::object()}};
                  }),
                  {"post_processor.special_tokens.<s>", "missing"});
  expect_contains(load_error([](json& j) { j["truncation"] = {{"max_length", 8}}; }), {"truncation", "not supported"});
}

TEST_F(BadTokenizerJson, TokenizerConfigFieldsAreNamed) {
  expect_contains(load_error([](json&) {}, "{\"bos_token\": \"<s>\"}"), {"tokenizer_config.json", "bos_token", "'<s>'"});
  expect_contains(load_error([](json&) {}, "{\"eos_token\": 3}"), {"tokenizer_config.json", "eos_token", "expected"});
  expect_contains(load_error([](json&) {}, "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}]}"),
                  {"chat_template", "default"});
  expect_contains(load_error([](json&) {}, "{not json"), {"tokenizer_config.json", "not valid JSON"});
}

TEST(LoadErrors, MissingFilesAndBadJson) {
  expect_contains(error_of([] { tok::Tokenizer::load("/nonexistent/tok"); }), {"/nonexistent/tok", "does not exist"});
  testing_util::TempDir tmp;
  expect_contains(error_of([&] { tok::Tokenizer::load(tmp.path().string()); }), {"no tokenizer.json"});
  std::ofstream(tmp.file("tokenizer.json")) << "{\"model\": ";
  expect_contains(error_of([&] { tok::Tokenizer::load(tmp.path().string()); }), {"tokenizer.json", "not valid JSON"});
}

}  // namespace

namespace {

// {"type": "Sequence", key: [ ... leaf ... ]} nested `depth` times, as text: nlohmann's own
// dump() of such a value would recurse `depth` levels in this test.
std::string nested_sequence(const std::string& key, const std::string& leaf, int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"type\":\"Sequence\",\"" + key + "\":[";
  s += leaf;
  for (int i = 0; i < depth; ++i) s += "]}";
  return s;
}

// tiny-qwen2's tokenizer.json with `field` replaced by `text`, loaded: its error ("" if none).
std::string load_with(const std::string& field, const std::string& text) {
  json j = read_json("golden/models/tiny-qwen2/tokenizer.json");
  j[field] = "@@FIELD@@";
  std::string all = j.dump();
  all.replace(all.find("\"@@FIELD@@\""), 11, text);
  testing_util::TempDir tmp;
  std::ofstream(tmp.path() / "tokenizer.json") << all;
  return error_of([&] { tok::Tokenizer::load(tmp.path().string()); });
}

}  // namespace

// Sequences inside Sequences 100,000 deep: one line naming the field, not a stack overflow.
TEST(TokenizerJsonDepth, NestedSequencesAreRefusedInOneLine) {
  for (int depth : {17, 100000}) {
    expect_contains(load_with("normalizer", nested_sequence("normalizers", "{\"type\":\"NFC\"}", depth)),
                    {"tokenizer.json", "normalizer.normalizers[0]", "Sequence nested more than 16 levels deep"});
    expect_contains(load_with("pre_tokenizer", nested_sequence("pretokenizers", "{\"type\":\"Digits\"}", depth)),
                    {"tokenizer.json", "pre_tokenizer.pretokenizers[0]", "Sequence nested more than 16 levels deep"});
    expect_contains(load_with("post_processor", nested_sequence("processors", "{\"type\":\"ByteLevel\"}", depth)),
                    {"tokenizer.json", "post_processor.processors[0]", "Sequence nested more than 16 levels deep"});
  }
  // 16 levels load
  EXPECT_EQ(load_with("normalizer", nested_sequence("normalizers", "{\"type\":\"NFC\"}", 16)), "(no error)");
}

// A vocabulary id far past the entries would size the id table by it (2^28: gigabytes).
TEST_F(BadTokenizerJson, VocabularyIdFarPastTheEntries) {
  expect_contains(load_error([](json& j) { j["model"]["vocab"]["zzz"] = 1 << 28; }),
                  {"model.vocab", "token id 268435456 leaves more than 1048576 ids unused", "the vocabulary has"});
}
