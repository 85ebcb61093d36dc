// The CPU reference backend: float32, OpenBLAS sgemm for matmuls, OpenMP across rows. A GGUF
// Q8_0/Q4_1 weight is held as its blocks only: decode multiplies them directly
// (block_matmul.h), prefill dequantizes a panel of rows at a time and runs sgemm on it
// (block_prefill.h), the embedding lookup dequantizes the rows it copies.
// Per-element math comes from kernels/*.cuh, the same functions the CUDA kernels use.
//
// CpuActivations::Q8 (--cpu-activations q8) is the fast mode with llama.cpp's numbers: every
// matmul by a blocks-held weight first quantizes its input rows to int8 and multiplies in
// integers, decode and prefill alike: per block of 32 for Q8_0/Q4_1 weights (q8_matmul.h), per
// super-block of 256 (llama.cpp's Q8_K) for Q4_K/Q5_K/Q6_K weights (q8k_matmul.h). Weights held as float32
// (F32 tensors) and bf16/f16 matrices held as stored still multiply float32 activations.
//
// A bf16/f16 matrix (an HF checkpoint's safetensors, a GGUF's F16/BF16 tensors: both loaders
// give an F16/BF16 tensor viewing the file) is held as stored too, 2 bytes a weight
// (half_matmul.h): decode multiplies the values directly, prefill widens a panel of rows at a
// time and runs sgemm on it, the embedding widens the rows it copies.
#pragma once
#include "backend/backend.h"
#include "backend/cpu/block_matmul.h"   // kBlockMatmulMaxRows
#include "backend/cpu/q8_matmul.h"      // Q8Rows
#include "backend/cpu/q8k_matmul.h"     // Q8KRows

namespace lmscope {

enum class CpuActivations { F32, Q8 };

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuActivations activations = CpuActivations::F32);
  std::string name() const override { return "cpu"; }
  std::string activations() const override { return activations_ == CpuActivations::Q8 ? "q8" : "f32"; }
  Tensor alloc(const Shape& shape) override;
  Tensor prepare_weight(const Tensor& host_weight) override;
  Tensor to_host(const Tensor& t) override;
  Tensor upload(const Tensor& host) override;

  void embed(Tensor& out, const Tensor& ids, const Tensor& table) override;
  void rmsnorm(Tensor& out, const Tensor& x, const Tensor& weight, float eps) override;
  void linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) override;
  void linear_group(const Tensor& x, std::initializer_list<LinearJob> jobs) override;
  void split_heads(Tensor& out, const Tensor& x) override;
  void rope(Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) override;
  void kv_write(Tensor& cache, const Tensor& x, int64_t offset) override;
  Tensor kv_read(const Tensor& cache, int64_t S) override;
  void attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v, int64_t S,
                 const Tensor& mask, float scale, Tensor* scores, Tensor* probs) override;
  void swiglu(Tensor& out, const Tensor& gate, const Tensor& up) override;
  void geglu_tanh(Tensor& out, const Tensor& gate, const Tensor& up) override;
  void add(Tensor& out, const Tensor& a, const Tensor& b) override;
  void scale(Tensor& out, const Tensor& x, float s) override;
  void select_column(Tensor& out, const Tensor& x, int64_t t) override;
  bool quantize_activations_for_hook(const Tensor& x, const Tensor& W, Tensor& codes, Tensor& scales) override;
  // Backward ops (cpu_backward.cpp).
  void linear_backward(Tensor& dx, const Tensor& dy, const Tensor& W) override;
  void rmsnorm_backward(Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight, float eps) override;
  void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up) override;
  void geglu_tanh_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up) override;
  void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin) override;
  void merge_heads(Tensor& out, const Tensor& x) override;
  void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs, const Tensor& dz,
                          const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& probs,
                          float scale) override;

 private:
  CpuActivations activations_ = CpuActivations::F32;
  cpu::Q8Rows q8_;     // the quantized input rows of the latest q8 matmul (scratch, reused)
  cpu::Q8KRows q8k_;   // the same for a K-quant weight
  // q8 mode and a blocks-held weight (any GGUF block type the project holds)
  bool quantizes(const Tensor& W) const { return activations_ == CpuActivations::Q8 && W.blocks(); }
  bool use_blocks_ = true;   // decode by block_matmul.h / half_matmul.h; LMSCOPE_CPU_BLOCKS=0: by panels
  // A matmul of N rows by a blocks-held weight multiplies the blocks directly (decode), in
  // linear and linear_group alike; otherwise panels are dequantized (block_prefill.h).
  bool decodes_over_blocks(int64_t N) const { return use_blocks_ && N <= cpu::kBlockMatmulMaxRows; }
  void half_group(const Tensor& x, std::initializer_list<LinearJob> jobs);
};

}  // namespace lmscope
