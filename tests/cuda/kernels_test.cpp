// Every CUDA backend op against the CPU reference backend, on odd sizes: one row (T=1),
// row counts and widths that are not multiples of the block (256), key counts that cross
// the fused attention's tiles (32 keys per block step) and its split-K boundaries, batches
// with different padding per row, head dims below a warp (16), odd (80) and at the limit
// (256). Skipped, with the reason, where no CUDA device is usable.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "cuda_test_util.h"
#include "model/masks.h"
#include "model/rope.h"
#if LMSCOPE_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/launch.h"
#endif

using namespace lmscope;
using namespace lmscope::cuda_test;

namespace {

Tensor host(Backend& be, const Tensor& t) { return be.to_host(t); }

// [B,S] attention mask: row b has `left[b]` pads at the start and `right[b]` at the end.
Tensor padding_mask(int64_t B, int64_t S, const std::vector<int>& left, const std::vector<int>& right) {
  Tensor m = Tensor::zeros({B, S}, DType::I32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) m.i32()[b * S + s] = (s >= left[b] && s < S - right[b]) ? 1 : 0;
  return m;
}

}  // namespace

TEST(CudaKernels, Embed) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (int64_t N : {1, 7, 300}) {
    const int64_t V = 53, D = 37;
    Tensor table = randn({V, D}, 1);
    Tensor ids = Tensor::zeros({1, N}, DType::I32);
    for (int64_t n = 0; n < N; ++n) ids.i32()[n] = int32_t((n * 31 + 5) % V);
    Tensor ref = cpu.alloc({1, N, D});
    cpu.embed(ref, ids, table);
    Tensor out = gpu->alloc({1, N, D});
    gpu->embed(out, gpu->upload(ids), gpu->prepare_weight(table));
    EXPECT_TRUE(close(host(*gpu, out), ref, 0, 0)) << "N=" << N;
  }
}

TEST(CudaKernels, EmbedRejectsIdsOutsideTheVocabulary) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  Tensor table = randn({10, 4}, 1);
  Tensor ids = Tensor::zeros({1, 2}, DType::I32);
  ids.i32()[1] = 10;
  Tensor out = gpu->alloc({1, 2, 4});
  EXPECT_THROW(gpu->embed(out, gpu->upload(ids), gpu->prepare_weight(table)), std::runtime_error);
}

TEST(CudaKernels, EmbedBf16TableWidensExactly) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  CpuBackend cpu;
  const int64_t V = 29, D = 300, N = 5;
  Tensor table = round_to_bf16(randn({V, D}, 2));
  Tensor ids = Tensor::zeros({N}, DType::I32);
  for (int64_t n = 0; n < N; ++n) ids.i32()[n] = int32_t(V - 1 - n);
  Tensor ref = cpu.alloc({N, D});
  cpu.embed(ref, ids, table);
  Tensor out = gpu->alloc({N, D});
  gpu->embed(out, gpu->upload(ids), gpu->prepare_weight(table));
  EXPECT_TRUE(close(host(*gpu, out), ref, 0, 0));
}

TEST(CudaKernels, RmsNorm) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [N, D] : std::vector<std::pair<int64_t, int64_t>>{{1, 37}, {7, 1536}, {300, 64}, {3, 4097}}) {
    Tensor x = randn({N, D}, 3, 2.0f), w = randn({D}, 4, 0.1f, 1.0f);
    Tensor ref = cpu.alloc({N, D});
    cpu.rmsnorm(ref, x, w, 1e-6f);
    Tensor out = gpu->alloc({N, D});
    gpu->rmsnorm(out, gpu->upload(x), gpu->prepare_weight(w), 1e-6f);
    EXPECT_TRUE(close(host(*gpu, out), ref, 0, 1e-6)) << "N=" << N << " D=" << D;
  }
}

TEST(CudaKernels, LinearF32WithAndWithoutBias) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [N, I, O] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 37, 5}, {3, 64, 129}, {17, 300, 257}}) {
    Tensor x = randn({N, I}, 5), W = randn({O, I}, 6, 0.1f), bias = randn({O}, 7);
    for (bool with_bias : {false, true}) {
      Tensor b = with_bias ? bias : Tensor();
      Tensor ref = cpu.alloc({N, O});
      cpu.linear(ref, x, W, b);
      Tensor out = gpu->alloc({N, O});
      gpu->linear(out, gpu->upload(x), gpu->prepare_weight(W), with_bias ? gpu->prepare_weight(bias) : Tensor());
      EXPECT_TRUE(close(host(*gpu, out), ref, 1e-6, 1e-5)) << "N=" << N << " I=" << I << " O=" << O;
    }
  }
}

