// The CPU emulator of the CUDA build (LMSCOPE_CUDA=EMULATED, lib/cuda_emulator) against what
// NVIDIA documents: warp shuffles and votes give the CUDA C++ Programming Guide's results (its
// broadcast, scan and butterfly-reduction examples), shared memory is per block and ordered by
// __syncthreads, and what a GPU leaves undefined is reported with the kernel, block and
// threads: a barrier some threads skip, a mask naming an exited lane, a shuffle reading a lane
// outside its mask, a bad width, a bad launch configuration. The stand-in runtime and cuBLAS
// check their arguments (copy kinds and ranges, capture rules, transposes and leading
// dimensions). In a build with real CUDA this file is empty.
#include <gtest/gtest.h>

#if LMSCOPE_CUDA_EMULATED
#include <cublas_v2.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype_convert.cuh"
// The CUDA built-ins, as kernels/*.cu get them (-include in CMakeLists.txt): after every
// other header, since they define threadIdx, min, max.
#include "cuda_emulator/device.h"
#include "kernels/kernel_launch.cuh"

namespace {

using lmscope::cuda::launch;

// ---- kernels ------------------------------------------------------------------------------------
// out[i] for thread i: what a shuffle or vote gives it. Every lane of every warp takes part.
__global__ void broadcast_kernel(int* out) {
  const int lane = threadIdx.x % 32;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, 100 + lane + 1000 * int(threadIdx.x / 32), 7);
}
// Inclusive scan in segments of `width` lanes (the Programming Guide's __shfl_up_sync example).
__global__ void scan_kernel(int* out, int width) {
  int v = 1 + int(threadIdx.x % 32);
  for (int d = 1; d < width; d *= 2) {
    const int n = __shfl_up_sync(0xffffffffu, v, d, width);
    if (int(threadIdx.x % 32) % width >= d) v += n;
  }
  out[threadIdx.x] = v;
}
// Butterfly sum in segments of `width` lanes: every lane gets its segment's total.
__global__ void xor_sum_kernel(float* out, int width) {
  float v = float(threadIdx.x % 32);
  for (int m = width / 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m, width);
  out[threadIdx.x] = v;
}
__global__ void down_sum_kernel(double* out) {
  double v = double(threadIdx.x % 32) + 0.5;
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  out[threadIdx.x] = v;   // lane 0 holds the warp's total
}
__global__ void vote_kernel(unsigned* out) {
  const int lane = threadIdx.x % 32;
  out[3 * threadIdx.x] = __ballot_sync(0xffffffffu, lane % 2);
  out[3 * threadIdx.x + 1] = unsigned(__any_sync(0xffffffffu, lane == 5));
  out[3 * threadIdx.x + 2] = unsigned(__all_sync(0xffffffffu, lane < 31));
}
// Each thread writes its slot, then reads its mirror's: right only if the barrier orders them.
__global__ void mirror_kernel(int* out) {
  __shared__ int slot[96];
  slot[threadIdx.x] = int(threadIdx.x) + 1000 * int(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = slot[blockDim.x - 1 - threadIdx.x];
}
// Misuses, one per `kind`.
__global__ void misuse_kernel(float* out, int kind) {
  const int lane = threadIdx.x % 32;
  float v = float(lane);
  switch (kind) {
    case 0:   // threads 40.. leave before a barrier the others wait at
      if (threadIdx.x >= 40) return;
      __syncthreads();
      break;
    case 1:   // lanes 16-31 leave; the rest shuffle with the full mask
      if (lane >= 16) return;
      v = __shfl_xor_sync(0xffffffffu, v, 1);
      break;
    case 2:   // a shuffle among lanes 0-15 reads lane 20
      if (lane < 16) v = __shfl_sync(0x0000ffffu, v, 20);
      break;
    case 3:   // width 12
      v = __shfl_xor_sync(0xffffffffu, v, 1, 12);
      break;
    default: break;
  }
  out[threadIdx.x] = v;
}

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n;
  explicit DeviceBuffer(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

std::string last_error_text() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace

TEST(CudaEmulator, ShufflesGiveTheProgrammingGuidesResults) {
  DeviceBuffer<int> b(64);
  launch<broadcast_kernel>(1, 64, 0, nullptr, b.p);
  ASSERT_EQ(last_error_text(), "");
  std::vector<int> got = b.host();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], 107 + 1000 * (t / 32)) << "thread " << t;

  for (int width : {32, 8, 2}) {
    launch<scan_kernel>(1, 64, 0, nullptr, b.p, width);
    ASSERT_EQ(last_error_text(), "");
    got = b.host();
    for (int t = 0; t < 64; ++t) {   // values 1..32; each segment's scan restarts
      const int lane = t % 32, start = lane - lane % width;
      int want = 0;
      for (int j = start; j <= lane; ++j) want += j + 1;
      EXPECT_EQ(got[t], want) << "width " << width << ", thread " << t;
    }
  }

  DeviceBuffer<float> f(32);
  for (int width : {32, 16, 4}) {
    launch<xor_sum_kernel>(1, 32, 0, nullptr, f.p, width);
    ASSERT_EQ(last_error_text(), "");
    std::vector<float> s = f.host();
    for (int lane = 0; lane < 32; ++lane) {
      const int start = lane - lane % width;
      EXPECT_EQ(s[lane], float(width * start + width * (width - 1) / 2)) << "width " << width << ", lane " << lane;
    }
  }
  DeviceBuffer<double> d(32);
  launch<down_sum_kernel>(1, 32, 0, nullptr, d.p);
  ASSERT_EQ(last_error_text(), "");
  EXPECT_EQ(d.host()[0], 496.0 + 16.0);   // 0 + 1 + ... + 31, plus 32 halves
}

