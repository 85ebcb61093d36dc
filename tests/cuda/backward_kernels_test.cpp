// Every backward op of the CUDA backend (kernels/backward.cu, lib/backend/cuda/cuda_backward.cpp)
// against its CPU reference (backend/cpu/cpu_backward.cpp) on odd sizes: one row, counts and
// widths that are not multiples of the block (256), GQA groups, left padding with fully
// masked query rows. Element-wise ops share the CPU's math (kernels/backward_math.cuh) and are
// bit for bit on the emulator; the row sums (RMSNorm's, softmax's) and the matmuls sum in
// another order and are held within 1e-5 of the output's largest magnitude, the bound of the
// forward's matmuls (kernels_test.cpp). Skipped, with the reason, where no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "cuda_test_util.h"
#include "model/masks.h"
#include "model/rope.h"

using namespace lmscope;
using namespace lmscope::cuda_test;

namespace {

Tensor host(Backend& be, const Tensor& t) { return be.to_host(t); }

}  // namespace

TEST(CudaBackward, LinearBackwardIsDyTimesW) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [N, O, I] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 5, 37}, {7, 129, 64}, {33, 1536, 259}}) {
    Tensor dy = randn({N, O}, 50), W = randn({O, I}, 51, 0.1f);
    Tensor ref = cpu.alloc({N, I});
    cpu.linear_backward(ref, dy, W);
    Tensor dx = gpu->alloc({N, I});
    gpu->linear_backward(dx, gpu->upload(dy), gpu->prepare_weight(W));
    EXPECT_TRUE(close(host(*gpu, dx), ref, 1e-6, 1e-5)) << "N=" << N << " O=" << O << " I=" << I;
  }
}

TEST(CudaBackward, LinearBackwardRefusesABf16WeightInOneLine) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  Tensor dx = gpu->alloc({2, 8});
  try {
    gpu->linear_backward(dx, gpu->upload(randn({2, 4}, 52)), gpu->prepare_weight(randn({4, 8}, 53)));
    FAIL() << "no refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gradients: the cuda backend's --dtype bf16 has no backward ops (use --dtype f32)");
  }
}

TEST(CudaBackward, RmsNormBackward) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [N, D] : std::vector<std::pair<int64_t, int64_t>>{{1, 37}, {7, 576}, {300, 64}, {3, 4097}}) {
    Tensor dy = randn({N, D}, 54), x = randn({N, D}, 55, 2.0f), w = randn({D}, 56, 0.1f, 1.0f);
    Tensor ref = cpu.alloc({N, D});
    cpu.rmsnorm_backward(ref, dy, x, w, 1e-6f);
    Tensor dx = gpu->alloc({N, D});
    gpu->rmsnorm_backward(dx, gpu->upload(dy), gpu->upload(x), gpu->prepare_weight(w), 1e-6f);
    EXPECT_TRUE(close(host(*gpu, dx), ref, 0, 1e-6)) << "N=" << N << " D=" << D;
  }
}

TEST(CudaBackward, SwigluAndGegluBackward) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (bool gelu : {false, true})
    for (int64_t n : {1, 255, 257, 3 * 1536 + 7}) {
      Tensor dact = randn({n}, 57), gate = randn({n}, 58, 3.0f), up = randn({n}, 59);
      Tensor rg = cpu.alloc({n}), ru = cpu.alloc({n});
      Tensor dg = gpu->alloc({n}), du = gpu->alloc({n});
      if (gelu) {
        cpu.geglu_tanh_backward(rg, ru, dact, gate, up);
        gpu->geglu_tanh_backward(dg, du, gpu->upload(dact), gpu->upload(gate), gpu->upload(up));
      } else {
        cpu.swiglu_backward(rg, ru, dact, gate, up);
        gpu->swiglu_backward(dg, du, gpu->upload(dact), gpu->upload(gate), gpu->upload(up));
      }
      EXPECT_TRUE(close(host(*gpu, dg), rg, 0, same_math_rtol(1e-6))) << "dgate n=" << n << " gelu " << gelu;
      EXPECT_TRUE(close(host(*gpu, du), ru, 0, same_math_rtol(1e-6))) << "dup n=" << n << " gelu " << gelu;
    }
}

