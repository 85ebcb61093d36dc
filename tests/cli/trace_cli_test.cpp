// Bad input to lmscope-trace: every case must end with ONE line on stderr that names the file
// (or option) and what is wrong, a non-zero exit status, no crash, and no trace left behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstring>
#include <sstream>

#include "tests/cli/cli_test_util.h"
#include "tests/test_util.h"
#include "tokenizer/ids_text.h"

namespace fs = std::filesystem;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";

struct RunResult {
  int exit_code = -1;   // -1: killed by a signal (a crash)
  std::string err;
};

RunResult run(const std::string& args) {
  fs::path err_file = fs::temp_directory_path() / ("lmscope-cli-" + std::to_string(::getpid()) + ".err");
  std::string cmd = kBin + "/lmscope-trace -q " + args + " > /dev/null 2> " + err_file.string();
  int status = std::system(cmd.c_str());
  RunResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  std::ifstream f(err_file);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  return r;
}

// A one-line error containing every `needle`.
void expect_one_line_error(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

// A scratch copy of tiny-qwen2 to break.
struct ModelCopy {
  fs::path dir;
  ModelCopy() {
    dir = fs::temp_directory_path() / ("lmscope-badmodel-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (auto& e : fs::directory_iterator(kTiny)) fs::copy(e.path(), dir / e.path().filename());
  }
  ~ModelCopy() { fs::remove_all(dir); }
  std::string weights() const { return (dir / "model.safetensors").string(); }

  // Rewrites the safetensors header with `edit` applied; the data bytes stay as they were.
  template <class F>
  void edit_header(F edit) {
    std::ifstream in(weights(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    nlohmann::json h = nlohmann::json::parse(bytes.substr(8, n));
    edit(h);
    std::string hs = h.dump();
    uint64_t m = hs.size();
    std::ofstream out(weights(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&m), 8);
    out << hs << bytes.substr(8 + n);
  }
  void edit_config(const std::string& key, const nlohmann::json& value) {
    std::ifstream in(dir / "config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    c[key] = value;
    std::ofstream(dir / "config.json") << c.dump(2);
  }
};

std::string ids(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::to_string(10 + i % 500);
  }
  return s;
}

}  // namespace

TEST(TraceCli, TruncatedSafetensors) {
  ModelCopy m;
  fs::resize_file(m.weights(), fs::file_size(m.weights()) / 2);
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"), {"model.safetensors"});
}

TEST(TraceCli, HeaderLengthPastTheEnd) {
  ModelCopy m;
  {
    std::fstream f(m.weights(), std::ios::binary | std::ios::in | std::ios::out);
    uint64_t huge = fs::file_size(m.weights()) + 100;
    f.write(reinterpret_cast<const char*>(&huge), 8);
  }
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"), {"model.safetensors", "header"});
}

TEST(TraceCli, UnknownDtype) {
  ModelCopy m;
  m.edit_header([](nlohmann::json& h) { h["model.norm.weight"]["dtype"] = "Q4_0"; });
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"),
                        {"model.safetensors", "model.norm.weight", "Q4_0"});
}

TEST(TraceCli, ByteSizeDisagreesWithShape) {
  ModelCopy m;
  m.edit_header([](nlohmann::json& h) { h["model.norm.weight"]["shape"] = {65}; });
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"),
                        {"model.safetensors", "model.norm.weight", "bytes"});
}

TEST(TraceCli, MissingTensor) {
  ModelCopy m;
  m.edit_header([](nlohmann::json& h) { h.erase("model.layers.2.self_attn.k_proj.bias"); });
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"),
                        {"model.layers.2.self_attn.k_proj.bias", "missing"});
}

TEST(TraceCli, ConfigFieldOfTheWrongType) {
  ModelCopy m;
  m.edit_config("hidden_size", "64");
  expect_one_line_error(run("--model " + m.dir.string() + " --prompt-ids 1,2,3"), {"config.json", "hidden_size"});
}

