// What block_matmul's SIMD kernels (block_matmul_avx2.cpp, block_matmul_avx512.cpp, and the
// K-quant body block_matmul_k_x86.h) share: they are templates on the block type and on the
// row count N, so that their per-row accumulator arrays have a size the compiler knows and stay
// in registers (an array indexed by a run-time N lives on the stack: a load and a store per
// block and row). This picks the instance for a matrix's type and a run-time N.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backend/cpu/block_matmul.h"

namespace lmscope::cpu {

// f(std::integral_constant<int, N>) for N in 1..8 (check_block_rows has checked it).
template <class F>
void with_rows(int64_t N, const F& f) {
  static_assert(kBlockMatmulMaxRows == 8, "with_rows instantiates N = 1..8");
  switch (N) {
    case 1: return f(std::integral_constant<int, 1>());
    case 2: return f(std::integral_constant<int, 2>());
    case 3: return f(std::integral_constant<int, 3>());
    case 4: return f(std::integral_constant<int, 4>());
    case 5: return f(std::integral_constant<int, 5>());
    case 6: return f(std::integral_constant<int, 6>());
    case 7: return f(std::integral_constant<int, 7>());
    default: return f(std::integral_constant<int, 8>());
  }
}

// f(std::bool_constant<Q4_1>, std::integral_constant<int, N>) for a Q8_0/Q4_1 W. f is called,
// not inlined into a SIMD function: a lambda does not inherit a target attribute, the kernel it
// calls keeps its own.
template <class F>
void with_block_shape(BlockType type, int64_t N, const F& f) {
  with_rows(N, [&](auto rows) {
    if (type == BlockType::Q4_1)
      f(std::true_type(), rows);
    else
      f(std::false_type(), rows);
  });
}

// f(std::integral_constant<BlockType, T>, std::integral_constant<int, N>) for a K-quant W.
template <class F>
void with_k_shape(BlockType type, int64_t N, const F& f) {
  with_rows(N, [&](auto rows) {
    switch (type) {
      case BlockType::Q4_K: return f(std::integral_constant<BlockType, BlockType::Q4_K>(), rows);
      case BlockType::Q5_K: return f(std::integral_constant<BlockType, BlockType::Q5_K>(), rows);
      default: return f(std::integral_constant<BlockType, BlockType::Q6_K>(), rows);
    }
  });
}

}  // namespace lmscope::cpu
