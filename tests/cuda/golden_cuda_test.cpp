// The engine goldens (golden/traces/manifest.json: HF transformers, float32, eager, every
// hook) re-run on the CUDA backend:
//
//   f32   every step, every hook, at the default tolerances (the CPU backend's; float32
//         everywhere, only the summation order differs); greedy tokens equal to HF's.
//   bf16  matmul operands rounded to bf16 (float32 accumulation, float32 activations between
//         ops): the prefill against HF at the bf16 table below plus a cosine floor; greedy
//         tokens against the bf16 CPU emulation (see bf16_tolerances for why not HF's).
//   SmolLM2 (golden/smollm2, a real model): f32 as above; bf16 keeps HF's greedy tokens, every
//         step of every hook within its own, tighter table (end of this file).
//
// The bf16 numbers are measured here, without a GPU: Bf16Emulation is the CPU backend with
// exactly the CUDA bf16 rounding (2-D weights and every matmul input rounded to nearest
// even), so it differs from CUDA bf16 only in the float32 summation order (1e-6 of the
// scale, far below bf16's 2^-9 = 2e-3). Its test runs on every machine and passes the same
// table; LMSCOPE_PRINT_BF16_ERRORS=1 prints the measured errors.
#include <gtest/gtest.h>

#include "tests/golden_manifest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "compare/compare.h"
#include "compare/report.h"
#include "bf16_emulation.h"
#include "cuda_test_util.h"
#include "generate/generator.h"
#include "model/config.h"
#include "model/weights.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"
#include "tokenizer/ids_text.h"

using namespace lmscope;
using namespace lmscope::cuda_test;
namespace fs = std::filesystem;