TEST(TraceCli, HooksNamingNoKnownHook) {
  expect_one_line_error(run("--model " + kTiny + " --prompt-ids 1,2,3 --hooks 'layers.*.atn.q' --out /tmp/x.h5"),
                        {"--hooks", "layers.*.atn.q"});
}

TEST(TraceCli, PromptLongerThanTheContext) {
  expect_one_line_error(run("--model " + kTiny + " --prompt-ids " + ids(129)), {"max_position_embeddings", "129"});
}

TEST(TraceCli, TokenIdOutsideTheVocabulary) {
  expect_one_line_error(run("--model " + kTiny + " --prompt-ids 1,5000"), {"5000", "vocabulary"});
}

TEST(TraceCli, UnwritableOutputLeavesNothing) {
  const std::string out = "/nonexistent-dir/sub/a.h5";
  expect_one_line_error(run("--model " + kTiny + " --prompt-ids 1,2,3 --out " + out), {out});
  EXPECT_TRUE(lmscope::testing_util::trace_temporaries(out).empty());
}

TEST(TraceCli, FailureMidRunLeavesNoPartialTrace) {
  // The writer is created, then the forward fails (a token id outside the vocabulary):
  // neither the trace nor its temporary may remain.
  fs::path out = fs::temp_directory_path() / ("lmscope-midrun-" + std::to_string(::getpid()) + ".h5");
  expect_one_line_error(run("--model " + kTiny + " --prompt-ids 1,5000 --out " + out.string()), {"vocabulary"});
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(lmscope::testing_util::trace_temporaries(out.string()).empty());
}

