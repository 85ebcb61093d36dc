#include <gtest/gtest.h>

#include <cmath>

#include "kernels/rope.cuh"
#include "model/rope.h"

using namespace lmscope;

TEST(Rope, TablesMatchTheClosedFormInDouble) {
  Tensor pos = Tensor::zeros({1, 3}, DType::I32);
  pos.i32()[0] = 0, pos.i32()[1] = 5, pos.i32()[2] = 97;
  Tensor cos, sin;
  const int hd = 16;
  const double theta = 10000;
  rope_tables(cos, sin, pos, hd, float(theta));
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < hd; ++i) {
      const int j = i % (hd / 2);   // cat(freqs, freqs)
      const double angle = pos.i32()[t] / std::pow(theta, 2.0 * j / hd);
      EXPECT_NEAR(cos.f32()[t * hd + i], std::cos(angle), 2e-5) << t << "," << i;
      EXPECT_NEAR(sin.f32()[t * hd + i], std::sin(angle), 2e-5) << t << "," << i;
    }
}

TEST(Rope, RotateHalfPairsIWithIPlusHalf) {
  // x = e_1 (second element), rotated by angle a on pair (1, 1 + hd/2):
  // out[1] = cos a, out[1 + hd/2] = sin a, everything else 0 (HF rotate_half convention).
  const int hd = 8;
  float x[hd] = {0, 1, 0, 0, 0, 0, 0, 0};
  const float a = 0.7f, c = std::cos(a), s = std::sin(a);
  for (int i = 0; i < hd; ++i) {
    float out = rope_rotate(x, i, hd, c, s);
    float expect = i == 1 ? c : (i == 1 + hd / 2 ? s : 0.0f);
    EXPECT_FLOAT_EQ(out, expect) << i;
  }
}
