// Each quantization scheme against NumPy's computation of the same formula
// (golden/make_quant_refs.py -> golden/quant/refs.json): int8/Q4_0 codes, scales, dequantized
// values and saturated counts equal bit for bit (both sides compute in float32 with the same
// operations; w4-group's reference is itself checked against the gguf package's Q4_0). The
// activation schemes run through QuantBackend's linear over an identity weight, so the output
// of the real linear is the quantized input. And the identity check: SmolLM2's GGUF blocks
// dequantized again equal its float32 reference exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "kernels/dtype_convert.cuh"
#include "model/load_model.h"
#include "model/random_weights.h"
#include "quant/model_weights.h"
#include "quant/quant_backend.h"

using namespace lmscope;
using namespace lmscope::quant;

namespace {

const nlohmann::json& refs() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(LMSCOPE_SOURCE_DIR) + "/golden/quant/refs.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::vector<float> flat(const nlohmann::json& m) {
  std::vector<float> v;
  for (const auto& row : m)
    for (const auto& x : row) v.push_back(x.get<float>());
  return v;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Bit for bit, except the sign of a zero: NumPy's round keeps -0.0 for a small negative value,
// ours dequantizes from the integer code, which has no -0.
void expect_bits(const std::vector<float>& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i] == 0.0f ? 0u : bits(got[i]), want[i].get<float>() == 0.0f ? 0u : bits(want[i].get<float>())) << what << " [" << i << "]: " << got[i] << " vs " << want[i];
}

void check_weight_scheme(const std::string& name, WeightScheme s) {
  const auto& j = refs();
  const std::vector<float> W = flat(j["W"]);
  const int64_t rows = int64_t(j["W"].size()), cols = int64_t(j["W"][0].size());
  QuantizedMatrix q = quantize_matrix(W.data(), rows, cols, s);
  const auto& want = j["weights"][name];
  ASSERT_EQ(q.codes.size(), want["codes"].size());
  for (size_t i = 0; i < q.codes.size(); ++i) ASSERT_EQ(int(q.codes[i]), want["codes"][i].get<int>()) << name << " code " << i;
  expect_bits(q.scales, want["scales"], name + " scales");
  expect_bits(q.values, want["values"], name + " values");
  EXPECT_EQ(q.saturated, want["saturated"].get<int64_t>()) << name;
}

// Runs x through QuantBackend's linear over an identity weight: out = quantize(x).
std::vector<float> through_linear(ActScheme a, const std::vector<float>& X, int64_t N, int64_t I,
                                  float lo = 0, float hi = 0) {
  auto cpu = make_backend("cpu");
  QuantBackend qb(*cpu);
  Weights w;
  w.layers.resize(1);
  Tensor eye = Tensor::zeros({I, I});
  for (int64_t i = 0; i < I; ++i) eye.f32()[i * I + i] = 1.0f;
  w.layers[0].wq = eye;
  qb.name_linears(w);
  Tensor x = Tensor::zeros({1, N, I});
  std::memcpy(x.f32(), X.data(), X.size() * 4);
  Tensor out = Tensor::zeros({1, N, I});
  if (a == ActScheme::Static) {   // calibrate on two rows spanning exactly [lo, hi]
    qb.set_calibrating(true);
    Tensor c = Tensor::zeros({1, 1, I});
    c.f32()[0] = lo, c.f32()[1] = hi;
    Tensor co = Tensor::zeros({1, 1, I});
    qb.linear(co, c, eye, Tensor());
    qb.set_calibrating(false);
  }
  qb.set_activation(a);
  qb.linear(out, x, eye, Tensor());
  EXPECT_EQ(qb.saturated(), refs()["activations"][a == ActScheme::Token ? "a8-token" : "a8-static"]["saturated"].get<int64_t>());
  return std::vector<float>(out.f32(), out.f32() + out.numel());
}

}  // namespace

TEST(QuantSchemes, W8ChannelMatchesNumpy) { check_weight_scheme("w8-channel", WeightScheme::Channel); }
TEST(QuantSchemes, W8TensorMatchesNumpy) { check_weight_scheme("w8-tensor", WeightScheme::Tensor); }
TEST(QuantSchemes, W8StdMatchesNumpyAndSaturates) {
  check_weight_scheme("w8-std", WeightScheme::Std);
  EXPECT_GT(refs()["weights"]["w8-std"]["saturated"].get<int>(), 0);   // the planted outliers clip
  EXPECT_EQ(refs()["std_multiple"].get<double>(), kStdMultiple);
}
TEST(QuantSchemes, W4GroupMatchesNumpyAndGgufQ4_0) {
  check_weight_scheme("w4-group", WeightScheme::Group4);
  EXPECT_TRUE(refs()["w4_group_matches_gguf"].get<bool>());
}

TEST(QuantSchemes, A8TokenThroughTheLinearMatchesNumpy) {
  const std::vector<float> X = flat(refs()["X"]);
  const int64_t N = int64_t(refs()["X"].size()), I = int64_t(refs()["X"][0].size());
  expect_bits(through_linear(ActScheme::Token, X, N, I), refs()["activations"]["a8-token"]["values"], "a8-token");
}

