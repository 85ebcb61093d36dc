// Crafted traces through the tools that draw them: each of these crashed lmscope-report (-o,
// --summary, --svg attention|mask) or lmscope-step with SIGSEGV (T = 0, V = 0, empty input
// ids), a heap-buffer-overflow (generated_ids of another batch size), an uncaught
// std::length_error (NaN logits: basic_string::_M_create; T = 2^31-1: vector::_M_fill_insert)
// or a raw [json.exception.type_error.316] (an attribute that is not UTF-8). Now: one line
// naming the file, exit 1, or, for the attribute, a page.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "tests/crafted_trace.h"

using namespace lmscope::testing_util;

namespace {

const std::string kBin = LMSCOPE_BINARY_DIR;

// Every reader of a trace, as a command line; `out` is where the ones that write put a file.
std::vector<std::pair<std::string, std::string>> readers(const std::string& trace, const std::string& out) {
  const std::string report = kBin + "/lmscope-report " + trace;
  return {
      {"lmscope-report", report + " -o " + out},
      {"lmscope-report", report + " --summary"},
      {"lmscope-report", report + " --svg attention -o " + out},
      {"lmscope-report", report + " --svg mask -o " + out},
      {"lmscope-step", kBin + "/lmscope-step " + trace},
      {"lmscope-diff", kBin + "/lmscope-diff " + trace + " " + trace},
  };
}

struct Crafted {
  const char* name;
  std::function<void(H5Edit&)> edit;
  const char* says;   // in the one line every reader prints
};

}  // namespace

TEST(ReportHostile, CraftedTracesAreOneLineInEveryReader) {
  const std::vector<Crafted> cases = {
      {"T0", [](H5Edit& e) { e.replace("step_0000/logits", "logits", "B,T,V", {2, 0, 16}); }, "axis T is 0"},
      {"V0", [](H5Edit& e) { e.replace("step_0001/logits", "logits", "B,T,V", {2, 1, 0}); }, "axis V is 0"},
      {"no_ids", [](H5Edit& e) { e.replace("step_0000/tokens/input_ids", "tokens.input_ids", "B,T", {2, 0}, 1, true); },
       "axis T is 0"},
      {"gen_B3", [](H5Edit& e) { e.replace("generated_ids", "", "", {3, 2}, 5, true); }, "generated_ids: axis B is 3"},
      {"huge_T", [](H5Edit& e) { e.attr("/step_0001", "T", 2147483647.0, true); }, "attribute T = 2147483647"},
      {"nan_complete", [](H5Edit& e) { e.attr("/", "complete", NAN, false); }, "attribute 'complete' is nan"},
  };
  for (const Crafted& c : cases) {
    TempDir dir;
    const std::string trace = dir.file(std::string(c.name) + ".h5"), out = dir.file("out");
    write_crafted_trace(trace, c.edit);
    for (const auto& [tool, cmd] : readers(trace, out)) {
      SCOPED_TRACE(std::string(c.name) + ": " + cmd);
      const CliRun r = run_cli("timeout 120 " + cmd);
      EXPECT_EQ(r.code, tool == "lmscope-diff" ? 2 : 1) << r.err;   // -1: killed by a signal
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.err.rfind(tool + ": error: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find("'" + trace + "'"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
      EXPECT_FALSE(std::filesystem::exists(out));
    }
  }
}

TEST(ReportHostile, NanLogitsAreOneLineInTheReportAndALineOnTheStepPage) {
  TempDir dir;
  const std::string trace = dir.file("nan.h5"), out = dir.file("out.html");
  // The HF golden: lmscope-step needs its config_json (the model's numbers).
  std::filesystem::copy_file(std::string(LMSCOPE_SOURCE_DIR) + "/golden/traces/tiny-qwen2-a.h5", trace);
  {
    H5Edit e(trace);
    e.replace("step_0001/logits", "logits", "B,T,V", {1, 1, 1024}, NAN);
  }
  const CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "lmscope-report: error: '" + trace +
                       "' step_0001 logits, row 0: NaN or infinite logits; no next-token distribution to rank\n");
  const CliRun s = run_cli(kBin + "/lmscope-step " + trace);
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("row 0: NaN or infinite logits: no distribution to show"), std::string::npos) << s.out;
}

TEST(ReportHostile, SampledIdsAreShownAsStoredNotRounded) {
  // The audit rounded every sample.* value to 5 or 6 significant digits, ids too: an id of a
  // Qwen-sized vocabulary was shown as another (151,643 -> 151,640), and int32's largest,
  // 2147483647, became 2147480000 or left int32's range on the way back (UBSan).
  for (const double id : {151643.0, 2147483647.0}) {
    TempDir dir;
    const std::string trace = dir.file("ids.h5"), out = dir.file("out.html");
    std::filesystem::copy_file(std::string(LMSCOPE_SOURCE_DIR) + "/golden/traces/tiny-qwen2-a.h5", trace);
    {
      H5Edit e(trace);
      e.replace("step_0001/sample/candidates", "sample.candidates", "B,N", {1, 10}, id, true);
      e.replace("step_0001/sample/chosen", "sample.chosen", "B", {1}, id, true);
    }
    const CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string page = read_text(out), shown = std::to_string(int64_t(id));
    EXPECT_NE(page.find("\"chosen\":" + shown), std::string::npos) << shown;
    EXPECT_NE(page.find("\"candidates\":[" + shown + ","), std::string::npos) << shown;
  }
}

TEST(ReportHostile, AnAttributeThatIsNotUtf8IsShownNotThrown) {
  TempDir dir;
  const std::string trace = dir.file("latin1.h5"), out = dir.file("out.html");
  write_crafted_trace(trace, [](H5Edit& e) {
    e.string_attr("/", "producer", "caf\xe9");
    // The synthetic trace's "probabilities" are sine waves in [-0.5, 0.5], which the page
    // refuses (the next test): here they are a number a probability can be.
    e.replace("step_0000/layers/0/attn/probs", "layers.0.attn.probs", "B,H,T,S", {2, 2, 4, 4}, 0.25);
    e.replace("step_0001/layers/0/attn/probs", "layers.0.attn.probs", "B,H,T,S", {2, 2, 1, 5}, 0.25);
  });
  const CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_text(out).find("caf\xEF\xBF\xBD"), std::string::npos) << "U+FFFD in place of the byte";
}

TEST(ReportHostile, AttentionProbabilitiesOutsideZeroToOneAreOneLine) {
  TempDir dir;
  const std::string trace = dir.file("probs.h5"), out = dir.file("out.html");
  write_crafted_trace(trace, [](H5Edit&) {});   // layers.0.attn.probs: sine waves in [-0.5, 0.5]
  const CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("lmscope-report: error: '" + trace + "' step_0000 layers.0.attn.probs: attention probability ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" is not in [0, 1]\n"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".d"));
}

TEST(ReportHostile, AnEditedPatternOutsideZeroToOneIsDrawnNotRefused) {
  // scale(-1) on attn.probs is a legal edit: its probabilities are negative by design, and the
  // trace records the edit. The page draws them at 0 instead of calling the trace damaged.
  TempDir dir;
  const std::string trace = dir.file("edited.h5"), out = dir.file("out.html");
  const CliRun t = run_cli(kBin + "/lmscope-trace -q --model " + std::string(LMSCOPE_SOURCE_DIR) +
                           "/golden/models/tiny-qwen2 --prompt-ids 330,749,537,264 --max-new-tokens 2 --hooks '*' "
                           "--intervene 'layers.1.attn.probs=scale(-1)' --out " + trace);
  ASSERT_EQ(t.code, 0) << t.err;
  const CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out));
}
