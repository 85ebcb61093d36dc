// tools/lmscope-hf-trace (Python, HF transformers) against its own committed goldens: every
// trace of golden/traces/manifest.json is made again, as a user runs the tool, and
// `lmscope-diff` must pass it against the committed file (tolerances of docs/tolerances.md;
// the goldens were made with the pins of golden/requirements.txt, so this also checks that
// another transformers release, or another CPU, still gives the same trace within them).
// The step geometry is checked too: with the cache, decode step n has T = 1 query row and
// S = past + 1 key columns in every layer's scores (what broke with transformers 5.24, which
// passes the cache as `cache=`: the tool saw no cache and expected S = 1); without it T = S.
// A failing case leaves its trace in $TMPDIR/lmscope-hftrace-<pid>/ for a look.
//
// Which python: $LMSCOPE_HF_PYTHON, else python3. When it cannot import torch, transformers,
// h5py and numpy, the tests skip and say how to enable them (CI has no torch); when
// LMSCOPE_HF_PYTHON is set to such a python they fail instead (it was asked for). Enable:
//   python3 -m venv /path/venv-hf && /path/venv-hf/bin/pip install -r golden/requirements.txt
//   LMSCOPE_HF_PYTHON=/path/venv-hf/bin/python ctest --test-dir build -R HfTrace
// Each case runs the tool once (torch import + a tiny model on CPU: seconds to half a minute).
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/golden_manifest.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;
namespace fs = std::filesystem;

namespace {

const std::string& kRoot = golden::root();
const std::string kDiff = LMSCOPE_BINARY_DIR "/lmscope-diff";

std::string quote(const std::string& s) {
  std::string q;
  q.push_back('\'');
  for (char c : s) {
    if (c == '\'') q.append("'\\''");
    else q.push_back(c);
  }
  q.push_back('\'');
  return q;
}

bool python_set_by_user() {
  const char* p = std::getenv("LMSCOPE_HF_PYTHON");
  return p && *p;
}

std::string python() { return python_set_by_user() ? std::getenv("LMSCOPE_HF_PYTHON") : "python3"; }

// Empty when the python has every package the tool needs, else why not (one line). find_spec
// only: importing torch takes seconds, and every test case asks.
std::string python_problem() {
  static const std::string problem = [] {
    const std::string probe =
        "import importlib.util as u, sys; "
        "m = [n for n in ('torch', 'transformers', 'h5py', 'numpy') if u.find_spec(n) is None]; "
        "print('cannot import ' + ', '.join(m) if m else ''); sys.exit(1 if m else 0)";
    CliRun r = run_cli(quote(python()) + " -c " + quote(probe));
    if (r.code == 0) return std::string();
    std::string why = !r.out.empty() ? r.out : (r.err.empty() ? std::string("does not run") : r.err);
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    std::string msg = quote(python());
    msg += ' ';
    msg += why.substr(0, why.find('\n'));
    return msg;
  }();
  return problem;
}

#define REQUIRE_HF_PYTHON()                                                                                  \
  do {                                                                                                       \
    const std::string why = python_problem();                                                                \
    if (!why.empty()) {                                                                                      \
      if (python_set_by_user()) FAIL() << "LMSCOPE_HF_PYTHON: " << why;                                      \
      GTEST_SKIP() << why << ": set LMSCOPE_HF_PYTHON to a python with golden/requirements.txt installed "   \
                   << "(python3 -m venv V && V/bin/pip install -r golden/requirements.txt; "                 \
                   << "LMSCOPE_HF_PYTHON=V/bin/python) to run the lmscope-hf-trace tests";                   \
    }                                                                                                        \
  } while (0)

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("lmscope-hftrace-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::vector<std::vector<int32_t>> prompt_rows(const nlohmann::json& g) {
  return g["prompt_ids"].get<std::vector<std::vector<int32_t>>>();
}

// Runs the tool on a manifest entry's inputs (cache as `use_cache` says) into `out`.
CliRun run_tool(const nlohmann::json& g, bool use_cache, const std::string& out) {
  std::string cmd = quote(python()) + " " + quote(kRoot + "/tools/lmscope-hf-trace") + " --model " +
                    quote(kRoot + "/" + g["model"].get<std::string>()) + " --padding-side " +
                    g["padding_side"].get<std::string>() + " --max-new-tokens " +
                    std::to_string(g["max_new_tokens"].get<int>()) + " --out " + quote(out);
  for (const auto& row : prompt_rows(g)) {
    std::string ids;
    for (int32_t id : row) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(id);
    }
    cmd += " --prompt-ids " + ids;
  }
  if (!use_cache) cmd += " --no-cache";
  return run_cli(cmd);
}

