// The CUDA built-ins for kernels/*.cu compiled as C++ (LMSCOPE_CUDA=EMULATED): forced in
// front of each kernel file (-include), after NVIDIA's own runtime headers, which compile as
// host code. A kernel runs once per CUDA thread, as a fiber of block_runner.h:
//   threadIdx blockIdx blockDim gridDim warpSize   read the running fiber's state
//   __syncthreads, __syncwarp, __shfl*_sync, __ballot/__any/__all_sync   wait for the others
//   __shared__        one object per block: the blocks of a launch run one after another on
//                     this OS thread, so a static thread_local object is the block's
//   atomics           real atomic read-modify-writes (correct whatever runs the blocks)
//   intrinsics        the round-to-nearest float operations on the host (the build keeps
//                     floating-point contraction off, so a*b+c is two roundings, as __fmul_rn
//                     then __fadd_rn), bf16 from NVIDIA's cuda_bf16.h
// Inline PTX has no emulation: kernels put a C++ alternative beside it (#if LMSCOPE_EMULATED_DEVICE_CODE).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_emulator/block_runner.h"

#define LMSCOPE_EMULATED_DEVICE_CODE 1

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#undef __restrict__
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __forceinline__ inline
#define __launch_bounds__(...)

#define threadIdx (::lmscope::cuda_emu::tl_thread->idx)
#define blockIdx (::lmscope::cuda_emu::tl_block->idx)
#define blockDim (::lmscope::cuda_emu::tl_block->block_dim)
#define gridDim (::lmscope::cuda_emu::tl_block->grid_dim)
#define warpSize 32

inline void __syncthreads() { ::lmscope::cuda_emu::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)::lmscope::cuda_emu::warp_exchange(::lmscope::cuda_emu::WarpOp::SyncWarp, mask, 0, 0, 32);
}

namespace lmscope::cuda_emu {
inline uint64_t host_clock_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count());
}
template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "a shuffle moves at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
template <class T>
T shuffle(WarpOp op, unsigned mask, T v, int param, int width) {
  return from_bits<T>(warp_exchange(op, mask, to_bits(v), param, width));
}
}  // namespace lmscope::cuda_emu

template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return ::lmscope::cuda_emu::shuffle(::lmscope::cuda_emu::WarpOp::ShflIdx, mask, v, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::lmscope::cuda_emu::shuffle(::lmscope::cuda_emu::WarpOp::ShflUp, mask, v, int(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::lmscope::cuda_emu::shuffle(::lmscope::cuda_emu::WarpOp::ShflDown, mask, v, int(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::lmscope::cuda_emu::shuffle(::lmscope::cuda_emu::WarpOp::ShflXor, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return unsigned(::lmscope::cuda_emu::warp_exchange(::lmscope::cuda_emu::WarpOp::Ballot, mask, pred != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int pred) {
  return int(::lmscope::cuda_emu::warp_exchange(::lmscope::cuda_emu::WarpOp::Any, mask, pred != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int pred) {
  return int(::lmscope::cuda_emu::warp_exchange(::lmscope::cuda_emu::WarpOp::All, mask, pred != 0, 0, 32));
}

// ---- atomics: read-modify-write through the compiler's atomic built-ins ---------------------
template <class T, class F>
T lmscope_emu_atomic_update(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline float atomicAdd(float* p, float v) {
  uint32_t* bits = reinterpret_cast<uint32_t*>(p);
  uint32_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float f;
    std::memcpy(&f, &old, 4);
    f += v;
    uint32_t nb;
    std::memcpy(&nb, &f, 4);
    if (__atomic_compare_exchange_n(bits, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      std::memcpy(&f, &old, 4);
      return f;
    }
  }
}
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline int atomicMax(int* p, int v) { return lmscope_emu_atomic_update(p, [v](int o) { return o > v ? o : v; }); }
inline int atomicMin(int* p, int v) { return lmscope_emu_atomic_update(p, [v](int o) { return o < v ? o : v; }); }
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
inline int atomicCAS(int* p, int expected, int desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}

// ---- intrinsics ------------------------------------------------------------------------------
inline float __uint_as_float(unsigned u) { return ::lmscope::cuda_emu::from_bits<float>(u); }
inline float __int_as_float(int i) { return ::lmscope::cuda_emu::from_bits<float>(uint32_t(i)); }
inline unsigned __float_as_uint(float f) { return uint32_t(::lmscope::cuda_emu::to_bits(f)); }
inline int __float_as_int(float f) { return int(uint32_t(::lmscope::cuda_emu::to_bits(f))); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }   // the default rounding: to nearest even
inline float __expf(float x) { return std::exp(x); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
using std::fmaxf;
using std::fminf;
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
