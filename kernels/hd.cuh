// LMSCOPE_HD marks per-element math that is compiled for the host (CPU backend, tests)
// and, under nvcc, for the device too. One definition, two backends.
#pragma once
#if defined(__CUDACC__)
#define LMSCOPE_HD __host__ __device__ __forceinline__
#else
#define LMSCOPE_HD inline
#endif
