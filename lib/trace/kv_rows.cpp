#include "trace/kv_rows.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace lmscope {

Tensor appended_kv_rows(const Tensor& cache, int64_t T) {
  if (cache.ndim() != 4 || T < 0 || T > cache.dim(2))
    throw std::logic_error("appended_kv_rows: cache " + std::to_string(cache.ndim()) + "-d, T = " + std::to_string(T));
  const int64_t B = cache.dim(0), Hkv = cache.dim(1), S = cache.dim(2), hd = cache.dim(3);
  Tensor out = Tensor::zeros({B, Hkv, T, hd});
  const float* src = cache.f32();
  float* dst = out.f32();
  for (int64_t bh = 0; bh < B * Hkv; ++bh)
    std::memcpy(dst + bh * T * hd, src + (bh * S + S - T) * hd, size_t(T * hd) * sizeof(float));
  return out;
}

void KvAssembly::add(const Shape& shape, const std::vector<double>& rows, int64_t first_position,
                     const std::string& where) {
  if (shape.size() != 4 || int64_t(rows.size()) != shape_numel(shape))
    throw std::runtime_error(where + ": appended cache rows must be a [B,Hkv,T,hd] dataset");
  if (B_ < 0) {
    B_ = shape[0], Hkv_ = shape[1], hd_ = shape[3];
  } else if (shape[0] != B_ || shape[1] != Hkv_ || shape[3] != hd_) {
    throw std::runtime_error(where + ": appended cache rows of shape [" + std::to_string(shape[0]) + "," +
                             std::to_string(shape[1]) + ",T," + std::to_string(shape[3]) +
                             "] after earlier steps' [" + std::to_string(B_) + "," + std::to_string(Hkv_) + ",T," +
                             std::to_string(hd_) + "]");
  }
  // Rows start at a filled position or right after the last one: the cache never has a gap,
  // and a position past what the file stored cannot make us allocate.
  if (first_position < 0 || first_position > S_)
    throw std::runtime_error(where + ": first_position " + std::to_string(first_position) +
                             " is not within the " + std::to_string(S_) + " cache positions of the earlier steps");
  const int64_t T = shape[2];
  const int64_t S = std::max(S_, first_position + T);
  if (S != S_) {
    std::vector<double> grown(size_t(B_ * Hkv_ * S * hd_));
    for (int64_t bh = 0; bh < B_ * Hkv_; ++bh)
      std::copy_n(values_.begin() + bh * S_ * hd_, S_ * hd_, grown.begin() + bh * S * hd_);
    values_ = std::move(grown);
    S_ = S;
  }
  for (int64_t bh = 0; bh < B_ * Hkv_; ++bh)
    std::copy_n(rows.begin() + bh * T * hd_, T * hd_, values_.begin() + (bh * S_ + first_position) * hd_);
}

std::vector<double> KvAssembly::cache(int64_t S, const std::string& where) const {
  if (B_ < 0 || S < 0 || S > S_)
    throw std::runtime_error(where + ": the step's cache has S = " + std::to_string(S) + " positions but its rows and the earlier steps' fill " +
                             std::to_string(S_));
  if (S == S_) return values_;
  std::vector<double> out(size_t(B_ * Hkv_ * S * hd_));
  for (int64_t bh = 0; bh < B_ * Hkv_; ++bh)
    std::copy_n(values_.begin() + bh * S_ * hd_, S * hd_, out.begin() + bh * S * hd_);
  return out;
}

}  // namespace lmscope
