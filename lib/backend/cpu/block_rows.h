// What block_matmul's SIMD kernels (block_matmul.cpp's AVX2, block_matmul_avx512.cpp) share:
// both are templates on the block type and on the row count N, so that their per-row
// accumulator arrays have a size the compiler knows and stay in registers (an array indexed
// by a run-time N lives on the stack: a load and a store per block and row). This picks the
// instance for a matrix's type and a run-time N.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backend/cpu/block_matmul.h"

namespace lmscope::cpu {

// f(std::bool_constant<Q4_1>, std::integral_constant<int, N>) for W's type and N in 1..8
// (check_block_rows has checked it). f is called, not inlined into a SIMD function: a lambda
// does not inherit a target attribute, the kernel it calls keeps its own.
template <class F>
void with_block_shape(BlockType type, int64_t N, const F& f) {
  static_assert(kBlockMatmulMaxRows == 8, "with_block_shape instantiates N = 1..8");
  const auto rows = [&](auto q4_1) {
    switch (N) {
      case 1: return f(q4_1, std::integral_constant<int, 1>());
      case 2: return f(q4_1, std::integral_constant<int, 2>());
      case 3: return f(q4_1, std::integral_constant<int, 3>());
      case 4: return f(q4_1, std::integral_constant<int, 4>());
      case 5: return f(q4_1, std::integral_constant<int, 5>());
      case 6: return f(q4_1, std::integral_constant<int, 6>());
      case 7: return f(q4_1, std::integral_constant<int, 7>());
      default: return f(q4_1, std::integral_constant<int, 8>());
    }
  };
  if (type == BlockType::Q4_1)
    rows(std::true_type());
  else
    rows(std::false_type());
}

}  // namespace lmscope::cpu
