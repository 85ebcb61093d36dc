// Pieces of Gemma 3's forward against what HF transformers computes for them
// (golden/gemma3/pieces.json, made by golden/make_gemma3_pieces.py): the GeGLU activation
// (gelu_pytorch_tanh(gate) * up) and the mask of a sliding-window layer.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "model/masks.h"

using namespace lmscope;

namespace {

nlohmann::json pieces() {
  std::ifstream f(std::string(LMSCOPE_SOURCE_DIR) + "/golden/gemma3/pieces.json");
  if (!f) return nlohmann::json();
  return nlohmann::json::parse(f);
}

Tensor floats(const std::vector<float>& v) {
  Tensor t = Tensor::zeros({int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.f32());
  return t;
}

}  // namespace

// Tolerance: our tanhf against torch's (vectorized) tanh, a few ulp apart. The one rounding not
// relative to the output is 1 + tanh(inner), absolute (ulp(1) = 2^-23): where tanh is near -1
// (gate below about -2) that term is small and the error is 0.5 |gate| |up| * a few 2^-23.
// Hence |ours - torch| <= 0.5 |gate up| 2^-21 + 1e-6 |torch|.
TEST(Gemma3Pieces, GegluTanhMatchesTorch) {
  const nlohmann::json p = pieces();
  ASSERT_FALSE(p.is_null()) << "golden/gemma3/pieces.json is missing (golden/make_gemma3_pieces.py)";
  const auto gate = p["geglu"]["gate"].get<std::vector<float>>();
  const auto up = p["geglu"]["up"].get<std::vector<float>>();
  const auto ref = p["geglu"]["out"].get<std::vector<float>>();
  ASSERT_EQ(gate.size(), ref.size());
  auto be = make_backend("cpu");
  Tensor out = be->alloc({int64_t(gate.size())});
  be->geglu_tanh(out, floats(gate), floats(up));
  int exact = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double tol = 0.5 * std::fabs(double(gate[i]) * up[i]) * std::ldexp(1.0, -21) + 1e-6 * std::fabs(ref[i]);
    EXPECT_NEAR(out.f32()[i], ref[i], tol) << "gate " << gate[i] << " up " << up[i];
    exact += out.f32()[i] == ref[i];
  }
  // Not a loose check that passes anything: most values are the same float.
  EXPECT_GT(exact, int(ref.size()) / 2);
}

TEST(Gemma3Pieces, SlidingMaskIsHFsWindow) {
  const nlohmann::json p = pieces();
  ASSERT_FALSE(p.is_null()) << "golden/gemma3/pieces.json is missing (golden/make_gemma3_pieces.py)";
  ASSERT_GE(p["sliding_masks"].size(), 3u);
  for (const auto& c : p["sliding_masks"]) {
    const auto am = c["attention_mask"].get<std::vector<std::vector<int>>>();
    const int64_t B = int64_t(am.size()), S = int64_t(am[0].size()), T = c["T"], window = c["window"];
    SCOPED_TRACE("T " + std::to_string(T) + " window " + std::to_string(window));
    Tensor mask = Tensor::zeros({B, S}, DType::I32);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) mask.i32()[b * S + s] = am[b][s];
    const Tensor ours = sliding_combined_mask(mask, T, window);   // [B,T,S]
    const auto visible = c["visible"].get<std::vector<std::vector<std::vector<int>>>>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < S; ++s)
          EXPECT_EQ(ours.f32()[(b * T + t) * S + s] == 0.0f, visible[b][t][s] == 1) << b << "," << t << "," << s;
    // A window at least as long as every query's past is the full layer's mask.
    if (window >= S) {
      const Tensor full = combined_mask(mask, T);
      EXPECT_EQ(std::vector<float>(ours.f32(), ours.f32() + ours.numel()),
                std::vector<float>(full.f32(), full.f32() + full.numel()));
    }
  }
}
