#include "model/lens.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace lmscope {

LensTopK lens_top_k(const Tensor& logits, int k) {
  const int64_t B = logits.dim(0), T = logits.dim(1), V = logits.dim(2);
  const int64_t K = std::min<int64_t>(k, V);
  LensTopK r{Tensor::zeros({B, T, K}, DType::I32), Tensor::zeros({B, T, K}, DType::F32)};
  std::vector<int32_t> order(static_cast<size_t>(V));
  for (int64_t row = 0; row < B * T; ++row) {
    const float* z = logits.f32() + row * V;
    std::iota(order.begin(), order.end(), 0);
    // The K largest, best first; a tie goes to the lower id, so the order never depends on
    // the sort's internals (the HF side sorts stably the same way).
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    // p_i = exp(z_i - max) / sum exp(z_j - max), the sum in double (V terms).
    const double m = z[order[0]];
    double sum = 0;
    for (int64_t i = 0; i < V; ++i) sum += std::exp(double(z[i]) - m);
    for (int64_t j = 0; j < K; ++j) {
      r.ids.i32()[row * K + j] = order[size_t(j)];
      r.probs.f32()[row * K + j] = float(std::exp(double(z[order[size_t(j)]]) - m) / sum);
    }
  }
  return r;
}

}  // namespace lmscope
