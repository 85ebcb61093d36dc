// The backend factory. It lives beside the CPU backend because every build has that one;
// the CUDA backend registers here when it is built (LMSCOPE_WITH_CUDA).
#include <stdexcept>

#include "backend/cpu/cpu_backend.h"
#if LMSCOPE_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace lmscope {

namespace {
void check_dtype(const std::string& dtype) {
  if (dtype != "f32" && dtype != "bf16")
    throw std::runtime_error("--dtype: unknown '" + dtype + "' (f32, bf16)");
}

CpuActivations cpu_activations_of(const std::string& acts) {
  if (acts == "f32") return CpuActivations::F32;
  if (acts == "q8") return CpuActivations::Q8;
  throw std::runtime_error("--cpu-activations: unknown '" + acts + "' (f32, q8)");
}
}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name, const std::string& dtype,
                                      const std::string& cpu_activations) {
  check_dtype(dtype);
  const CpuActivations acts = cpu_activations_of(cpu_activations);
  if (name == "cpu") {
    if (dtype != "f32")
      throw std::runtime_error("--dtype " + dtype + ": the cpu backend computes in float32; use --dtype f32 "
                               "or --backend cuda");
    return std::make_unique<CpuBackend>(acts);
  }
  // q8 is the cpu backend's mode: --backend auto takes the cpu then.
  if (acts != CpuActivations::F32 && name == "cuda")
    throw std::runtime_error("--cpu-activations " + cpu_activations + ": a cpu backend mode; use --backend cpu");
  if (acts != CpuActivations::F32 && name == "auto" && dtype == "f32") return std::make_unique<CpuBackend>(acts);
  if (name == "cuda" || name == "auto") {
#if LMSCOPE_WITH_CUDA
    std::string why;
#if LMSCOPE_CUDA_EMULATED
    // The emulated device (docs/cuda.md) runs CUDA's code on the CPU, slowly: only when asked.
    const bool usable = name == "cuda" && cuda_device_usable(&why);
    if (name == "auto") why = "the CUDA backend of this build is the CPU emulator";
#else
    const bool usable = cuda_device_usable(&why);
#endif
    if (usable) return make_cuda_backend(dtype);
    if (name == "cuda")
      throw std::runtime_error("--backend cuda: no usable CUDA device (" + why + "); use --backend cpu");
#else
    if (name == "cuda")
      throw std::runtime_error("--backend cuda: this lmscope was built without CUDA (LMSCOPE_CUDA=OFF or no "
                               "nvcc); use --backend cpu");
#endif
    if (dtype != "f32")
      throw std::runtime_error("--backend auto found no usable CUDA device, and the cpu backend computes in "
                               "float32; use --dtype f32");
    return std::make_unique<CpuBackend>(acts);
  }
  throw std::runtime_error("--backend: unknown backend '" + name + "' (cpu, cuda, auto)");
}

}  // namespace lmscope
