// A GGUF's F16/BF16 matrices are held as stored (F16/BF16 tensors viewing the file, the Llama q/k
// rows un-permuted in a 2-byte copy), as an HF checkpoint's bf16 safetensors are, and the CPU
// backend multiplies them in place (backend/cpu/half_matmul.h). Each model here is written
// twice: with its matrices in F16 or BF16, and as F32 holding the same values widened (the
// float32 path, what the loader made of the half file before). Against it: the same weight
// values (named_weights + values_f32, what the Python module's m.weight() returns), prefill's
// logits bit for bit (widened panels + sgemm, the float32 path's pieces), and decode's logits
// (half_matmul's dot products) within the default logits tolerance of docs/tolerances.md.
// Llama (q/k permuted in the file) and Qwen2 (q/k/v biases, untied head) each.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "compare/tolerances.h"
#include "generate/batch.h"
#include "gguf_test_util.h"
#include "io/gguf.h"
#include "kernels/dtype_convert.cuh"
#include "model/decoder.h"
#include "model/gguf_model.h"
#include "model/kv_cache.h"
#include "model/load_model.h"

using namespace lmscope;
using testing_util::TempDir;

namespace {

constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30;

// Big enough that a row spans several 32-column chunks of half_dot.h (D = 96, F = 160) and a
// partial one (hd = 24 heads, V = 80 rows).
constexpr uint64_t D = 96, F = 160, H = 4, Hkv = 2, hd = 24, V = 80, kLayers = 2;

struct HalfSpec {
  std::string arch;    // "llama" (q/k permuted, tied head) or "qwen2" (biases, untied head)
  uint32_t half_type;  // kGgmlF16 or kGgmlBF16
};

uint16_t to_half(uint32_t type, float v) { return type == kGgmlBF16 ? f32_to_bf16(v) : f32_to_f16(v); }
float from_half(uint32_t type, uint16_t h) { return type == kGgmlBF16 ? bf16_to_f32(h) : f16_to_f32(h); }

// The model as a GGUF whose matrices (and Qwen2's biases) are `type` (the half type, or F32
// holding the half values widened); norms are F32 in both, as llama.cpp writes them. The same
// seed gives the same values in both files.
std::string model_gguf(const TempDir& d, const HalfSpec& s, uint32_t type) {
  ggtest::Writer w;
  const std::string a = s.arch + ".";
  w.kv_str("general.architecture", s.arch);
  w.kv_u32(a + "block_count", kLayers);
  w.kv_u32(a + "context_length", 64);
  w.kv_u32(a + "embedding_length", D);
  w.kv_u32(a + "feed_forward_length", F);
  w.kv_u32(a + "attention.head_count", H);
  w.kv_u32(a + "attention.head_count_kv", Hkv);
  w.kv_f32(a + "rope.freq_base", 10000.0f);
  w.kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.kv_u32(a + "vocab_size", V);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // A tensor of `type` in HF order [rows, cols] (a vector when cols == 1): N(0, scale) values
  // rounded to the half type; llama.cpp's q/k row permutation when perm_heads > 0.
  auto add = [&](const std::string& name, uint64_t rows, uint64_t cols, float scale, int perm_heads = 0) {
    std::vector<float> v(rows * cols);
    for (float& x : v) x = from_half(s.half_type, to_half(s.half_type, normal(rng) * scale));
    if (perm_heads) v = ggtest::permute_rows(v, int64_t(rows), int64_t(cols), perm_heads);
    std::vector<uint64_t> ne = cols == 1 ? std::vector<uint64_t>{rows} : std::vector<uint64_t>{cols, rows};
    if (type == kGgmlF32) {
      w.tensor_f32(name, ne, v);
    } else {
      std::string bytes(v.size() * 2, '\0');
      for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = to_half(type, v[i]);   // exact: v holds half values
        std::memcpy(&bytes[2 * i], &h, 2);
      }
      w.tensor({name, ne, type, bytes});
    }
  };
  auto norm = [&](const std::string& name) {
    std::vector<float> v(D);
    for (float& x : v) x = 1.0f + 0.1f * normal(rng);
    w.tensor_f32(name, {D}, v);
  };
  const bool llama = s.arch == "llama";
  add("token_embd.weight", V, D, 0.5f);
  norm("output_norm.weight");
  if (!llama) add("output.weight", V, D, 0.1f);
  for (uint64_t l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    add(p + "attn_q.weight", H * hd, D, 0.1f, llama ? int(H) : 0);
    add(p + "attn_k.weight", Hkv * hd, D, 0.1f, llama ? int(Hkv) : 0);
    add(p + "attn_v.weight", Hkv * hd, D, 0.1f);
    if (!llama) {
      add(p + "attn_q.bias", H * hd, 1, 0.1f);
      add(p + "attn_k.bias", Hkv * hd, 1, 0.1f);
      add(p + "attn_v.bias", Hkv * hd, 1, 0.1f);
    }
    add(p + "attn_output.weight", D, H * hd, 0.1f);
    norm(p + "ffn_norm.weight");
    add(p + "ffn_gate.weight", F, D, 0.1f);
    add(p + "ffn_up.weight", F, D, 0.1f);
    add(p + "ffn_down.weight", D, F, 0.1f);
  }
  const std::string path = d.file(s.arch + "-" + ggml_type_name(type) + ".gguf");
  iotest::write_file(path, w.build());
  return path;
}

