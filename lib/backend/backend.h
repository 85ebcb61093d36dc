// Backend: the ops the decoder forward is written against. The forward (model/decoder.cpp)
// is written once; a backend decides where tensors live and how each op runs.
//
// Shapes: B batch, T query tokens this step, S key positions, D hidden, H query heads,
// Hkv KV heads, hd head dim, F FFN width, V vocab, N = B*T rows.
// All activations are float32. Outputs come first in every argument list and are
// allocated by the caller (via alloc), so every intermediate stays addressable. No tensor is
// written again after the op that produced it (the KV cache excepted), so an op whose output
// has its input's bytes may rebind `out` to a view of the input instead of copying (CUDA
// split_heads and select_column at T = 1).
#pragma once
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>

#include "tensor/tensor.h"

namespace lmscope {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // What the matmuls compute in: "f32", or "bf16" (bf16 operands, float32 accumulation and
  // float32 activations between ops; CUDA only).
  virtual std::string compute_dtype() const { return "f32"; }
  // What a matmul by a GGUF block-quantized weight multiplies: float32 activations ("f32"), or
  // activations quantized to int8 per block of 32, of 256 for a K-quant weight ("q8": CPU
  // --cpu-activations q8).
  virtual std::string activations() const { return "f32"; }

  // A new float32 activation tensor on this backend. Every op writes all of its output, so
  // the contents are unspecified until then (CPU and CUDA: left as found).
  virtual Tensor alloc(const Shape& shape) = 0;
  // A weight in the form this backend's matmul reads (CPU: bf16/f16 matrices and GGUF blocks
  // as stored, in place; bf16/f16 vectors widened to float32. CUDA: a device copy).
  virtual Tensor prepare_weight(const Tensor& host_weight) = 0;
  // Host float32 copy, for hooks and for reading logits.
  virtual Tensor to_host(const Tensor& t) = 0;
  // Host int32/float32 data moved to this backend (ids, masks, cos/sin tables).
  virtual Tensor upload(const Tensor& host) = 0;
  // Starts a host copy of t (a device backend: into pinned memory, on its stream) and returns
  // the host tensor it lands in, readable once synchronize() has returned. Hooks use this so
  // that an enabled hook never stalls the device mid-forward. CPU: to_host(t), readable now.
  virtual Tensor to_host_async(const Tensor& t) { return to_host(t); }
  virtual bool host_copies_are_async() const { return false; }
  // Waits until every op and copy queued so far has finished.
  virtual void synchronize() {}
  // The forward announces each step (B rows, T tokens) before its first op. CUDA may capture
  // a decode step into a graph (LMSCOPE_CUDA_GRAPHS=1); CPU: nothing.
  virtual void begin_forward(int64_t B, int64_t T) {
    (void)B;
    (void)T;
  }
  // ... and, when it throws before its end, says so on the way out (CUDA: drops an unfinished
  // capture, so that the stream runs eagerly again).
  virtual void abandon_forward() {}

