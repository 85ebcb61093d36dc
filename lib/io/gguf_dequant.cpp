// Whole-tensor dequantization over the per-block functions of kernels/quant_blocks.cuh.
//
// Bit-exactness with gguf-py needs every d*q + m rounded twice (no fused multiply-add). The
// default x86-64 target has no FMA instruction, but a build with -march=native under GNU C++
// (-ffp-contract=fast) could fuse them; this turns contraction off for this file (GCC).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "io/gguf_dequant.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/dtype_convert.cuh"
#include "kernels/quant_blocks.cuh"

namespace lmscope {
namespace {

// ggml type numbers (gguf.h / gguf-py GGMLQuantizationType).
enum : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kIQ4_NL = 20, kBF16 = 30,
};

using BlockFn = void (*)(const uint8_t*, float*);

struct Kind {
  int block;     // elements per block
  int bytes;     // bytes per block
  BlockFn fn;    // nullptr for the plain types F32/F16/BF16
};

bool kind_of(uint32_t type, Kind* k) {
  using namespace quant;
  switch (type) {
    case kF32: *k = {1, 4, nullptr}; return true;
    case kF16: *k = {1, 2, nullptr}; return true;
    case kBF16: *k = {1, 2, nullptr}; return true;
    case kQ4_0: *k = {kQK4_0, kQ4_0Bytes, dequant_q4_0}; return true;
    case kQ4_1: *k = {kQK4_1, kQ4_1Bytes, dequant_q4_1}; return true;
    case kQ5_0: *k = {kQK5_0, kQ5_0Bytes, dequant_q5_0}; return true;
    case kQ5_1: *k = {kQK5_1, kQ5_1Bytes, dequant_q5_1}; return true;
    case kQ8_0: *k = {kQK8_0, kQ8_0Bytes, dequant_q8_0}; return true;
    case kQ2_K: *k = {kQK_K, kQ2_KBytes, dequant_q2_k}; return true;
    case kQ3_K: *k = {kQK_K, kQ3_KBytes, dequant_q3_k}; return true;
    case kQ4_K: *k = {kQK_K, kQ4_KBytes, dequant_q4_k}; return true;
    case kQ5_K: *k = {kQK_K, kQ5_KBytes, dequant_q5_k}; return true;
    case kQ6_K: *k = {kQK_K, kQ6_KBytes, dequant_q6_k}; return true;
    case kIQ4_NL: *k = {kQK4_NL, kIQ4_NLBytes, dequant_iq4_nl}; return true;
    default: return false;
  }
}

Kind checked_kind(uint32_t type, int64_t n) {
  Kind k;
  if (!kind_of(type, &k))
    throw std::invalid_argument("dequantize: ggml type " + std::to_string(type) + " is not supported");
  if (n < 0 || n % k.block != 0)
    throw std::invalid_argument("dequantize: " + std::to_string(n) +
                                " elements is not a whole number of blocks of " + std::to_string(k.block));
  return k;
}

// Blocks [b0, b1) of a tensor of kind k.
void run_blocks(uint32_t type, const Kind& k, const uint8_t* src, float* dst, int64_t b0, int64_t b1) {
  if (k.fn) {
    // The switch on the type sits outside the loop so each block function is inlined.
    switch (type) {
#define LMSCOPE_DQ_CASE(T, FN) \
  case T: for (int64_t b = b0; b < b1; ++b) quant::FN(src + b * k.bytes, dst + b * k.block); return;
      LMSCOPE_DQ_CASE(kQ4_0, dequant_q4_0)
      LMSCOPE_DQ_CASE(kQ4_1, dequant_q4_1)
      LMSCOPE_DQ_CASE(kQ5_0, dequant_q5_0)
      LMSCOPE_DQ_CASE(kQ5_1, dequant_q5_1)
      LMSCOPE_DQ_CASE(kQ8_0, dequant_q8_0)
      LMSCOPE_DQ_CASE(kQ2_K, dequant_q2_k)
      LMSCOPE_DQ_CASE(kQ3_K, dequant_q3_k)
      LMSCOPE_DQ_CASE(kQ4_K, dequant_q4_k)
      LMSCOPE_DQ_CASE(kQ5_K, dequant_q5_k)
      LMSCOPE_DQ_CASE(kQ6_K, dequant_q6_k)
      LMSCOPE_DQ_CASE(kIQ4_NL, dequant_iq4_nl)
#undef LMSCOPE_DQ_CASE
      default: break;
    }
    for (int64_t b = b0; b < b1; ++b) k.fn(src + b * k.bytes, dst + b * k.block);
    return;
  }
  if (type == kF32) {
    std::memcpy(dst + b0, src + b0 * 4, size_t(b1 - b0) * 4);
  } else if (type == kF16) {
    for (int64_t i = b0; i < b1; ++i) dst[i] = f16_to_f32(quant::load_u16(src + 2 * i));
  } else {  // BF16
    for (int64_t i = b0; i < b1; ++i) dst[i] = bf16_to_f32(quant::load_u16(src + 2 * i));
  }
}

}  // namespace

bool ggml_can_dequantize(uint32_t type) {
  Kind k;
  return kind_of(type, &k);
}

void dequantize_row(uint32_t type, const uint8_t* src, float* dst, int64_t n) {
  const Kind k = checked_kind(type, n);
  run_blocks(type, k, src, dst, 0, n / k.block);
}

void dequantize(uint32_t type, const uint8_t* src, float* dst, int64_t n) {
  const Kind k = checked_kind(type, n);
  const int64_t blocks = n / k.block;
  // Chunks of about 64K elements: big enough to amortize scheduling, small enough to balance.
  const int64_t per_chunk = std::max<int64_t>(1, (int64_t(1) << 16) / k.block);
  const int64_t chunks = (blocks + per_chunk - 1) / per_chunk;
  if (chunks <= 1) {
    run_blocks(type, k, src, dst, 0, blocks);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b0 = c * per_chunk;
    const int64_t b1 = std::min(blocks, b0 + per_chunk);
    run_blocks(type, k, src, dst, b0, b1);
  }
}

}  // namespace lmscope