// bf16: W and x are rounded to bf16, products summed in float32. The reference is the CPU
// sgemm on the same rounded operands, so only the summation order differs.
TEST(CudaKernels, LinearBf16IsTheFloat32ProductOfRoundedOperands) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  CpuBackend cpu;
  for (auto [N, I, O] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 37, 5}, {8, 1536, 259}, {33, 64, 129}}) {
    Tensor x = randn({N, I}, 8), W = randn({O, I}, 9, 0.05f), bias = randn({O}, 10);
    Tensor ref = cpu.alloc({N, O});
    cpu.linear(ref, round_to_bf16(x), round_to_bf16(W), bias);
    Tensor out = gpu->alloc({N, O});
    gpu->linear(out, gpu->upload(x), gpu->prepare_weight(W), gpu->prepare_weight(bias));
    EXPECT_TRUE(close(host(*gpu, out), ref, 1e-6, 1e-5)) << "N=" << N << " I=" << I << " O=" << O;
  }
}

// Decode's matmul (kernels/gemv.cu: N <= 4 rows) against the CPU on the operands it reads
// (W and, for bf16, x rounded): both weight types, with and without bias, 1..4 rows, widths
// on its 16-byte path (I a multiple of 8) and off it (I = 37, 12 for bf16), an x that starts
// off a 16-byte boundary, output counts that do not fill its last block, and the shapes of
// DeepSeek-R1-1.5B's projections. Then LMSCOPE_CUDA_GEMV=0 (cuBLAS) must agree with it.
TEST(CudaKernels, DecodeMatmulMatchesTheCpuAndCublas) {
  for (const char* dtype : {"f32", "bf16"}) {
    LMSCOPE_CUDA_OR_SKIP(gpu, dtype);
    std::unique_ptr<Backend> blas = cuda_backend_with("LMSCOPE_CUDA_GEMV", "0", dtype);
    const bool bf16 = std::string(dtype) == "bf16";
    CpuBackend cpu;
    for (auto [N, I, O] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 37, 5}, {1, 12, 7}, {2, 64, 129}, {3, 1536, 259}, {4, 1536, 1}, {1, 1536, 256}, {1, 8960, 1536},
             {4, 2048, 33}}) {
      Tensor x = randn({N, I}, 40 + N, 1.0f), W = randn({O, I}, 41, 0.05f), bias = randn({O}, 42);
      const Tensor xr = bf16 ? round_to_bf16(x) : x, Wr = bf16 ? round_to_bf16(W) : W;
      for (bool with_bias : {false, true}) {
        const std::string where = std::string(dtype) + " N=" + std::to_string(N) + " I=" + std::to_string(I) +
                                  " O=" + std::to_string(O) + (with_bias ? " +bias" : "");
        Tensor ref = cpu.alloc({N, O});
        cpu.linear(ref, xr, Wr, with_bias ? bias : Tensor());
        Tensor gw = gpu->prepare_weight(W), gb = with_bias ? gpu->prepare_weight(bias) : Tensor();
        Tensor out = gpu->alloc({N, O});
        gpu->linear(out, gpu->upload(x), gw, gb);
        const Tensor got = host(*gpu, out);
        EXPECT_TRUE(close(got, ref, 1e-6, 1e-5)) << where;

        Tensor out_blas = blas->alloc({N, O});
        blas->linear(out_blas, blas->upload(x), blas->prepare_weight(W),
                     with_bias ? blas->prepare_weight(bias) : Tensor());
        EXPECT_TRUE(close(got, host(*blas, out_blas), 1e-6, 1e-5)) << where << " vs cuBLAS";
      }
      // x one float past a 16-byte boundary: the element-wise path
      Tensor x1 = Tensor::zeros({N * I + 1});
      std::copy(x.f32(), x.f32() + N * I, x1.f32() + 1);
      Tensor g1 = gpu->upload(x1);
      Tensor shifted = Tensor::view({N, I}, DType::F32, static_cast<float*>(g1.raw()) + 1,
                                    std::make_shared<Tensor>(g1), Device::Cuda);
      Tensor ref = cpu.alloc({N, O}), out = gpu->alloc({N, O});
      cpu.linear(ref, xr, Wr, Tensor());
      gpu->linear(out, shifted, gpu->prepare_weight(W), Tensor());
      EXPECT_TRUE(close(host(*gpu, out), ref, 1e-6, 1e-5)) << dtype << " misaligned x, N=" << N << " I=" << I;
    }
  }
}

