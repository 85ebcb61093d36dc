// A GGUF cut after its header (no tensor data) as a tokenizer, and which GGUF CONTROL tokens
// are special:
//  * DeepSeek-R1-Distill-Qwen-7B's Q4_K_M GGUF, its first 99.6 MB (scripts/fetch-r1-tokenizer.sh;
//    skipped, with the reason printed, when it has not been fetched): it loads as a tokenizer,
//    gives Qwen2's ids, and decode(skip_special) keeps what the model's tokenizer.json keeps;
//  * small GGUFs written here, so that CI checks the same rules without the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/gguf_model.h"
#include "tests/gguf/gguf_test_util.h"
#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/chat.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

// ---- a small model GGUF cut inside its tensor data -------------------------------------------

// tests/gguf's tiny Llama GGUF, with a byte-level tokenizer, without its last 64 bytes.
std::string header_only_gguf(const testing_util::TempDir& tmp) {
  ggtest::Writer w = ggtest::tiny_gguf({});
  w.kv_str("tokenizer.ggml.model", "gpt2");
  w.kv_str_array("tokenizer.ggml.merges", {});
  const std::string bytes = w.build();
  const std::string path = tmp.file("header-only.gguf");
  iotest::write_file(path, bytes.substr(0, bytes.size() - 64));
  return path;
}

