// bf16 / f16 <-> f32 conversion, one element at a time. Used by the tensor library on the
// host and by CUDA kernels on the device.
#pragma once
#include <cstdint>
#include <cstring>
#include "kernels/hd.cuh"
#if defined(__CUDACC__) || defined(LMSCOPE_EMULATED_DEVICE_CODE)
#include <cuda_bf16.h>
#endif

namespace lmscope {

LMSCOPE_HD float bits_to_f32(uint32_t bits) {
#if LMSCOPE_DEVICE_CODE
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

LMSCOPE_HD uint32_t f32_to_bits(float f) {
#if LMSCOPE_DEVICE_CODE
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
#endif
}

// bf16 is the top half of an f32: widening is exact.
LMSCOPE_HD float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

// Round to nearest even, as torch's .to(torch.bfloat16) does; NaN stays a quiet NaN.
LMSCOPE_HD uint16_t f32_to_bf16(float f) {
  uint32_t bits = f32_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x0040u);
  uint32_t rounding_bias = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding_bias) >> 16);
}

// A float32 matmul input as a bf16 matmul reads it: rounded to bf16 (nearest even), widened
// back. The CUDA bf16 matmuls (cuBLAS path and gemv) and the CPU emulation all round so.
// On the device the hardware conversion (cvt.rn.bf16.f32): the same value for every input
// (round to nearest even; a NaN stays a NaN), in one instruction instead of eight.
LMSCOPE_HD float matmul_operand_bf16(float x) {
#if LMSCOPE_DEVICE_CODE
  return __bfloat162float(__float2bfloat16_rn(x));
#else
  return bf16_to_f32(f32_to_bf16(x));
#endif
}

// IEEE half -> float, exact (subnormals, inf and NaN included).
LMSCOPE_HD float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    // subnormal: value = mant * 2^-24
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> IEEE half with round to nearest even.
LMSCOPE_HD uint16_t f32_to_f16(float f) {
  uint32_t bits = f32_to_bits(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t absb = bits & 0x7fffffffu;
  if (absb > 0x7f800000u) return uint16_t(sign | 0x7e00u);         // NaN
  if (absb >= 0x477ff000u) return uint16_t(sign | 0x7c00u);        // overflow -> inf
  if (absb < 0x38800000u) {                                        // subnormal or zero
    // value / 2^-24, rounded to nearest even
    float a = bits_to_f32(absb) * 16777216.0f;
    uint32_t q = uint32_t(a);
    float rem = a - float(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) q++;
    return uint16_t(sign | q);
  }
  uint32_t exp = ((absb >> 23) - 112u) << 10;
  uint32_t mant = (absb >> 13) & 0x3ffu;
  uint32_t rest = absb & 0x1fffu;
  uint32_t h = exp | mant;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return uint16_t(sign | h);
}

}  // namespace lmscope