namespace {

const std::string& kRoot = golden::root();
using golden::entry;
using golden::manifest;

// bf16 compute against HF float32, on the prefill (step 0: the same inputs on both sides;
// later steps feed back the tokens each side chose). One rounding of a matmul operand errs
// by up to 2^-9 = 2e-3 of the element; a dot of such products by about 2^-9 of its scale.
// The golden models, though, are random and three layers deep, and they amplify: measured
// with Bf16Emulation on every golden's prefill (max over layers of max_abs / scale), embed
// 2.2e-3 (the rounding itself), norms, q/k/v, kv and residuals 1.6-3.3e-2, ffn 3.5-3.9e-2,
// attn_out 5.7e-2, scores 4.0e-2, logits 4.2e-2, attn.z 1.2e-1 (sharp attention: a score
// error of 0.1 moves a 0.8 probability by 8e-2, measured 8.3e-2 absolute in probs). The
// table allows about twice those. Such bounds alone would let a small bug through, so every
// float hook must also keep a cosine similarity >= 0.998 with HF: bf16 measured >= 0.9995,
// while the bugs this guards against (a RoPE layout, a head map, a mask) give 0.5 or less.
//
// Greedy tokens against HF: the goldens' top-1/top-2 logit gaps go down to 0.0056
// (golden/README.md) while the bf16 logits err by 4e-2 of their scale, so bf16 picks another
// first token on tiny-qwen2-a/-c/-bf16-a: any bf16 engine does (HF's own bf16 rounds more).
// The CUDA bf16 tokens are therefore held to the emulation's (the same rounding), step by
// step, up to the first step whose top-2 gap is within 1e-2 of the logits' scale (there a
// float32 summation-order difference may legitimately pick the other token).
// The bf16 bounds of one family of goldens: rtol of every float hook, and the hooks that
// measured more (probs absolute: probabilities are on their own scale).
struct Bf16Bounds {
  double general, logits, attn_out, attn_z, probs_abs;
  double min_cosine;
};
// The tiny random goldens: about twice the measured errors quoted above.
constexpr Bf16Bounds kTinyBf16 = {8e-2, 1e-1, 1.2e-1, 2.5e-1, 1.7e-1, 0.998};
// tiny-qwen3 (D 32, q_norm / k_norm): measured on its three prefills with Bf16Emulation and
// with lmscope-trace --backend cuda --dtype bf16 on the emulator, max_abs / scale: q/k/v, norms
// and residuals 5.0-8.1e-2, k_norm / k_rope / kv.k 1.23e-1, scores 1.02e-1, logits 7.3e-2,
// attn_out 1.0e-1, attn.z 1.1e-1, probs 6.8e-2 absolute; every cosine >= 0.9993. The per-head
// k norm scales each head's row to rms about its weight (2 here): a row of small norm has its
// bf16 error scaled up with it, against a tensor maximum that grows less. About twice those
// again, and the same cosine floor, which is what still catches a layout or mask bug.
constexpr Bf16Bounds kTinyQwen3Bf16 = {2.5e-1, 1.5e-1, 2e-1, 2.5e-1, 1.7e-1, 0.998};

// The bounds of a golden's family.
const Bf16Bounds& bf16_bounds(const nlohmann::json& g) {
  return g["model"] == "golden/models/tiny-qwen3" ? kTinyQwen3Bf16 : kTinyBf16;
}

ToleranceTable bf16_tolerances(const Bf16Bounds& b = kTinyBf16) {
  ToleranceTable t = ToleranceTable::defaults();
  // add_override puts a rule first: add the general ones first, the specific ones last.
  t.add_override("*", {1e-4, b.general}, "bf16 matmul operands, amplified through the layers");
  t.add_override("logits", {1e-4, b.logits}, "the end of the chain");
  t.add_override("layers.*.attn_out", {1e-4, b.attn_out}, "measured above the general bound");
  t.add_override("layers.*.attn.z", {1e-4, b.attn_z}, "sharp attention moves probs");
  t.add_override("layers.*.attn.probs", {b.probs_abs, 0}, "probabilities: absolute");
  t.add_override("embed", {0, 4e-3}, "the table rounded to bf16 (exact for a bf16 checkpoint)");
  for (const char* exact : {"tokens.*", "mask.*"}) t.add_override(exact, {0, 0}, "integers: exact");
  t.add_override("rope.*", {1e-4, 0}, "rope tables are float32 on the host: as f32");
  return t;
}

// The hooks compared in bf16: all but the sampling audit (candidate ids follow the logits'
// order, which bf16 may permute among near-ties).
const std::vector<std::string> kBf16Hooks = {"tokens.*", "mask.*", "embed", "rope.*", "layers.*",
                                             "kv.*",     "final_norm", "logits"};

struct GoldenRun {
  std::vector<std::vector<int32_t>> tokens;
  std::string trace;   // removed by the test
};

// Runs a golden's inputs on `be`, every hook (or `hooks`) traced into a temporary file.
GoldenRun run_golden(const nlohmann::json& g, Backend& be, const std::string& tag,
                     const std::string& model_path = "", const std::string& hooks = "*") {
  fs::path dir = fs::temp_directory_path() / ("lmscope-golden-cuda-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  GoldenRun run;
  run.trace = (dir / (g["name"].get<std::string>() + "-" + tag + ".h5")).string();
  const std::string model = model_path.empty() ? kRoot + "/" + g["model"].get<std::string>() : model_path;
  run.tokens = golden::run_like(g, model, be, hooks, run.trace);
  return run;
}

CompareReport compare(const std::string& a, const std::string& ref, const ToleranceTable& tol,
                      std::vector<std::string> hooks = {}, std::vector<int> steps = {}) {
  CompareOptions co;
  co.tolerances = tol;
  co.hook_globs = std::move(hooks);
  co.steps = std::move(steps);
  return compare_traces(TraceReader(a), TraceReader(ref), co);
}

void print_errors(const CompareReport& rep, const std::string& name) {
  std::map<std::string, std::pair<double, double>> worst;   // hook (layers as L) -> max rel, min cosine
  for (const HookResult& r : rep.results) {
    std::string h;   // layers.12.attn.q -> layers.L.attn.q
    for (size_t i = 0; i < r.hook.size(); ++i) {
      const bool digit = isdigit(static_cast<unsigned char>(r.hook[i]));
      if (!digit) h += r.hook[i];
      else if (i == 0 || r.hook[i - 1] == '.') h += 'L';
    }
    const double e = h.find("probs") != std::string::npos ? r.m.max_abs : r.m.rel;
    auto [it, fresh] = worst.try_emplace(h, e, r.m.cosine);
    if (!fresh) it->second = {std::max(it->second.first, e), std::min(it->second.second, r.m.cosine)};
  }
  for (const auto& [h, v] : worst)
    std::printf("bf16 %-20s %-26s %.2e  cosine %.5f\n", name.c_str(), h.c_str(), v.first, v.second);
}

// Every hook within its tolerance and above the cosine floor (generated ids are compared
// by the callers: they may differ from HF's, see above).
void expect_bf16_close(const CompareReport& rep, double min_cosine = kTinyBf16.min_cosine) {
  EXPECT_TRUE(rep.missing_in_a.empty());
  bool all_pass = true;
  for (const HookResult& r : rep.results) {
    all_pass = all_pass && r.pass;
    if (r.m.compared > 0) {
      EXPECT_GE(r.m.cosine, min_cosine) << "step " << r.step << " " << r.hook;
    }
  }
  EXPECT_TRUE(all_pass) << report_text(rep, false);
}

// Per row, the first step whose next-token choice is a near tie in trace `path` (top-1
// minus top-2 of the row's last-column logits within 1e-2 of the logits' scale), or the
// number of steps when there is none.
// gaps[step][row]: top-1 minus top-2 of the row's last-column logits, over the logits' scale
// (max |logit|), in trace `path`.
std::vector<std::vector<double>> top2_gaps(const std::string& path) {
  TraceReader tr(path);
  std::vector<std::vector<double>> gaps;
  for (int step = 0; step < tr.n_steps(); ++step) {
    HookData l = tr.read(step, "logits");   // [B,T,V]
    const int64_t B = l.shape[0], T = l.shape[1], V = l.shape[2];
    gaps.emplace_back();
    for (int64_t b = 0; b < B; ++b) {
      const double* row = l.values.data() + (b * T + T - 1) * V;
      double top1 = -INFINITY, top2 = -INFINITY, scale = 0;
      for (int64_t v = 0; v < V; ++v) {
        scale = std::max(scale, std::fabs(row[v]));
        if (row[v] > top1) top2 = top1, top1 = row[v];
        else if (row[v] > top2) top2 = row[v];
      }
      gaps.back().push_back((top1 - top2) / scale);
    }
  }
  return gaps;
}

// Per row, the first step whose next-token choice is a near tie in trace `path` (top-2 gap
// within 1e-2 of the logits' scale), or the number of steps when there is none.
std::vector<int> first_near_tie(const std::string& path) {
  const std::vector<std::vector<double>> gaps = top2_gaps(path);
  std::vector<int> first(gaps.empty() ? 0 : gaps[0].size(), int(gaps.size()));
  for (size_t step = 0; step < gaps.size(); ++step)
    for (size_t b = 0; b < first.size(); ++b)
      if (gaps[step][b] < 1e-2) first[b] = std::min(first[b], int(step));
  return first;
}

// The smallest top-2 gap of row 0 over the steps: "gap/scale at step s".
std::string smallest_gap(const std::string& path) {
  const std::vector<std::vector<double>> gaps = top2_gaps(path);
  size_t at = 0;
  for (size_t s = 0; s < gaps.size(); ++s)
    if (gaps[s][0] < gaps[at][0]) at = s;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e of the scale at step %zu", gaps.empty() ? 0.0 : gaps[at][0], at);
  return buf;
}

std::string join(const std::vector<int>& v) { return lmscope::join_ids(std::vector<int32_t>(v.begin(), v.end())); }

class GoldenCuda : public ::testing::TestWithParam<std::string> {};

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace

TEST_P(GoldenCuda, F32MatchesHuggingFaceAtTheCpuTolerances) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  const nlohmann::json g = entry(GetParam());
  ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json is missing";
  GoldenRun run = run_golden(g, *gpu, "cuda-f32");
  EXPECT_EQ(run.tokens, g["generated_ids"].get<std::vector<std::vector<int32_t>>>()) << "greedy tokens differ";
  CompareReport rep = compare(run.trace, kRoot + "/" + g["file"].get<std::string>(), ToleranceTable::defaults());
  EXPECT_TRUE(rep.missing_in_a.empty());
  EXPECT_GE(rep.hook_names(), size_t(60));
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  fs::remove(run.trace);
}

// Runs everywhere: the bf16 table holds for the CUDA rounding, emulated on the CPU.
TEST_P(GoldenCuda, Bf16EmulatedOnTheCpuPassesTheBf16Tolerances) {
  const nlohmann::json g = entry(GetParam());
  ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json is missing";
  Bf16Emulation be;
  GoldenRun run = run_golden(g, be, "emulated-bf16");
  const Bf16Bounds& bounds = bf16_bounds(g);
  CompareReport rep =
      compare(run.trace, kRoot + "/" + g["file"].get<std::string>(), bf16_tolerances(bounds), kBf16Hooks, {0});
  if (std::getenv("LMSCOPE_PRINT_BF16_ERRORS")) print_errors(rep, GetParam() + "/emulated");
  expect_bf16_close(rep, bounds.min_cosine);
  const bool same = run.tokens == g["generated_ids"].get<std::vector<std::vector<int32_t>>>();
  std::printf("bf16 %s: greedy tokens %s HF float32's; first near tie per row at step %s\n", GetParam().c_str(),
              same ? "equal" : "differ from", join(first_near_tie(run.trace)).c_str());
  fs::remove(run.trace);
}

TEST_P(GoldenCuda, Bf16MatchesHuggingFaceAndTheBf16Emulation) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  const nlohmann::json g = entry(GetParam());
  ASSERT_FALSE(g.is_null());
  GoldenRun run = run_golden(g, *gpu, "cuda-bf16");
  const Bf16Bounds& bounds = bf16_bounds(g);
  CompareReport rep =
      compare(run.trace, kRoot + "/" + g["file"].get<std::string>(), bf16_tolerances(bounds), kBf16Hooks, {0});
  if (std::getenv("LMSCOPE_PRINT_BF16_ERRORS")) print_errors(rep, GetParam() + "/cuda");
  expect_bf16_close(rep, bounds.min_cosine);

