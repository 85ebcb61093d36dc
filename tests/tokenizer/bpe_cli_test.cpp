// lmscope-bpe as a user runs it: --json fields, --decode, --chat, --h5, --bench, and bad
// input as one line on stderr with exit status 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/hdf5.h"
#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

using testing_util::CliRun;

CliRun run(const std::string& args) { return testing_util::run_cli(kBin + "/lmscope-bpe " + args); }

std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const std::string kQwen = kRoot + "/golden/tokenizers/qwen-bpe";

TEST(BpeCli, JsonHasIdsTokensAndWordsWithMerges) {
  const nlohmann::json& sample = refs("qwen-bpe")["sample"];
  CliRun r = run("--tokenizer " + kQwen + " --json " + q(sample["text"].get<std::string>()));
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], sample["ids"]);
  EXPECT_EQ(j["tokens"], sample["tokens"]);   // HF Encoding.tokens
  ASSERT_TRUE(j["words"].is_array());
  std::vector<int32_t> concat;
  size_t merges = 0;
  for (const auto& w : j["words"]) {
    ASSERT_TRUE(w["text"].is_string());
    ASSERT_TRUE(w["merges"].is_array());
    for (const auto& m : w["merges"]) {
      EXPECT_TRUE(m["left"].is_string());
      EXPECT_TRUE(m["right"].is_string());
      EXPECT_TRUE(m["rank"].is_number_integer());
      const tok::Tokenizer& t = tokenizer("qwen-bpe");
      EXPECT_EQ(t.token_text(m["merged_id"].get<int32_t>()),
                t.token_text(m["left_id"].get<int32_t>()) + t.token_text(m["right_id"].get<int32_t>()));
      ++merges;
    }
    for (const auto& id : w["ids"]) concat.push_back(id.get<int32_t>());
  }
  EXPECT_GT(merges, 0u);
  EXPECT_EQ(nlohmann::json(concat), j["ids"]);
}