TEST(QuantSchemes, A8StaticThroughTheLinearMatchesNumpy) {
  const auto& s = refs()["activations"]["a8-static"];
  const std::vector<float> X = flat(refs()["X"]);
  const int64_t N = int64_t(refs()["X"].size()), I = int64_t(refs()["X"][0].size());
  expect_bits(through_linear(ActScheme::Static, X, N, I, s["lo"].get<float>(), s["hi"].get<float>()), s["values"],
              "a8-static");
}

TEST(QuantSchemes, W4GroupEndsARowInAShorterGroup) {
  // 40 weights: a group of 32, then one of 8 quantized on its own (its max maps to code 0).
  std::vector<float> W(40, 0.25f);
  W[35] = -4.0f;
  QuantizedMatrix q = quantize_matrix(W.data(), 1, 40, WeightScheme::Group4);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[1], 0.5f);   // -4 / -8
  EXPECT_EQ(q.values[35], -4.0f);
  EXPECT_EQ(q.values[0], 0.25f);
  EXPECT_EQ(matrix_bytes(1, 40, WeightScheme::Group4), 36);
}

TEST(QuantSchemes, StoredGgufBlocksAreTheIdentity) {
  const std::string path = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent (scripts/fetch-model.sh fetches it)";
  LoadedModel m = load_model(path);
  const Weights ref = float_reference(m.weights);
  const SchemeWeights ids = stored_blocks_weights(m.weights);
  int64_t with_blocks = 0;
  for (size_t L = 0; L < ref.layers.size(); ++L)
    for (const LinearSlot& s : linear_slots()) {
      const Tensor& a = ids.weights.layers[L].*s.member;
      const Tensor& b = ref.layers[L].*s.member;
      with_blocks += bool((m.weights.layers[L].*s.member).blocks());
      EXPECT_FALSE(a.blocks());
      ASSERT_NE(a.raw(), b.raw());
      ASSERT_EQ(std::memcmp(a.raw(), b.raw(), b.nbytes()), 0) << "layer " << L << " " << s.name;
    }
  EXPECT_EQ(with_blocks, int64_t(7 * ref.layers.size()));   // the check covered every linear
  EXPECT_LT(ids.bytes, float_bytes(ref));
}

// A bf16/f16 linear (a safetensors checkpoint's, or a GGUF's F16/BF16 matrix, both held as
// stored) has no blocks: the identity check widens it (exactly: the reference's values) and
// counts it at 2 bytes a weight.
TEST(QuantSchemes, StoredHalfMatricesAreTheIdentity) {
  const ModelConfig cfg = tiny_qwen2_shapes(64);
  Weights w = random_weights(cfg, 5, 0.1f);
  int64_t half_weights = 0;
  for (LayerWeights& l : w.layers)
    for (const LinearSlot& s : linear_slots()) {
      const Tensor f = l.*s.member;
      Tensor h = Tensor::zeros(f.shape(), DType::BF16);
      for (int64_t i = 0; i < f.numel(); ++i) static_cast<uint16_t*>(h.raw())[i] = f32_to_bf16(f.f32()[i]);
      l.*s.member = h;
      half_weights += h.numel();
    }
  const Weights ref = float_reference(w);
  const SchemeWeights ids = stored_blocks_weights(w);
  for (size_t L = 0; L < ref.layers.size(); ++L)
    for (const LinearSlot& s : linear_slots()) {
      const Tensor& a = ids.weights.layers[L].*s.member;
      const Tensor& b = ref.layers[L].*s.member;
      ASSERT_EQ(a.dtype(), DType::F32);
      ASSERT_EQ(std::memcmp(a.raw(), b.raw(), b.nbytes()), 0) << "layer " << L << " " << s.name;
    }
  EXPECT_EQ(ids.bytes, float_bytes(ref) - 2 * half_weights);
}

TEST(QuantSchemes, A8TokenOffersItsScalesAsHooks) {
  struct Keep : TraceSink {
    std::vector<float> scale, saturated;
    void offer(Hook h, int layer, const Tensor& t) override {
      EXPECT_EQ(layer, 0);
      auto& dst = h == Hook::QuantQProjScale ? scale : saturated;
      dst.assign(t.f32(), t.f32() + t.numel());
      EXPECT_EQ(hook_name(h, layer).rfind("quant.layers.0.q_proj.", 0), 0u);
    }
  } keep;
  const auto& j = refs();
  const std::vector<float> X = flat(j["X"]);
  const int64_t N = int64_t(j["X"].size()), I = int64_t(j["X"][0].size());
  auto cpu = make_backend("cpu");
  QuantBackend qb(*cpu);
  Weights w;
  w.layers.resize(1);
  w.layers[0].wq = Tensor::zeros({I, I});
  qb.name_linears(w);
  Trace trace(HookSet("quant.*", "", 1), nullptr);
  trace.set_sink(&keep);
  trace.begin_step(StepInfo{});
  qb.set_trace(&trace);
  qb.set_activation(ActScheme::Token);
  Tensor x = Tensor::zeros({1, N, I}), out = Tensor::zeros({1, N, I});
  std::memcpy(x.f32(), X.data(), X.size() * 4);
  qb.linear(out, x, w.layers[0].wq, Tensor());
  expect_bits(keep.scale, j["activations"]["a8-token"]["scales"], "quant.layers.0.q_proj.scale");
  EXPECT_EQ(keep.saturated, std::vector<float>(size_t(N), 0.0f));   // max|x| scales never clip
}
