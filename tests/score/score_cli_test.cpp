// lmscope-score's command line: the report, --chat, --ids, a batch, and bad input as exactly
// one line on stderr with exit status 1 (never a crash). On golden/models/tiny-qwen2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

using namespace lmscope;
using testing_util::CliRun;
using testing_util::run_cli;

namespace {

const std::string kTiny = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";
const std::string kTool = std::string(LMSCOPE_BINARY_DIR) + "/lmscope-score";

CliRun score(const std::string& args) { return run_cli(kTool + " --model " + kTiny + " " + args); }

// Exit 1, nothing on stdout, one line on stderr that says `part`.
void expect_one_line_error(const CliRun& r, const std::string& part) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("lmscope-score: error: " + part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

TEST(ScoreCli, TextReportHasEveryTokenAndTheLoss) {
  CliRun r = score("--text 'The golden fish spoke to the old man.'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("text 0: \"The golden fish spoke to the old man.\" (11 tokens)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\" golden\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss (mean NLL) "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 10 predicted tokens, perplexity "), std::string::npos) << r.out;
}

TEST(ScoreCli, IdsAndTextOfTheSameTokensScoreAlike) {
  // The text encodes to these ids (golden/traces' prompt A), so both runs must agree exactly.
  CliRun a = score("--json --text 'The golden fish spoke to the old man.'");
  CliRun b = score("--json --ids 330,749,537,264,935,314,267,681,289,295,16");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["rows"][0]["ids"], jb["rows"][0]["ids"]);
  EXPECT_EQ(ja["loss"], jb["loss"]);
  EXPECT_EQ(jb["rows"][0]["text"], "");
}

TEST(ScoreCli, BatchRowsScoreAsIfAloneAndTheLossIsTheTokenMean) {
  CliRun a = score("--json --text 'Hello world!'");
  CliRun b = score("--json --text 'The golden fish spoke to the old man.'");
  CliRun ab = score("--json --text 'Hello world!' --text 'The golden fish spoke to the old man.'");
  ASSERT_EQ(ab.code, 0) << ab.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out), jab = nlohmann::json::parse(ab.out);
  ASSERT_EQ(jab["rows"].size(), 2u);
  // Right padding: the short row's real tokens see the same positions and keys as alone
  // (float32 sums over a different batch shape may round differently: 1e-4 of NLLs ~10).
  EXPECT_NEAR(jab["rows"][0]["mean_nll"].get<double>(), ja["loss"].get<double>(), 1e-4);
  EXPECT_NEAR(jab["rows"][1]["mean_nll"].get<double>(), jb["loss"].get<double>(), 1e-4);
  const double na = ja["n_predicted"], nb = jb["n_predicted"];
  EXPECT_EQ(jab["n_predicted"].get<double>(), na + nb);
  EXPECT_NEAR(jab["loss"].get<double>(), (ja["loss"].get<double>() * na + jb["loss"].get<double>() * nb) / (na + nb), 1e-4);
}

TEST(ScoreCli, ChatWrapsTheTextInTheTemplate) {
  CliRun r = score("--json --chat --chat-format chatml --text 'Hello world!'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const tok::Tokenizer t = tok::Tokenizer::load(kTiny);
  const std::string wrapped = tok::format_chat(t, {{"user", "Hello world!"}}, true, tok::ChatFormat::ChatML);
  EXPECT_EQ(j["rows"][0]["ids"], t.encode(wrapped, false));
  EXPECT_EQ(j["rows"][0]["ids"][0], 1);   // <|im_start|>
  EXPECT_EQ(j["rows"][0]["text"], "Hello world!");
}

TEST(ScoreCli, BadInputIsOneLine) {
  expect_one_line_error(score("--text ''"), "--text is empty");
  expect_one_line_error(score(""), "nothing to score: give --text or --ids");
  expect_one_line_error(score("--ids 5,1024"), "token id 1024 is outside the vocabulary (1024)");
  expect_one_line_error(score("--ids 5,x"), "--ids: 'x' is not a token id");
  expect_one_line_error(score("--ids 330"), "text 0 has 1 token(s): nothing to predict");
  expect_one_line_error(score("--text 'A'"), "text 0 has 1 token(s): nothing to predict");
  expect_one_line_error(score("--chat --ids 1,2"), "--chat wraps --text; no --text given");
  // 129 positions on a model of 128: scored before (29k tokens took 3.75 GB).
  std::string ids = "1";
  for (int i = 1; i < 129; ++i) ids += ",1";
  expect_one_line_error(score("--ids " + ids), "text 0 has 129 tokens, more than max_position_embeddings 128 (config.json)");
  expect_one_line_error(run_cli(kTool + " --model /nonexistent --text 'Hello'"), "");
}

// --range A:B: the summary is the per-token rows' own arithmetic over positions A..B (checked
// here against the JSON rows), the whole text's range is the loss, and bad ranges are usage
// errors (exit 2, one line).
TEST(ScoreCli, RangeSummarizesExactlyItsRows) {
  CliRun r = score("--json --text 'The golden fish spoke to the old man.' --range 3:6 --range 1: --range :2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranges"].size(), 3u);
  const auto& toks = j["rows"][0]["tokens"];
  for (const auto& s : j["ranges"]) {
    double nll = 0, p = 0;
    int n = 0, top = 0;
    for (const auto& t : toks) {
      const int64_t pos = t["position"];
      if (pos < s["from"].get<int64_t>() || pos > s["to"].get<int64_t>()) continue;
      ++n, nll += t["nll"].get<double>(), p += t["prob"].get<double>(), top += t["top_id"] == t["id"];
    }
    ASSERT_GT(n, 0);
    EXPECT_EQ(s["n"], n);
    EXPECT_NEAR(s["mean_nll"].get<double>(), nll / n, 1e-12);
    EXPECT_NEAR(s["perplexity"].get<double>(), std::exp(nll / n), 1e-9 * std::exp(nll / n));
    EXPECT_NEAR(s["mean_p"].get<double>(), p / n, 1e-12);
    EXPECT_EQ(s["top_right"], top);
  }
  EXPECT_EQ(j["ranges"][0]["from"], 3);
  EXPECT_EQ(j["ranges"][0]["to"], 6);
  EXPECT_EQ(j["ranges"][1]["to"], 10);   // "1:" ends at the last label
  EXPECT_NEAR(j["ranges"][1]["mean_nll"].get<double>(), j["loss"].get<double>(), 1e-12);
  EXPECT_EQ(j["ranges"][2]["from"], 1);
  EXPECT_EQ(j["ranges"][2]["n"], 2);

  CliRun text = score("--text 'The golden fish spoke to the old man.' --range 3:6");
  ASSERT_EQ(text.code, 0) << text.err;
  char want[128];
  std::snprintf(want, sizeof want, "range 3:6 of text 0: 4 tokens: mean NLL %.2f, perplexity ",
                j["ranges"][0]["mean_nll"].get<double>());
  EXPECT_NE(text.out.find(want), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("top choice right "), std::string::npos) << text.out;
}

TEST(ScoreCli, BadRangesAreOneLineErrors) {
  for (const char* bad : {"x", ":", "3", "5:2", "-1:3", "1:y"}) {
    CliRun r = score(std::string("--ids 1,2,3 --range '") + bad + "'");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("lmscope-score: error: --range"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // A range past the text's labels: known only once the text is encoded.
  expect_one_line_error(score("--ids 1,2,3 --range 5:9"), "--range 5:9 holds no label of text 0");
}