TEST(CudaEmulator, VotesAndBallot) {
  DeviceBuffer<unsigned> b(3 * 32);
  launch<vote_kernel>(1, 32, 0, nullptr, b.p);
  ASSERT_EQ(last_error_text(), "");
  const std::vector<unsigned> got = b.host();
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(got[3 * lane], 0xaaaaaaaau);
    EXPECT_EQ(got[3 * lane + 1], 1u);
    EXPECT_EQ(got[3 * lane + 2], 0u);
  }
}

TEST(CudaEmulator, SharedMemoryIsPerBlockAndOrderedByTheBarrier) {
  DeviceBuffer<int> b(3 * 96);
  launch<mirror_kernel>(3, 96, 0, nullptr, b.p);   // 96 threads: three warps, barrier across them
  ASSERT_EQ(last_error_text(), "");
  const std::vector<int> got = b.host();
  for (int blk = 0; blk < 3; ++blk)
    for (int t = 0; t < 96; ++t) EXPECT_EQ(got[blk * 96 + t], 95 - t + 1000 * blk);
}

TEST(CudaEmulator, WhatAGpuLeavesUndefinedIsReported) {
  DeviceBuffer<float> b(64);
  const struct {
    int kind;
    const char* says;
  } cases[] = {{0, "wait at __syncthreads while 24 threads of the block have exited"},
               {1, "naming lane 16, which has exited"},
               {2, "reads lane 20, which is not in the mask 0x0000ffff"},
               {3, "with width 12"}};
  for (const auto& c : cases) {
    launch<misuse_kernel>(2, 64, 0, nullptr, b.p, c.kind);
    const std::string text = last_error_text();
    EXPECT_NE(text.find(c.says), std::string::npos) << "case " << c.kind << ": " << text;
    EXPECT_NE(text.find("misuse_kernel block (0,0,0)"), std::string::npos) << text;
  }
  launch<misuse_kernel>(1, 2048, 0, nullptr, b.p, 9);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch<misuse_kernel>(1, 64, 0, nullptr, b.p, 9);   // a correct launch after them all
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// NVIDIA's float -> bf16 (cuda_bf16.h, which the emulated kernels use for matmul operands) is
// our kernels/dtype_convert.cuh's, bit for bit: ties to even, subnormals, infinities; NaN stays NaN.
TEST(CudaEmulator, NvidiasBf16RoundingIsOurs) {
  std::mt19937 rng(5);
  std::vector<float> x = {0.0f, -0.0f, 1.00390625f, 1.01171875f, 1e-40f, -1e-45f, 3.4e38f, 3.3961514e38f, INFINITY,
                          -INFINITY, NAN};
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  for (float v : x) {
    const __nv_bfloat16 nv = __float2bfloat16_rn(v);
    uint16_t nv_bits;
    std::memcpy(&nv_bits, &nv, 2);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(lmscope::bf16_to_f32(nv_bits)));
      continue;
    }
    ASSERT_EQ(nv_bits, lmscope::f32_to_bf16(v)) << "x = " << v;
    ASSERT_EQ(__bfloat162float(nv), lmscope::matmul_operand_bf16(v));
  }
}