std::string spec_name(const HalfSpec& s) { return s.arch + " " + ggml_type_name(s.half_type); }

std::vector<HalfSpec> specs() {
  return {{"llama", kGgmlF16}, {"llama", kGgmlBF16}, {"qwen2", kGgmlF16}, {"qwen2", kGgmlBF16}};
}

// Logits of an 11-token prefill (every position: more rows than decode's kernels take, so
// through prefill's panels), then of three decode steps through the cache.
struct Logits {
  std::vector<float> prefill;
  std::vector<std::vector<float>> decode;
};

Logits run(const LoadedModel& m) {
  std::unique_ptr<Backend> cpu = make_backend("cpu");
  Decoder dec(m.cfg, m.weights, *cpu);
  KVCache cache(*cpu, m.cfg, 1, 32);
  Batch b = Batch::from_prompts({{3, 17, 42, 9, 4, 77, 12, 60, 5, 31, 8}}, PaddingSide::Left, 0);
  Logits out;
  Tensor l = dec.forward({b.ids_tensor(), b.position_ids(), b.mask_tensor()}, &cache, nullptr, LogitsFor::AllPositions);
  out.prefill.assign(l.f32(), l.f32() + l.numel());
  for (int32_t id : {50, 1, 79}) {
    b.append({id});
    const int64_t from = b.cols() - 1;
    l = dec.forward({b.ids_tensor(from), b.position_ids(from), b.mask_tensor()}, &cache, nullptr,
                    LogitsFor::LastPosition);
    out.decode.emplace_back(l.f32(), l.f32() + l.numel());
  }
  return out;
}

}  // namespace

// Every matrix stays 2 bytes a weight (q/k too, un-permuted); its values, widened, are the
// float32 file's bit for bit, as are the vectors (Qwen2's half biases widened at load).
TEST(GgufHalfModel, MatricesAreHeldAsStoredWithTheFloat32Values) {
  for (const HalfSpec& s : specs()) {
    SCOPED_TRACE(spec_name(s));
    TempDir d;
    const LoadedModel half = load_model(model_gguf(d, s, s.half_type));
    const LoadedModel f32 = load_model(model_gguf(d, s, kGgmlF32));
    const DType want = s.half_type == kGgmlBF16 ? DType::BF16 : DType::F16;
    const auto a = named_weights(half.weights), b = named_weights(f32.weights);
    ASSERT_EQ(a.size(), b.size());
    int matrices = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string& name = a[i].first;
      ASSERT_EQ(name, b[i].first);
      const Tensor& t = *a[i].second;
      if (t.ndim() == 2) {
        EXPECT_EQ(t.dtype(), want) << name;
        EXPECT_TRUE(t.has_storage() && !t.blocks()) << name;
        ++matrices;
      } else {
        EXPECT_EQ(t.dtype(), DType::F32) << name;
      }
      const Tensor x = t.values_f32(), y = b[i].second->values_f32();
      ASSERT_EQ(x.shape(), y.shape()) << name;
      EXPECT_EQ(0, std::memcmp(x.f32(), y.f32(), y.nbytes())) << name;
    }
    EXPECT_EQ(matrices, 2 + 7 * int(kLayers)) << "the embedding, the head (a tied one listed too) and 7 per layer";
    EXPECT_EQ(half.weights.lm_head.same_storage(half.weights.embed), s.arch == "llama");
  }
}