CliRun run_diff(const std::string& a, const std::string& ref) {
  return run_cli(quote(kDiff) + " " + quote(a) + " " + quote(ref));
}

// The step geometry of a trace of `g` (P = padded prompt length): with the cache, prefill
// T = S = P, then T = 1, past = P + n - 1, S = past + 1; without, T = S = P + n, past 0. Every
// layer's scores and probs are [B,H,T,S], the 2D mask [B,S], kv.L.k/v [B,Hkv,S,hd] (cache only).
void expect_geometry(const std::string& path, const nlohmann::json& g, bool use_cache) {
  TraceReader tr(path);
  const auto rows = prompt_rows(g);
  int64_t P = 0;
  for (const auto& r : rows) P = std::max<int64_t>(P, int64_t(r.size()));
  const int64_t B = int64_t(rows.size());
  const nlohmann::json cfg = nlohmann::json::parse(tr.root_attr_string("config_json"));
  const int64_t H = cfg["num_attention_heads"], Hkv = cfg["num_key_value_heads"], L = cfg["num_hidden_layers"];
  ASSERT_EQ(tr.n_steps(), g["max_new_tokens"].get<int>());
  for (int n = 0; n < tr.n_steps(); ++n) {
    SCOPED_TRACE("step " + std::to_string(n));
    StepInfo si = tr.step_info(n);
    const int64_t past = use_cache && n > 0 ? P + n - 1 : 0;
    const int64_t T = use_cache && n > 0 ? 1 : P + n;
    EXPECT_EQ(si.use_cache, use_cache);
    EXPECT_EQ(si.past_length, past);
    EXPECT_EQ(si.T, T);
    EXPECT_EQ(si.S, past + T);
    EXPECT_EQ(tr.read(n, "tokens.attention_mask").shape, (Shape{B, past + T}));
    for (int64_t l = 0; l < L; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".attn.";
      EXPECT_EQ(tr.read(n, p + "scores").shape, (Shape{B, H, T, past + T})) << p << "scores";
      EXPECT_EQ(tr.read(n, p + "probs").shape, (Shape{B, H, T, past + T})) << p << "probs";
      const std::string kv = "kv." + std::to_string(l) + ".k";
      if (use_cache) {
        ASSERT_TRUE(tr.has_hook(n, kv)) << kv;
        const Shape ks = tr.read(n, kv).shape;
        EXPECT_EQ(ks[1], Hkv) << kv;
        EXPECT_EQ(ks[2], past + T) << kv;
      } else {
        EXPECT_FALSE(tr.has_hook(n, kv)) << kv << " written without a cache";
      }
    }
  }
}

class HfTraceGolden : public ::testing::TestWithParam<std::string> {};

}  // namespace

// Each committed golden, made again with the same inputs: lmscope-diff passes it (exit 0:
// every hook within tolerance, the same generated ids), with the step geometry above.
TEST_P(HfTraceGolden, RegeneratedTracePassesLmscopeDiff) {
  REQUIRE_HF_PYTHON();
  ASSERT_TRUE(fs::exists(kDiff)) << kDiff << " is not built (build target lmscope-diff)";
  const nlohmann::json g = golden::entry(GetParam());
  ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json is missing or lacks " << GetParam();
  const bool use_cache = g["use_cache"];
  const std::string out = (temp_dir() / (GetParam() + ".h5")).string();
  CliRun t = run_tool(g, use_cache, out);
  ASSERT_EQ(t.code, 0) << t.err;
  CliRun d = run_diff(out, kRoot + "/" + g["file"].get<std::string>());
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find(" hooks pass ("), std::string::npos) << d.out;
  {
    TraceReader tr(out);
    ASSERT_TRUE(tr.has_generated_ids());
    HookData gen = tr.generated_ids();
    std::vector<std::vector<int32_t>> rows;
    const int64_t N = gen.shape[1];
    for (int64_t b = 0; b < gen.shape[0]; ++b) {
      rows.emplace_back();
      for (int64_t i = 0; i < N; ++i) rows.back().push_back(int32_t(gen.values[size_t(b * N + i)]));
    }
    EXPECT_EQ(rows, g["generated_ids"].get<std::vector<std::vector<int32_t>>>());
    EXPECT_EQ(tr.root_attr_string("missing_hooks"), "[]");
  }
  expect_geometry(out, g, use_cache);
  fs::remove(out);
}