  // Greedy tokens equal to the emulation's, each row up to its first near tie; every hook of
  // the steps before any row's tie (and of that step, computed from the same inputs) within
  // the bf16 table.
  Bf16Emulation emu_be;
  GoldenRun emu = run_golden(g, emu_be, "emulated-bf16");
  const std::vector<int> trusted = first_near_tie(emu.trace);
  for (size_t b = 0; b < emu.tokens.size(); ++b)
    for (int s = 0; s < trusted.at(b) && s < int(emu.tokens[b].size()); ++s)
      EXPECT_EQ(run.tokens[b].at(s), emu.tokens[b][s]) << "row " << b << " step " << s;
  const int common = *std::min_element(trusted.begin(), trusted.end());
  std::vector<int> steps;
  for (int s = 0; s <= common && s < int(emu.tokens[0].size()); ++s) steps.push_back(s);
  expect_bf16_close(compare(run.trace, emu.trace, bf16_tolerances(bounds), kBf16Hooks, steps), bounds.min_cosine);
  std::printf("bf16 %s: greedy tokens equal to the emulation's, per row up to step %s of %zu (a near tie)\n",
              GetParam().c_str(), join(trusted).c_str(), emu.tokens[0].size());
  fs::remove(run.trace);
  fs::remove(emu.trace);
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenCuda, ::testing::ValuesIn(golden::names()), param_name);

