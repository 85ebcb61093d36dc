// Bf16Emulation: the CPU backend with exactly the CUDA backend's bf16 rounding (2-D weights
// and every matmul input rounded to nearest even, float32 everywhere else), so it differs from
// CUDA bf16 only in the float32 summation order. It runs on every machine: the bf16 numbers of
// the golden tests are measured with it, and the CUDA bf16 runs are held to it.
#pragma once
#include "backend/cpu/cpu_backend.h"
#include "cuda_test_util.h"

namespace lmscope::cuda_test {

class Bf16Emulation final : public Backend {
 public:
  std::string name() const override { return "cpu-bf16-emulation"; }
  std::string compute_dtype() const override { return "bf16"; }
  Tensor alloc(const Shape& s) override { return cpu_.alloc(s); }
  Tensor prepare_weight(const Tensor& w) override {
    Tensor f = cpu_.prepare_weight(w);
    return w.ndim() == 2 ? round_to_bf16(f) : f;
  }
  Tensor to_host(const Tensor& t) override { return cpu_.to_host(t); }
  Tensor upload(const Tensor& t) override { return cpu_.upload(t); }
  void embed(Tensor& o, const Tensor& ids, const Tensor& table) override { cpu_.embed(o, ids, table); }
  void rmsnorm(Tensor& o, const Tensor& x, const Tensor& w, float eps) override { cpu_.rmsnorm(o, x, w, eps); }
  void linear(Tensor& o, const Tensor& x, const Tensor& W, const Tensor& b) override {
    cpu_.linear(o, round_to_bf16(x), W, b);
  }
  void split_heads(Tensor& o, const Tensor& x) override { cpu_.split_heads(o, x); }
  void rope(Tensor& o, const Tensor& x, const Tensor& c, const Tensor& s) override { cpu_.rope(o, x, c, s); }
  void kv_write(Tensor& c, const Tensor& x, int64_t off) override { cpu_.kv_write(c, x, off); }
  Tensor kv_read(const Tensor& c, int64_t S) override { return cpu_.kv_read(c, S); }
  void attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v, int64_t S, const Tensor& m,
                 float scale, Tensor* sc, Tensor* pr) override {
    cpu_.attention(z, q, k, v, S, m, scale, sc, pr);
  }
  void swiglu(Tensor& o, const Tensor& g, const Tensor& u) override { cpu_.swiglu(o, g, u); }
  void add(Tensor& o, const Tensor& a, const Tensor& b) override { cpu_.add(o, a, b); }
  void select_column(Tensor& o, const Tensor& x, int64_t t) override { cpu_.select_column(o, x, t); }

 private:
  CpuBackend cpu_;
};

}  // namespace lmscope::cuda_test
