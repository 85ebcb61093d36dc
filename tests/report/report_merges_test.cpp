// The report's token section on a SentencePiece trace (Gemma 3 270M): each merge of the prompt
// with the score that chose it (the merged token's tokenizer.ggml.scores entry), and the
// character spelled by bytes with its byte tokens. Skipped, saying so, when the file is absent
// (scripts/fetch-gemma3-model.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/format_number.h"
#include "io/gguf.h"
#include "report/report_data.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

TEST(ReportMerges, SentencePieceScoresAndByteFallback) {
  const std::string model = std::string(LMSCOPE_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-gemma3-model.sh";
  TempDir dir;
  const std::string out = dir.file("g.h5");
  // " café" is made by merges; "𓀀" (U+13000) is no token: its four bytes are.
  const CliRun r = run_cli(std::string(LMSCOPE_BINARY_DIR) + "/lmscope-trace -q --model " + model +
                           " --prompt 'a café \xF0\x93\x80\x80' --max-new-tokens 1 --hooks 'tokens.*' --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json page = report_data(TraceReader(out), ReportOptions{}, nullptr);
  const nlohmann::json& words = page["tokens"][0]["words"];
  ASSERT_EQ(words.size(), 2u) << words.dump();   // <bos>, then the text as one SentencePiece word
  std::vector<std::string> merges = words[1]["merges"].get<std::vector<std::string>>();

  // The last merge makes " café" (▁café): its score is the file's.
  const GgufFile f = GgufFile::open(model, GgufOpen::MetadataOnly);
  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
  const std::vector<double> scores = f.get_float_array("tokenizer.ggml.scores");
  const size_t cafe = size_t(std::find(tokens.begin(), tokens.end(), "\xE2\x96\x81" "caf\xC3\xA9") - tokens.begin());
  ASSERT_LT(cafe, tokens.size());
  const std::string score = "(score " + fmt("%g", scores[cafe]) + ")";
  bool found = false;
  for (const std::string& m : merges) found |= m.find(" caf\xC3\xA9  " + score) != std::string::npos;
  EXPECT_TRUE(found) << "no merge ending in ' café  " << score << "' in " << words[1].dump();
  EXPECT_EQ(merges.back(), "byte fallback: \xF0\x93\x80\x80 is no token \xE2\x86\x92 <0xF0> <0x93> <0x80> <0x80>");
}
