// The prefill of --cpu-activations q8 over K-quant weights (Q4_K, Q5_K, Q6_K): an int8 GEMM
// that takes eight activation rows through each weight super-block in one pass, with the
// numbers of the one-row kernel (q8k_matmul.h) bit for bit, so of llama.cpp's
// ggml_vec_dot_q4_K_q8_K / _q5_K_q8_K / _q6_K_q8_K (kernels/q8_k_activations.cuh has the
// formulas; tests/llamacpp holds them to the built library).
//
// What must not change is each output's arithmetic: per super-block, eight exact int32 lanes
// (lane k: the elements e with (e mod 32) / 4 == k, each product times its sub-block's scale),
// each converted to float and added by one FMA with d_a * d_w; the mins (Q4_K: four float lanes;
// Q5_K: one float) the same way; at the end the eight lanes summed in ggml's hsum_float_8
// order. The one-row kernel keeps an output's eight lanes in one register. Here a register
// holds lane k of eight ROWS instead (as q8_gemm.h does for Q8_0/Q4_1/Q5_0):
//   - the activations of a group of eight rows are repacked per super-block as 64 32-byte
//     vectors, one per slot: slot 16u + j holds, for each of the eight rows, 4 codes: unit j
//     (codes 2j, 2j + 1) of sub-block 2u and unit j of sub-block 2u + 1. Slots 16u + 2k and
//     16u + 2k + 1 thus hold quads (2u, k) and (2u + 1, k), the elements 32v + 4k .. + 3 of
//     lane k;
//   - a chunk of weight rows is decoded once for every group that reads it: per super-block the
//     256 codes as bytes (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63) in the same slot order, the scales
//     of sub-blocks 2u and 2u + 1 as an int16 pair, the mins' (or Q6_K's offset's) factors, d
//     and dmin as float;
//   - per lane k and pair of sub-blocks u, the weight's two slots are broadcast to the eight
//     4-byte slots, two `vpmaddubsw` and one `vpaddw` give per row quad (2u, k)'s four products
//     in int16 0 and quad (2u + 1, k)'s in int16 1, and one `vpmaddwd` with the scale pair
//     (AVX-512: `vpdpwssd`) adds scale times each. Their sum over u is lane k's integer for
//     eight rows, the same integer the one-row kernel forms (integer sums are exact in any
//     order: four products stay below 2^15, 4 * 63 * 127 = 32004). Three multiplies per 64
//     products (the one-row kernel's order, a `vpmaddwd` per `vpmaddubsw`, takes four). Two
//     outputs share each load of the rows' slots, and a scale pair stays in a register for the
//     four lanes of a half;
//   - d_a * d_w of the eight rows is one vector product, the FMA chains run super-block after
//     super-block in the one-row kernel's order, and hsum_float_8's pairwise order is the same
//     additions done between the eight lane registers.
// The integers are the one-row kernel's and every float addition and product is its own on the
// same operands, so the outputs are identical, not close (tests/engine/q8k_gemm_test.cpp). A group short of eight rows (the tail
// of N) is padded with zero codes and scales; its padding is computed and never written. The
// portable kernel has no GEMM form: q8k_outputs_portable is the reference, any N.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/q8k_matmul.h"   // Q8KRows, Q8KOutputs

namespace lmscope::cpu {

// Rows per group: one 32-bit slot of a 256-bit register each.
constexpr int kQ8KGemmRows = 8;
// From this many rows on, q8k_matmul runs the GEMM (`lmscope-bench --q8-prefill ROWS`, one
// thread, the 1.5B-shaped Q4_K_M file's 196 K-quant matrices, GMAC/s per CPU second, GEMM
// against the one-row kernel's tiles on the AVX2 EPYC: 16 rows 40.9 / 45.7, 32 rows 48.3 / 45.2,
// 64 rows 51.2 / 45.5, 128 rows 57.3 / 46.1; each decoded weight chunk serves N / 8 groups).
constexpr int64_t kQ8KGemmMinRows = 32;

// The rows of x in groups of eight, as the GEMM reads them (nb = x.blocks()):
//   q [groups][nb][64 slots][8 rows][4 codes]: group g's super-block b, slot c of row r at
//     q + (g * nb + b) * 2048 + c * 32 + r * 4; slot 16u + j = row codes 64u + 2j, +1 (unit j
//     of sub-block 2u) and 64u + 32 + 2j, +1 (of sub-block 2u + 1)
//   d [groups][nb][8 rows]: the rows' d_a
//   pair_sums [groups][nb][4][8 rows][2]: Q4_K/Q5_K's mins factor, for lane p the sums of
//     sub-blocks 2p and 2p+1's 32 codes (bsums[4p] + bsums[4p+1], bsums[4p+2] + bsums[4p+3])
//   group_sums [groups][nb][8][8 rows][2]: Q6_K's offset, for lane k bsums[2k] and bsums[2k+1]
// Rows past x.rows (the last group's padding) have zero codes, sums and scales.
struct Q8KGemmPanel {
  int64_t groups = 0, blocks = 0;
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int16_t> pair_sums, group_sums;
};
void q8k_gemm_pack(const Q8KRows& x, Q8KGemmPanel& panel);

// Outputs [o0, o1) of every row of x, on the calling thread (the Q8KOutputs signature, so
// q8k_matmul splits it over the threads as it does the one-row kernel). W is Q4_K, Q5_K or
// Q6_K. *_available(): q8k_avx2_available() / q8k_avx512_available(). kernel_table.h's
// q8k_matmul family holds each as its build's `gemm`.
void q8k_gemm_outputs_avx2(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                           int64_t o1);
void q8k_gemm_outputs_avx512(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                             int64_t o1);

}  // namespace lmscope::cpu
