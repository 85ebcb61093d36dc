// Every tool writes its trace file through one assembler (trace/run_record.h, called by
// run_traced): the same root attributes whatever the tool, and /tokenizer/row_B for every row
// whose prompt came from text, so a padding trace shows token pieces as lmscope-trace's does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/hdf5.h"
#include "runs/run.h"
#include "tests/experiments/exp_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::exp_test;

namespace {

std::vector<std::string> sorted_root_attrs(const std::string& path) {
  std::vector<std::string> names = TraceReader(path).root_attr_names();
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> pieces(const std::string& path, int row) {
  h5::File f = h5::File::open_read(path);
  const std::string ds = "tokenizer/row_" + std::to_string(row) + "/pieces";
  if (!f.root().exists(ds)) return {};
  return f.root().open_dataset(ds).read_strings();
}

}  // namespace

TEST(RunRecord, EveryToolWritesTheSameRootAndTheTokenizerGroup) {
  testing_util::TempDir dir;
  const std::string trace = dir.file("trace.h5"), pad_dir = dir.file("padding");
  RunResult t = run_cmd(dir, kBin + "/lmscope-trace --model " + kTiny +
                                 " --prompt 'Hello world' --max-new-tokens 2 -q --out " + trace);
  ASSERT_EQ(t.code, 0) << t.err;
  RunResult p = run_cmd(dir, kBin + "/lmscope-padding --model " + kTiny +
                                 " --prompt 'Hello world' --prompt 'Hi' --max-new-tokens 2 --modes left --out-dir " + pad_dir);
  ASSERT_EQ(p.code, 0) << p.err;

  const std::vector<std::string> root = sorted_root_attrs(trace);
  for (const char* attr : {"format", "model_path", "config_json", "prompts", "gqa_map", "n_steps", "missing_hooks"})
    EXPECT_NE(std::find(root.begin(), root.end(), attr), root.end()) << attr;
  for (const char* f : {"/left.h5", "/solo_0.h5", "/solo_1.h5"}) EXPECT_EQ(sorted_root_attrs(pad_dir + f), root) << f;

  // The pieces of "Hello world" in every file that holds that prompt, at its row there.
  const std::vector<std::string> hello = pieces(trace, 0);
  ASSERT_FALSE(hello.empty()) << "lmscope-trace wrote no /tokenizer/row_0/pieces";
  EXPECT_EQ(pieces(pad_dir + "/solo_0.h5", 0), hello);
  EXPECT_EQ(pieces(pad_dir + "/left.h5", 0), hello);
  EXPECT_FALSE(pieces(pad_dir + "/left.h5", 1).empty());
  EXPECT_EQ(pieces(pad_dir + "/solo_1.h5", 0), pieces(pad_dir + "/left.h5", 1));
}

// Prompts given as ids get the merges of their text when that text encodes back to the same
// ids, and no tokenizer group when it does not.
TEST(RunRecord, IdPromptsGetMergesOnlyWhenTheirTextEncodesBack) {
  testing_util::TempDir dir;
  const std::string a = dir.file("a.h5"), b = dir.file("b.h5");
  // 42,308,333,746,3 is "Hello world!" as the tiny tokenizer encodes it; 277,269,323 is
  // " w" "orld", whose text " world" the tokenizer encodes as one id (746).
  ASSERT_EQ(run_cmd(dir, kBin + "/lmscope-trace --model " + kTiny + " --prompt-ids 42,308,333,746,3 --max-new-tokens 1 -q --out " + a).code, 0);
  ASSERT_EQ(run_cmd(dir, kBin + "/lmscope-trace --model " + kTiny + " --prompt-ids 277,269,323 --max-new-tokens 1 -q --out " + b).code, 0);
  EXPECT_EQ(pieces(a, 0).size(), 5u);
  EXPECT_TRUE(pieces(b, 0).empty());
}

// The root says which activations the block matmuls multiplied: f32, or q8 when the run asked
// for --cpu-activations q8 (the only record of that mode besides the command line).
TEST(RunRecord, ActivationsSayWhichModeRan) {
  testing_util::TempDir dir;
  for (const char* mode : {"f32", "q8"}) {
    const std::string trace = dir.file(std::string(mode) + ".h5");
    RunResult t = run_cmd(dir, kBin + "/lmscope-trace --model " + kTiny + " --prompt 'Hello world' --max-new-tokens 1 -q" +
                                   " --cpu-activations " + mode + " --out " + trace);
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_EQ(TraceReader(trace).root_attr_string("activations"), mode);
  }
}

// The JSON reports (lmscope-quant, -padding, -cache, -patch, -score, -sample) write a number
// with json_num: an infinity as a string that keeps its sign (JSON has no infinity), NaN as
// null, any other double as that double, which reads back the same.
TEST(RunRecord, JsonNumKeepsAnInfinitysSign) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(json_num(inf), nlohmann::ordered_json("inf"));
  EXPECT_EQ(json_num(-inf), nlohmann::ordered_json("-inf"));
  EXPECT_EQ(nlohmann::ordered_json({{"x", json_num(-inf)}}).dump(), R"({"x":"-inf"})");
  EXPECT_TRUE(json_num(std::nan("")).is_null());
  EXPECT_TRUE(json_num(-std::nan("")).is_null());
  for (double v : {0.0, -2.5, 0.1, 1e-300, -std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()}) {
    const nlohmann::ordered_json j = json_num(v);
    ASSERT_TRUE(j.is_number_float()) << v;
    EXPECT_EQ(nlohmann::json::parse(j.dump()).get<double>(), v);
  }
}

// The same infinities for people (fmt_num, io/format_number.h, which lmscope-diff's tables and
// the padding heatmaps write theirs with); finite numbers are printf's.
TEST(RunRecord, FmtNumWritesTheSameInfinitiesAndPrintfsDigits) {
  const double inf = std::numeric_limits<double>::infinity();
  for (bool exponent : {false, true}) {
    EXPECT_EQ(fmt_num(inf, 3, exponent), "inf");
    EXPECT_EQ(fmt_num(-inf, 3, exponent), "-inf");
    EXPECT_EQ(fmt_num(std::nan(""), 3, exponent), "nan");
    EXPECT_EQ(fmt_num(0.0, 3, exponent), "0");
  }
  const auto printf_of = [](const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return std::string(buf);
  };
  for (double v : {1.0, -2.5, 0.000123456, 98765.4321, -1e-300}) {
    EXPECT_EQ(fmt_num(v), printf_of("%.3g", v));
    EXPECT_EQ(fmt_num(v, 8), printf_of("%.8g", v));
    EXPECT_EQ(fmt_num(v, 3, true), printf_of("%.2e", v));   // lmscope-diff's table
    EXPECT_EQ(fmt_num(v, 1, true), printf_of("%.0e", v));   // a heatmap cell
  }
}