// Consecutive bf16 linears on one input round it once (q/k/v); an op that writes the input
// in between must not leave a stale rounded copy behind.
TEST(CudaKernels, LinearBf16SharedInputIsRoundedAgainAfterAWrite) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  CpuBackend cpu;
  const int64_t N = 8, I = 64, O = 33;   // N > cuda::kGemvMaxRows: the cuBLAS path, which rounds a copy
  Tensor x = randn({N, I}, 30), y = randn({N, I}, 31), W1 = randn({O, I}, 32, 0.1f), W2 = randn({O, I}, 33, 0.1f);
  Tensor gx = gpu->upload(x), g1 = gpu->prepare_weight(W1), g2 = gpu->prepare_weight(W2);
  for (const Tensor* W : {&W1, &W2}) {
    Tensor ref = cpu.alloc({N, O}), out = gpu->alloc({N, O});
    cpu.linear(ref, round_to_bf16(x), round_to_bf16(*W), Tensor());
    gpu->linear(out, gx, W == &W1 ? g1 : g2, Tensor());
    EXPECT_TRUE(close(host(*gpu, out), ref, 1e-6, 1e-5));
  }
  Tensor zero = gpu->upload(Tensor::zeros({N, I}));
  gpu->add(gx, gpu->upload(y), zero);   // gx now holds y
  Tensor ref = cpu.alloc({N, O}), out = gpu->alloc({N, O});
  cpu.linear(ref, round_to_bf16(y), round_to_bf16(W1), Tensor());
  gpu->linear(out, gx, g1, Tensor());
  EXPECT_TRUE(close(host(*gpu, out), ref, 1e-6, 1e-5)) << "stale bf16 copy of the input";
}

TEST(CudaKernels, SplitHeadsAndRope) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [B, T, Hx, hd] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 1, 2, 16}, {3, 5, 7, 64}, {2, 37, 12, 128}}) {
    Tensor x = randn({B, T, Hx * hd}, 11);
    Tensor pos = Tensor::zeros({B, T}, DType::I32);
    for (int64_t i = 0; i < B * T; ++i) pos.i32()[i] = int32_t((i * 13) % 997);
    Tensor cos, sin;
    rope_tables(cos, sin, pos, int(hd), 10000.0f);
    Tensor ref_s = cpu.alloc({B, Hx, T, hd}), ref_r = cpu.alloc({B, Hx, T, hd});
    cpu.split_heads(ref_s, x);
    cpu.rope(ref_r, ref_s, cos, sin);
    Tensor s = gpu->alloc({B, Hx, T, hd}), r = gpu->alloc({B, Hx, T, hd});
    gpu->split_heads(s, gpu->upload(x));
    gpu->rope(r, s, gpu->upload(cos), gpu->upload(sin));
    EXPECT_TRUE(close(host(*gpu, s), ref_s, 0, 0)) << "split_heads B=" << B << " T=" << T;
    EXPECT_TRUE(close(host(*gpu, r), ref_r, 0, same_math_rtol(1e-6))) << "rope B=" << B << " T=" << T;
  }
}

TEST(CudaKernels, KvWriteReadAndSelectColumn) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  const int64_t B = 3, Hkv = 2, Smax = 41, hd = 16;
  Tensor cache_c = cpu.alloc({B, Hkv, Smax, hd});
  Tensor cache_g = gpu->alloc({B, Hkv, Smax, hd});
  int64_t offset = 0;
  for (int64_t T : {7, 1, 1, 13}) {   // a prefill, two decode steps, then a longer chunk
    Tensor x = randn({B, Hkv, T, hd}, 100 + offset);
    cpu.kv_write(cache_c, x, offset);
    gpu->kv_write(cache_g, gpu->upload(x), offset);
    offset += T;
    EXPECT_TRUE(close(host(*gpu, gpu->kv_read(cache_g, offset)), cpu.kv_read(cache_c, offset), 0, 0)) << offset;
  }
  Tensor too_long = gpu->alloc({B, Hkv, Smax, hd});
  EXPECT_THROW(gpu->kv_write(cache_g, too_long, 1), std::runtime_error);

  Tensor x = randn({3, 5, 37}, 12);
  for (int64_t t : {0, 4}) {
    Tensor ref = cpu.alloc({3, 1, 37});
    cpu.select_column(ref, x, t);
    Tensor out = gpu->alloc({3, 1, 37});
    gpu->select_column(out, gpu->upload(x), t);
    EXPECT_TRUE(close(host(*gpu, out), ref, 0, 0)) << "t=" << t;
  }
}

