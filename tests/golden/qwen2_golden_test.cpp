// Qwen2.5-Coder-0.5B-Instruct Q4_K_M, the real qwen2 model (scripts/fetch-qwen2-model.sh),
// against Hugging Face transformers (golden/qwen2/, made by golden/make_qwen2_golden.py; HF
// dequantizes the GGUF to float32 as lmscope's exact mode does):
//   * the tokenizer built from the GGUF gives HF's ids for English, Chinese and code, and the
//     GGUF's chat template renders HF's text;
//   * each traced run (chat prompts, code, a left-padded batch with and without the cache):
//     greedy ids equal, every hook the golden keeps within docs/tolerances.md's default
//     bounds (the probabilities excepted), and attention scores and probabilities within
//     bounds derived from the scores' magnitude (docs/tolerances.md, "Real Qwen2 weights").
// Skipped, saying why, when the model has not been fetched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "compare/compare.h"
#include "compare/report.h"
#include "io/gguf.h"
#include "tests/golden_manifest.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "trace/trace_reader.h"

using namespace lmscope;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string& kRoot = golden::root();

json qwen2_manifest() {
  std::ifstream f(kRoot + "/golden/qwen2/manifest.json");
  if (!f) return json();
  return json::parse(f);
}

int trace_count() { return qwen2_manifest().is_null() ? 1 : int(qwen2_manifest()["traces"].size()); }

std::string trace_name(int i) {
  return qwen2_manifest().is_null() ? "missing" : qwen2_manifest()["traces"][i]["name"].get<std::string>();
}

std::string model_path() { return kRoot + "/" + qwen2_manifest()["model"].get<std::string>(); }

#define SKIP_WITHOUT_QWEN2()                                                                          \
  do {                                                                                                \
    ASSERT_FALSE(qwen2_manifest().is_null()) << "golden/qwen2/manifest.json is missing";              \
    if (!fs::exists(model_path())) {                                                                  \
      std::printf("[ skipped ] %s is missing (scripts/fetch-qwen2-model.sh fetches it)\n",           \
                  model_path().c_str());                                                              \
      GTEST_SKIP() << model_path() << " is missing (scripts/fetch-qwen2-model.sh fetches it)";        \
    }                                                                                                 \
  } while (0)

const tok::Tokenizer& qwen2_tokenizer() {
  static const tok::Tokenizer t = tok::Tokenizer::from_gguf(GgufFile::open(model_path()));
  return t;
}

// "layers.0.attn.probs" -> "layers.*.attn.probs": the hook family a number is reported for.
std::string family(const std::string& hook) {
  const size_t a = hook.find('.'), b = a == std::string::npos ? a : hook.find('.', a + 1);
  if (hook.rfind("layers.", 0) == 0 && b != std::string::npos) return "layers.*" + hook.substr(b);
  return hook;
}

// Attention on real weights (docs/tolerances.md, "Real Qwen2 weights"). Layer 0's scores reach
// ~1041 here, where one float32 step is 1.2e-4, so both bounds follow the scores' magnitude:
//  * a score is off by a few float32 steps of max|s| (its own rounding, the hd-long dot before
//    it, the roundings q and k carry): at most kScoreSteps * FLT_EPSILON * max|s|;
//  * softmax turns score errors of at most d into probability errors of at most
//    p * (exp(2 d) - 1), d being the scores' measured error in the same step and layer; the
//    1e-5 is softmax's own float32 rounding (exp, sum, divide) with room to spare.
constexpr double kScoreSteps = 32;
double scores_bound(double scores_scale) { return kScoreSteps * FLT_EPSILON * scores_scale; }
double probs_bound(double scores_error, double probs_scale) { return 1e-5 + std::expm1(2 * scores_error) * probs_scale; }

}  // namespace

