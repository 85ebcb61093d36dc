// GGML tensor data -> float32. The per-block math lives in kernels/quant_blocks.cuh (shared
// with future CUDA kernels); this file runs it over whole tensors on the host.
#pragma once
#include <cstdint>

namespace lmscope {

// Whether dequantize() handles ggml type `type`: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL.
bool ggml_can_dequantize(uint32_t type);

// Turns `n` elements of ggml type `type` (n a multiple of the type's block size) at `src`
// into float32 at `dst`, bit-identical to the gguf Python package's dequantize. Runs on
// one thread. Throws std::invalid_argument for a type it does not handle or a bad n.
void dequantize_row(uint32_t type, const uint8_t* src, float* dst, int64_t n);

// The same, split over blocks across OpenMP threads when `n` is large (when the library
// is compiled with OpenMP; serial otherwise).
void dequantize(uint32_t type, const uint8_t* src, float* dst, int64_t n);

}  // namespace lmscope
