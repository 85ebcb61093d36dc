// The cuBLAS functions lmscope's CUDA backend calls (declarations: NVIDIA's cublas_api.h),
// defined over the emulator's host memory. Each call is checked as strictly as the cuBLAS
// documentation states its arguments, and more: every operand's whole column-major extent
// (leading dimension x columns) must lie inside one device allocation, alpha and beta must be
// host pointers (the default pointer mode), the types must be a combination the backend means
// to use. A failed check returns CUBLAS_STATUS_INVALID_VALUE (or NOT_SUPPORTED) and prints
// which argument. The product itself is a plain reference GEMM in float32 (k in order, 8 partial
// sums): it tests our calls, not NVIDIA's numerics.
#include <cublas_v2.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cuda_emulator/runtime_state.h"
#include "kernels/dtype_convert.cuh"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace lmscope::cuda_emu {
namespace {

cublasStatus_t refuse(cublasStatus_t s, const std::string& call, const std::string& why) {
  std::fprintf(stderr, "lmscope cuBLAS stand-in: %s: %s\n", call.c_str(), why.c_str());
  return s;
}

size_t type_bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16BF:
    case CUDA_R_16F: return 2;
    default: return 0;
  }
}

float load(const void* p, cudaDataType t, size_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16BF: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

// One column-major operand: `rows` x `cols` stored with leading dimension ld.
std::string check_operand(const char* name, const void* p, cudaDataType t, int64_t rows, int64_t cols, int64_t ld,
                          bool written) {
  if (ld < std::max<int64_t>(1, rows))
    return std::string("ld") + char(std::tolower(name[0])) + " = " + std::to_string(ld) + " < " + std::to_string(rows) +
           " rows of " + name;
  if (rows == 0 || cols == 0) return "";
  const size_t bytes = size_t((cols - 1) * ld + rows) * type_bytes(t);
  Allocation a;
  if (!find_allocation(p, bytes, &a) || a.kind != MemoryKind::Device)
    return std::string(name) + (written ? " (written)" : "") + ": " + std::to_string(rows) + " x " +
           std::to_string(cols) + " with ld " + std::to_string(ld) + " (" + std::to_string(bytes) +
           " bytes) is not inside one device allocation";
  return "";
}

// C[m,n] = alpha * op(A)[m,k] . op(B)[k,n] + beta * C, column-major.
cublasStatus_t gemm(cublasHandle_t h, const std::string& call, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                    int ldb, const float* beta, float* C, int ldc) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, call, "a null handle");
  for (cublasOperation_t op : {ta, tb})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "a transpose other than N or T");
  if (m < 0 || n < 0 || k < 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "a negative m, n or k");
  if (!alpha || !beta) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "a null alpha or beta");
  if (is_device_pointer(alpha) || is_device_pointer(beta))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "alpha or beta in device memory under the host pointer mode");
  const bool an = ta == CUBLAS_OP_N, bn = tb == CUBLAS_OP_N;
  std::string why = check_operand("A", A, at, an ? m : k, an ? k : m, lda, false);
  if (why.empty()) why = check_operand("B", B, bt, bn ? k : n, bn ? n : k, ldb, false);
  if (why.empty()) why = check_operand("C", C, CUDA_R_32F, m, n, ldc, true);
  if (!why.empty()) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, why);
  const float al = *alpha, be = *beta;
  const cudaError_t e = submit(h->stream, Work{"gemm", [=]() -> cudaError_t {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t p = 0; p < k; ++p) {
          const float a = load(A, at, an ? size_t(i + p * lda) : size_t(p + i * lda));
          const float b = load(B, bt, bn ? size_t(p + j * ldb) : size_t(j + p * ldb));
          part[p % 8] += a * b;
        }
        const float dot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        float& c = C[i + j * int64_t(ldc)];
        c = be == 0.0f ? al * dot : al * dot + be * c;   // beta = 0: C is not read (it may be NaN)
      }
    return cudaSuccess;
  }});
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace
}  // namespace lmscope::cuda_emu

using namespace lmscope::cuda_emu;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t st) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream", "a null handle");
  h->stream = st;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode", "a null handle");
  h->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* workspace, size_t bytes) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetWorkspace", "a null handle");
  Allocation a;
  if (bytes && (!find_allocation(workspace, bytes, &a) || a.kind != MemoryKind::Device))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetWorkspace", "the workspace is not inside one device allocation");
  h->workspace = workspace, h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  return gemm(h, "cublasSgemm", ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  // The combinations lmscope uses: float32 or bf16 operands (the same type for A and B),
  // float32 C, float32 accumulation.
  if (at != bt || (at != CUDA_R_32F && at != CUDA_R_16BF) || ct != CUDA_R_32F ||
      (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "cublasGemmEx",
                  "types A " + std::to_string(int(at)) + ", B " + std::to_string(int(bt)) + ", C " +
                      std::to_string(int(ct)) + ", compute " + std::to_string(int(compute)) +
                      " (the stand-in takes f32 or bf16 A = B, f32 C, CUBLAS_COMPUTE_32F)");
  return gemm(h, "cublasGemmEx", ta, tb, m, n, k, static_cast<const float*>(alpha), A, at, lda, B, bt, ldb,
              static_cast<const float*>(beta), static_cast<float*>(C), ldc);
}

}  // extern "C"
