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
//     vectors, vector c = [row 0 codes 4c..4c+3, row 1's, ..., row 7's] (quad c of a super-block
//     lies in lane c mod 8 of its 32-byte vector c / 8);
//   - a chunk of weight rows is decoded once for every group that reads it: per super-block the
//     256 codes as bytes (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63), each quad's scale as a pair of
//     int16, the mins' (or Q6_K's offset's) factors, d and dmin as float;
//   - per lane k and 32-byte vector v, the weight's quad is broadcast to the eight 4-byte slots
//     and `vpmaddubsw` + `vpmaddwd` with the quad's scale (AVX-512: `vpdpwssd`) gives scale times
//     the quad's dot product for all eight rows; their sum over v is lane k's integer for eight
//     rows, the same integer the one-row kernel forms (integer sums are exact in any order: the
//     int16 pair sums stay below 2^15, 2 * 63 * 127). Two outputs share each load of the rows'
//     quads, and a scale stays in a register for the four lanes of a half (lanes 0-3, 4-7), so
//     the loop is bound by its two multiplies per 32 products, not by loads;
//   - d_a * d_w of the eight rows is one vector product, the FMA chains run super-block after
//     super-block as before, and hsum_float_8's pairwise order is the same additions done
//     between the eight lane registers.
// Every addition and product is the one-row kernel's on the same operands, so the outputs are
// identical, not close (tests/engine/q8k_gemm_test.cpp). A group short of eight rows (the tail
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
// against the one-row kernel's tiles on the AVX2 EPYC: 16 rows 37.1 / 44.8, 32 rows 44.9 / 43.6,
// 64 rows 47.8 / 45.2, 128 rows 49.2 / 44.6; each decoded weight chunk serves N / 8 groups).
constexpr int64_t kQ8KGemmMinRows = 32;

// The rows of x in groups of eight, as the GEMM reads them (nb = x.blocks()):
//   q [groups][nb][64 quads][8 rows][4 codes]: group g's super-block b, quad c of row r at
//     q + (g * nb + b) * 2048 + c * 32 + r * 4
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
