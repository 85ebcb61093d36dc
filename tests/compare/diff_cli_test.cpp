// lmscope-diff as a person runs it: exit codes 0 / 1 / 2 and one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/hdf5.h"
#include "tests/golden_manifest.h"
#include "tests/test_util.h"
#include "tokenizer/ids_text.h"

using namespace lmscope::testing_util;

namespace {
const std::string kDiff = LMSCOPE_BINARY_DIR "/lmscope-diff";

struct DiffRun {
  int code;
  std::string out, err;
};

DiffRun diff(const TempDir& dir, const std::string& args) {
  std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  int rc = std::system(("'" + kDiff + "' " + args + " > '" + out + "' 2> '" + err + "'").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_text(out), read_text(err)};
}

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

class DiffCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kDiff)) << kDiff << " is not built (build target lmscope-diff)";
    write_synthetic_trace(ref);
    write_synthetic_trace(same);
    write_synthetic_trace(off, [](int step, const std::string& hook, std::vector<float>& v) {
      if (step == 1 && hook == "layers.0.attn.probs") v[2] += 0.003f;
    });
  }
  TempDir dir;
  std::string ref = dir.file("ref.h5"), same = dir.file("same.h5"), off = dir.file("off.h5");
};
}  // namespace

TEST_F(DiffCli, PassExitsZero) {
  DiffRun r = diff(dir, same + " " + ref);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all 10 hooks pass"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(DiffCli, FailureExitsOneAndNamesTheFirstFailingHook) {
  DiffRun r = diff(dir, off + " " + ref);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("first failing hook: step 1 layers.0.attn.probs (max abs 0.003 at [0,0,0,2]"),
            std::string::npos)
      << r.out;
  DiffRun j = diff(dir, off + " " + ref + " --json");
  EXPECT_EQ(j.code, 1);
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["pass"], false);
  EXPECT_EQ(parsed["first_failure"]["hook"], "layers.0.attn.probs");
  // Restricting to step 0, or to other hooks, passes.
  EXPECT_EQ(diff(dir, off + " " + ref + " --steps 0").code, 0);
  EXPECT_EQ(diff(dir, off + " " + ref + " --hooks 'embed,kv.*'").code, 0);
  DiffRun all = diff(dir, off + " " + ref + " --all");
  EXPECT_EQ(all.code, 1);
  EXPECT_GT(lines(all.out), lines(r.out));
}

TEST_F(DiffCli, ToleranceOverrideFile) {
  std::string tol = dir.file("tol.json");
  std::ofstream(tol) << R"({"layers.*.attn.probs": {"atol": 0.01}})";
  EXPECT_EQ(diff(dir, off + " " + ref + " --tolerances " + tol).code, 0);
}

TEST_F(DiffCli, BadInputExitsTwoWithOneLine) {
  std::string text = dir.file("notes.txt");
  std::ofstream(text) << "hello";
  std::string badtol = dir.file("bad.json");
  std::ofstream(badtol) << "{";
  for (const std::string& args :
       {dir.file("absent.h5") + " " + ref, text + " " + ref, ref + " " + text, same + " " + ref + " --steps x",
        same + " " + ref + " --tolerances " + badtol, same + " " + ref + " --hooks nothing", std::string(ref),
        same + " " + ref + " --bogus", same + " " + ref + " --hooks 'layers.*.atn.q'",
        same + " " + ref + " --layers 1-x", same + " " + ref + " --layers 4"}) {
    DiffRun r = diff(dir, args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("lmscope-diff: error: ", 0), 0u) << r.err;
  }
}

TEST_F(DiffCli, IncompleteTraceIsBadInput) {
  std::string inc = dir.file("inc.h5");
  {   // a trace that never got complete=1 (what a killed writer leaves)
    lmscope::h5::File f = lmscope::h5::File::create(inc);
    f.root().set_attr("format", std::string("lmscope-trace"));
    f.close();
  }
  DiffRun r = diff(dir, inc + " " + ref);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "lmscope-diff: error: '" + inc + "' is incomplete (no complete=1)\n");
}

TEST_F(DiffCli, BadHooksOrLayersSayWhichInLmscopeTracesWords) {
  DiffRun g = diff(dir, same + " " + ref + " --hooks 'layers.*.atn.q'");
  EXPECT_EQ(g.err, "lmscope-diff: error: --hooks: 'layers.*.atn.q' names no known hook (see docs/hooks.md; e.g. "
                   "'layers.*.attn.q_rope,logits')\n");
  DiffRun l = diff(dir, same + " " + ref + " --layers 4");
  EXPECT_EQ(l.err, "lmscope-diff: error: --layers: layer 4 does not exist (the model has 1 layers: 0-0)\n");
}

// A partial trace (lmscope-trace --hooks/--layers) against a full HF golden: the same
// --hooks/--layers on lmscope-diff compare what both hold and nothing else; a selected hook one
// side lacks is still reported.
class PartialTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json g = lmscope::golden::entry("tiny-qwen2-a");
    ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json has no tiny-qwen2-a";
    golden = lmscope::golden::root() + "/" + g["file"].get<std::string>();
    const std::string ids = lmscope::join_ids(g["prompt_ids"][0].get<std::vector<int32_t>>());
    const std::string trace = LMSCOPE_BINARY_DIR "/lmscope-trace";
    const std::string cmd = "'" + trace + "' -q --model '" + lmscope::golden::root() + "/" + g["model"].get<std::string>() +
                            "' --prompt-ids " + ids + " --max-new-tokens " + std::to_string(g["max_new_tokens"].get<int>()) +
                            " --hooks '" + kHooks + "' --layers 0-1 --out '" + partial + "' > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  const std::string kHooks = "layers.*.attn.q_rope,logits";
  TempDir dir;
  std::string partial = dir.file("partial.h5"), golden;
};

TEST_F(PartialTrace, FilteredDiffAgainstTheFullGoldenPassesAndListsOnlyTheSelectedHooks) {
  DiffRun whole = diff(dir, partial + " " + golden);   // every other hook of the golden is missing in A
  EXPECT_EQ(whole.code, 1);
  DiffRun r = diff(dir, partial + " " + golden + " --hooks '" + kHooks + "' --layers 0-1");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all 3 hooks pass"), std::string::npos) << r.out;
  for (const char* h : {"layers.0.attn.q_rope ", "layers.1.attn.q_rope ", "logits "})
    EXPECT_NE(r.out.find(h), std::string::npos) << h << "\n" << r.out;
  EXPECT_EQ(r.out.find("layers.2."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("only in A"), std::string::npos) << r.out;
  EXPECT_EQ(lines(r.out), 2u + 1u + 3u + 2u) << r.out;   // A/reference, header, 3 hooks, tol note, verdict
}

TEST_F(PartialTrace, ASelectedHookOneSideLacksIsReported) {
  // embed: selected, in the golden, not in the partial trace: missing in A, a failure.
  DiffRun r = diff(dir, partial + " " + golden + " --hooks '" + kHooks + ",embed' --layers 0-1");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("first failing hook: step 0 embed (missing in A)"), std::string::npos) << r.out;
  // The roles swapped: in A only, noted (the reference is what A is checked against).
  DiffRun back = diff(dir, golden + " " + partial + " --hooks '" + kHooks + ",embed' --layers 0-1");
  EXPECT_EQ(back.code, 0) << back.out << back.err;
  EXPECT_NE(back.out.find("only in A (not compared): embed (steps 0-7)"), std::string::npos) << back.out;
}
