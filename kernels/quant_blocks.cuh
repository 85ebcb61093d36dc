// GGML quantized blocks -> float32, one block at a time (host and, under nvcc, device).
//
// Layouts follow ggml's ggml-common.h; the arithmetic follows the `gguf` Python package
// (gguf-py quants.py, which transformers uses to load GGUF files) operation for operation, so
// that the floats are bit-identical to it: every product and sum is a separate float32 op,
// never a fused multiply-add (see mul_add below), and scales are formed first
// (d * scale), then applied (that * q), as gguf-py and ggml do.
//
// All multi-byte fields are little-endian and may be unaligned: they are assembled from bytes.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/dtype_convert.cuh"
#include "kernels/hd.cuh"

namespace lmscope::quant {

// Elements per block and bytes per block.
constexpr int kQK4_0 = 32, kQ4_0Bytes = 18;   // half d; u8 qs[16]
constexpr int kQK4_1 = 32, kQ4_1Bytes = 20;   // half d, m; u8 qs[16]
constexpr int kQK5_0 = 32, kQ5_0Bytes = 22;   // half d; u8 qh[4]; u8 qs[16]
constexpr int kQK5_1 = 32, kQ5_1Bytes = 24;   // half d, m; u8 qh[4]; u8 qs[16]
constexpr int kQK8_0 = 32, kQ8_0Bytes = 34;   // half d; i8 qs[32]
constexpr int kQK4_NL = 32, kIQ4_NLBytes = 18;   // half d; u8 qs[16] (indices into kIQ4NLValues)
constexpr int kQK_K = 256;
constexpr int kQ2_KBytes = 84;    // u8 scales[16]; u8 qs[64]; half d, dmin
constexpr int kQ3_KBytes = 110;   // u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
constexpr int kQ4_KBytes = 144;   // half d, dmin; u8 scales[12]; u8 qs[128]
constexpr int kQ5_KBytes = 176;   // half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
constexpr int kQ6_KBytes = 210;   // u8 ql[128]; u8 qh[64]; i8 scales[16]; half d

LMSCOPE_HD uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (uint16_t(p[1]) << 8)); }
LMSCOPE_HD uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
LMSCOPE_HD float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

// a*b + c rounded twice, as numpy computes (d * q) + m. nvcc fuses a*b+c into one FMA by
// default, which rounds once; the intrinsics forbid that. Host builds for a target without
// FMA (the default x86-64) cannot contract; gguf_dequant.cpp also turns contraction off.
LMSCOPE_HD float mul_add(float a, float b, float c) {
#if LMSCOPE_DEVICE_CODE
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}
LMSCOPE_HD float mul_sub(float a, float b, float c) {
#if LMSCOPE_DEVICE_CODE
  return __fsub_rn(__fmul_rn(a, b), c);
#else
  return a * b - c;
#endif
}
LMSCOPE_HD float mul(float a, float b) {
#if LMSCOPE_DEVICE_CODE
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// ---- 32-element blocks. Nibbles: qs[j] low -> element j, high -> element j + 16. ----

LMSCOPE_HD void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = mul(d, float(int(qs[j] & 0xF) - 8));
    y[j + 16] = mul(d, float(int(qs[j] >> 4) - 8));
  }
}

LMSCOPE_HD void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = mul_add(d, float(qs[j] & 0xF), m);
    y[j + 16] = mul_add(d, float(qs[j] >> 4), m);
  }
}

// Element j takes its 5th bit from bit j of qh (a little-endian u32), element j+16 from bit j+16.
LMSCOPE_HD void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int x0 = int((qs[j] & 0xF) | (((qh >> j) & 1u) << 4)) - 16;
    const int x1 = int((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
    y[j] = mul(d, float(x0));
    y[j + 16] = mul(d, float(x1));
  }
}

LMSCOPE_HD void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const uint32_t x0 = (qs[j] & 0xFu) | (((qh >> j) & 1u) << 4);
    const uint32_t x1 = (qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4);
    y[j] = mul_add(d, float(x0), m);
    y[j + 16] = mul_add(d, float(x1), m);
  }
}

// IQ4_NL: Q4_0's layout, but each nibble indexes a fixed non-uniform grid of 16 int8 values
// (ggml-common.h's kvalues_iq4nl; gguf-py's IQ4_NL.kvalues): y = d * value[nibble].
#define LMSCOPE_IQ4_NL_VALUES {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
constexpr int8_t kIQ4NLValues[16] = LMSCOPE_IQ4_NL_VALUES;   // for host code (the SIMD kernels' shuffles)

LMSCOPE_HD void dequant_iq4_nl(const uint8_t* b, float* y) {
  const int8_t values[16] = LMSCOPE_IQ4_NL_VALUES;   // a local copy: device code cannot read the host table
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = mul(d, float(values[qs[j] & 0xF]));
    y[j + 16] = mul(d, float(values[qs[j] >> 4]));
  }
}

LMSCOPE_HD void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int j = 0; j < 32; ++j) y[j] = mul(float(int8_t(b[2 + j])), d);
}

// ---- 256-element k-quant super-blocks ----

