// Error checks for CUDA runtime and cuBLAS calls: a failed call throws std::runtime_error
// naming the call as written, the file and line, and the error:
//   CUDA error: cudaMalloc(&p, bytes) failed at lib/backend/cuda/block_pool.cpp:35:
//   out of memory (cudaErrorMemoryAllocation)
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lmscope::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();   // clear a sticky-free error so later calls are not blamed
  throw std::runtime_error(std::string("CUDA error: ") + call + " failed at " + file + ":" + std::to_string(line) +
                           ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

inline const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

}  // namespace lmscope::cuda

#define LMSCOPE_CUDA_CHECK(call)                                                            \
  do {                                                                                      \
    cudaError_t lmscope_e_ = (call);                                                        \
    if (lmscope_e_ != cudaSuccess) ::lmscope::cuda::throw_cuda_error(lmscope_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define LMSCOPE_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                              \
    cublasStatus_t lmscope_s_ = (call);                                                             \
    if (lmscope_s_ != CUBLAS_STATUS_SUCCESS)                                                        \
      throw std::runtime_error(std::string("cuBLAS error: ") + #call + " failed at " + __FILE__ + ":" + \
                               std::to_string(__LINE__) + ": " + ::lmscope::cuda::cublas_status_name(lmscope_s_)); \
  } while (0)