// --steps: the line under the last merge is the word's final tokens. A vocabulary without
// merges for most Chinese bytes (the tiny tokenizer): the pieces as vocabulary strings (HF's
// Encoding.tokens, which --json carries and the golden tests hold to HF) and the text they make.
TEST(BpeCli, StepsAndPiecesThatArePartsOfCharacters) {
  const std::string tiny = kRoot + "/golden/models/tiny-qwen2";
  CliRun j = run("--tokenizer " + tiny + " --json 中华人民共和国");
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json js = nlohmann::json::parse(j.out);
  CliRun r = run("--tokenizer " + tiny + " --steps 中华人民共和国");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string strings, pieces;
  for (const auto& t : js["tokens"]) strings.append(strings.empty() ? "\"" : " \"").append(t.get<std::string>()).append("\"");
  for (const auto& p : js["pieces"]) pieces.append(pieces.empty() ? "\"" : " \"").append(p.get<std::string>()).append("\"");
  EXPECT_NE(r.out.find("vocabulary strings: " + strings + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("their bytes add up to \"中华人民共和国\": 7 characters in " + std::to_string(js["ids"].size()) +
                       " tokens"),
            std::string::npos)
      << r.out;
  const size_t last_merge = r.out.rfind("rank ");
  ASSERT_NE(last_merge, std::string::npos);
  const size_t line = r.out.find('\n', last_merge) + 1;
  EXPECT_EQ(r.out.substr(line, r.out.find('\n', line) - line), "          " + pieces) << r.out;
  // Whole characters only (qwen-bpe has the word): no such lines.
  CliRun q = run("--tokenizer " + kQwen + " 中华人民共和国");
  EXPECT_EQ(q.out.find("vocabulary strings"), std::string::npos) << q.out;
}

TEST(BpeCli, ReadableTextShowsTheMerges) {
  CliRun r = run("--tokenizer " + kQwen + " " + q("中华人民共和国成立于 1949 年。"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"中华\" + \"人民\" -> \"中华人民\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("11 ids: 105492,104773,106337,220,16,24,19,24,74577,112,1773"), std::string::npos) << r.out;
}

TEST(BpeCli, DecodeAndFileInput) {
  CliRun r = run("--tokenizer " + kQwen + " --decode 105492,104773,106337");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "中华人民共和国成立于\n");
  r = run("--tokenizer " + kQwen + " --json --decode 151644,872,151645 --skip-special");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "user");

  testing_util::TempDir tmp;
  std::ofstream(tmp.file("in.txt")) << "line one\nline two";
  r = run("--tokenizer " + kQwen + " --json --file " + tmp.file("in.txt"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"].get<std::vector<int32_t>>(), tokenizer("qwen-bpe").encode("line one\nline two"));
}

TEST(BpeCli, ChatAppliesTheTemplate) {
  CliRun r = run("--tokenizer " + kRoot + "/golden/tokenizers/deepseek-v3-bpe --json --chat --chat-format deepseek-r1 Hi");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["text"], "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think>\n");
  EXPECT_EQ(j["ids"][0], 0);   // BOS comes from the template, not the post-processor
  r = run("--tokenizer " + kQwen + " --json --chat --system " + q("Be brief.") + " " + q("What is BPE?"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"],
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is BPE?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(BpeCli, WritesAnHdf5TraceAndBenchmarks) {
  testing_util::TempDir tmp;
  CliRun r = run("--tokenizer " + kQwen + " --h5 " + tmp.file("t.h5") + " hello");
  ASSERT_EQ(r.code, 0) << r.err;
  h5::File f = h5::File::open_read(tmp.file("t.h5"));
  EXPECT_EQ(f.root().open_dataset("tokenizer/row_0/text").read_strings()[0], "hello");
  EXPECT_EQ(f.root().attr_int("complete"), 1);

  std::ofstream(tmp.file("b.txt")) << "some text to time\nand another line 12345\n";
  r = run("--tokenizer " + kQwen + " --bench --repeat 2 --file " + tmp.file("b.txt"));
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["mb_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["lines"], 3);
}

// An empty text is a valid input, as TEXT ("") or as an empty --file: no ids, or only the
// special tokens the post-processor adds (HF: tokenizer("") -> [] or [bos]).
TEST(BpeCli, EmptyTextIsValid) {
  testing_util::TempDir tmp;
  std::ofstream(tmp.file("empty.txt")).flush();
  const std::string options_a = kRoot + "/" + vocab_dirs().at("tiny-options-a");   // adds <|im_start|> ... <|im_end|>
  const tok::Tokenizer& a = tokenizer("tiny-options-a");
  const nlohmann::json around = {*a.token_to_id("<|im_start|>"), *a.token_to_id("<|im_end|>")};
  for (const std::string& input : {std::string("''"), "--file " + tmp.file("empty.txt")}) {
    CliRun r = run("--tokenizer " + kQwen + " --json " + input);
    ASSERT_EQ(r.code, 0) << input << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], nlohmann::json::array()) << input;
    r = run("--tokenizer " + options_a + " --json " + input);
    ASSERT_EQ(r.code, 0) << input << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], around) << input;
    r = run("--tokenizer " + options_a + " --json --no-special " + input);
    ASSERT_EQ(r.code, 0) << input << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], nlohmann::json::array()) << input;
  }
}

TEST(BpeCli, BadInputIsOneLineAndExit1) {
  auto expect_error = [](const CliRun& r, const std::vector<std::string>& needles) {
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in " << r.err;
  };
  testing_util::TempDir tmp;
  std::ofstream(tmp.file("bad.txt")) << "ok\xFF";
  expect_error(run("--tokenizer " + kQwen + " --file " + tmp.file("bad.txt")), {"lmscope-bpe: error:", "byte offset 2"});
  expect_error(run("--tokenizer /nonexistent hello"), {"/nonexistent", "does not exist"});
  expect_error(run("--tokenizer " + kQwen + " --decode 1,x"), {"--decode", "'x'"});
  expect_error(run("--tokenizer " + kQwen + " --decode 999999"), {"999999", "not in the vocabulary"});
  expect_error(run("--tokenizer " + kRoot + "/golden/models/tiny-qwen2 --chat hi"), {"chat template", "--chat-format"});
  expect_error(run("--tokenizer " + kQwen + " --chat --chat-format llama hi"), {"--chat-format", "llama"});
  expect_error(run("--tokenizer " + kQwen), {"nothing to tokenize"});
}

}  // namespace