// Q2_K: 16 sub-blocks of 16; scales[i] low nibble scales, high nibble mins.
// Element (4h + s)*32 + l (half h, shift s) = bits 2s..2s+1 of qs[32h + l]; sub-block = that / 16.
LMSCOPE_HD void dequant_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int half16 = 0; half16 < 2; ++half16) {
        const int e0 = (4 * h + s) * 32 + 16 * half16;
        const uint8_t sc = scales[e0 / 16];
        const float dl = mul(d, float(sc & 0xF)), ml = mul(dmin, float(sc >> 4));
        for (int l = 16 * half16; l < 16 * half16 + 16; ++l)
          y[(4 * h + s) * 32 + l] = mul_sub(dl, float((qs[32 * h + l] >> (2 * s)) & 3), ml);
      }
}

// Q3_K: 16 sub-blocks of 16 with signed 6-bit scales (low 4 bits in scales[0..7] nibbles,
// high 2 bits in scales[8..11]); element (4h + s)*32 + l = bits 2s..2s+1 of qs[32h + l],
// minus 4 unless bit (4h + s) of hmask[l] is set.
LMSCOPE_HD void dequant_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = load_f16(b + 108);
  for (int i = 0; i < 16; ++i) {
    const int lo = i < 8 ? (sc[i] & 0xF) : (sc[i - 8] >> 4);
    const int hi = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
    const float dl = mul(d, float(int8_t(uint8_t(lo | (hi << 4))) - 32));
    const int g = i / 2;  // which (h, s) group of 32
    const int h = g / 4, s = g % 4;
    for (int l = 16 * (i % 2); l < 16 * (i % 2) + 16; ++l) {
      const int q = ((qs[32 * h + l] >> (2 * s)) & 3) - (((hmask[l] >> g) & 1) ? 0 : 4);
      y[g * 32 + l] = mul(dl, float(q));
    }
  }
}

// 6-bit scale j and min j (j = 0..7) of Q4_K/Q5_K (ggml's get_scale_min_k4).
LMSCOPE_HD void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// All eight 6-bit scales of Q4_K/Q5_K into sm[0..7] and the eight mins into sm[8..15] (the
// values of scale_min_k4 for j = 0..7), by llama.cpp's word shifts: no branch per scale.
LMSCOPE_HD void scales_mins_k4(const uint8_t* scales, uint8_t* sm) {
  uint32_t u[4] = {load_u32(scales), load_u32(scales + 4), load_u32(scales + 8), 0};
  u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  const uint32_t mins_lo = u[1] & 0x3f3f3f3fu;
  u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  u[2] = mins_lo;
  u[0] &= 0x3f3f3f3fu;
  memcpy(sm, u, 16);   // little-endian, as every host and device here: byte 4w + b is u[w] >> 8b
}

// Q4_K/Q5_K chunk c (sub-blocks 2c and 2c+1): their scales d*sc and mins dmin*m.
LMSCOPE_HD void chunk_scales_k4(int c, float d, float dmin, const uint8_t* scales, float* d0, float* dm0, float* d1,
                                float* dm1) {
  int sc0, m0, sc1, m1;
  scale_min_k4(2 * c, scales, &sc0, &m0);
  scale_min_k4(2 * c + 1, scales, &sc1, &m1);
  *d0 = mul(d, float(sc0)), *dm0 = mul(dmin, float(m0));
  *d1 = mul(d, float(sc1)), *dm1 = mul(dmin, float(m1));
}

// Q4_K: 8 sub-blocks of 32; chunk c (64 elements) uses qs[32c..32c+31]: low nibbles are
// sub-block 2c, high nibbles sub-block 2c+1.  y = (d*sc)*q - dmin*m.
LMSCOPE_HD void dequant_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c) {
    float d0, dm0, d1, dm1;
    chunk_scales_k4(c, d, dmin, scales, &d0, &dm0, &d1, &dm1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = mul_sub(d0, float(q[l] & 0xF), dm0);
      y[64 * c + 32 + l] = mul_sub(d1, float(q[l] >> 4), dm1);
    }
  }
}

// Q5_K: Q4_K plus a 5th bit: bit 2c of qh[l] for sub-block 2c, bit 2c+1 for 2c+1.
LMSCOPE_HD void dequant_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int c = 0; c < 4; ++c) {
    float d0, dm0, d1, dm1;
    chunk_scales_k4(c, d, dmin, scales, &d0, &dm0, &d1, &dm1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      const int x0 = (q[l] & 0xF) | (((qh[l] >> (2 * c)) & 1) << 4);
      const int x1 = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
      y[64 * c + l] = mul_sub(d0, float(x0), dm0);
      y[64 * c + 32 + l] = mul_sub(d1, float(x1), dm1);
    }
  }
}

// Q6_K: two halves of 128; in half n, element 32k + l (k = 0..3) takes its low 4 bits from
// ql[64n + l + 32*(k&1)] (low nibble for k < 2, high for k >= 2) and its high 2 bits from
// bits 2k..2k+1 of qh[32n + l]; y = (d * scales[e/16]) * (q - 32).
LMSCOPE_HD void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 4; ++k) {
      for (int half16 = 0; half16 < 2; ++half16) {
        const int e0 = 128 * n + 32 * k + 16 * half16;
        const float ds = mul(d, float(sc[e0 / 16]));
        for (int l = 16 * half16; l < 16 * half16 + 16; ++l) {
          const uint8_t lq = ql[64 * n + l + 32 * (k & 1)];
          const int lo = k < 2 ? (lq & 0xF) : (lq >> 4);
          const int hi = (qh[32 * n + l] >> (2 * k)) & 3;
          y[128 * n + 32 * k + l] = mul(ds, float((lo | (hi << 4)) - 32));
        }
      }
    }
  }
}

}  // namespace lmscope::quant
