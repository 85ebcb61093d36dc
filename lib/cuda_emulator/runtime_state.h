// What the stand-in CUDA runtime (runtime.cpp) keeps, shared with the stand-in cuBLAS
// (cublas.cpp) and kernel launches (launch.cpp): the registry of "device" and pinned
// allocations (host memory, so that every copy and every GEMM operand can be checked against
// what was allocated), the per-thread last error with its full report, and streams, whose
// work runs at once or, while the stream is captured, is recorded into a graph.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace lmscope::cuda_emu {

enum class MemoryKind { Device, Pinned };

// The allocation holding [p, p + bytes), or false (outside every allocation, or crossing one's
// end). `kind` and `base`/`size` describe it.
struct Allocation {
  const char* base = nullptr;
  size_t size = 0;
  MemoryKind kind = MemoryKind::Device;
};
bool find_allocation(const void* p, size_t bytes, Allocation* out);
bool is_device_pointer(const void* p);

// Sets the last error (cudaGetLastError) with a report that cudaGetErrorString returns (the
// backend's error checks put it in their exception's message). Returns e.
cudaError_t fail(cudaError_t e, const std::string& report);

// One piece of stream work: what it is (a kernel's name, "memcpy", "gemm"), and the work.
struct Work {
  std::string what;
  std::function<cudaError_t()> run;
};
// Runs `w` now, or records it while `st` is being captured. Returns the error of running it.
cudaError_t submit(cudaStream_t st, Work w);

}  // namespace lmscope::cuda_emu