TEST(CudaBackward, RopeBackwardAndMergeHeads) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  for (auto [B, T, Hx, hd] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 1, 2, 16}, {3, 5, 7, 64}, {2, 37, 12, 128}}) {
    Tensor dy = randn({B, Hx, T, hd}, 60);
    Tensor pos = Tensor::zeros({B, T}, DType::I32);
    for (int64_t i = 0; i < B * T; ++i) pos.i32()[i] = int32_t((i * 13) % 997);
    Tensor cos, sin;
    rope_tables(cos, sin, pos, int(hd), 10000.0f);
    Tensor ref_r = cpu.alloc({B, Hx, T, hd}), ref_m = cpu.alloc({B, T, Hx * hd});
    cpu.rope_backward(ref_r, dy, cos, sin);
    cpu.merge_heads(ref_m, dy);
    Tensor r = gpu->alloc({B, Hx, T, hd}), m = gpu->alloc({B, T, Hx * hd});
    Tensor gdy = gpu->upload(dy);
    gpu->rope_backward(r, gdy, gpu->upload(cos), gpu->upload(sin));
    gpu->merge_heads(m, gdy);
    EXPECT_TRUE(close(host(*gpu, r), ref_r, 0, same_math_rtol(1e-6))) << "rope_backward B=" << B << " T=" << T;
    EXPECT_TRUE(close(host(*gpu, m), ref_m, 0, 0)) << "merge_heads B=" << B << " T=" << T;
  }
}

// attention_backward on the probabilities of a real forward (the CPU's, with left padding:
// the pad query rows are uniform, the pad keys 0): dprobs, dscores, dq, dk, dv against the
// CPU's; dscores exactly 0 wherever probs is.
struct AttnBackCase {
  int64_t B, H, Hkv, T, hd;
  std::vector<int> left;   // pads per row at the start
};

void PrintTo(const AttnBackCase& c, std::ostream* os) {
  *os << "B" << c.B << "_H" << c.H << "_Hkv" << c.Hkv << "_T" << c.T << "_hd" << c.hd;
}

class CudaAttentionBackward : public ::testing::TestWithParam<AttnBackCase> {};

TEST_P(CudaAttentionBackward, MatchesTheCpu) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  CpuBackend cpu;
  const AttnBackCase c = GetParam();
  const int64_t B = c.B, H = c.H, Hkv = c.Hkv, T = c.T, hd = c.hd;
  Tensor q = randn({B, H, T, hd}, 61), k = randn({B, Hkv, T, hd}, 62), v = randn({B, Hkv, T, hd}, 63);
  Tensor dz = randn({B, T, H, hd}, 64);
  Tensor pad = Tensor::zeros({B, T}, DType::I32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) pad.i32()[b * T + t] = t >= c.left[b] ? 1 : 0;
  const float scale = 1.0f / std::sqrt(float(hd));
  Tensor z = cpu.alloc({B, T, H, hd}), probs = cpu.alloc({B, H, T, T});
  cpu.attention(z, q, k, v, T, combined_mask(pad, T), scale, nullptr, &probs);

  Tensor rq = cpu.alloc({B, H, T, hd}), rk = cpu.alloc({B, Hkv, T, hd}), rv = cpu.alloc({B, Hkv, T, hd});
  Tensor rs = cpu.alloc({B, H, T, T}), rp = cpu.alloc({B, H, T, T});
  cpu.attention_backward(rq, rk, rv, rs, rp, dz, q, k, v, probs, scale);

  Tensor dq = gpu->alloc({B, H, T, hd}), dk = gpu->alloc({B, Hkv, T, hd}), dv = gpu->alloc({B, Hkv, T, hd});
  Tensor ds = gpu->alloc({B, H, T, T}), dp = gpu->alloc({B, H, T, T});
  gpu->attention_backward(dq, dk, dv, ds, dp, gpu->upload(dz), gpu->upload(q), gpu->upload(k), gpu->upload(v),
                          gpu->upload(probs), scale);
  const Tensor got_s = host(*gpu, ds);
  EXPECT_TRUE(close(host(*gpu, dp), rp, 1e-6, 1e-5)) << "dprobs";
  EXPECT_TRUE(close(got_s, rs, 1e-6, 1e-5)) << "dscores";
  EXPECT_TRUE(close(host(*gpu, dq), rq, 1e-6, 1e-5)) << "dq";
  EXPECT_TRUE(close(host(*gpu, dk), rk, 1e-6, 1e-5)) << "dk";
  EXPECT_TRUE(close(host(*gpu, dv), rv, 1e-6, 1e-5)) << "dv";
  int64_t masked = 0, nonzero = 0;
  for (int64_t i = 0; i < probs.numel(); ++i)
    if (probs.f32()[i] == 0.0f) ++masked, nonzero += got_s.f32()[i] != 0.0f;
  if (T > 1) {
    EXPECT_GT(masked, 0);   // the causal mask at least
  }
  EXPECT_EQ(nonzero, 0) << "dscores where the mask made probs 0";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionBackward,
                         ::testing::Values(
                             // one token, one head
                             AttnBackCase{1, 1, 1, 1, 16, {0}},
                             // GQA 3:1, left padding different per row (row 2: 4 pad queries)
                             AttnBackCase{3, 6, 2, 7, 64, {0, 2, 4}},
                             // SmolLM2's heads (9 over 3), T past a warp, hd not a power of two
                             AttnBackCase{2, 9, 3, 37, 80, {0, 11}},
                             // no GQA, a long row for the softmax' block sums
                             AttnBackCase{1, 4, 4, 300, 32, {5}}));