// ---- SmolLM2-135M-Instruct (golden/smollm2): a real, trained model -----------------------
// The tiny goldens are random models whose greedy choices are near ties; SmolLM2's are not
// (its smallest top-2 gap over both goldens is MARGIN of the logits' scale), so there bf16
// must keep HF float32's greedy tokens, all of them.
namespace {

struct SmolGolden {
  nlohmann::json g;
  std::string model, hooks, file;
};

// The manifest's entry `i`, or why it cannot run (the model is fetched by scripts/fetch-model.sh).
std::optional<SmolGolden> smollm2_golden(int i, std::string* why) {
  const nlohmann::json m = golden::smollm2_manifest();
  if (m.is_null()) {
    *why = "golden/smollm2/manifest.json is missing";
    return std::nullopt;
  }
  SmolGolden s{m["traces"][i], kRoot + "/" + m["model"].get<std::string>(), m["hooks"], ""};
  s.file = kRoot + "/" + s.g["file"].get<std::string>();
  if (!fs::exists(s.model)) {
    *why = s.model + " is absent: run scripts/fetch-model.sh (scripts/test.sh does)";
    return std::nullopt;
  }
  return s;
}

#define SMOLLM2_OR_SKIP(var, i)                       \
  std::string why_smol_;                              \
  auto var = smollm2_golden(i, &why_smol_);           \
  if (!var) GTEST_SKIP() << why_smol_;

class SmolLM2Cuda : public ::testing::TestWithParam<int> {};

}  // namespace