TEST(CudaEmulator, CopiesAreCheckedAgainstTheirKindAndAllocations) {
  DeviceBuffer<float> d(16);
  std::vector<float> h(16, 1.0f);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 68, cudaMemcpyHostToDevice), cudaErrorInvalidValue);   // past the end
  EXPECT_EQ(cudaMemcpy(h.data(), d.p, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);   // swapped kind
  EXPECT_EQ(cudaMemcpy(d.p + 8, d.p, 32, cudaMemcpyDeviceToDevice), cudaSuccess);
  (void)cudaGetLastError();
  // A capture records only copies of pinned memory, and refuses a synchronizing call.
  cudaStream_t st;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(d.p, h.data(), 64, cudaMemcpyHostToDevice, st), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamSynchronize(st), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(st, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  cudaStreamDestroy(st);
}

// The stand-in cuBLAS: the product is right on odd sizes with every transpose, and a call whose
// leading dimensions or extents do not fit what it was given is refused.
TEST(CudaEmulator, CublasStandInComputesAndChecksItsArguments) {
  const int m = 5, n = 3, k = 37;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;
      std::vector<float> A(size_t(lda) * (ta ? m : k)), B(size_t(ldb) * (tb ? k : n)), C(size_t(ldc) * n, NAN);
      for (float& v : A) v = normal(rng);
      for (float& v : B) v = normal(rng);
      DeviceBuffer<float> dA(A.size()), dB(B.size()), dC(C.size());
      cudaMemcpy(dA.p, A.data(), A.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(dB.p, B.data(), B.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(dC.p, C.data(), C.size() * 4, cudaMemcpyHostToDevice);
      const float one = 1.0f, zero = 0.0f;
      const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
      ASSERT_EQ(cublasSgemm(h, oa, ob, m, n, k, &one, dA.p, lda, dB.p, ldb, &zero, dC.p, ldc), CUBLAS_STATUS_SUCCESS);
      const std::vector<float> got = dC.host();
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p < k; ++p)
            want += double(ta ? A[p + size_t(i) * lda] : A[i + size_t(p) * lda]) *
                    double(tb ? B[j + size_t(p) * ldb] : B[p + size_t(j) * ldb]);
          EXPECT_NEAR(got[i + size_t(j) * ldc], want, 1e-4) << "ta " << ta << " tb " << tb << " (" << i << "," << j << ")";
        }
      // the same call with A's transpose swapped reads past A (m != k): refused
      EXPECT_NE(cublasSgemm(h, ta ? CUBLAS_OP_N : CUBLAS_OP_T, ob, m, n, k, &one, dA.p, lda, dB.p, ldb, &zero, dC.p,
                            ldc),
                CUBLAS_STATUS_SUCCESS)
          << "A's transpose swapped";
      EXPECT_EQ(cublasSgemm(h, oa, ob, m, n, k, &one, dA.p, lda, dB.p, ldb, &zero, dC.p, m - 1),
                CUBLAS_STATUS_INVALID_VALUE)
          << "ldc < m";
    }
  cublasDestroy(h);
}

#endif  // LMSCOPE_CUDA_EMULATED