INSTANTIATE_TEST_SUITE_P(Manifest, HfTraceGolden, ::testing::ValuesIn(golden::names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The other cache setting than the committed golden, on every architecture: tiny-qwen2's and
// tiny-llama's cached goldens (a) against fresh uncached runs, and the uncached goldens (c) of
// tiny-qwen2, tiny-qwen3 and tiny-gemma3 (left-padded; Gemma's sliding layers' window) against
// fresh cached runs. lmscope-diff aligns the two
// (the last T rows; kv.* against the uncached k_rope / v), so the cached and uncached paths of
// the tool agree with each other.
struct CrossCase {
  const char* golden;
  bool use_cache;   // of the fresh run (the opposite of the golden's)
};

void PrintTo(const CrossCase& c, std::ostream* os) {
  *os << c.golden << (c.use_cache ? " run with the cache" : " run without the cache");
}

class HfTraceCross : public ::testing::TestWithParam<CrossCase> {};

TEST_P(HfTraceCross, OtherCacheSettingPassesLmscopeDiff) {
  REQUIRE_HF_PYTHON();
  ASSERT_TRUE(fs::exists(kDiff)) << kDiff << " is not built (build target lmscope-diff)";
  const CrossCase c = GetParam();
  const nlohmann::json g = golden::entry(c.golden);
  ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json lacks " << c.golden;
  ASSERT_NE(g["use_cache"].get<bool>(), c.use_cache);
  const std::string out =
      (temp_dir() / (std::string(c.golden) + (c.use_cache ? "-cached" : "-uncached") + ".h5")).string();
  CliRun t = run_tool(g, c.use_cache, out);
  ASSERT_EQ(t.code, 0) << t.err;
  expect_geometry(out, g, c.use_cache);
  CliRun d = run_diff(out, kRoot + "/" + g["file"].get<std::string>());
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  fs::remove(out);
}

INSTANTIATE_TEST_SUITE_P(Manifest, HfTraceCross,
                         ::testing::Values(CrossCase{"tiny-qwen2-a", false}, CrossCase{"tiny-llama-a", false},
                                           CrossCase{"tiny-qwen2-c", true}, CrossCase{"tiny-qwen3-c", true},
                                           CrossCase{"tiny-gemma3-c", true}),
                         [](const auto& info) {
                           std::string n = std::string(info.param.golden) + (info.param.use_cache ? "_cached" : "_uncached");
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// Without torch (CI): the cases above skip, saying how to enable them; a bad
// LMSCOPE_HF_PYTHON fails them. This one runs wherever python3 does: argument errors are found
// before torch is imported, and are one line, exit 1, no output file.
TEST(HfTraceCli, BadArgumentsExitOneWithOneLine) {
  if (run_cli("command -v " + quote(python())).code != 0) GTEST_SKIP() << python() << " is not installed";
  TempDir dir;
  const std::string model = " --model " + quote(kRoot + "/golden/models/tiny-qwen2");
  for (const std::string& args : {model + " --prompt-ids 1,x", model + " --prompt-ids 1,2 --padding-side middle",
                                  model + " --prompt-ids 1,2 --max-new-tokens many"}) {
    CliRun r = run_cli(quote(python()) + " " + quote(kRoot + "/tools/lmscope-hf-trace") + " " + args + " --out " +
                       quote(dir.file("t.h5")));
    EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("lmscope-hf-trace: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir.file("t.h5")));
  }
}