TEST(GgufHeaderOnly, OpensForItsMetadataLoadsAsATokenizerNotAsAModel) {
  testing_util::TempDir tmp;
  const std::string p = header_only_gguf(tmp);
  EXPECT_NE(error_of([&] { GgufFile::open(p); }).find("runs past the end of the file"), std::string::npos);

  const GgufFile f = GgufFile::open(p, GgufOpen::MetadataOnly);
  EXPECT_FALSE(f.has_tensor_data());
  EXPECT_NO_THROW(f.tensor_data(f.tensor_info("token_embd.weight")));   // the first tensor is whole
  const std::string e = error_of([&] { f.to_f32(f.tensors().back().name); });
  EXPECT_NE(e.find("'" + f.tensors().back().name + "': its data is not in the file"), std::string::npos) << e;

  tok::Tokenizer t = tok::Tokenizer::load(p);
  EXPECT_EQ(t.vocab_size(), 10);
  EXPECT_EQ(t.decode({3, 4}, false), "t3t4");

  const std::string m = error_of([&] { load_gguf_model(p); });
  EXPECT_NE(m.find(p + ": the file holds the GGUF header only"), std::string::npos) << m;
  EXPECT_NE(m.find("lmscope-bpe --tokenizer"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// ---- which CONTROL tokens are special ----------------------------------------------------------

// llama.cpp's convert_hf_to_gguf.py stores every added token that looks special (<|...|>,
// <｜...｜>) as CONTROL, whatever its "special" flag; the GGUF keeps no other trace of it.
// DeepSeek-R1-Distill-Qwen's tokenizer.json "added_tokens"
// (huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B/blob/main/tokenizer.json; the 7B
// GGUF has the same added tokens and ids) has <｜User｜> (151644), <｜Assistant｜> (151645), <|EOT|> (151647) and the FIM
// tokens (151659..151664) "special": false, so HF's decode(skip_special_tokens=True) keeps them;
// BOS, EOS and the vision tokens are "special": true. For pre "deepseek-r1-qwen" we follow the
// tokenizer.json; for other pre names CONTROL stays special.
std::string r1_like_gguf(const testing_util::TempDir& tmp, const std::string& pre) {
  ggtest::Writer w;
  w.kv_str("general.architecture", "qwen2");
  w.kv_str("tokenizer.ggml.model", "gpt2");
  w.kv_str("tokenizer.ggml.pre", pre);
  w.kv_str_array("tokenizer.ggml.tokens", {"H", "i", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>",
                                           "<｜Assistant｜>", "<|EOT|>", "<think>", "<|vision_pad|>", "<|fim_prefix|>"});
  w.kv_i32_array("tokenizer.ggml.token_type", {1, 1, 3, 3, 3, 3, 3, 4, 3, 3});   // as llama.cpp writes them
  w.kv_str_array("tokenizer.ggml.merges", {});
  w.kv_u32("tokenizer.ggml.bos_token_id", 2);
  w.kv_u32("tokenizer.ggml.eos_token_id", 3);
  const std::string path = tmp.file(pre + ".gguf");
  iotest::write_file(path, w.build());
  return path;
}

TEST(GgufSpecialTokens, DeepSeekR1KeepsWhatItsTokenizerJsonMarksNotSpecial) {
  testing_util::TempDir tmp;
  const std::vector<int32_t> all = {2, 4, 0, 1, 5, 7, 6, 9, 8, 3};
  tok::Tokenizer r1 = tok::Tokenizer::load(r1_like_gguf(tmp, "deepseek-r1-qwen"));
  EXPECT_EQ(r1.decode(all, false),
            "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think><|EOT|><|fim_prefix|><|vision_pad|><｜end▁of▁sentence｜>");
  EXPECT_EQ(r1.decode(all, true), "<｜User｜>Hi<｜Assistant｜><think><|EOT|><|fim_prefix|>");
  for (int32_t id : {4, 5, 6, 9}) EXPECT_FALSE(r1.is_special(id)) << r1.token_text(id);
  for (int32_t id : {2, 3, 8}) EXPECT_TRUE(r1.is_special(id)) << r1.token_text(id);
  // Encoding does not change: special or not, added tokens are matched whole.
  EXPECT_EQ(r1.encode("<｜User｜>Hi<｜Assistant｜>", false), (std::vector<int32_t>{4, 0, 1, 5}));

  tok::Tokenizer qwen2 = tok::Tokenizer::load(r1_like_gguf(tmp, "qwen2"));   // CONTROL = special
  EXPECT_EQ(qwen2.decode(all, true), "Hi<think>");
  EXPECT_EQ(qwen2.encode("<｜User｜>Hi<｜Assistant｜>", false), (std::vector<int32_t>{4, 0, 1, 5}));
}

// ---- the real file ---------------------------------------------------------------------------

const std::string kR1 = kRoot + "/models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf";
#define SKIP_WITHOUT_R1() SKIP_WITHOUT_FILE(kR1, "scripts/fetch-r1-tokenizer.sh")

const tok::Tokenizer& r1() {
  static const std::unique_ptr<tok::Tokenizer> t = std::make_unique<tok::Tokenizer>(tok::Tokenizer::load(kR1));
  return *t;
}

TEST(GgufR1Header, LoadsAsATokenizerNotAsAModel) {
  SKIP_WITHOUT_R1();
  const GgufFile f = GgufFile::open(kR1, GgufOpen::MetadataOnly);
  EXPECT_FALSE(f.has_tensor_data());
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "deepseek-r1-qwen");
  const tok::Tokenizer& t = r1();
  EXPECT_EQ(t.vocab_size(), 152064);
  EXPECT_EQ(t.bos_id(), 151646);
  EXPECT_EQ(t.eos_id(), 151643);
  EXPECT_EQ(t.pad_id(), 151654);
  EXPECT_NE(t.describe().find("151387 merges"), std::string::npos) << t.describe();
  const std::string m = error_of([] { load_gguf_model(kR1); });
  EXPECT_NE(m.find("the file holds the GGUF header only"), std::string::npos) << m;
}

TEST(GgufR1Header, EncodesAsQwen2AndAddsBos) {
  SKIP_WITHOUT_R1();
  const tok::Tokenizer& t = r1();
  // R1-Distill-Qwen keeps Qwen2.5's 151,643 BPE tokens and merges: plain text gives the ids of
  // qwen-bpe (Qwen3, the same base vocabulary), which HF's references check.
  const tok::Tokenizer& qwen = tokenizer("qwen-bpe");
  auto has_added = [](const tok::Tokenizer& k, const std::vector<int32_t>& ids) {
    return std::any_of(ids.begin(), ids.end(), [&](int32_t id) { return k.is_added(id); });
  };
  int same = 0, plain = 0;
  for (const std::string& s : corpus()) {
    const std::vector<int32_t> a = t.encode(s, false), b = qwen.encode(s, false);
    if (has_added(t, a) || has_added(qwen, b)) continue;   // the added tokens differ (<think> ...)
    ++plain;
    same += a == b;
  }
  EXPECT_GT(plain, 400);
  EXPECT_EQ(same, plain);
  std::printf("[ r1 ] %d/%d corpus strings without added tokens give qwen-bpe's ids\n", same, plain);
  EXPECT_EQ(t.encode("<｜User｜>Hello world<｜Assistant｜>", true), (std::vector<int32_t>{151646, 151644, 9707, 1879, 151645}));
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{151646}));   // HF: tokenizer("") == [bos]
}

TEST(GgufR1Header, DecodeSkipSpecialKeepsUserAndAssistant) {
  SKIP_WITHOUT_R1();
  const tok::Tokenizer& t = r1();
  const std::vector<int32_t> ids = {151646, 151644, 9707, 151645, 151648, 151643, 151654};
  EXPECT_EQ(t.decode(ids, false), "<｜begin▁of▁sentence｜><｜User｜>Hello<｜Assistant｜><think><｜end▁of▁sentence｜><|vision_pad|>");
  EXPECT_EQ(t.decode(ids, true), "<｜User｜>Hello<｜Assistant｜><think>");   // the tokenizer.json flags (see above)
}

TEST(GgufR1Header, ChatTemplateOfTheFile) {
  SKIP_WITHOUT_R1();
  const tok::Tokenizer& t = r1();
  std::string prompt = tok::format_chat(t, {{"system", "Be brief."}, {"user", "Hi"}}, true);
  EXPECT_EQ(prompt, "<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hi<｜Assistant｜>");
  EXPECT_EQ(t.encode(prompt, false), (std::vector<int32_t>{151646, 3430, 9814, 13, 151644, 13048, 151645}));
}

}  // namespace
