// LMSCOPE_HD marks per-element math that is compiled for the host (CPU backend, tests)
// and, under nvcc, for the device too. One definition, two backends.
//
// LMSCOPE_DEVICE_CODE is 1 where the device's side of that math is compiled: nvcc's device
// pass, and kernels/*.cu compiled as C++ for the CPU emulator (lib/cuda_emulator/device.h), so
// that an emulated kernel takes the same branches as the GPU's (NVIDIA's bf16 conversion, the
// __f*_rn intrinsics). There the functions have internal linkage: the CPU backend's copies of
// the same inline functions, compiled in other files, take the host branches.
#pragma once
#if defined(__CUDACC__)
#define LMSCOPE_HD __host__ __device__ __forceinline__
#elif defined(LMSCOPE_EMULATED_DEVICE_CODE)
#define LMSCOPE_HD static inline
#else
#define LMSCOPE_HD inline
#endif

#if defined(__CUDA_ARCH__) || defined(LMSCOPE_EMULATED_DEVICE_CODE)
#define LMSCOPE_DEVICE_CODE 1
#else
#define LMSCOPE_DEVICE_CODE 0
#endif