TEST(Qwen2Tokenizer, TextsGiveHuggingFaceIds) {
  SKIP_WITHOUT_QWEN2();
  const tok::Tokenizer& t = qwen2_tokenizer();
  for (const json& r : qwen2_manifest()["tokenization"]["texts"]) {
    const std::string text = r["text"];
    EXPECT_EQ(t.encode(text, false), r["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(t.encode(text, true), r["ids_special"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(t.decode(r["ids"].get<std::vector<int32_t>>()), text);
  }
}

TEST(Qwen2Tokenizer, ChatTemplateGivesHuggingFaceText) {
  SKIP_WITHOUT_QWEN2();
  const tok::Tokenizer& t = qwen2_tokenizer();
  for (const json& r : qwen2_manifest()["tokenization"]["chats"]) {
    std::vector<tok::ChatMessage> messages;
    for (const json& m : r["messages"]) messages.push_back({m["role"], m["content"]});
    const std::string text = tok::format_chat(t, messages, true);
    EXPECT_EQ(text, r["chat_text"].get<std::string>());
    EXPECT_EQ(t.encode(text, false), r["ids"].get<std::vector<int32_t>>()) << text;
  }
}

class Qwen2 : public ::testing::TestWithParam<int> {};

TEST_P(Qwen2, MatchesHuggingFace) {
  SKIP_WITHOUT_QWEN2();
  const json m = qwen2_manifest();
  const json g = m["traces"][GetParam()];
  const fs::path ours = fs::temp_directory_path() /
                        ("lmscope-qwen2-" + std::to_string(::getpid()) + "-" + g["name"].get<std::string>() + ".h5");
  auto backend = make_backend("cpu");
  auto generated = golden::run_like(g, model_path(), *backend, m["hooks"], ours.string());
  EXPECT_EQ(generated, g["generated_ids"].get<std::vector<std::vector<int32_t>>>()) << g["texts"].dump();

  // The probabilities are checked below against their derived bound, not the default.
  CompareOptions opt;
  opt.tolerances.add_override("layers.*.attn.probs", {std::numeric_limits<double>::infinity(), 0},
                              "checked against the bound derived from the scores");
  TraceReader a(ours.string()), ref(kRoot + "/" + g["file"].get<std::string>());
  CompareReport rep = compare_traces(a, ref, opt);
  EXPECT_TRUE(rep.missing_in_a.empty()) << rep.missing_in_a.front().hook;
  EXPECT_TRUE(rep.pass) << report_text(rep, false);

  // Per step and layer ("layers.0.attn."): the scores' comparison, then the probabilities'.
  std::map<std::pair<int, std::string>, const HookResult*> scores;
  for (const HookResult& r : rep.results)
    if (r.kind == HookResult::Kind::Compared && family(r.hook) == "layers.*.attn.scores")
      scores[{r.step, r.hook.substr(0, r.hook.size() - 6)}] = &r;
  int probs_checked = 0;
  std::map<std::string, std::pair<double, double>> worst;   // family -> (max abs, max rel)
  for (const HookResult& r : rep.results) {
    if (r.kind != HookResult::Kind::Compared) continue;
    auto& w = worst[family(r.hook)];
    w = {std::max(w.first, r.m.max_abs), std::max(w.second, r.m.rel)};
    if (family(r.hook) == "layers.*.attn.scores") {
      EXPECT_LE(r.m.max_abs, scores_bound(r.m.scale)) << "step " << r.step << " " << r.hook << ": max |scores| " << r.m.scale;
    }
    if (family(r.hook) != "layers.*.attn.probs") continue;
    const auto s = scores.find({r.step, r.hook.substr(0, r.hook.size() - 5)});
    ASSERT_NE(s, scores.end()) << "step " << r.step << " " << r.hook << ": no scores beside the probs";
    const double bound = probs_bound(s->second->m.max_abs, r.m.scale);
    EXPECT_LE(r.m.max_abs, bound) << "step " << r.step << " " << r.hook;
    std::printf("  step %d %-22s max|scores| %7.1f  scores off %.2e (bound %.2e)  probs off %.2e (bound %.2e)\n", r.step,
                r.hook.c_str(), s->second->m.scale, s->second->m.max_abs, scores_bound(s->second->m.scale), r.m.max_abs,
                bound);
    ++probs_checked;
  }
  if (!g["kept"]["layers"].empty()) {
    EXPECT_GT(probs_checked, 0) << "the golden keeps no attention probabilities";
  }
  // The measured agreement, for docs/tolerances.md ("Real Qwen2 weights").
  for (const auto& [fam, w] : worst) std::printf("  %-28s max abs %.2e  rel %.2e\n", fam.c_str(), w.first, w.second);
  fs::remove(ours);
}

INSTANTIATE_TEST_SUITE_P(Traces, Qwen2, ::testing::Range(0, trace_count()), [](const auto& info) {
  std::string n = trace_name(info.param);
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
