#include "backend/cpu/block_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backend/cpu/over_rows.h"
#include "kernels/quant_blocks.cuh"

#include "backend/cpu/avx2.h"

namespace lmscope::cpu {

// ---- portable: dequantize a block (the loader's own function), then dot ----------------
namespace {
void portable_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N, int64_t o0,
                      int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = I / QuantBlocks::kBlock;
  float w[QuantBlocks::kBlock];
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    float acc[kBlockMatmulMaxRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * W.block_bytes();
      if (W.type == BlockType::Q8_0)
        quant::dequant_q8_0(blk, w);
      else
        quant::dequant_q4_1(blk, w);
      for (int64_t n = 0; n < N; ++n) {
        const float* xb = x + n * I + b * QuantBlocks::kBlock;
        float s = 0;
        for (int j = 0; j < QuantBlocks::kBlock; ++j) s += w[j] * xb[j];
        acc[n] += s;
      }
    }
    for (int64_t n = 0; n < N; ++n) out[n * O + o] = acc[n] + (bias ? bias[o] : 0.0f);
  }
}
}  // namespace

void block_matmul_portable(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { portable_outputs(out, x, W, bias, N, o0, o1); });
}

#if defined(LMSCOPE_AVX2)
namespace {

// The 32 weights of a block as 4 vectors of 8 floats, without the scale: q (Q8_0: -128..127;
// Q4_1: 0..15, elements 0-15 from the low nibbles, 16-31 from the high ones).
LMSCOPE_AVX2 inline void block_q(const uint8_t* blk, BlockType type, __m256 q[4]) {
  if (type == BlockType::Q8_0) {
    const uint8_t* qs = blk + 2;
    for (int k = 0; k < 4; ++k)
      q[k] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * k))));
  } else {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(bytes, mask), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    q[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
    q[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
    q[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
    q[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
  }
}

// Outputs [o0, o1). Per block and row: s = sum(q * x) over the 32 weights (4 vector FMAs),
// then acc += d * s (+ m * sum(x) for Q4_1), still 8 lanes wide; one horizontal sum per
// output. (A function of its own: a lambda would not inherit the target attribute.)
LMSCOPE_AVX2 void avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                               int64_t o0, int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = I / QuantBlocks::kBlock;
  const bool q4_1 = W.type == BlockType::Q4_1;
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    __m256 acc[kBlockMatmulMaxRows];
    for (int64_t n = 0; n < N; ++n) acc[n] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * W.block_bytes();
      __m256 q[4];
      block_q(blk, W.type, q);
      const __m256 d = _mm256_set1_ps(quant::load_f16(blk));
      const __m256 m = _mm256_set1_ps(q4_1 ? quant::load_f16(blk + 2) : 0.0f);
      for (int64_t n = 0; n < N; ++n) {
        const float* xb = x + n * I + b * QuantBlocks::kBlock;
        const __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8), x2 = _mm256_loadu_ps(xb + 16),
                     x3 = _mm256_loadu_ps(xb + 24);
        __m256 s = _mm256_mul_ps(q[0], x0);
        s = _mm256_fmadd_ps(q[1], x1, s);
        s = _mm256_fmadd_ps(q[2], x2, s);
        s = _mm256_fmadd_ps(q[3], x3, s);
        acc[n] = _mm256_fmadd_ps(d, s, acc[n]);
        if (q4_1) acc[n] = _mm256_fmadd_ps(m, _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)), acc[n]);
      }
    }
    for (int64_t n = 0; n < N; ++n) out[n * O + o] = hsum(acc[n]) + (bias ? bias[o] : 0.0f);
  }
}

}  // namespace

void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { avx2_outputs(out, x, W, bias, N, o0, o1); });
}

bool block_matmul_simd_available() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#else
void avx2_outputs(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t, int64_t) {
  throw std::logic_error("avx2_outputs: not an x86-64 build");
}
void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  block_matmul_portable(out, x, W, bias, N);
}
bool block_matmul_simd_available() { return false; }
#endif

namespace {

using Kernel = void (*)(float*, const float*, const QuantBlocks&, const float*, int64_t);
using Outputs = void (*)(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t, int64_t);
struct Choice {
  const char* name;
  Kernel run;
  Outputs outputs;   // [o0, o1) on the calling thread
};

// The widest the processor runs, or LMSCOPE_CPU_KERNEL's.
Choice choose() {
  const Choice avx512{"avx512", block_matmul_avx512, block_matmul_avx512_outputs},
      avx2{"avx2", block_matmul_avx2, avx2_outputs}, portable{"portable", block_matmul_portable, portable_outputs};
  const char* env = std::getenv("LMSCOPE_CPU_KERNEL");
  if (!env || !*env) {
    if (block_matmul_avx512_available()) return avx512;
    return block_matmul_simd_available() ? avx2 : portable;
  }
  const std::string want = env;
  if (want == "portable") return portable;
  if (want == "avx2" && block_matmul_simd_available()) return avx2;
  if (want == "avx512" && block_matmul_avx512_available()) return avx512;
  if (want == "avx2" || want == "avx512")
    throw std::runtime_error("LMSCOPE_CPU_KERNEL=" + want + ": this processor does not run it");
  throw std::runtime_error("LMSCOPE_CPU_KERNEL=" + want + ": expected avx512, avx2 or portable");
}

const Choice& chosen() {
  static const Choice c = choose();
  return c;
}

}  // namespace

const char* block_matmul_kernel() { return chosen().name; }

void block_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  chosen().run(out, x, W, bias, N);
}

// Each thread takes a contiguous slice of the jobs' outputs laid end to end.
void block_matmul_group(const float* x, int64_t N, const BlockMatmulJob* jobs, int count) {
  check_block_rows(N);
  const Outputs run = chosen().outputs;
  int64_t total = 0;
  for (int j = 0; j < count; ++j) total += jobs[j].W->rows;
  over_outputs(total, [&](int64_t g0, int64_t g1) {
    int64_t first = 0;   // the first output of job j in the laid-out order
    for (int j = 0; j < count; ++j) {
      const int64_t rows = jobs[j].W->rows, o0 = std::max<int64_t>(g0 - first, 0),
                    o1 = std::min<int64_t>(g1 - first, rows);
      if (o1 > o0) run(jobs[j].out, x, *jobs[j].W, jobs[j].bias, N, o0, o1);
      first += rows;
    }
  });
}

}  // namespace lmscope::cpu
