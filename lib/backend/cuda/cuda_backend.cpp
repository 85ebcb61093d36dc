// The CUDA backend. Every op is queued on one stream; nothing here waits for the device
// except to_host (the caller reads the result) and synchronize.
//
// Memory: activations and uploads come from a caching pool of cudaMalloc'ed blocks
// (block_pool.h), weights get exact cudaMalloc blocks; hook copies land in pinned host
// blocks of a second pool. Every block is freed when the last tensor viewing it dies, on
// every path (the owners are shared_ptrs).
//
// Matmuls, row-major out[N,O] = x[N,I] @ W[O,I]^T. cuBLAS is column-major; a row-major
// [R,C] matrix is a column-major [C,R] one. So we ask for out^T[O,N] = W[O,I] . x^T[I,N]:
// A = W read as column-major [I,O] and transposed (CUBLAS_OP_T, lda = I), B = x read as
// column-major [I,N] (CUBLAS_OP_N, ldb = I), C = out as column-major [O,N] (ldc = O).
//   f32:  cublasSgemm, float32 throughout (CUBLAS_DEFAULT_MATH: no TF32).
//   bf16: x is rounded to bf16 (RNE, kernels/dtype_convert.cuh), cublasGemmEx with bf16
//         A and B, float32 C and CUBLAS_COMPUTE_32F (float32 accumulation).
// A few rows (decode, cuda::gemv_fits) go to kernels/gemv.cu instead: the same numbers in
// another summation order, W read once, bias added in the same pass. LMSCOPE_CUDA_GEMV=0
// sends them to cuBLAS too (to compare the two).
#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cuda/block_pool.h"
#include "backend/cuda/cuda_backward.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/op_timer.h"
#include "kernels/dtype_convert.cuh"
#include "kernels/launch.h"

namespace lmscope {

namespace {

using cuda::BlockPool;

void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("cuda backend: ") + what);
}

float* f(Tensor& t) { return static_cast<float*>(t.raw()); }
const float* f(const Tensor& t) { return static_cast<const float*>(t.raw()); }

