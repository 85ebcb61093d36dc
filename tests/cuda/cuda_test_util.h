// Shared by the CUDA tests: the backend or a skip that says why, random tensors, and a
// comparison that reports the worst element.
//
// Every CUDA test starts with LMSCOPE_CUDA_OR_SKIP: on a machine without a usable device
// (CI, a laptop) the test is skipped with the one-line reason, e.g.
//   no CUDA device: --backend cuda: no usable CUDA device (cudaGetDeviceCount: ...)
//   no CUDA device: --backend cuda: this lmscope was built without CUDA ...
// The CUDA backend of these tests poisons new activations with NaN (LMSCOPE_CUDA_POISON),
// so an element no kernel wrote fails the comparison instead of reading as 0.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "backend/backend.h"
#include "kernels/dtype_convert.cuh"

namespace lmscope::cuda_test {

// Where the tests find lmscope's commands: LMSCOPE_TOOLS_DIR when set (scripts/gpu-check.sh sets
// it to the carried bundle's bin/, whose build directory does not exist on the GPU machine),
// else the build directory these tests were compiled in.
inline std::string tools_dir() {
  const char* dir = std::getenv("LMSCOPE_TOOLS_DIR");
  return dir && *dir ? dir : LMSCOPE_BINARY_DIR;
}

inline std::unique_ptr<Backend> try_cuda(const std::string& dtype, std::string* why) {
  ::setenv("LMSCOPE_CUDA_POISON", "1", 1);
  try {
    return make_backend("cuda", dtype);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}

// A second CUDA backend made with one switch of the environment set (the backend reads its
// switches, LMSCOPE_CUDA_GEMV, LMSCOPE_CUDA_GRAPHS, when it is made). Call after
// LMSCOPE_CUDA_OR_SKIP: a device is known to be usable.
inline std::unique_ptr<Backend> cuda_backend_with(const char* var, const char* value, const std::string& dtype) {
  ::setenv(var, value, 1);
  std::unique_ptr<Backend> be = make_backend("cuda", dtype);
  ::unsetenv(var);
  return be;
}

#define LMSCOPE_CUDA_OR_SKIP(var, dtype)                                     \
  std::unique_ptr<::lmscope::Backend> var;                                   \
  {                                                                          \
    std::string why_;                                                        \
    var = ::lmscope::cuda_test::try_cuda(dtype, &why_);                      \
    if (!var) GTEST_SKIP() << "no CUDA device: " << why_;                    \
  }

// The bound of a kernel that does the CPU's per-element arithmetic (kernels/*.cuh) in the CPU's
// order: 0 on the CPU emulator (the same host math, no contraction: bit for bit); on a GPU nvcc
// contracts a*b+c into an FMA and the device's expf differs in the last bit, so `gpu_rtol`.
inline double same_math_rtol(double gpu_rtol) {
#if LMSCOPE_CUDA_EMULATED
  (void)gpu_rtol;
  return 0;
#else
  return gpu_rtol;
#endif
}

// Normal(0, std) + offset, float32 host tensor.
inline Tensor randn(const Shape& shape, uint64_t seed, float std = 1.0f, float offset = 0.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t = Tensor::zeros(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = offset + std * normal(rng);
  return t;
}

inline Tensor round_to_bf16(const Tensor& t) {
  Tensor r = Tensor::zeros(t.shape());
  const float* src = t.f32();
  float* dst = r.f32();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) dst[i] = matmul_operand_bf16(src[i]);
  return r;
}

// max |a - ref| <= atol + rtol * max |ref|, NaN anywhere fails; the message names the worst
// element, its index and both values.
inline ::testing::AssertionResult close(const Tensor& a, const Tensor& ref, double atol, double rtol) {
  if (a.numel() != ref.numel())
    return ::testing::AssertionFailure() << "sizes differ: " << a.numel() << " vs " << ref.numel();
  // Masked scores (the -FLT_MAX sentinel, <= -1e30) must be masked on both sides and do not
  // count towards the scale.
  auto masked = [](double x) { return x <= -1e30; };
  double scale = 0, worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.f32()[i], v = a.f32()[i];
    if (std::isfinite(r) && !masked(r)) scale = std::max(scale, std::fabs(r));
    double d = (std::isnan(v) != std::isnan(r)) ? INFINITY : std::fabs(v - r);
    if (std::isnan(v) && std::isnan(r)) d = 0;
    if (std::isinf(r) && v == r) d = 0;
    if (masked(r) || masked(v)) d = (masked(r) && masked(v)) ? 0 : INFINITY;
    if (d > worst || (at < 0 && d > 0)) worst = d, at = i;
  }
  const double bound = atol + rtol * scale;
  if (worst <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |diff| " << worst << " at flat index " << at << " (got "
                                       << a.f32()[at] << ", expected " << ref.f32()[at] << "), bound " << bound
                                       << " (scale " << scale << ")";
}

}  // namespace lmscope::cuda_test