  // out[b,t,:] = table[ids[b,t],:]          out [B,T,D], ids [B,T] int32, table [V,D]
  virtual void embed(Tensor& out, const Tensor& ids, const Tensor& table) = 0;
  // out = weight * (x * rsqrt(mean(x^2) + eps)) per row     out, x [..., D], weight [D]
  virtual void rmsnorm(Tensor& out, const Tensor& x, const Tensor& weight, float eps) = 0;
  // out = x @ W^T (+ bias)                   out [N,O], x [N,I], W [O,I], bias [O] or undefined
  virtual void linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) = 0;
  // Several linears reading the same x (a layer's q/k/v, gate/up): *out = x @ W^T (+ bias)
  // for each. A backend may run them as one op (CPU decode: one parallel region, fewer thread
  // wake-ups); every output is still written in full. Default: linear for each, in order, so
  // that a ForwardingBackend's linear override sees every one.
  struct LinearJob {
    Tensor* out;
    const Tensor* W;
    const Tensor* bias;   // undefined when there is none
  };
  virtual void linear_group(const Tensor& x, std::initializer_list<LinearJob> jobs) {
    for (const LinearJob& j : jobs) linear(*j.out, x, *j.W, *j.bias);
  }
  // A backend that quantizes a matmul's input rows before multiplying them by W (CPU
  // --cpu-activations q8, W held as GGUF blocks) shows what it rounded, for the quant.*.q8
  // hooks: codes (x's shape, the int8 codes as float32) and scales ([..., I/32], each block's
  // fp16 scale as float32; for a K-quant W [..., I/256], each super-block's float32 scale), by
  // the very function its matmul uses; true then. false, nothing
  // written, for every other backend or weight.
  virtual bool quantize_activations_for_hook(const Tensor& x, const Tensor& W, Tensor& codes, Tensor& scales) {
    (void)x;
    (void)W;
    (void)codes;
    (void)scales;
    return false;
  }
  // out[b,h,t,:] = x[b,t,h*hd:(h+1)*hd]      out [B,Hx,T,hd], x [B,T,Hx*hd]
  virtual void split_heads(Tensor& out, const Tensor& x) = 0;
  // rotate_half RoPE                          out, x [B,Hx,T,hd], cos, sin [B,T,hd]
  virtual void rope(Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) = 0;
  // cache[b,h,offset+t,:] = x[b,h,t,:]        cache [B,Hkv,Smax,hd], x [B,Hkv,T,hd]
  virtual void kv_write(Tensor& cache, const Tensor& x, int64_t offset) = 0;
  // First S positions of a cache as a contiguous tensor  -> [B,Hkv,S,hd]
  virtual Tensor kv_read(const Tensor& cache, int64_t S) = 0;
  // Masked softmax attention with GQA (query head h reads KV head h / (H/Hkv)).
  //   z [B,T,H,hd], q [B,H,T,hd], k/v [B,Hkv,Smax,hd] of which the first S positions are
  //   used, mask [B,T,S] additive. scores/probs [B,H,T,S] are written only when defined
  //   (someone asked for those hooks).
  virtual void attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v,
                         int64_t S, const Tensor& mask, float scale, Tensor* scores,
                         Tensor* probs) = 0;
  // out = silu(gate) * up                     all [N,F]
  virtual void swiglu(Tensor& out, const Tensor& gate, const Tensor& up) = 0;
  // out = gelu_tanh(gate) * up                all [N,F]  (Gemma 3's GeGLU)
  virtual void geglu_tanh(Tensor& out, const Tensor& gate, const Tensor& up) = 0;
  // out = a + b                               all the same shape
  virtual void add(Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // out = s * x                               the same shape  (Gemma 3's embedding times sqrt(D))
  virtual void scale(Tensor& out, const Tensor& x, float s) = 0;
  // out[b,0,:] = x[b,t,:]                     out [B,1,D], x [B,T,D]  (the last column for the head)
  virtual void select_column(Tensor& out, const Tensor& x, int64_t t) = 0;

  // ---- backward ops: the gradient of each op above with respect to its activation inputs
  // (not its weights), for the backward pass of grad/decoder_backward.cpp. d* tensors have the
  // shapes of what they are the gradient of. The CPU and CUDA backends have them; any other
  // backend refuses in one line.
  // dx = dy @ W                               dx [N,I], dy [N,O], W [O,I] (linear's W, as held)
  virtual void linear_backward(Tensor& dx, const Tensor& dy, const Tensor& W) {
    (void)dx, (void)dy, (void)W;
    no_backward();
  }
  // rmsnorm's input gradient                  dx, dy, x [..., D], weight [D]
  virtual void rmsnorm_backward(Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight, float eps) {
    (void)dx, (void)dy, (void)x, (void)weight, (void)eps;
    no_backward();
  }
  // swiglu's: dgate = dact * up * silu'(gate), dup = dact * silu(gate)     all [N,F]
  virtual void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up) {
    (void)dgate, (void)dup, (void)dact, (void)gate, (void)up;
    no_backward();
  }
  // geglu_tanh's (Gemma 3): dgate = dact * up * gelu_tanh'(gate), dup = dact * gelu_tanh(gate)   all [N,F]
  virtual void geglu_tanh_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up) {
    (void)dgate, (void)dup, (void)dact, (void)gate, (void)up;
    no_backward();
  }
  // rope's: the rotation by -theta            dx, dy [B,Hx,T,hd], cos, sin [B,T,hd]
  virtual void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin) {
    (void)dx, (void)dy, (void)cos, (void)sin;
    no_backward();
  }
  // split_heads' (its transpose): out[b,t,h*hd:(h+1)*hd] = x[b,h,t,:]   out [B,T,Hx*hd], x [B,Hx,T,hd]
  virtual void merge_heads(Tensor& out, const Tensor& x) {
    (void)out, (void)x;
    no_backward();
  }
  // attention's, for a prefill (S = T, keys and values this step's): from dz [B,T,H,hd] and
  // the forward's q [B,H,T,hd], k/v [B,Hkv,T,hd], probs [B,H,T,S]:
  //   dprobs = dz_h @ v^T, dscores = probs * (dprobs - rowsum(dprobs * probs)),
  //   dq = scale dscores @ k, dk = scale dscores^T @ q and dv = probs^T @ dz_h, each summed
  //   over the query heads of a KV head. dscores is exactly 0 where the mask gave probs 0.
  virtual void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs,
                                  const Tensor& dz, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& probs, float scale) {
    (void)dq, (void)dk, (void)dv, (void)dscores, (void)dprobs, (void)dz, (void)q, (void)k, (void)v,
        (void)probs, (void)scale;
    no_backward();
  }

 protected:
  [[noreturn]] void no_backward() const {
    throw std::runtime_error("gradients: the " + name() + " backend has no backward ops (the cpu and cuda backends have)");
  }
};

// "cpu" (always), "cuda" (when built with CUDA and a device is usable), "auto" (cuda when
// usable, else cpu). dtype: "f32" (every backend) or "bf16" (cuda). Errors are one line:
// no usable device suggests --backend cpu.
// cpu_activations: "f32" (every backend), or "q8" (cpu: CpuActivations::Q8, cpu_backend.h).
std::unique_ptr<Backend> make_backend(const std::string& name, const std::string& dtype = "f32",
                                      const std::string& cpu_activations = "f32");

}  // namespace lmscope
