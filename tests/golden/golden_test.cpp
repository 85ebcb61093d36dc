// Our engine against Hugging Face transformers, hook by hook: each golden trace listed in
// golden/traces/manifest.json (made by golden/make_golden.py) is re-run by lmscope with the
// same model, prompts, padding and cache setting, every hook traced, and compared with
// compare_traces under the per-hook tolerances of docs/tolerances.md. Greedy tokens must be
// equal.
#include <gtest/gtest.h>

#include "tests/golden_manifest.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "compare/compare.h"
#include "compare/report.h"
#include "generate/generator.h"
#include "model/load_model.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
namespace fs = std::filesystem;

namespace {

const std::string& kRoot = golden::root();
using golden::entry;
using golden::manifest;

fs::path temp_path(const std::string& stem) {
  fs::path dir = fs::temp_directory_path() / ("lmscope-golden-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / (stem + ".h5");
}

// Runs lmscope (CPU) on a golden's inputs with `hooks` traced into `out`.
std::vector<std::vector<int32_t>> run_lmscope(const std::string& model_path, const nlohmann::json& g,
                                              const std::string& hooks, const std::string& out) {
  auto backend = make_backend("cpu");
  return golden::run_like(g, model_path, *backend, hooks, out);
}

class Golden : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Golden, EveryHookMatchesHuggingFace) {
  nlohmann::json g = entry(GetParam());
  ASSERT_FALSE(g.is_null()) << "golden/traces/manifest.json is missing; run golden/make_golden.py";
  const std::string ours = temp_path(GetParam()).string();
  auto generated = run_lmscope(kRoot + "/" + g["model"].get<std::string>(), g, "*", ours);

  // greedy tokens equal, row by row
  EXPECT_EQ(generated, g["generated_ids"].get<std::vector<std::vector<int32_t>>>());

  TraceReader a(ours), ref(kRoot + "/" + g["file"].get<std::string>());
  CompareReport rep = compare_traces(a, ref, CompareOptions{});
  // Every hook of the reference was compared (none missing on our side) ...
  EXPECT_TRUE(rep.missing_in_a.empty()) << rep.missing_in_a.front().hook;
  // ... and the golden carries the hooks it should: all of docs/hooks.md but mask.causal
  // (HF has no separate causal tensor) and the sampling-audit fields HF does not expose.
  EXPECT_GE(rep.hook_names(), size_t(60));
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  fs::remove(ours);
}

INSTANTIATE_TEST_SUITE_P(Manifest, Golden, ::testing::ValuesIn(golden::names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The command a user types: lmscope-trace then lmscope-diff against golden (a), exit 0.
TEST(GoldenCli, TraceThenDiffExitsZero) {
  nlohmann::json g = entry("tiny-qwen2-a");
  ASSERT_FALSE(g.is_null());
  std::string ids;
  for (int id : g["prompt_ids"][0]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const std::string bin = LMSCOPE_BINARY_DIR, out = temp_path("cli-a").string();
  const std::string trace_cmd = bin + "/lmscope-trace -q --model " + kRoot + "/golden/models/tiny-qwen2 --prompt-ids " +
                                ids + " --max-new-tokens 8 --hooks '*' --out " + out + " > /dev/null";
  ASSERT_EQ(std::system(trace_cmd.c_str()), 0) << trace_cmd;
  const std::string diff_cmd = bin + "/lmscope-diff " + out + " " + kRoot + "/golden/traces/tiny-qwen2-a.h5 > /dev/null";
  EXPECT_EQ(std::system(diff_cmd.c_str()), 0) << diff_cmd;
  fs::remove(out);
}

// SmolLM2-135M-Instruct (real Q4_1 weights, dequantized to float32 by HF and by lmscope): two
// chat prompts, greedy, golden/smollm2/ (made by golden/make_golden.py --smollm2).
class SmolLM2 : public ::testing::TestWithParam<int> {};

TEST_P(SmolLM2, MatchesHuggingFace) {
  std::ifstream mf(kRoot + "/golden/smollm2/manifest.json");
  ASSERT_TRUE(mf) << "golden/smollm2/manifest.json is missing";
  nlohmann::json m = nlohmann::json::parse(mf);
  const std::string model = kRoot + "/" + m["model"].get<std::string>();
  if (!fs::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-model.sh (scripts/test.sh does)";
  const nlohmann::json g = m["traces"][GetParam()];
  const std::string ours = temp_path(g["name"]).string();
  auto generated = run_lmscope(model, g, m["hooks"], ours);
  EXPECT_EQ(generated[0], g["generated_ids"].get<std::vector<int32_t>>()) << g["chat_text"];

  TraceReader a(ours), ref(kRoot + "/" + g["file"].get<std::string>());
  CompareReport rep = compare_traces(a, ref, CompareOptions{});
  EXPECT_TRUE(rep.missing_in_a.empty()) << rep.missing_in_a.front().hook;
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  fs::remove(ours);
}

INSTANTIATE_TEST_SUITE_P(ChatPrompts, SmolLM2, ::testing::Values(0, 1));

// Gemma 3 270M (the real Q4_K_M file of scripts/fetch-gemma3-model.sh, dequantized to float32 by
// HF; lmscope multiplies by its blocks): two plain prompts, BOS first, greedy, golden/gemma3/
// (made by golden/make_golden.py --gemma3). Skipped, saying so, when the file is absent: it is
// fetched only on request (Google's Gemma terms apply to it).
class Gemma3Real : public ::testing::TestWithParam<int> {};

TEST_P(Gemma3Real, MatchesHuggingFace) {
  std::ifstream mf(kRoot + "/golden/gemma3/manifest.json");
  ASSERT_TRUE(mf) << "golden/gemma3/manifest.json is missing";
  nlohmann::json m = nlohmann::json::parse(mf);
  const std::string model = kRoot + "/" + m["model"].get<std::string>();
  if (!fs::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-gemma3-model.sh";
  const nlohmann::json g = m["traces"][GetParam()];
  const std::string ours = temp_path(g["name"]).string();
  auto generated = run_lmscope(model, g, m["hooks"], ours);
  EXPECT_EQ(generated[0], g["generated_ids"].get<std::vector<int32_t>>()) << g["text"];

  TraceReader a(ours), ref(kRoot + "/" + g["file"].get<std::string>());
  CompareReport rep = compare_traces(a, ref, CompareOptions{});
  EXPECT_TRUE(rep.missing_in_a.empty()) << rep.missing_in_a.front().hook;
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  // What docs/gemma3.md quotes: the largest max_abs / max|HF| of the top-10 raw logits and of
  // the last layer's output over every step.
  for (const std::string hook : {"sample.raw", "layers.17.resid_post"}) {
    double worst = 0;
    for (const HookResult& r : rep.results)
      if (r.hook == hook) worst = std::max(worst, r.m.rel);
    std::cout << "[ measure ] " << g["name"].get<std::string>() << " " << hook << ": max rel " << worst << "\n";
  }
  fs::remove(ours);
}

INSTANTIATE_TEST_SUITE_P(Prompts, Gemma3Real, ::testing::Values(0, 1));