TEST(CudaKernels, SwigluAndAdd) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (int64_t n : {1, 255, 257, 8960 * 3}) {
    Tensor a = randn({n}, 13, 3.0f), b = randn({n}, 14);
    Tensor rs = cpu.alloc({n}), ra = cpu.alloc({n});
    cpu.swiglu(rs, a, b);
    cpu.add(ra, a, b);
    Tensor ga = gpu->upload(a), gb = gpu->upload(b);
    Tensor s = gpu->alloc({n}), ad = gpu->alloc({n});
    gpu->swiglu(s, ga, gb);
    gpu->add(ad, ga, gb);
    EXPECT_TRUE(close(host(*gpu, s), rs, 0, same_math_rtol(1e-6))) << n;
    EXPECT_TRUE(close(host(*gpu, ad), ra, 0, 0)) << n;
  }
}

// Gemma 3's GeGLU: the same per-element function (kernels/activation.cuh) on both backends.
TEST(CudaKernels, GegluTanh) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (int64_t n : {1, 257, 2048 * 3}) {
    Tensor a = randn({n}, 15, 3.0f), b = randn({n}, 16);
    Tensor ref = cpu.alloc({n});
    cpu.geglu_tanh(ref, a, b);
    Tensor out = gpu->alloc({n});
    gpu->geglu_tanh(out, gpu->upload(a), gpu->upload(b));
    EXPECT_TRUE(close(host(*gpu, out), ref, 0, same_math_rtol(1e-6))) << n;
  }
}

// Gemma 3's embedding scale: one float32 product per element, the same bits on both backends.
TEST(CudaKernels, Scale) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (int64_t n : {1, 257, 640 * 3}) {
    Tensor a = randn({n}, 17, 3.0f);
    Tensor ref = cpu.alloc({n});
    cpu.scale(ref, a, 25.298221f);
    Tensor out = gpu->alloc({n});
    gpu->scale(out, gpu->upload(a), 25.298221f);
    EXPECT_TRUE(close(host(*gpu, out), ref, 0, 0)) << n;
    EXPECT_EQ(ref.f32()[0], 25.298221f * a.f32()[0]);
  }
}

// ---- attention ------------------------------------------------------------------------------

struct AttnCase {
  int64_t B, H, Hkv, T, S, Smax, hd;
  std::vector<int> left, right;   // pads per row at the start / end of the S key columns
};

void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << "B" << c.B << "_H" << c.H << "_Hkv" << c.Hkv << "_T" << c.T << "_S" << c.S << "_hd" << c.hd;
}

class CudaAttention : public ::testing::TestWithParam<AttnCase> {};

