#include "backend/cpu/block_prefill.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "kernels/dtype_convert.cuh"
#include "kernels/quant_blocks.cuh"

// A build for a target with FMA (-march=native) could fuse d*q + m: not in this file.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#define LMSCOPE_AVX2_ONLY __attribute__((target("avx2")))   // no FMA: d*q + m rounds twice
#endif

namespace lmscope::cpu {

#if defined(LMSCOPE_AVX2_ONLY)
namespace {

// 8 bytes (int8 for Q8_0, nibbles for Q4_1) -> 8 floats: d * q (+ m), each product and sum
// rounded on its own.
LMSCOPE_AVX2_ONLY inline void store8(float* y, __m128i bytes8, bool is_signed, __m256 d, const __m256* m) {
  const __m256i i = is_signed ? _mm256_cvtepi8_epi32(bytes8) : _mm256_cvtepu8_epi32(bytes8);
  __m256 v = _mm256_mul_ps(d, _mm256_cvtepi32_ps(i));
  if (m) v = _mm256_add_ps(v, *m);
  _mm256_storeu_ps(y, v);
}

// 8 bytes at p, each widened to a 32-bit lane.
LMSCOPE_AVX2_ONLY inline __m256i widen8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// A block of one of the fallback types (Q4_0, Q5_0, Q5_1, IQ4_NL): y = d * q (+ m for Q5_1),
// each product and sum rounded on its own (quant::dequant_q4_0 / _q5_0 / _q5_1 / _iq4_nl).
// Element e's nibble: the low one of byte e for e < 16, else the high one of byte e - 16; Q5_0's
// and Q5_1's fifth bit: bit e of the 32-bit qh, brought down by a per-lane shift; IQ4_NL's value:
// the grid entry the nibble indexes (one byte shuffle per 16 elements).
template <BlockType T>
LMSCOPE_AVX2_ONLY void fallback_block(const uint8_t* blk, float* y) {
  const __m256 d = _mm256_set1_ps(quant::load_f16(blk));
  if (T == BlockType::IQ4_NL) {
    const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)), low4 = _mm_set1_epi8(0x0F);
    const __m128i v[2] = {_mm_shuffle_epi8(grid, _mm_and_si128(qs, low4)),
                          _mm_shuffle_epi8(grid, _mm_and_si128(_mm_srli_epi16(qs, 4), low4))};
    for (int k = 0; k < 4; ++k) {
      const __m256i q = _mm256_cvtepi8_epi32(k % 2 ? _mm_srli_si128(v[k / 2], 8) : v[k / 2]);
      _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
    }
    return;
  }
  constexpr bool fifth_bit = T == BlockType::Q5_0 || T == BlockType::Q5_1;
  constexpr int qs_at = T == BlockType::Q5_1 ? 8 : T == BlockType::Q5_0 ? 6 : 2;
  constexpr int offset = T == BlockType::Q4_0 ? 8 : T == BlockType::Q5_0 ? 16 : 0;   // the codes' zero
  const __m256i lo = widen8(blk + qs_at), hi = widen8(blk + qs_at + 8), low4 = _mm256_set1_epi32(0x0F);
  __m256i q[4] = {_mm256_and_si256(lo, low4), _mm256_and_si256(hi, low4), _mm256_srli_epi32(lo, 4),
                  _mm256_srli_epi32(hi, 4)};   // elements 0-7, 8-15, 16-23, 24-31
  if (fifth_bit) {
    uint32_t qh;
    std::memcpy(&qh, blk + (T == BlockType::Q5_1 ? 4 : 2), 4);
    const __m256i bits = _mm256_set1_epi32(int(qh)), one = _mm256_set1_epi32(1);
    __m256i e = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int k = 0; k < 4; ++k, e = _mm256_add_epi32(e, _mm256_set1_epi32(8)))
      q[k] = _mm256_or_si256(q[k], _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(bits, e), one), 4));
  }
  for (int k = 0; k < 4; ++k) {
    __m256 v = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(q[k], _mm256_set1_epi32(offset))));
    if (T == BlockType::Q5_1) v = _mm256_add_ps(v, _mm256_set1_ps(quant::load_f16(blk + 2)));
    _mm256_storeu_ps(y + 8 * k, v);
  }
}

// Every block of a row of one of the fallback types.
template <BlockType T>
LMSCOPE_AVX2_ONLY void fallback_row(const uint8_t* blk, int64_t nb, float* y) {
  for (int64_t k = 0; k < nb; ++k, blk += block_bytes(T), y += 32) fallback_block<T>(blk, y);
}