// bf16 on SmolLM2 against HF float32: every step (the tokens are equal, so are the inputs).
// Measured with the emulation over both goldens (max over layers and steps, rel to the scale):
// embed 2.4e-3, q/k/norms 4e-3 - 6e-3, v/scores/ffn/attn_out 9e-3 - 1.7e-2, resid_post
// 2.25e-2, attn.z 2.6e-2, probs 2.2e-2 absolute, final_norm 1.5e-2, logits 1.3e-2; cosine >=
// 0.99976. A real model errs less than the random tiny ones (trained weights, no sharp random
// attention) although it is ten times deeper. The bounds are about twice those.
// The logits' cosine depends on the float32 summation order of attention, which bf16 rounding
// of the next matmul's input turns into different roundings (as in q8 mode, docs/benchmarks.md):
// over both goldens, decode attention through the portable, AVX2 and AVX-512 loops
// (LMSCOPE_CPU_KERNEL) gave a smallest logits cosine of 0.99978, 0.99966 and 0.99919, so the
// cosine floor is 1 - 2 x 8.1e-4.
constexpr Bf16Bounds kSmolLM2Bf16 = {5e-2, 3e-2, 5e-2, 5e-2, 5e-2, 0.998};

// Greedy tokens equal to HF's, and every hook of every step within the SmolLM2 bf16 bounds.
void expect_smollm2_bf16(const SmolGolden& s, const GoldenRun& run, const std::string& label) {
  EXPECT_EQ(run.tokens.at(0), s.g["generated_ids"].get<std::vector<int32_t>>()) << label << ": greedy tokens";
  CompareReport rep = compare(run.trace, s.file, bf16_tolerances(kSmolLM2Bf16), kBf16Hooks);
  if (std::getenv("LMSCOPE_PRINT_BF16_ERRORS")) print_errors(rep, label);
  expect_bf16_close(rep, kSmolLM2Bf16.min_cosine);
  std::printf("%s %s: greedy tokens equal to HF's; smallest top-2 gap %s (HF float32: %s)\n", label.c_str(),
              s.g["name"].get<std::string>().c_str(), smallest_gap(run.trace).c_str(), smallest_gap(s.file).c_str());
}

TEST_P(SmolLM2Cuda, Bf16EmulatedOnTheCpuKeepsHfGreedyTokens) {
  SMOLLM2_OR_SKIP(s, GetParam());
  Bf16Emulation be;
  GoldenRun run = run_golden(s->g, be, "emulated-bf16", s->model, s->hooks);
  expect_smollm2_bf16(*s, run, "smollm2/emulated");
  fs::remove(run.trace);
}

TEST_P(SmolLM2Cuda, F32MatchesHuggingFaceAtTheCpuTolerances) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  SMOLLM2_OR_SKIP(s, GetParam());
  GoldenRun run = run_golden(s->g, *gpu, "cuda-f32", s->model, s->hooks);
  EXPECT_EQ(run.tokens.at(0), s->g["generated_ids"].get<std::vector<int32_t>>());
  CompareReport rep = compare(run.trace, s->file, ToleranceTable::defaults());
  EXPECT_TRUE(rep.missing_in_a.empty());
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  fs::remove(run.trace);
}

TEST_P(SmolLM2Cuda, Bf16KeepsHfGreedyTokens) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  SMOLLM2_OR_SKIP(s, GetParam());
  GoldenRun run = run_golden(s->g, *gpu, "cuda-bf16", s->model, s->hooks);
  expect_smollm2_bf16(*s, run, "smollm2/cuda");
  fs::remove(run.trace);
}

INSTANTIATE_TEST_SUITE_P(ChatPrompts, SmolLM2Cuda, ::testing::Values(0, 1));