// Both CUDA paths (fused, and materialized with scores, probs or both hooked) against the
// CPU: z everywhere (pad query rows included: a fully masked row is uniform on both), and
// the scores and probs matrices when they are asked for.
TEST_P(CudaAttention, BothPathsMatchTheCpu) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  const AttnCase c = GetParam();
  Tensor q = randn({c.B, c.H, c.T, c.hd}, 21), k = randn({c.B, c.Hkv, c.Smax, c.hd}, 22),
         v = randn({c.B, c.Hkv, c.Smax, c.hd}, 23);
  Tensor mask = combined_mask(padding_mask(c.B, c.S, c.left, c.right), c.T);
  const float scale = 1.0f / std::sqrt(float(c.hd));
  Tensor z_ref = cpu.alloc({c.B, c.T, c.H, c.hd});
  Tensor sc_ref = cpu.alloc({c.B, c.H, c.T, c.S}), pr_ref = cpu.alloc({c.B, c.H, c.T, c.S});
  cpu.attention(z_ref, q, k, v, c.S, mask, scale, &sc_ref, &pr_ref);

  Tensor gq = gpu->upload(q), gk = gpu->upload(k), gv = gpu->upload(v), gm = gpu->upload(mask);
  Tensor z = gpu->alloc({c.B, c.T, c.H, c.hd});
  gpu->attention(z, gq, gk, gv, c.S, gm, scale, nullptr, nullptr);
  EXPECT_TRUE(close(host(*gpu, z), z_ref, 1e-6, 1e-5)) << "fused";

  for (int which = 1; which <= 3; ++which) {   // 1 scores, 2 probs, 3 both
    Tensor zm = gpu->alloc({c.B, c.T, c.H, c.hd});
    Tensor sc = gpu->alloc({c.B, c.H, c.T, c.S}), pr = gpu->alloc({c.B, c.H, c.T, c.S});
    gpu->attention(zm, gq, gk, gv, c.S, gm, scale, which & 1 ? &sc : nullptr, which & 2 ? &pr : nullptr);
    EXPECT_TRUE(close(host(*gpu, zm), z_ref, 1e-6, 1e-5)) << "materialized, hooks " << which;
    if (which & 1) {
      EXPECT_TRUE(close(host(*gpu, sc), sc_ref, 1e-5, 1e-5)) << "scores";
    }
    if (which & 2) {
      EXPECT_TRUE(close(host(*gpu, pr), pr_ref, 1e-6, 1e-5)) << "probs";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaAttention,
    ::testing::Values(
        // one query, one key
        AttnCase{1, 2, 1, 1, 1, 1, 16, {0}, {0}},
        // prefill, left padding different per row (row 2's pad queries are fully masked)
        AttnCase{3, 6, 2, 5, 5, 5, 64, {0, 2, 4}, {0, 0, 0}},
        // right padding, T not a multiple of anything, hd not a power of two
        AttnCase{2, 4, 4, 37, 37, 40, 80, {0, 0}, {3, 11}},
        // decode over a cache: T=1, S crosses 32-key tiles; few rows -> split-K with combine
        AttnCase{2, 12, 2, 1, 301, 320, 128, {0, 17}, {0, 0}},
        AttnCase{1, 2, 1, 1, 33, 33, 128, {1}, {0}},
        // a prefill chunk after a past: T < S, causal offset
        AttnCase{1, 12, 2, 37, 70, 70, 128, {5}, {0}},
        // the largest head dim the fused kernel takes
        AttnCase{1, 4, 2, 3, 65, 65, 256, {0}, {0}},
        // split-K where most splits see only masked keys, and two fully masked query rows
        // (the combine kernel's uniform-row branch)
        AttnCase{1, 2, 1, 4, 200, 200, 64, {198}, {0}}));

#if LMSCOPE_WITH_CUDA
// The device's f32 -> bf16 is the host's (round to nearest even, NaN kept quiet) bit for
// bit, on ties, subnormals, infinities and NaN; and bf16 -> f32 is exact.
TEST(CudaKernels, Bf16ConversionIsBitIdenticalToTheHost) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  std::vector<float> x = {0.0f, -0.0f, 1.0f, 1.00390625f /* tie */, 1.01171875f /* tie, odd */, 3.14159265f,
                          1e-40f, -1e-45f, 3.4e38f, INFINITY, -INFINITY, NAN, 65504.0f, -2.5e-3f};
  for (int i = 0; i < 1000; ++i) x.push_back(std::ldexp(float(i * 7919 % 4099) - 2049.0f, (i % 60) - 30));
  const int64_t n = int64_t(x.size());
  float* dx = nullptr;
  uint16_t* db = nullptr;
  float* dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  cuda::f32_to_bf16(db, dx, n, nullptr);
  cuda::bf16_to_f32(dy, db, n, nullptr);
  std::vector<uint16_t> b(n);
  std::vector<float> y(n);
  ASSERT_EQ(cudaMemcpy(b.data(), db, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(y.data(), dy, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(b[i], f32_to_bf16(x[i])) << "x=" << x[i];
    const float back = bf16_to_f32(b[i]);
    if (std::isnan(back)) ASSERT_TRUE(std::isnan(y[i]));
    else ASSERT_EQ(y[i], back);
  }
  cudaFree(dx);
  cudaFree(db);
  cudaFree(dy);
}
#endif
