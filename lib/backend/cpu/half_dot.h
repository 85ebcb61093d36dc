// The arithmetic of one output of half_matmul (half_matmul.h), defined once: every
// implementation (portable, AVX2, AVX-512) performs exactly these operations, so they agree
// bit for bit and a run's numbers do not depend on which one the processor picks.
//
// One output = a row w of W (bf16 or f16) against a row x (float32), I columns:
//   * 32 float32 lanes acc[0..31], all +0;
//   * for each chunk of 32 columns in order, acc[l] = fma(widen(w[32c + l]), x[32c + l], acc[l])
//     (the widening is exact: bf16 is the top half of a float32, every f16 is a float32); a
//     last partial chunk is padded with w = x = 0 and takes the same FMA on every lane;
//   * out = reduce_half_lanes(acc) (+ bias): lanes l and l + 16, then l and l + 8, l + 4,
//     l + 2, l + 1, a pairwise tree.
// AVX2 holds the 32 lanes as four 8-float vectors, AVX-512 as two 16-float ones: the same FMA
// per lane in the same order, then the same scalar tree over the stored lanes. Four (two)
// independent FMA chains per output and row keep the vector unit busy. Against sgemm over the
// widened float32 values (prefill's path, and decode's with LMSCOPE_CPU_BLOCKS=0) the sum is
// taken in another order: equal up to
// float32 rounding.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/dtype_convert.cuh"

namespace lmscope::cpu {

constexpr int kHalfLanes = 32;

// One stored element as float32, exactly (kernels/dtype_convert.cuh).
template <bool BF16>
inline float widen_half(uint16_t h) {
  return BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// The lanes' sum, in the tree above. acc is modified.
inline float reduce_half_lanes(float* acc) {
  for (int width = kHalfLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] = acc[l] + acc[l + width];
  return acc[0];
}

// One lane's step: std::fma is the fused multiply-add the vector kernels' vfmadd performs.
inline float half_lane_fma(float w, float x, float acc) { return std::fma(w, x, acc); }

}  // namespace lmscope::cpu