TEST(TraceCli, GoodRunWritesACompleteTraceAndWarnsAboutHooksThatNeverFired) {
  fs::path out = fs::temp_directory_path() / ("lmscope-good-" + std::to_string(::getpid()) + ".h5");
  RunResult r = run("--model " + kTiny + " --prompt-ids 1,2,3 --max-new-tokens 2 --no-cache --hooks 'kv.0.k,logits' --out " +
              out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("requested hook 'kv.0.k' never fired"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(lmscope::testing_util::trace_temporaries(out.string()).empty());
  fs::remove(out);
}

TEST(TraceCli, StepRowOutsideTheBatch) {
  // Was a heap-buffer-overflow read in the stepper's pages.
  for (const char* row : {"-1", "1", "7"})
    expect_one_line_error(run("--model " + kTiny + " --prompt-ids 1,2,3 --max-new-tokens 1 --step --step-row " + std::string(row)),
                          {"lmscope-trace: error:", "--step-row", row, "batch of 1"});
  RunResult ok = run("--model " + kTiny + " --prompt-ids 1,2,3 --prompt-ids 4,5 --max-new-tokens 1 --step --step-row 1");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}


TEST(TraceCli, OptionConversionErrorsAreOneUsageLine) {
  // Were two lines without the tool's name, exit 104/105.
  const std::string m = "--model " + kTiny + " --prompt-ids 1,2 ";
  expect_usage_error(tool("lmscope-trace", m + "--max-new-tokens 2147483648"), "lmscope-trace", {"--max-new-tokens", "2147483648"});
  expect_usage_error(tool("lmscope-trace", m + "--top-k 99999999999"), "lmscope-trace", {"--top-k", "99999999999"});
  expect_usage_error(tool("lmscope-trace", m + "--seed 1e30"), "lmscope-trace", {"--seed", "1e30"});
  expect_usage_error(tool("lmscope-trace", m + "--compress 10"), "lmscope-trace", {"--compress", "10"});
  expect_usage_error(tool("lmscope-trace", m + "--no-such-option"), "lmscope-trace", {"--no-such-option"});
  expect_usage_error(tool("lmscope-bench", "--batch x"), "lmscope-bench", {"--batch"});
  expect_usage_error(tool("lmscope-bpe", "--tokenizer t --repeat x"), "lmscope-bpe", {"--repeat"});
  expect_usage_error(tool("lmscope-cache", "--max-new-tokens x"), "lmscope-cache", {"--max-new-tokens"});
  expect_usage_error(tool("lmscope-padding", "--max-new-tokens x"), "lmscope-padding", {"--max-new-tokens"});
  expect_usage_error(tool("lmscope-score", "--model m --bogus"), "lmscope-score", {"--bogus"});
  expect_usage_error(tool("lmscope-diff", "a.h5 b.h5 --row x"), "lmscope-diff", {"--row"});
}

TEST(TraceCli, HelpStillPrintsHelpAndExitsZero) {
  for (const char* t : {"lmscope-trace", "lmscope-bench", "lmscope-bpe", "lmscope-cache", "lmscope-diff", "lmscope-padding",
                        "lmscope-score"}) {
    auto r = tool(t, "--help");
    EXPECT_EQ(r.code, 0) << t << ": " << r.err;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << t;
  }
}

TEST(TraceCli, MalformedTokenIdsAreRefused) {
  // Only decimal digits make an id: "1,,2", "1,2," and "+5" are refused.
  for (const char* ids : {"1,,2", "1,2,", ",1"})
    expect_one_line_error(run("--model " + kTiny + " --prompt-ids '" + ids + "'"), {"--prompt-ids", "an empty token id"});
  for (const char* ids : {"+5", "1,-2", "0x10", "1 2", "99999999999"})
    expect_one_line_error(run("--model " + kTiny + " --prompt-ids '" + ids + "'"), {"--prompt-ids", "is not a token id"});
  EXPECT_EQ(lmscope::parse_ids(" 1, 2 ,3", "--x"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(lmscope::parse_ids("2147483647", "--x"), (std::vector<int32_t>{2147483647}));
}

TEST(TraceCli, EmptyOutIsRefused) {
  // Was exit 0 writing nothing.
  expect_usage_error(tool("lmscope-trace", "--model " + kTiny + " --prompt-ids 1,2 --out ''"), "lmscope-trace",
                     {"--out", "empty"});
}

TEST(TraceCli, NonFiniteFloatsAreRefused) {
  // --temperature 1e39 does not fit a float (it would become inf): refused.
  const std::string m = "--model " + kTiny + " --prompt-ids 1,2 --do-sample ";
  for (const char* o : {"--temperature 1e39", "--temperature inf", "--top-p nan", "--repetition-penalty -1e300"})
    expect_usage_error(tool("lmscope-trace", m + o), "lmscope-trace", {std::string(o).substr(0, std::string(o).find(' ')), "finite"});
  auto ok = tool("lmscope-trace", "-q " + m + "--temperature 0.7 --max-new-tokens 1");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST(TraceCli, NegativeSeedIsRefused) {
  // Was recorded as -1 (wrapped to 2^64-1).
  expect_usage_error(tool("lmscope-trace", "--model " + kTiny + " --prompt-ids 1,2 --do-sample --seed -1"), "lmscope-trace",
                     {"--seed", "negative"});
  auto ok = tool("lmscope-trace", "-q --model " + kTiny + " --prompt-ids 1,2 --do-sample --max-new-tokens 1 --seed 18446744073709551615");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// The closing summary on stderr gives the trace's size, as the file system has it.
TEST(TraceCli, TheSummaryGivesTheTraceSize) {
  lmscope::testing_util::TempDir dir;
  const std::string out = dir.file("t.h5");
  lmscope::testing_util::CliRun r = lmscope::testing_util::run_cli(kBin + "/lmscope-trace --model " + kTiny +
                                                 " --prompt-ids 1,2,3 --max-new-tokens 1 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  char size[32];
  std::snprintf(size, sizeof size, "(%.1f MB)", double(fs::file_size(out)) / 1e6);
  EXPECT_NE(r.err.find(" tensors -> " + out + " " + size), std::string::npos) << r.err;
}