void check_device_f32(const Tensor& t, const char* what) {
  if (t.device() != Device::Cuda || t.dtype() != DType::F32)
    throw std::logic_error(std::string("cuda backend: ") + what + " must be a float32 tensor on the device");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(bool bf16)
      : bf16_(bf16),
        dev_(std::make_shared<BlockPool>(BlockPool::Kind::Device)),
        pinned_(std::make_shared<BlockPool>(BlockPool::Kind::Pinned)) {
    LMSCOPE_CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    LMSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    sm_count_ = prop.multiProcessorCount;
    LMSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&st_, cudaStreamNonBlocking));
    LMSCOPE_CUBLAS_CHECK(cublasCreate(&blas_));
    LMSCOPE_CUBLAS_CHECK(cublasSetStream(blas_, st_));
    LMSCOPE_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));   // no TF32 for f32
    // A workspace of our own: cuBLAS must not allocate one inside a graph capture.
    LMSCOPE_CUDA_CHECK(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
    LMSCOPE_CUBLAS_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
    timer_ = std::make_unique<cuda::OpTimer>(st_);
    const char* poison = std::getenv("LMSCOPE_CUDA_POISON");
    poison_ = poison && std::strcmp(poison, "0") != 0;
    const char* gemv = std::getenv("LMSCOPE_CUDA_GEMV");   // 0: every matmul through cuBLAS
    gemv_ = !(gemv && std::strcmp(gemv, "0") == 0);
    const char* graphs = std::getenv("LMSCOPE_CUDA_GRAPHS");   // 1: decode steps as graphs
    graphs_ = graphs && std::strcmp(graphs, "0") != 0;
  }
  ~CudaBackend() override {
    if (capturing_) abandon_capture();
    (void)cudaStreamSynchronize(st_);
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    if (graphs_ && graph_steps_ > 0)
      std::fprintf(stderr, "lmscope cuda graphs: %lld decode steps as graphs, %lld updated in place, %lld instantiated%s\n",
                   (long long)graph_steps_, (long long)graph_updates_, (long long)graph_instantiations_,
                   last_update_failure_ ? (" (last update refused: cudaGraphExecUpdateResult " +
                                           std::to_string(last_update_failure_) + ")").c_str()
                                        : "");
    if (blas_workspace_) (void)cudaFree(blas_workspace_);
    timer_.reset();   // prints its table when LMSCOPE_CUDA_OP_TIMES is set
    (void)cublasDestroy(blas_);
    (void)cudaStreamDestroy(st_);
  }

  std::string name() const override { return "cuda"; }
  std::string compute_dtype() const override { return bf16_ ? "bf16" : "f32"; }

  // ---- memory ------------------------------------------------------------------------------
  Tensor device_tensor(const Shape& shape, DType dtype) {
    const size_t bytes = size_t(shape_numel(shape)) * dtype_size(dtype);
    std::shared_ptr<void> block = dev_->get(bytes);
    void* p = block.get();
    return Tensor::view(shape, dtype, p, std::move(block), Device::Cuda);
  }

  Tensor alloc(const Shape& shape) override {
    Tensor t = device_tensor(shape, DType::F32);
    // LMSCOPE_CUDA_POISON=1: fill with NaN (0xFF bytes) so that an element no op wrote shows.
    if (poison_ && t.nbytes()) LMSCOPE_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0xFF, t.nbytes(), st_));
    return t;
  }

  // Weights: exact cudaMalloc blocks (a rounded pool block would waste up to 2 MiB each).
  Tensor upload_exact(const Shape& shape, DType dtype, const void* host) {
    const size_t bytes = size_t(shape_numel(shape)) * dtype_size(dtype);
    void* p = nullptr;
    LMSCOPE_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
    std::shared_ptr<void> owner(p, [](void* q) { (void)cudaFree(q); });
    if (bytes) LMSCOPE_CUDA_CHECK(cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, st_));
    LMSCOPE_CUDA_CHECK(cudaStreamSynchronize(st_));   // the host buffer may be a temporary
    return Tensor::view(shape, dtype, p, std::move(owner), Device::Cuda);
  }

  // bf16: matrices (2-D: the projections, the embedding and the head) become bf16 on the
  // device, rounded to nearest even when the checkpoint is float32; vectors (norm weights,
  // biases) stay float32. f32: everything float32 (F16/BF16 widened exactly).
  Tensor prepare_weight(const Tensor& w) override {
    check(w.device() == Device::Host, "prepare_weight: expects a host tensor");
    if (bf16_ && w.ndim() == 2) {
      if (w.dtype() == DType::BF16) return upload_exact(w.shape(), DType::BF16, w.raw());
      Tensor wf = w.values_f32();   // F16 widened, GGUF blocks dequantized (host, until uploaded)
      std::vector<uint16_t> b(size_t(wf.numel()));
      const float* src = wf.f32();
      for (size_t i = 0; i < b.size(); ++i) b[i] = f32_to_bf16(src[i]);
      return upload_exact(w.shape(), DType::BF16, b.data());
    }
    Tensor wf = w.values_f32();
    return upload_exact(w.shape(), DType::F32, wf.raw());
  }

  Tensor to_host_async(const Tensor& t) override {
    if (t.device() == Device::Host) return t;
    std::shared_ptr<void> block = pinned_->get(t.nbytes());
    void* p = block.get();
    if (t.nbytes()) LMSCOPE_CUDA_CHECK(cudaMemcpyAsync(p, t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, st_));
    return Tensor::view(t.shape(), t.dtype(), p, std::move(block), Device::Host);
  }
  bool host_copies_are_async() const override { return true; }

  Tensor to_host(const Tensor& t) override {
    Tensor h = to_host_async(t);
    if (t.device() != Device::Host) synchronize();
    return h;
  }

  void synchronize() override {
    if (capturing_) end_capture_and_launch();
    LMSCOPE_CUDA_CHECK(cudaStreamSynchronize(st_));
    staging_.clear();
    timer_->collect();
  }

  // ---- decode steps as CUDA graphs (LMSCOPE_CUDA_GRAPHS=1; off by default until measured) ----
  // A decode step (T = 1) is captured instead of launched: its ~510 launches become nodes of
  // one graph, launched once. The first synchronize of the step (the logits' copy, or a hook
  // flush) ends the capture; each step's graph updates the one instantiated before
  // (cudaGraphExecUpdate: same topology, new sizes and addresses), or is instantiated anew
  // when the topology changed. Results are bit-identical: the same kernels in the same order.
  // The first decode step runs eagerly (the first use of the decode kernels, and anything a
  // library initializes lazily, stay outside a capture); the later ones are captured.
  void begin_forward(int64_t B, int64_t T) override {
    (void)B;
    if (capturing_) abandon_capture();   // defensive: abandon_forward should have done it
    timer_->begin_step();
    if (T == 1 && graphs_ && !timer_->enabled() && decode_steps_++ > 0) {
      LMSCOPE_CUDA_CHECK(cudaStreamBeginCapture(st_, cudaStreamCaptureModeRelaxed));
      set_capturing(true);
    }
  }
  void abandon_forward() override {
    if (capturing_) abandon_capture();
  }
  void end_capture_and_launch() {
    set_capturing(false);
    cudaGraph_t graph = nullptr;
    LMSCOPE_CUDA_CHECK(cudaStreamEndCapture(st_, &graph));
    std::unique_ptr<CUgraph_st, void (*)(cudaGraph_t)> owned(graph, [](cudaGraph_t g) { (void)cudaGraphDestroy(g); });
    ++graph_steps_;
    if (exec_) {
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(exec_, graph, &info) == cudaSuccess) {
        ++graph_updates_;
      } else {   // another topology (split-K appeared, a hook flush...): instantiate anew
        (void)cudaGetLastError();
        last_update_failure_ = int(info.result);
        (void)cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
      }
    }
    if (!exec_) {
      LMSCOPE_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
      ++graph_instantiations_;
    }
    LMSCOPE_CUDA_CHECK(cudaGraphLaunch(exec_, st_));
  }
  void abandon_capture() {
    set_capturing(false);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(st_, &graph) == cudaSuccess && graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
  }
  // While capturing, the pools must not synchronize the device to give memory back.
  void set_capturing(bool on) {
    capturing_ = on;
    dev_->set_capturing(on);
    pinned_->set_capturing(on);
  }

  // Times the op in scope when LMSCOPE_CUDA_OP_TIMES is set (op_timer.h); `bytes`: what it
  // must read and write at least.
  template <class Label>
  cuda::OpTimer::Scope timed(const Label& label, double bytes) {
    return timer_->time(label, bytes);
  }

  // Through a pinned staging block, kept until the next synchronize: the caller may free its
  // host tensor at once, and a copy from pinned memory can be captured into a graph.
  Tensor upload(const Tensor& host) override {
    forget_rounded();
    if (host.device() == Device::Cuda) return host;
    Tensor d = device_tensor(host.shape(), host.dtype());
    if (d.nbytes()) {
      std::shared_ptr<void> stage = pinned_->get(d.nbytes());
      std::memcpy(stage.get(), host.raw(), d.nbytes());
      LMSCOPE_CUDA_CHECK(cudaMemcpyAsync(d.raw(), stage.get(), d.nbytes(), cudaMemcpyHostToDevice, st_));
      staging_.push_back(std::move(stage));
    }
    if (host.dtype() == DType::I32) ids_device_ = d.raw(), ids_host_ = host;   // for embed's id check
    return d;
  }

  // ---- ops ---------------------------------------------------------------------------------
  void embed(Tensor& out, const Tensor& ids, const Tensor& table) override {
    forget_rounded();
    const int64_t N = ids.numel(), D = table.dim(1), V = table.dim(0);
    check(out.numel() == N * D && ids.dtype() == DType::I32, "embed: shapes");
    // Ids are checked on the host, from the tensor they were uploaded from (the CPU's error).
    const Tensor* host_ids = ids.device() == Device::Host ? &ids : (ids.raw() == ids_device_ ? &ids_host_ : nullptr);
    if (host_ids)
      for (int64_t n = 0; n < N; ++n) {
        const int32_t id = host_ids->i32()[n];
        if (id < 0 || id >= V)
          throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary [0," +
                                   std::to_string(V) + ")");
      }
    Tensor dev_ids = upload(ids);
    auto timing = timed([&] { return "embed N=" + std::to_string(N); }, 8.0 * N * D);
    cuda::embed(f(out), static_cast<const int32_t*>(dev_ids.raw()), table.raw(), table.dtype() == DType::BF16, N, D,
                V, st_);
  }

  void rmsnorm(Tensor& out, const Tensor& x, const Tensor& weight, float eps) override {
    forget_rounded();
    check_device_f32(x, "rmsnorm input");
    const int64_t D = x.dim(-1), N = x.numel() / D;
    auto timing = timed([&] { return "rmsnorm N=" + std::to_string(N) + " D=" + std::to_string(D); }, 8.0 * N * D);
    cuda::rmsnorm(f(out), f(x), f(weight), eps, N, D, st_);
  }

  void linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) override {
    check_device_f32(x, "linear input");
    const int64_t O = W.dim(0), I = W.dim(1), N = x.numel() / I;
    check(x.dim(-1) == I && out.numel() == N * O, "linear: shapes");
    if (N == 0 || O == 0) return;
    const bool has_bias = bias.defined() && bias.numel() > 0;
    const bool use_gemv = gemv_ && cuda::gemv_fits(N, I) && (W.dtype() == DType::F32 || W.dtype() == DType::BF16);
    auto timing = timed(
        [&] {
          return std::string(use_gemv ? "linear/gemv " : "linear/cublas ") + (W.dtype() == DType::BF16 ? "bf16" : "f32") +
                 " N=" + std::to_string(N) + " O=" + std::to_string(O) + " I=" + std::to_string(I);
        },
        double(W.nbytes()) + 4.0 * (N * I + N * O));
    // Decode (a few rows): one pass over W, bias included (kernels/gemv.cu).
    if (use_gemv) {
      cuda::gemv(f(out), f(x), W.raw(), W.dtype() == DType::BF16, has_bias ? f(bias) : nullptr, N, O, I, st_);
      if (out.raw() == rounded_src_.raw()) forget_rounded();
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    if (W.dtype() == DType::F32) {
      LMSCOPE_CUBLAS_CHECK(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(O), int(N), int(I), &one, f(W), int(I),
                                       f(x), int(I), &zero, f(out), int(O)));
    } else if (W.dtype() == DType::BF16) {
      const Tensor& xb = bf16_operand(x);   // x rounded to bf16: the matmul operand
      LMSCOPE_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(O), int(N), int(I), &one, W.raw(),
                                        CUDA_R_16BF, int(I), xb.raw(), CUDA_R_16BF, int(I), &zero, out.raw(),
                                        CUDA_R_32F, int(O), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
      throw std::logic_error("cuda backend: linear weight must be F32 or BF16");
    }
    if (has_bias) cuda::add_bias(f(out), f(bias), N, O, st_);
    if (out.raw() == rounded_src_.raw()) forget_rounded();
  }

  // The bf16 copy of a matmul input, made once for consecutive linears that share it (q/k/v
  // read the same normed x, gate/up theirs). Valid only until any other op runs (each calls
  // forget_rounded), so no write can slip in between; holding the source keeps its block
  // from being handed out again.
  const Tensor& bf16_operand(const Tensor& x) {
    if (!(rounded_src_.defined() && rounded_src_.raw() == x.raw() && rounded_src_.numel() == x.numel())) {
      rounded_ = device_tensor({x.numel()}, DType::BF16);
      cuda::f32_to_bf16(static_cast<uint16_t*>(rounded_.raw()), f(x), x.numel(), st_);
      rounded_src_ = x;
    }
    return rounded_;
  }
  void forget_rounded() { rounded_src_ = Tensor(), rounded_ = Tensor(); }

  void split_heads(Tensor& out, const Tensor& x) override {
    forget_rounded();
    const int64_t B = out.dim(0), Hx = out.dim(1), T = out.dim(2), hd = out.dim(3);
    check(x.numel() == out.numel(), "split_heads: sizes");
    // One token (decode): [B,1,Hx*hd] and [B,Hx,1,hd] are the same bytes. No tensor is
    // written after its op, so a view of x is as good as a copy, and saves a launch.
    if (T == 1) {
      out = x.reshape(out.shape());
      return;
    }
    auto timing = timed([&] { return "split_heads N=" + std::to_string(B * T); }, 8.0 * x.numel());
    cuda::split_heads(f(out), f(x), B, T, Hx, hd, st_);
  }

  void rope(Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) override {
    forget_rounded();
    const int64_t B = x.dim(0), Hx = x.dim(1), T = x.dim(2), hd = x.dim(3);
    check(cos.numel() == B * T * hd && sin.numel() == B * T * hd, "rope: cos/sin shapes");
    auto timing = timed([&] { return "rope N=" + std::to_string(B * T) + " H=" + std::to_string(Hx); }, 8.0 * x.numel());
    cuda::rope(f(out), f(x), f(cos), f(sin), B, Hx, T, hd, st_);
  }

  // cache[b,h,offset+t,:] = x[b,h,t,:]: B*Hkv rows of T*hd floats, one strided copy.
  void kv_write(Tensor& cache, const Tensor& x, int64_t offset) override {
    forget_rounded();
    const int64_t B = x.dim(0), Hkv = x.dim(1), T = x.dim(2), hd = x.dim(3), Smax = cache.dim(2);
    if (offset + T > Smax)
      throw std::runtime_error("KV cache full: " + std::to_string(offset + T) + " positions > capacity " +
                               std::to_string(Smax));
    if (B * Hkv * T * hd == 0) return;
    auto timing = timed([&] { return "kv_write N=" + std::to_string(B * T); }, 8.0 * x.numel());
    LMSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(f(cache) + offset * hd, size_t(Smax * hd) * 4, f(x), size_t(T * hd) * 4,
                                         size_t(T * hd) * 4, size_t(B * Hkv), cudaMemcpyDeviceToDevice, st_));
  }

  Tensor kv_read(const Tensor& cache, int64_t S) override {
    forget_rounded();
    const int64_t B = cache.dim(0), Hkv = cache.dim(1), Smax = cache.dim(2), hd = cache.dim(3);
    check(S <= Smax, "kv_read: S > capacity");
    Tensor out = alloc({B, Hkv, S, hd});
    if (B * Hkv * S * hd == 0) return out;
    LMSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(f(out), size_t(S * hd) * 4, f(cache), size_t(Smax * hd) * 4,
                                         size_t(S * hd) * 4, size_t(B * Hkv), cudaMemcpyDeviceToDevice, st_));
    return out;
  }

  // Fused unless attn.scores / attn.probs are asked for (kernels/attention.cu).
  void attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v, int64_t S, const Tensor& mask,
                 float scale, Tensor* scores, Tensor* probs) override {
    forget_rounded();
    const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), hd = q.dim(3);
    const int64_t Hkv = k.dim(1), Smax = k.dim(2);
    check(S <= Smax && mask.dim(2) == S && mask.numel() == B * T * S, "attention: S");
    check_device_f32(k, "attention keys");
    cuda::AttentionArgs a{f(z), f(q), f(k), f(v), f(mask), B, H, Hkv, T, S, Smax, hd, scale};
    auto timing = timed(
        [&] {
          return std::string(!scores && !probs ? "attention/fused" : "attention/materialized") +
                 (T == 1 ? " decode" : " prefill") + " B=" + std::to_string(B);
        },
        4.0 * (2 * B * Hkv * S * hd + 2 * B * H * T * hd + B * T * S));
    if (!scores && !probs) {
      int splits = 1;
      const int64_t scratch_floats = cuda::attention_fused_plan(a, sm_count_, &splits);
      Tensor scratch = scratch_floats ? device_tensor({scratch_floats}, DType::F32) : Tensor();
      cuda::attention_fused(a, splits, scratch_floats ? f(scratch) : nullptr, st_);
      return;
    }
    Tensor tmp;
    float* p = probs ? f(*probs) : f(tmp = device_tensor({B, H, T, S}, DType::F32));
    if (scores) {
      cuda::attention_scores(a, f(*scores), st_);
      cuda::attention_softmax(f(*scores), p, B * H * T, S, st_);
    } else {
      cuda::attention_scores(a, p, st_);
      cuda::attention_softmax(p, p, B * H * T, S, st_);
    }
    cuda::attention_apply(a, p, st_);
  }

  void swiglu(Tensor& out, const Tensor& gate, const Tensor& up) override {
    forget_rounded();
    auto timing = timed([&] { return "swiglu n=" + std::to_string(out.numel()); }, 12.0 * out.numel());
    cuda::swiglu(f(out), f(gate), f(up), out.numel(), st_);
  }

  void geglu_tanh(Tensor& out, const Tensor& gate, const Tensor& up) override {
    forget_rounded();
    check(gate.numel() == out.numel() && up.numel() == out.numel(), "geglu_tanh: sizes");
    auto timing = timed([&] { return "geglu_tanh n=" + std::to_string(out.numel()); }, 12.0 * out.numel());
    cuda::geglu_tanh(f(out), f(gate), f(up), out.numel(), st_);
  }

  void add(Tensor& out, const Tensor& a, const Tensor& b) override {
    forget_rounded();
    const int64_t n = out.numel();
    check(a.numel() == n && b.numel() == n, "add: sizes");
    auto timing = timed([&] { return "add n=" + std::to_string(n); }, 12.0 * n);
    cuda::add(f(out), f(a), f(b), n, st_);
  }

  void scale(Tensor& out, const Tensor& x, float s) override {
    forget_rounded();
    const int64_t n = out.numel();
    check(x.numel() == n, "scale: sizes");
    auto timing = timed([&] { return "scale n=" + std::to_string(n); }, 8.0 * n);
    cuda::scale(f(out), f(x), s, n, st_);
  }

  void select_column(Tensor& out, const Tensor& x, int64_t t) override {
    forget_rounded();
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
    check(t >= 0 && t < T && out.numel() == B * D, "select_column: shapes");
    if (T == 1) {   // the only column: a view, as in split_heads
      out = x.reshape(out.shape());
      return;
    }
    if (B * D == 0) return;
    auto timing = timed([&] { return "select_column B=" + std::to_string(B); }, 8.0 * B * D);
    LMSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(f(out), size_t(D) * 4, f(x) + t * D, size_t(T * D) * 4, size_t(D) * 4,
                                         size_t(B), cudaMemcpyDeviceToDevice, st_));
  }

  // ---- backward ops (cuda_backward.cpp) ------------------------------------------------------
  void linear_backward(Tensor& dx, const Tensor& dy, const Tensor& W) override {
    forget_rounded();
    cuda::linear_backward(backward_context(), dx, dy, W);
  }
  void rmsnorm_backward(Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight, float eps) override {
    forget_rounded();
    cuda::rmsnorm_backward(backward_context(), dx, dy, x, weight, eps);
  }
  void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up) override {
    forget_rounded();
    cuda::swiglu_backward(backward_context(), dgate, dup, dact, gate, up);
  }
  void geglu_tanh_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                           const Tensor& up) override {
    forget_rounded();
    cuda::geglu_tanh_backward(backward_context(), dgate, dup, dact, gate, up);
  }
  void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin) override {
    forget_rounded();
    cuda::rope_backward(backward_context(), dx, dy, cos, sin);
  }
  void merge_heads(Tensor& out, const Tensor& x) override {
    forget_rounded();
    cuda::merge_heads(backward_context(), out, x);
  }
  void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs, const Tensor& dz,
                          const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& probs,
                          float scale) override {
    forget_rounded();
    cuda::attention_backward(backward_context(), dq, dk, dv, dscores, dprobs, dz, q, k, v, probs, scale);
  }
  cuda::BackwardContext backward_context() const { return {blas_, st_}; }

 private:
  bool bf16_;
  bool poison_ = false;
  bool gemv_ = true;
  bool graphs_ = false, capturing_ = false;
  cudaGraphExec_t exec_ = nullptr;                  // the decode step's graph, updated each step
  int64_t decode_steps_ = 0, graph_steps_ = 0, graph_updates_ = 0, graph_instantiations_ = 0;
  int last_update_failure_ = 0;
  static constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;   // NVIDIA's advice for Hopper
  void* blas_workspace_ = nullptr;
  std::vector<std::shared_ptr<void>> staging_;      // pinned upload blocks, until synchronize
  int sm_count_ = 0;
  cudaStream_t st_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::shared_ptr<BlockPool> dev_, pinned_;
  const void* ids_device_ = nullptr;   // the last int32 upload and its host source
  Tensor ids_host_;
  std::unique_ptr<cuda::OpTimer> timer_;   // LMSCOPE_CUDA_OP_TIMES
  Tensor rounded_src_, rounded_;       // bf16_operand's one-entry cache
};

}  // namespace

