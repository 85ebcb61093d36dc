// ForwardingBackend: a Backend that passes every op to another one. A backend that changes
// one or two ops (quant::QuantBackend quantizes linear inputs, the tests' Bf16Emulation
// rounds them to bf16) derives from it and overrides only those, so the op list is written
// out once, here.
#pragma once
#include "backend/backend.h"

namespace lmscope {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  std::string name() const override { return inner_.name(); }
  std::string compute_dtype() const override { return inner_.compute_dtype(); }
  std::string activations() const override { return inner_.activations(); }
  Tensor alloc(const Shape& shape) override { return inner_.alloc(shape); }
  Tensor prepare_weight(const Tensor& host_weight) override { return inner_.prepare_weight(host_weight); }
  Tensor to_host(const Tensor& t) override { return inner_.to_host(t); }
  Tensor upload(const Tensor& host) override { return inner_.upload(host); }
  Tensor to_host_async(const Tensor& t) override { return inner_.to_host_async(t); }
  bool host_copies_are_async() const override { return inner_.host_copies_are_async(); }
  void synchronize() override { inner_.synchronize(); }
  void begin_forward(int64_t B, int64_t T) override { inner_.begin_forward(B, T); }
  void abandon_forward() override { inner_.abandon_forward(); }

  void embed(Tensor& out, const Tensor& ids, const Tensor& table) override { inner_.embed(out, ids, table); }
  void rmsnorm(Tensor& out, const Tensor& x, const Tensor& weight, float eps) override {
    inner_.rmsnorm(out, x, weight, eps);
  }
  void linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) override {
    inner_.linear(out, x, W, bias);
  }
  bool quantize_activations_for_hook(const Tensor& x, const Tensor& W, Tensor& codes, Tensor& scales) override {
    return inner_.quantize_activations_for_hook(x, W, codes, scales);
  }
  void split_heads(Tensor& out, const Tensor& x) override { inner_.split_heads(out, x); }
  void rope(Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) override {
    inner_.rope(out, x, cos, sin);
  }
  void kv_write(Tensor& cache, const Tensor& x, int64_t offset) override { inner_.kv_write(cache, x, offset); }
  Tensor kv_read(const Tensor& cache, int64_t S) override { return inner_.kv_read(cache, S); }
  void attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v, int64_t S, const Tensor& mask,
                 float scale, Tensor* scores, Tensor* probs) override {
    inner_.attention(z, q, k, v, S, mask, scale, scores, probs);
  }
  void swiglu(Tensor& out, const Tensor& gate, const Tensor& up) override { inner_.swiglu(out, gate, up); }
  void geglu_tanh(Tensor& out, const Tensor& gate, const Tensor& up) override { inner_.geglu_tanh(out, gate, up); }
  void add(Tensor& out, const Tensor& a, const Tensor& b) override { inner_.add(out, a, b); }
  void scale(Tensor& out, const Tensor& x, float s) override { inner_.scale(out, x, s); }
  void select_column(Tensor& out, const Tensor& x, int64_t t) override { inner_.select_column(out, x, t); }

 protected:
  Backend& inner_;
};

}  // namespace lmscope
