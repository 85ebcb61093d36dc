// Shared by the int8 GEMM tests (q8_gemm_test, q8k_gemm_test): a GEMM asked for outputs
// [o0, o1) of N rows writes exactly those, each bit for bit the reference's, and nothing else.
// `got` was filled with NaN before the call and has room past the N x O outputs, so a write
// outside the slice or past the last row shows as a non-NaN.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace lmscope::testing_util {

inline void expect_only_the_slice_written(const std::vector<float>& got, const std::vector<float>& want, int64_t N,
                                          int64_t O, int64_t o0, int64_t o1, const std::string& name) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const float v = got[size_t(n * O + o)];
      if (o >= o0 && o < o1)
        EXPECT_EQ(std::memcmp(&v, &want[size_t(n * O + o)], 4), 0) << name << " row " << n << " output " << o;
      else
        EXPECT_TRUE(std::isnan(v)) << name << " wrote output " << o << " of row " << n << " outside its slice";
    }
  for (size_t i = size_t(N * O); i < got.size(); ++i) EXPECT_TRUE(std::isnan(got[i])) << name << " wrote past the rows";
}

}  // namespace lmscope::testing_util
