// The CUDA backend: the Backend interface on one GPU, one stream, cuBLAS for the matmuls and
// our kernels (kernels/*.cu) for the rest. docs/cuda.md tells the design.
//
// This header needs no CUDA headers: the factory (make_backend.cpp) and the tools include it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace lmscope {

// True when device 0 exists and can run this build's kernels; otherwise `why` says in one
// line what is missing (no driver, no device, no code for its architecture). Any error of the
// CUDA runtime counts as "no usable device".
bool cuda_device_usable(std::string* why);

// The CUDA backend computing in "f32" or "bf16" (bf16 weights and matmul operands, float32
// accumulation and float32 activations between ops). Throws when no device is usable.
std::unique_ptr<Backend> make_cuda_backend(const std::string& dtype);

struct CudaDeviceInfo {
  std::string name;               // "NVIDIA H200"
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  size_t memory_bytes = 0;
  double copy_bytes_per_s = 0;    // device-to-device copy, bytes read + bytes written per second
};
// Device 0's properties; with measure_copy, also the copy bandwidth (a few 1 GiB copies).
CudaDeviceInfo cuda_device_info(bool measure_copy);

}  // namespace lmscope
