// Activations quantized to int8 per 256-element super-block (llama.cpp's block_q8_K), as
// llama.cpp's x86 CPU code does before every matmul by a K-quant weight (Q4_K, Q5_K, Q6_K)
// under --cpu-activations q8, and the integer dot products' combination with the scales. Host
// and, under nvcc, device. Sources, all in llama.cpp's ggml/src/ (release of llama-cpp-python
// 0.3.36): ggml-quants.c quantize_row_q8_K_ref (which ggml-cpu/arch/x86/quants.c's
// quantize_row_q8_K calls), and arch/x86/quants.c's ggml_vec_dot_q4_K_q8_K, _q5_K_q8_K and
// _q6_K_q8_K, their AVX2 paths (which an AVX-512 build takes too).
//
// Quantizing a super-block x[0..256):
//   max  = the first x_j of largest |x_j| (its sign kept); amax = |max|
//   amax == 0: d = 0, every code 0, bsums 0 (llama.cpp leaves bsums unwritten then; every use
//              multiplies them by d = 0)
//   iscale = -127 / max                  (float division)
//   q_j    = min(127, round_half_even(iscale * x_j))   (nearest_int: the product rounded to
//            float first, then to the nearest integer, ties to even)
//   bsums[g] = sum of q over elements 16g..16g+15;  d = 1 / iscale (float32, not fp16)
//
// One output, a row of weight super-blocks against a row of activation super-blocks: eight
// float lanes acc_k; lane k owns the elements e with (e mod 32) / 4 == k (an 8-lane integer
// dot over 32 bytes at a time: vpmaddubsw then vpmaddwd with the scales). Per super-block, in
// order, with d_a the activations' d:
//   Q4_K/Q5_K (codes q 0..15 / 0..31, 6-bit scales sc_j and mins m_j of sub-blocks j of 32):
//     d    = d_a * f32(d_w);   dmin = -d_a * f32(dmin_w)            (float products)
//     isum_k = sum_j sc_j * sum_{e in sub-block j, lane k} q_e a_e     (exact integers)
//     acc_k  = fma(d, float(isum_k), acc_k)
//     the mins: S_j = bsums[2j] + bsums[2j+1] (the sub-block's sum of codes),
//       Q4_K: four lanes am_i = fma(dmin, float(m_2i S_2i + m_2i+1 S_2i+1), am_i);
//             at the end ((am_0 + am_2) + (am_1 + am_3))
//       Q5_K: one float summs = fma(dmin, float(sum_j m_j S_j), summs) (the compiler
//             contracts `summs += dmin * int` into vfmadd: held to the built library by
//             tests/llamacpp)
//   Q6_K (codes q 0..63 before the offset 32, int8 scales sc of groups of 16):
//     d = d_a * f32(d_w)
//     isum_k = sum over lane k of sc(e) q_e a_e  -  32 (sc_2k bsums_2k + sc_2k+1 bsums_2k+1)
//              (the offset -32 taken once per lane from the bsums, lane k from groups 2k and
//              2k+1: llama.cpp's q8sclsub)
//     acc_k = fma(d, float(isum_k), acc_k)
//   result = ((acc_0 + acc_4) + (acc_2 + acc_6)) + ((acc_1 + acc_5) + (acc_3 + acc_7))
//            + (Q4_K: the lanes am; Q5_K: summs)
// The integer sums are exact whatever instructions form them.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/hd.cuh"
#include "kernels/q8_activations.cuh"   // round_half_even, fused, lane_sum
#include "kernels/quant_blocks.cuh"     // load_f16, scale_min_k4

namespace lmscope::q8k {

constexpr int kBlock = 256;   // activations per super-block (QK_K)
constexpr int kGroups = 16;   // bsums per super-block (16 codes each)

// A super-block x[256] -> codes q[256], bsums[16], d.
LMSCOPE_HD void quantize_block(const float* x, int8_t* q, int16_t* bsums, float* d) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const float ax = fabsf(x[j]);
    if (ax > amax) amax = ax, max = x[j];
  }
  if (amax == 0.0f) {
    for (int j = 0; j < kBlock; ++j) q[j] = 0;
    for (int g = 0; g < kGroups; ++g) bsums[g] = 0;
    *d = 0.0f;
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < kBlock; ++j) {
    const int v = q8::round_half_even(iscale * x[j]);
    q[j] = int8_t(v < 127 ? v : 127);
  }
  for (int g = 0; g < kGroups; ++g) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += q[16 * g + j];
    bsums[g] = int16_t(s);
  }
  *d = 1.0f / iscale;
}

