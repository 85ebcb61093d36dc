// The tools on the real Gemma 3 270M file (docs/gemma3.md): its SentencePiece tokenizer read from
// the GGUF (tokenizer.ggml.model "llama"), so a text prompt becomes HF's ids (BOS first, as the
// file's add_bos_token says) and the greedy continuation is HF's (golden/gemma3/manifest.json,
// made by golden/make_golden.py --gemma3); lmscope-bpe shows each merge by score and the byte
// fallback. Skipped, saying so, when the file is absent (scripts/fetch-gemma3-model.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "tests/cli/cli_test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using lmscope::testing_util::TempDir;

namespace {

const std::string kModel = kSourceDir + "/models/gemma-3-270m-q4_k_m.gguf";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + " is missing");
  return nlohmann::json::parse(in);
}

// 'text' for the shell (the prompts hold parentheses and spaces).
std::string sh_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<int32_t> row_ids(const HookData& h) { return std::vector<int32_t>(h.values.begin(), h.values.end()); }

}  // namespace

// One prompt per run, as HF made each golden: `--prompt TEXT` gives HF's prompt ids and its 8
// greedy tokens.
TEST(Gemma3Cli, TracePromptTextIsHuggingFacesIdsAndGreedy) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << kModel << " is absent: run scripts/fetch-gemma3-model.sh";
  const nlohmann::json m = read_json(kSourceDir + "/golden/gemma3/manifest.json");
  TempDir tmp;
  for (const auto& g : m["traces"]) {
    const std::string text = g["text"], out = tmp.file("t.h5");
    const auto r = tool("lmscope-trace", "-q --model " + kModel + " --prompt " + sh_quoted(text) +
                                             " --max-new-tokens 8 --hooks 'tokens.*' --out " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    TraceReader tr(out);
    EXPECT_EQ(row_ids(tr.read(0, "tokens.input_ids")), g["prompt_ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(row_ids(tr.generated_ids()), g["generated_ids"].get<std::vector<int32_t>>()) << text;
  }
}

// lmscope-bpe --json on the file: the ids are HF's (golden/gemma3/tokenizer.json), every merge
// makes the token its two pieces spell with that token's score in the file
// (tokenizer.ggml.scores), and a character no token spells ("𓀀", U+13000, F0 93 80 80) is
// its four byte tokens <0xF0> <0x93> <0x80> <0x80>.
TEST(Gemma3Cli, BpeShowsMergesByScoreAndByteFallback) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << kModel << " is absent: run scripts/fetch-gemma3-model.sh";
  const GgufFile f = GgufFile::open(kModel, GgufOpen::MetadataOnly);
  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
  const std::vector<double> scores = f.get_float_array("tokenizer.ggml.scores");
  const nlohmann::json ref = read_json(kSourceDir + "/golden/gemma3/tokenizer.json");
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    if (text.find('\x01') != std::string::npos) continue;   // a control character: not for a shell argument
    const auto r = tool("lmscope-bpe", "--tokenizer " + kModel + " --json " + sh_quoted(text));
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ids"], c["ids"]) << text;
    EXPECT_TRUE(j["by_score"].get<bool>());
    for (const auto& w : j["words"])
      for (const auto& mg : w["merges"]) {
        const int left = mg["left_id"], right = mg["right_id"], merged = mg["merged_id"];
        EXPECT_EQ(tokens.at(size_t(left)) + tokens.at(size_t(right)), tokens.at(size_t(merged))) << text;
        EXPECT_EQ(mg["score"].get<double>(), scores.at(size_t(merged))) << text;
      }
  }

  const auto r = tool("lmscope-bpe", "--tokenizer " + kModel + " 'x\xF0\x93\x80\x80'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("byte fallback: \"\xF0\x93\x80\x80\" is no token -> <0xF0> <0x93> <0x80> <0x80>"), std::string::npos)
      << r.out;
  std::vector<int32_t> byte_ids;
  for (const char* b : {"<0xF0>", "<0x93>", "<0x80>", "<0x80>"})
    byte_ids.push_back(int32_t(std::find(tokens.begin(), tokens.end(), b) - tokens.begin()));
  const std::string want = "2," + std::to_string(std::find(tokens.begin(), tokens.end(), "x") - tokens.begin()) + "," +
                           std::to_string(byte_ids[0]) + "," + std::to_string(byte_ids[1]) + "," +
                           std::to_string(byte_ids[2]) + "," + std::to_string(byte_ids[3]);
  EXPECT_NE(r.out.find("6 ids: " + want), std::string::npos) << r.out;
}