// A Q4_K/Q5_K super-block: y = (d * sc) * q - (dmin * m) per sub-block of 32, the scales
// formed as quant::dequant_q4_k forms them (chunk_scales_k4), the product and the difference
// rounded on their own.
LMSCOPE_AVX2_ONLY void k4_block(const uint8_t* blk, bool q5, float* y) {
  const float d = quant::load_f16(blk), dmin = quant::load_f16(blk + 2);
  const uint8_t* qh = blk + 16;
  const uint8_t* qs = blk + (q5 ? 48 : 16);
  const __m256i low4 = _mm256_set1_epi32(0x0F), one = _mm256_set1_epi32(1);
  for (int c = 0; c < 4; ++c) {
    float d0, dm0, d1, dm1;
    quant::chunk_scales_k4(c, d, dmin, blk + 4, &d0, &dm0, &d1, &dm1);
    const __m256 vd0 = _mm256_set1_ps(d0), vm0 = _mm256_set1_ps(dm0), vd1 = _mm256_set1_ps(d1), vm1 = _mm256_set1_ps(dm1);
    for (int l = 0; l < 32; l += 8) {
      const __m256i b = widen8(qs + 32 * c + l);
      __m256i lo = _mm256_and_si256(b, low4), hi = _mm256_srli_epi32(b, 4);
      if (q5) {
        const __m256i h = widen8(qh + l);
        lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(_mm256_srl_epi32(h, _mm_cvtsi32_si128(2 * c)), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(_mm256_srl_epi32(h, _mm_cvtsi32_si128(2 * c + 1)), one), 4));
      }
      _mm256_storeu_ps(y + 64 * c + l, _mm256_sub_ps(_mm256_mul_ps(vd0, _mm256_cvtepi32_ps(lo)), vm0));
      _mm256_storeu_ps(y + 64 * c + 32 + l, _mm256_sub_ps(_mm256_mul_ps(vd1, _mm256_cvtepi32_ps(hi)), vm1));
    }
  }
}

// A Q6_K super-block: y = (d * sc) * (q - 32), quant::dequant_q6_k's layout and products.
LMSCOPE_AVX2_ONLY void q6k_block(const uint8_t* blk, float* y) {
  const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
  const float d = quant::load_f16(blk + 208);
  const __m256i low4 = _mm256_set1_epi32(0x0F), three = _mm256_set1_epi32(3), off = _mm256_set1_epi32(32);
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; l += 8) {
      const __m256i a = widen8(blk + 64 * n + l), b = widen8(blk + 64 * n + 32 + l), h = widen8(blk + 128 + 32 * n + l);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_slli_epi32(_mm256_and_si256(h, three), 4)),
          _mm256_or_si256(_mm256_and_si256(b, low4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), three), 4)),
          _mm256_or_si256(_mm256_srli_epi32(a, 4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), three), 4)),
          _mm256_or_si256(_mm256_srli_epi32(b, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4))};
      for (int k = 0; k < 4; ++k) {
        const float ds = d * float(sc[8 * n + 2 * k + l / 16]);
        _mm256_storeu_ps(y + 128 * n + 32 * k + l, _mm256_mul_ps(_mm256_set1_ps(ds), _mm256_cvtepi32_ps(_mm256_sub_epi32(q[k], off))));
      }
    }
}

}  // namespace

