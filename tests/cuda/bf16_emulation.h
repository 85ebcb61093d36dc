// Bf16Emulation: the CPU backend with exactly the CUDA backend's bf16 rounding (2-D weights
// and every matmul input rounded to nearest even, float32 everywhere else), so it differs from
// CUDA bf16 only in the float32 summation order. It runs on every machine: the bf16 numbers of
// the golden tests are measured with it, and the CUDA bf16 runs are held to it.
#pragma once
#include "backend/cpu/cpu_backend.h"
#include "backend/forwarding_backend.h"
#include "cuda_test_util.h"

namespace lmscope::cuda_test {

// The CPU backend it wraps is a base so that it is built before ForwardingBackend holds it.
struct Bf16EmulationCpu {
  CpuBackend cpu_;
};

class Bf16Emulation final : private Bf16EmulationCpu, public ForwardingBackend {
 public:
  Bf16Emulation() : ForwardingBackend(cpu_) {}
  std::string name() const override { return "cpu-bf16-emulation"; }
  std::string compute_dtype() const override { return "bf16"; }
  Tensor prepare_weight(const Tensor& w) override {
    Tensor f = cpu_.prepare_weight(w);
    return w.ndim() == 2 ? round_to_bf16(f.values_f32()) : f;   // GGUF blocks: dequantized, then rounded
  }
  void linear(Tensor& o, const Tensor& x, const Tensor& W, const Tensor& b) override {
    cpu_.linear(o, round_to_bf16(x), W, b);
  }
};

}  // namespace lmscope::cuda_test