bool cuda_device_usable(std::string* why) {
  auto fail = [&](const std::string& w) {
    (void)cudaGetLastError();
    if (why) *why = w;
    return false;
  };
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return fail(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
  if (n == 0) return fail("no CUDA device found");
  e = cuda::probe_kernel_image();
  if (e != cudaSuccess) {
    cudaDeviceProp prop;
    std::string dev = "device 0";
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
      dev = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
            "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major) + std::to_string(prop.minor);
    return fail(std::string("this build has no kernels for ") + dev + ": " + cudaGetErrorString(e));
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const std::string& dtype) {
  if (dtype != "f32" && dtype != "bf16") throw std::runtime_error("--dtype: unknown '" + dtype + "' (f32, bf16)");
  std::string why;
  if (!cuda_device_usable(&why))
    throw std::runtime_error("--backend cuda: no usable CUDA device (" + why + "); use --backend cpu");
  return std::make_unique<CudaBackend>(dtype == "bf16");
}

CudaDeviceInfo cuda_device_info(bool measure_copy) {
  CudaDeviceInfo info;
  cudaDeviceProp prop;
  LMSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.memory_bytes = prop.totalGlobalMem;
  if (!measure_copy) return info;
  // A 1 GiB device-to-device copy, 2 warm-ups then 10 timed: bytes read + written per second.
  const size_t bytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  auto cleanup = [&] {
    if (a) (void)cudaFree(a);
    if (b) (void)cudaFree(b);
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
  };
  try {
    LMSCOPE_CUDA_CHECK(cudaMalloc(&a, bytes));
    LMSCOPE_CUDA_CHECK(cudaMalloc(&b, bytes));
    LMSCOPE_CUDA_CHECK(cudaMemset(a, 1, bytes));   // never time on untouched memory
    LMSCOPE_CUDA_CHECK(cudaEventCreate(&e0));
    LMSCOPE_CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 2; ++i) LMSCOPE_CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    const int reps = 10;
    LMSCOPE_CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < reps; ++i) LMSCOPE_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    LMSCOPE_CUDA_CHECK(cudaEventRecord(e1));
    LMSCOPE_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    LMSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    info.copy_bytes_per_s = 2.0 * double(bytes) * reps / (double(ms) * 1e-3);
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return info;
}

}  // namespace lmscope
