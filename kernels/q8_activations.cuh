// Activations quantized to int8 per 32-element block, as llama.cpp's x86 CPU code does before
// every matmul by a block-quantized weight (--cpu-activations q8, docs/benchmarks.md), and the
// integer dot product's combination with the scales. Per element and per block; host and,
// under nvcc, device. Sources, all in llama.cpp's ggml/src/ggml-cpu/ (release of
// llama-cpp-python 0.3.36, built -DGGML_NATIVE=ON on an AVX-512 VNNI processor):
//
// Quantizing a block x[0..32) (arch/x86/quants.c, quantize_row_q8_0 and quantize_row_q8_1,
// their AVX2 path, which an AVX-512 build takes):
//   amax = max_j |x_j|
//   d    = amax / 127                       (float division)
//   id   = amax != 0 ? 127 / amax : 0       (from amax, not from d)
//   q_j  = round_half_even(x_j * id)        (the product rounded to float first; |q_j| <= 127)
//   block_q8_0 / block_q8_1 keep d as fp16: d_h = f16(d), round to nearest even
//   block_q8_1 also keeps s = f16(d * float(sum_j q_j)) (the float d, not d_h)
//
// One output, a row of weight blocks against a row of activation blocks (Q8_0 weights:
// llamafile/sgemm.cpp, tinyBLAS_Q0_AVX::gemm, which ggml_compute_forward_mul_mat tries first,
// and arch/x86/quants.c ggml_vec_dot_q8_0_q8_0 compute the same; Q4_1 weights:
// ggml_vec_dot_q4_1_q8_1):
//   eight float lanes acc_k, k = 0..7, lane k owning elements 4k..4k+3 of every block;
//   per block, in order:  dd = f32(d_w) * f32(d_a)                      (one float product)
//                         acc_k = fma(dd, float(sum_{j=4k}^{4k+3} q_w,j * q_a,j), acc_k)
//   sum = ((acc_0 + acc_4) + (acc_2 + acc_6)) + ((acc_1 + acc_5) + (acc_3 + acc_7))
//   Q4_1 (q_w = 0..15, min m):  summs = fma(f32(m), f32(s_a), summs) per block, in order
//                               (the compiler contracts `summs += m * s` into vfmadd231ss:
//                               checked in the built libggml-cpu.so), result = sum + summs
// Q4_0 (q_w = -8..7, ggml_vec_dot_q4_0_q8_0) and Q5_0 (-16..15, _q5_0_q8_0) are Q8_0's order;
// Q5_1 (q_w = 0..31, min m, ggml_vec_dot_q5_1_q8_1) is Q4_1's.
// IQ4_NL (q_w = the grid value of the nibble, -127..113; ggml_vec_dot_iq4_nl_q8_0) takes its
// blocks in pairs: even blocks into one set of eight lanes, odd blocks into another, the two
// added lane by lane, then summed as above; when the row has an odd number of blocks the last
// one comes after that sum, as one integer: result = sum + dd * float(sum_j q_w,j * q_a,j), the
// product and the sum rounded apart (`sumf += d * (sumi1 + sumi2)`: not contracted in the built
// libggml-cpu.so, unlike Q4_1's summs; tests/llamacpp/ggml_q8_test.cpp tells the two apart). llama.cpp's prefill
// (tinyBLAS_Q0_AVX) takes IQ4_NL blocks in one set of lanes instead; lmscope keeps vec_dot's
// order in its prefill too (q8_gemm.h), so that an output does not depend on the batch.
// The integer sums are exact whatever instructions form them (|4 products| < 2^16).
// Not reproduced: non-finite activations (llama.cpp's vector max lets a NaN through or not
// depending on its lane; here fmaxf drops it).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/dtype_convert.cuh"
#include "kernels/hd.cuh"

namespace lmscope::q8 {

constexpr int kBlock = 32;   // activations per block (QK8_0 = QK8_1 = 32)
constexpr int kLanes = 8;    // float accumulators per output; lane k owns elements 4k..4k+3

// a * b + c rounded once.
LMSCOPE_HD float fused(float a, float b, float c) {
#if LMSCOPE_DEVICE_CODE
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Nearest integer, ties to even (_mm256_round_ps with _MM_ROUND_NEAREST), for |v| < 2^22 (every
// use here is a code, |v| <= 127.5). On the host by llama.cpp's nearest_int (ggml-quants.c):
// adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits, the float addition
// itself rounding to nearest even. It is std::nearbyint's value in that range, and a loop of it
// vectorizes, where std::nearbyint is a library call per code (docs/benchmarks.md, "The q8
// K-quant kernel at the memory roofline").
LMSCOPE_HD int round_half_even(float v) {
#if LMSCOPE_DEVICE_CODE
  return __float2int_rn(v);
#else
  const float shifted = v + 12582912.0f;   // 1.5 * 2^23
  int32_t bits;
  memcpy(&bits, &shifted, 4);
  return (bits & 0x007fffff) - 0x00400000;
#endif
}

// The block's scale before fp16 rounding, and its inverse as quantize_row_q8_* forms it.
LMSCOPE_HD float block_scale(float amax) { return amax / 127.0f; }
LMSCOPE_HD float block_inverse_scale(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }

// One code: x * id rounded half to even.
LMSCOPE_HD int8_t code(float x, float id) { return int8_t(round_half_even(x * id)); }

// A whole block: codes q[32], d_h (fp16 bits of d) and s_h (fp16 bits of d * sum q).
LMSCOPE_HD void quantize_block(const float* x, int8_t* q, uint16_t* d_h, uint16_t* s_h) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = fmaxf(amax, fabsf(x[j]));
  const float d = block_scale(amax), id = block_inverse_scale(amax);
  int sum = 0;
  for (int j = 0; j < kBlock; ++j) {
    q[j] = code(x[j], id);
    sum += q[j];
  }
  *d_h = f32_to_f16(d);
  *s_h = f32_to_f16(d * float(sum));
}

// The eight lanes summed in the order of ggml's hsum_float_8 (and llamafile's hsum(__m256)).
LMSCOPE_HD float lane_sum(const float* acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

}  // namespace lmscope::q8
