#include "backend/cpu/q8k_gemm.h"

#include <cstring>

namespace lmscope::cpu {

void q8k_gemm_pack(const Q8KRows& x, Q8KGemmPanel& panel) {
  constexpr int R = kQ8KGemmRows;
  const int64_t nb = x.blocks(), I = x.cols;
  panel.groups = (x.rows + R - 1) / R;
  panel.blocks = nb;
  const size_t blocks = size_t(panel.groups * nb);
  // The padding rows' codes, sums and scales: 0.
  panel.q.assign(blocks * 2048, 0);   // [64 quads][8 rows][4 codes] a super-block
  panel.d.assign(blocks * R, 0.0f);
  panel.pair_sums.assign(blocks * 4 * R * 2, 0);
  panel.group_sums.assign(blocks * 8 * R * 2, 0);
  for (int64_t n = 0; n < x.rows; ++n) {
    const int64_t g = n / R, r = n % R;
    const int8_t* row = x.q.data() + n * I;
    const int16_t* bsums = x.bsums.data() + n * I / 16;
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t gb = g * nb + b;
      int8_t* quads = panel.q.data() + gb * 2048 + r * 4;
      for (int u = 0; u < 4; ++u)   // slot 16u + j: unit j (2 codes) of sub-blocks 2u and 2u + 1
        for (int j = 0; j < 16; ++j) {
          std::memcpy(quads + (16 * u + j) * 32, row + b * 256 + 64 * u + 2 * j, 2);
          std::memcpy(quads + (16 * u + j) * 32 + 2, row + b * 256 + 64 * u + 32 + 2 * j, 2);
        }
      panel.d[size_t(gb * R + r)] = x.d[size_t(n * nb + b)];
      const int16_t* bs = bsums + b * 16;
      for (int p = 0; p < 4; ++p) {
        int16_t* pair = panel.pair_sums.data() + gb * 64 + p * 16 + r * 2;
        pair[0] = int16_t(bs[4 * p] + bs[4 * p + 1]);
        pair[1] = int16_t(bs[4 * p + 2] + bs[4 * p + 3]);
      }
      for (int k = 0; k < 8; ++k) {
        int16_t* pair = panel.group_sums.data() + gb * 128 + k * 16 + r * 2;
        pair[0] = bs[2 * k];
        pair[1] = bs[2 * k + 1];
      }
    }
  }
}

}  // namespace lmscope::cpu
