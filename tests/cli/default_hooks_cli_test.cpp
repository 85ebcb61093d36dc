// lmscope-trace's default hook set (kDefaultTraceHooks, docs/hooks.md "The default set"): the
// hooks lmscope-report and lmscope-step draw, and no more. A default trace of the tiny model
// gives every report section its data and every step page its hooks (neither says what to
// trace, but for the opt-in lens); '*' still traces every hook.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(DefaultHooks, AreWhatTheReportAndTheStepDraw) {
  TempDir dir;
  const std::string trace = kBin + "/lmscope-trace -q --model " + kTiny +
                            " --prompt 'The golden fish spoke to the old man.' --max-new-tokens 3 --out ";
  const std::string def = dir.file("default.h5"), all = dir.file("all.h5");
  ASSERT_EQ(run_cli(trace + def).code, 0);
  ASSERT_EQ(run_cli(trace + all + " --hooks '*'").code, 0);

  const std::vector<std::string> hooks = TraceReader(def).hooks(0);
  const std::set<std::string> got(hooks.begin(), hooks.end());
  for (const char* left_out : {"layers.0.resid_pre", "layers.0.attn_norm", "layers.0.attn.v", "layers.0.attn.scores",
                               "layers.0.ffn_norm", "final_norm", "kv.0.k"}) {
    EXPECT_EQ(got.count(left_out), 0u) << left_out << " is in the default set";
  }
  const std::vector<std::string> every = TraceReader(all).hooks(0);
  for (const char* in_all : {"layers.0.resid_pre", "layers.2.attn.scores", "kv.1.v", "final_norm"})
    EXPECT_NE(std::find(every.begin(), every.end(), in_all), every.end()) << in_all << " is missing from '*'";
  EXPECT_LT(std::filesystem::file_size(def), std::filesystem::file_size(all));

  // The page: every section has its data but the two that need an option of lmscope-trace, not
  // a hook: the lens (--lens) and the token saliency (--grad). A section without says "to see it.".
  const std::string page = dir.file("report.html");
  CliRun r = run_cli(kBin + "/lmscope-report " + def + " -o " + page);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_text(page);
  EXPECT_EQ(count(html, "to see it."), 2u);
  EXPECT_NE(html.find("Trace with --lens K (lmscope-trace --lens 10) to see it."), std::string::npos);
  EXPECT_NE(html.find("--grad METRIC --hooks 'tokens.*,embed' (lmscope-trace, docs/gradients.md) to see it."),
            std::string::npos);

  // The walk: every page of every step and layer drawn, none saying "(not traced: ...)"; and
  // the same pages as the walk of the full trace.
  CliRun walk = run_cli(kBin + "/lmscope-step " + def);
  ASSERT_EQ(walk.code, 0) << walk.err;
  EXPECT_EQ(walk.out.find("not traced"), std::string::npos) << walk.out;
  CliRun walk_all = run_cli(kBin + "/lmscope-step " + all);
  ASSERT_EQ(walk_all.code, 0) << walk_all.err;
  EXPECT_EQ(walk.out, walk_all.out);
}
