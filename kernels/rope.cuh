// Rotary position embedding in HF's rotate_half ("NEOX") convention:
//   element i pairs with element i + hd/2;  out = x*cos + rotate_half(x)*sin
//   rotate_half(x) = cat(-x[hd/2:], x[:hd/2])
// cos/sin rows are cat(freqs, freqs): entry i and i + hd/2 share one angle.
#pragma once
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

// inv_freq[j] = 1 / theta^(2j/hd), j in [0, hd/2), computed in float32 as HF does.
LMSCOPE_HD float rope_inv_freq(int j, int hd, float theta) {
  return 1.0f / powf(theta, float(2 * j) / float(hd));
}

// The angle of pair j at position pos: float32 product, as HF's inv_freq @ position_ids.
LMSCOPE_HD float rope_angle(int pos, int j, int hd, float theta) {
  return float(pos) * rope_inv_freq(j, hd, theta);
}

// One output element i of a head vector x (length hd) with that row's cos/sin at i.
LMSCOPE_HD float rope_rotate(const float* x, int i, int hd, float cos_i, float sin_i) {
  int half = hd / 2;
  float partner = i < half ? -x[i + half] : x[i - half];   // rotate_half(x)[i]
  return x[i] * cos_i + partner * sin_i;
}

}  // namespace lmscope
