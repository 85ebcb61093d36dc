#include "backend/cpu/q8_gemm.h"

#include <cstring>

namespace lmscope::cpu {

void q8_gemm_pack(const Q8Rows& x, Q8GemmPanel& panel) {
  const int64_t nb = x.blocks(), I = x.cols;
  panel.groups = (x.rows + kQ8GemmRows - 1) / kQ8GemmRows;
  panel.blocks = nb;
  panel.q.assign(size_t(panel.groups * nb * 256), 0);   // the padding rows' codes and scales: 0
  panel.d.assign(size_t(panel.groups * nb * kQ8GemmRows), 0.0f);
  panel.s.assign(size_t(panel.groups * nb * kQ8GemmRows), 0.0f);
  panel.sum16.assign(size_t(panel.groups * nb * 64), 0);
  for (int64_t n = 0; n < x.rows; ++n) {
    const int64_t g = n / kQ8GemmRows, r = n % kQ8GemmRows;
    const int8_t* row = x.q.data() + n * I;
    for (int64_t b = 0; b < nb; ++b) {
      int8_t* quads = panel.q.data() + (g * nb + b) * 256 + r * 4;
      for (int k = 0; k < 8; ++k) {
        std::memcpy(quads + k * 32, row + b * 32 + k * 4, 4);
        const int8_t* c = row + b * 32 + k * 4;
        panel.sum16[size_t((g * nb + b) * 64 + k * 8 + r)] = 16 * (int32_t(c[0]) + c[1] + c[2] + c[3]);
      }
      panel.d[size_t((g * nb + b) * kQ8GemmRows + r)] = x.d(n * nb + b);
      panel.s[size_t((g * nb + b) * kQ8GemmRows + r)] = x.s(n * nb + b);
    }
  }
}

}  // namespace lmscope::cpu