// The weight codes of one super-block in element order: Q4_K 0..15, Q5_K 0..31, Q6_K 0..63
// (before its offset of 32), and the scale of each element's sub-block.
LMSCOPE_HD void k4_scales(const uint8_t* blk, int* sc, int* m) {   // Q4_K/Q5_K: 8 of each
  for (int j = 0; j < 8; ++j) quant::scale_min_k4(j, blk + 4, &sc[j], &m[j]);
}
LMSCOPE_HD int code_q4_k(const uint8_t* blk, int e) {
  const uint8_t b = blk[16 + 32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? (b & 0xF) : (b >> 4);
}
LMSCOPE_HD int code_q5_k(const uint8_t* blk, int e) {
  const uint8_t b = blk[48 + 32 * (e / 64) + e % 32];
  const int low = (e % 64) < 32 ? (b & 0xF) : (b >> 4);
  return low | (((blk[16 + e % 32] >> (e / 32)) & 1) << 4);
}
LMSCOPE_HD int code_q6_k(const uint8_t* blk, int e) {   // kernels/quant_blocks.cuh dequant_q6_k's layout
  const int n = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t lq = blk[64 * n + l + 32 * (k & 1)];
  const int lo = k < 2 ? (lq & 0xF) : (lq >> 4);
  return lo | (((blk[128 + 32 * n + l] >> (2 * k)) & 3) << 4);
}

// One output's accumulation over `nb` super-blocks (the formulas above, one lane at a time).
// w: the weight row's blocks (type given by its ggml number: 12 Q4_K, 13 Q5_K, 14 Q6_K); q,
// bsums, d: the activation row's codes, group sums and per-super-block d.
LMSCOPE_HD float dot_row(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums,
                         const float* d_a) {
  const int bytes = ggml_type == 12 ? 144 : ggml_type == 13 ? 176 : 210;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, am[4] = {0, 0, 0, 0}, summs = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = w + i * bytes;
    const int8_t* a = q + i * kBlock;
    const int16_t* bs = bsums + i * kGroups;
    int isum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (ggml_type == 14) {
      const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
      for (int e = 0; e < kBlock; ++e) isum[(e % 32) / 4] += int(sc[e / 16]) * code_q6_k(blk, e) * a[e];
      for (int k = 0; k < 8; ++k) isum[k] -= 32 * (int(sc[2 * k]) * bs[2 * k] + int(sc[2 * k + 1]) * bs[2 * k + 1]);
      const float d = d_a[i] * quant::load_f16(blk + 208);
      for (int k = 0; k < 8; ++k) acc[k] = q8::fused(d, float(isum[k]), acc[k]);
      continue;
    }
    int sc[8], m[8];
    k4_scales(blk, sc, m);
    for (int e = 0; e < kBlock; ++e)
      isum[(e % 32) / 4] += sc[e / 32] * (ggml_type == 12 ? code_q4_k(blk, e) : code_q5_k(blk, e)) * a[e];
    const float d = d_a[i] * quant::load_f16(blk), dmin = -d_a[i] * quant::load_f16(blk + 2);
    for (int k = 0; k < 8; ++k) acc[k] = q8::fused(d, float(isum[k]), acc[k]);
    int msum[4];
    for (int p = 0; p < 4; ++p)
      msum[p] = m[2 * p] * (bs[4 * p] + bs[4 * p + 1]) + m[2 * p + 1] * (bs[4 * p + 2] + bs[4 * p + 3]);
    if (ggml_type == 12) {
      for (int p = 0; p < 4; ++p) am[p] = q8::fused(dmin, float(msum[p]), am[p]);
    } else {
      summs = q8::fused(dmin, float(msum[0] + msum[1] + msum[2] + msum[3]), summs);
    }
  }
  const float y = q8::lane_sum(acc);
  if (ggml_type == 12) return y + ((am[0] + am[2]) + (am[1] + am[3]));
  if (ggml_type == 13) return y + summs;
  return y;
}

}  // namespace lmscope::q8k