// The un-permuted q/k of a half file are HF's row order: the F32 file's rows, which
// TinyLlamaEqualsSafetensors holds to the safetensors model; and the copy is 2 bytes a weight.
TEST(GgufHalfModel, LlamaQKRowsAreUnpermutedInTwoBytes) {
  TempDir d;
  const HalfSpec s{"llama", kGgmlBF16};
  const LoadedModel half = load_model(model_gguf(d, s, s.half_type));
  const GgufFile file = GgufFile::open(model_gguf(d, s, s.half_type));
  const Tensor& wq = half.weights.layers[1].wq;
  ASSERT_EQ(wq.dtype(), DType::BF16);
  EXPECT_EQ(wq.nbytes(), size_t(H * hd * D * 2));
  const Tensor raw = file.to_f32("blk.1.attn_q.weight"), got = wq.values_f32();
  // GGUF row h*hd + 2j + i holds HF row h*hd + i*hd/2 + j: file row 1 is HF row hd/2 = 12.
  EXPECT_EQ(0, std::memcmp(raw.f32() + D, got.f32() + 12 * D, D * 4));
  EXPECT_NE(0, std::memcmp(raw.f32() + D, got.f32() + D, D * 4));
  EXPECT_EQ(0, std::memcmp(gguf_unpermute_rows(raw, int(H)).f32(), got.f32(), got.nbytes()));
}

// Prefill multiplies the widened values in the float32 path's pieces: the same logits, bit for
// bit, except at the last position, whose head row the decoder computes on its own (decoder.cpp:
// a decode-sized matmul). Decode's dot products sum in another order: those logits within the
// logits tolerance (atol 1e-5, rtol 2e-4 of the largest reference logit: docs/tolerances.md),
// on every kernel (LMSCOPE_CPU_KERNEL; scripts/test-cpu-kernels.sh runs this test under each).
TEST(GgufHalfModel, LogitsAreTheFloat32PathsWithinTheLogitsTolerance) {
  const Tolerance tol = ToleranceTable::defaults().lookup("logits");
  auto expect_within = [&](const float* got, const float* ref, const std::string& what) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < V; ++i) {
      scale = std::max(scale, double(std::fabs(ref[i])));
      worst = std::max(worst, double(std::fabs(got[i] - ref[i])));
    }
    EXPECT_GT(scale, 0.1) << what << ": logits this small would hide an error";
    EXPECT_LE(worst, tol.bound(scale)) << what;
  };
  for (const HalfSpec& s : specs()) {
    SCOPED_TRACE(spec_name(s));
    TempDir d;
    const Logits half = run(load_model(model_gguf(d, s, s.half_type)));
    const Logits f32 = run(load_model(model_gguf(d, s, kGgmlF32)));
    ASSERT_EQ(half.prefill.size(), size_t(11 * V));
    EXPECT_EQ(0, std::memcmp(half.prefill.data(), f32.prefill.data(), 10 * V * 4)) << "prefill, positions 0-9";
    expect_within(half.prefill.data() + 10 * V, f32.prefill.data() + 10 * V, "prefill, position 10");
    for (size_t step = 0; step < f32.decode.size(); ++step)
      expect_within(half.decode[step].data(), f32.decode[step].data(), "decode step " + std::to_string(step));
  }
}
