// fp16 rounding for the tests' references, independent of lmscope's own conversion (the bit
// manipulation of f32_to_f16 in kernels/): by arithmetic. v / ulp is exact in double, and
// nearbyint rounds ties to even, as IEEE 754 binary16 conversion does. (Not _Float16: clang 14,
// the sanitizer build's compiler, has none on x86-64.)
#pragma once
#include <cmath>

namespace lmscope::test_f16 {

// f16(v) widened back to float: round to nearest even; above fp16's range, +-inf.
inline float round_trip(float v) {
  if (v == 0.0f || !std::isfinite(v)) return v;
  int e = std::ilogb(v);    // |v| in [2^e, 2^(e+1))
  if (e < -14) e = -14;     // subnormal halves share the smallest normal exponent's ulp
  const double ulp = std::ldexp(1.0, e - 10);
  const double r = std::nearbyint(double(v) / ulp) * ulp;
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, v) : float(r);
}

}  // namespace lmscope::test_f16
