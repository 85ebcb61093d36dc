// The prefill of --cpu-activations q8 over Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL weights: an
// int8 GEMM that takes eight activation rows through each weight block in one pass, with the
// numbers of the one-row kernel (q8_matmul.h) bit for bit, so of llama.cpp's
// ggml_vec_dot_*_q8_0/_q8_1 and of its prefill (llamafile's tinyBLAS_Q0_AVX, which forms each
// output the same way for Q8_0, Q4_0 and Q5_0; for IQ4_NL it sums the blocks in one set of lanes where vec_dot uses two, and
// lmscope keeps vec_dot's order: kernels/q8_activations.cuh).
//
// What must not change is each output's arithmetic: per weight block, eight exact integer
// lanes (lane k: elements 4k..4k+3), each converted to float and added by one FMA with the
// block's d_w * d_a, then the eight lanes summed in ggml's hsum_float_8 order. The one-row
// kernel keeps an output's eight lanes in one register and sums them across it at the end. Here
// a register holds lane k of eight ROWS instead:
//   - the activations of a group of eight rows are repacked per block as eight 32-byte
//     vectors, vector k = [row 0 codes 4k..4k+3, row 1 codes 4k..4k+3, ..., row 7's];
//   - the weight block's quad k is broadcast to all eight 4-byte slots, so one integer dot
//     (maddubs + madd on AVX2, one vpdpbusd with VNNI) gives lane k of all eight rows;
//   - d_w * d_a for the eight rows is one vector product (d_w broadcast, the rows' d_a side by
//     side), where the one-row layout forms and broadcasts it once per row;
//   - hsum_float_8's pairwise order, ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), is
//     the same additions done between the eight lane registers, giving eight rows at once.
// Every addition and product is the one-row kernel's on the same operands, so the outputs are
// identical, not close (tests/engine/q8_gemm_test.cpp, and tests/llamacpp/ggml_q8_test.cpp
// against the built libggml-cpu).
//
// A group short of eight rows (the tail of N) is padded with zero codes and zero scales, whose
// outputs are computed and not written. For fewer than kQ8GemmMinRows rows the one-row kernel
// is as fast or faster and q8_matmul keeps it. The portable kernel has no GEMM form: it is the reference
// (q8_outputs_portable), any N.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/q8_matmul.h"   // Q8Rows, Q8Outputs

namespace lmscope::cpu {

// Rows per group: one 32-bit slot of a 256-bit register each.
constexpr int kQ8GemmRows = 8;
// Outputs decoded at a time (q8_gemm_x86.h): their codes stay in L2 while every group reads them.
constexpr int64_t kQ8GemmChunk = 32;
// The bytes of a thread's decoded chunk for rows of `cols` weights: per output and block at
// most 64 bytes of codes (Q8_0, IQ4_NL), a d and an m.
constexpr int64_t q8_gemm_scratch_bytes(int64_t cols) { return kQ8GemmChunk * (cols / 32) * (64 + 4 + 4); }
// From this many rows on, q8_matmul runs the GEMM (`lmscope-bench --q8-prefill ROWS`, one
// thread, Qwen2.5-Coder-0.5B's layers: at 8 rows the GEMM's one group pays for decoding the
// weights alone, 29.3 against the tiles' 30.7 GMAC/s; at 16, 36.7 against 31.0).
constexpr int64_t kQ8GemmMinRows = 16;

// The rows of x in groups of eight, as the GEMM reads them (nb = x.blocks()):
//   q [groups][nb][8 quads][8 rows][4 codes]: group g's block b, quad k of its row r at
//     q + (g * nb + b) * 256 + k * 32 + r * 4
//   d, s [groups][nb][8 rows]: the rows' block scales d_a and (block_q8_1's) sums s_a
//   sum16 [groups][nb][8 quads][8 rows]: 16 times the sum of the row's codes 4k..4k+3 (what
//     Q5_0's w + 16 adds to the dot, taken off again, and half of it Q4_0's w + 8: q8_gemm_x86.h)
// Rows past x.rows (the last group's padding) have zero codes and zero scales.
struct Q8GemmPanel {
  int64_t groups = 0, blocks = 0;
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> sum16;
};
void q8_gemm_pack(const Q8Rows& x, Q8GemmPanel& panel);

// Outputs [o0, o1) of every row of x, on the calling thread (the Q8Outputs signature, so
// q8_matmul splits it over the threads as it does the one-row kernel). W is any 32-weight block
// type. *_available(): q8_avx2_available() / q8_avx512_available(). kernel_table.h's
// q8_matmul family holds each as its build's `gemm`.
void q8_gemm_outputs_avx2(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                          int64_t o1);
void q8_gemm_outputs_avx512(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                            int64_t o1);


}  // namespace lmscope::cpu