// Block layouts (kernels/quant_blocks.cuh): Q8_0 = f16 d, 32 int8; Q4_1 = f16 d, f16 m, 16
// bytes whose low nibbles are elements 0..15 and high nibbles 16..31; the others' there too.
LMSCOPE_AVX2_ONLY void dequantize_panel_avx2(const QuantBlocks& W, int64_t row0, int64_t n, float* out) {
  const int64_t nb = W.row_blocks();
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* blk = W.data + (row0 + r) * W.row_bytes();
    float* y = out + r * W.cols;
    if (is_k_quant(W.type)) {
      for (int64_t k = 0; k < nb; ++k, blk += W.block_bytes(), y += 256) {
        if (W.type == BlockType::Q6_K)
          q6k_block(blk, y);
        else
          k4_block(blk, W.type == BlockType::Q5_K, y);
      }
      continue;
    }
    switch (W.type) {
      case BlockType::Q4_0: fallback_row<BlockType::Q4_0>(blk, nb, y); continue;
      case BlockType::Q5_0: fallback_row<BlockType::Q5_0>(blk, nb, y); continue;
      case BlockType::Q5_1: fallback_row<BlockType::Q5_1>(blk, nb, y); continue;
      case BlockType::IQ4_NL: fallback_row<BlockType::IQ4_NL>(blk, nb, y); continue;
      default: break;   // Q8_0, Q4_1 below
    }
    for (int64_t k = 0; k < nb; ++k, blk += W.block_bytes(), y += 32) {
      const __m256 d = _mm256_set1_ps(f16_to_f32(uint16_t(blk[0] | (blk[1] << 8))));
      if (W.type == BlockType::Q8_0) {
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18));
        store8(y, q0, true, d, nullptr);
        store8(y + 8, _mm_srli_si128(q0, 8), true, d, nullptr);
        store8(y + 16, q1, true, d, nullptr);
        store8(y + 24, _mm_srli_si128(q1, 8), true, d, nullptr);
      } else {
        const __m256 m = _mm256_set1_ps(f16_to_f32(uint16_t(blk[2] | (blk[3] << 8))));
        const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
        const __m128i lo = _mm_and_si128(qs, low4), hi = _mm_and_si128(_mm_srli_epi16(qs, 4), low4);
        store8(y, lo, false, d, &m);
        store8(y + 8, _mm_srli_si128(lo, 8), false, d, &m);
        store8(y + 16, hi, false, d, &m);
        store8(y + 24, _mm_srli_si128(hi, 8), false, d, &m);
      }
    }
  }
}

bool dequantize_panel_simd_available() { return processor_runs(Isa::avx2); }
#else
void dequantize_panel_avx2(const QuantBlocks&, int64_t, int64_t, float*) {
  throw std::logic_error("dequantize_panel_avx2: not an x86-64 build");
}
bool dequantize_panel_simd_available() { return false; }
#endif

void dequantize_panel(const QuantBlocks& W, int64_t row0, int64_t n, float* out) {
  chosen_kernels().prefill_panel.build.dequantize(W, row0, n, out);
}

int64_t prefill_panel_rows(int64_t cols) {
  const int64_t by_bytes = int64_t(kPrefillPanelBytes / (sizeof(float) * size_t(std::max<int64_t>(cols, 1))));
  return std::max(kPrefillMinRows, by_bytes);
}

namespace {

// The calling thread's panel buffer, kept for the thread's life (OpenMP's threads persist), so
// that a matmul neither faults in fresh pages nor hands glibc a freed 2 MiB mapping: freeing
// one raises malloc's mmap threshold, after which the trace's MB-sized tensors came from the
// heap and stayed there (+92 MiB peak on a SmolLM2 trace).
float* thread_panel(size_t floats) {
  thread_local std::unique_ptr<float, decltype(&std::free)> buf(nullptr, &std::free);
  thread_local size_t capacity = 0;
  if (floats > capacity) {
    // 64-byte aligned: the sgemm kernels' packing reads it in whole vectors.
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    buf.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!buf) throw std::runtime_error("panel_matmul: out of memory for a panel");
    capacity = bytes / sizeof(float);
  }
  return buf.get();
}

}  // namespace

void panel_matmul(float* out, const float* x, int64_t O, int64_t I, const float* bias, int64_t N,
                  const PanelFill& fill) {
  if (N < 1) throw std::logic_error("panel_matmul: " + std::to_string(N) + " rows");
  const int64_t piece = std::min(sgemm_piece(O), prefill_panel_rows(I));
  over_pieces(O, piece, [&](int64_t o0, int64_t o1) {
    float* scratch = thread_panel(size_t(piece * I));
    const int64_t n = o1 - o0;
    fill(o0, n, scratch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(N), int(n), int(I), 1.0f, x, int(I), scratch, int(I), 0.0f,
                out + o0, int(O));
    if (bias)
      for (int64_t r = 0; r < N; ++r)
        for (int64_t j = o0; j < o1; ++j) out[r * O + j] += bias[j];
  });
}

void block_prefill_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  const auto dequantize = chosen_kernels().prefill_panel.build.dequantize;   // before the threads: it may throw
  panel_matmul(out, x, W.rows, W.cols, bias, N,
               [&](int64_t row0, int64_t n, float* panel) { dequantize(W, row0, n, panel); });
}

}  // namespace lmscope::cpu
