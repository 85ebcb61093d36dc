// lmscope-bench: prefill and decode tokens/s of the CPU engine, in three configurations:
//   none   no trace attached (the forward gets a null Trace*)
//   empty  a trace attached with no hook enabled (every offer is asked and declined)
//   all    every hook enabled and written to an HDF5 trace
// The point of "empty" vs "none": a hook nobody asked for must cost nothing measurable.
//
//   lmscope-bench --model synthetic:smollm2 --prompt-len 128 --decode 32 --repeats 3
//
// --roofline also prints the bytes a decode step must read (weights once, plus every row's KV
// cache) over the measured bandwidth: the memory roofline, and the fraction of it that decode
// reaches. On a GPU (docs/cuda.md) the device's copy bandwidth; on the CPU the host's read
// bandwidth with the run's OpenMP threads, and the weights as held (docs/benchmarks.md).
//   lmscope-bench --model DIR --backend cuda --dtype bf16 --prompt-len 512 --decode 64 --configs none --roofline
//   OMP_NUM_THREADS=1 lmscope-bench --model FILE.gguf --prompt-len 1 --decode 128 --configs none --roofline
//
// --dequant (a .gguf file): instead of generating, times the dequantization of every
// quantized tensor of the file to float32 (GgufFile::to_f32; F32 tensors are views, no work)
// and load_model of the whole file (parse + dequantize + un-permute), medians of --repeats.
//   OMP_NUM_THREADS=1 lmscope-bench --model models/SmolLM2-135M-Instruct.Q4_1.gguf --dequant --repeats 5
//
// --kernels (a .gguf file): instead of generating, times each block-matmul implementation the
// processor runs (lib/backend/cpu/block_matmul.h) over one decode step's weight matrices
// (every layer's seven and the head, one row of x), medians of --repeats passes.
//   OMP_NUM_THREADS=1 lmscope-bench --model models/SmolLM2-135M-Instruct.Q4_1.gguf --kernels --repeats 50
//
// --q8-prefill ROWS (a .gguf file): instead of generating, times a prefill of ROWS rows through
// every layer's block matrices (not the head: prefill runs it on one row), per q8 kernel family
// (Q8_0/Q4_1/Q5_0; the K-quants) three ways: the q8 one-row kernel's tiles, the q8 GEMM
// (lib/backend/cpu/q8_gemm.h, q8k_gemm.h: the same bits) and exact mode's dequantized panels with
// sgemm; the process's CPU seconds as well as wall time, so that a shared machine's waits do not
// count, medians of --repeats interleaved passes.
//   OMP_NUM_THREADS=1 lmscope-bench --model models/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf --q8-prefill 512 --repeats 3
#include <CLI/CLI.hpp>
#include <cblas.h>   // openblas_get_corename: the kernel table OpenBLAS chose (OPENBLAS_CORETYPE, else by CPUID)
#include <algorithm>
#include <chrono>
#include <ctime>   // clock_gettime: --q8-prefill counts CPU seconds
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_prefill.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8_gemm.h"
#include "backend/cpu/q8_matmul.h"
#include "backend/cpu/q8k_matmul.h"
#include "backend/cpu/read_bandwidth.h"
#if LMSCOPE_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "generate/generator.h"
#include "io/gguf.h"
#include "io/output_target.h"
#include "io/text_file.h"
#include "model/load_model.h"
#include "model/weights.h"
#include "model/random_weights.h"
#include "tools/cli_common.h"
#include "trace/select.h"
#include "trace/trace_writer.h"

using namespace lmscope;

namespace {

struct Figures {
  double prefill_tps = 0, decode_tps = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The work scripts/bench_hf.py times: a prefill, then decode steps through the KV cache,
// each choosing the next token by a greedy argmax of the last column (no sampler, no audit:
// generate() runs the full sampler with its audit, a sort over the vocabulary per row and
// step on the host). Same prompts, same step count as generate().
GenerateResult forward_loop(Decoder& decoder, const GenerateOptions& opt, Trace* trace) {
  Batch batch = Batch::from_prompts(opt.prompts, opt.padding_side, opt.pad_id);
  const int64_t B = batch.rows(), P = batch.cols();
  KVCache cache(decoder.backend(), decoder.config(), B, P + opt.max_new_tokens);
  GenerateResult res;
  res.new_tokens.assign(B, {});
  for (int step = 0; step < opt.max_new_tokens; ++step) {
    const int64_t from = step > 0 ? batch.cols() - 1 : 0;
    StepInput in{batch.ids_tensor(from), batch.position_ids(from), batch.mask_tensor()};
    const int64_t T = in.input_ids.dim(1);
    if (trace) trace->begin_step(StepInfo{step, step == 0 ? "prefill" : "decode", true, cache.length, T, batch.cols()});
    const auto t0 = std::chrono::steady_clock::now();
    Tensor logits = decoder.forward(in, &cache, trace, LogitsFor::LastPosition);   // [B,1,V]
    const int64_t V = logits.dim(2);
    std::vector<int32_t> next(B);
    for (int64_t b = 0; b < B; ++b) {
      const float* row = logits.f32() + b * V;
      next[b] = int32_t(std::max_element(row, row + V) - row);
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (step == 0 ? res.prefill_seconds : res.decode_seconds) += dt;
    (step == 0 ? res.prefill_tokens : res.decode_tokens) += B * T;
    batch.append(next);
    for (int64_t b = 0; b < B; ++b) res.new_tokens[b].push_back(next[b]);
    res.steps = step + 1;
  }
  return res;
}

// The bytes one decode step must read: every weight matrix once (the embedding only for the
// B rows gathered), the norms and biases, and each row's KV cache over the positions it
// attends to (float32 in our caches), averaged over the decode steps. On a GPU the weights
// are counted in the compute dtype and divided by the measured device copy bandwidth (bytes
// read + written per second); on the CPU they are counted as held (GGUF blocks, 16-bit
// halves or float32: Weights' own tensors) and divided by the host's read bandwidth with the
// run's threads (backend/cpu/read_bandwidth.h). Either quotient is the fastest a decode step
// can be; the measured decode tokens/s is reported as a fraction of it.
nlohmann::json decode_roofline(const ModelConfig& c, const Weights& w, Backend& be, int batch, int prompt_len,
                               int decode, double decode_tps) {
  double weights = 0;
  std::string bandwidth_kind;
  double bw = 0;
  nlohmann::json r;
  if (be.name() == "cpu") {
    for (const auto& [name, t] : named_weights(w)) {
      const double held = t->blocks() ? double(t->blocks()->rows) * double(t->blocks()->row_bytes()) : double(t->nbytes());
      weights += name == "model.embed_tokens.weight" ? held / double(t->shape()[0]) * batch : held;
    }
    const cpu::ReadBandwidth rb = cpu::measure_read_bandwidth();
    bw = rb.bytes_per_s;
    bandwidth_kind = "host read bandwidth (" + std::to_string(rb.threads) + (rb.threads == 1 ? " thread)" : " threads)");
    r["read_bytes_per_s"] = bw;
    r["threads"] = rb.threads;
  } else {
    const double wsize = be.compute_dtype() == "bf16" ? 2 : 4;
    const double D = c.hidden_size, F = c.intermediate_size, q = double(c.num_heads) * c.head_dim,
                 kv = double(c.num_kv_heads) * c.head_dim, V = c.vocab_size;
    const double per_layer = wsize * (q * D + 2 * kv * D + D * q + 3 * F * D) + 4.0 * (2 * D + q + 2 * kv);
    weights = c.num_layers * per_layer + wsize * V * D /* head */ + 4.0 * D + wsize * batch * D;
#if LMSCOPE_WITH_CUDA
    if (be.name() == "cuda") {
      CudaDeviceInfo info = cuda_device_info(true);
      bw = info.copy_bytes_per_s;
      bandwidth_kind = "copy bandwidth";
      r["copy_bytes_per_s"] = bw;
      r["device"] = info.name;
    }
#endif
  }
  const double kv = double(c.num_kv_heads) * c.head_dim, mean_s = prompt_len + 1 + decode / 2.0;
  const double kv_bytes = double(batch) * c.num_layers * 2 * kv * mean_s * 4.0;
  const double step_bytes = weights + kv_bytes;
  r["weight_bytes_per_step"] = weights;
  r["kv_bytes_per_step"] = kv_bytes;
  r["bytes_per_step"] = step_bytes;
  std::printf("roofline: %.3f GB per decode step (weights %.3f GB, KV %.3f GB)", step_bytes / 1e9, weights / 1e9,
              kv_bytes / 1e9);
  if (bw > 0) {
    const double best_tps = batch * bw / step_bytes;
    r["roofline_tok_s"] = best_tps;
    r["decode_fraction_of_roofline"] = decode_tps / best_tps;
    std::printf("; %s %.1f GB/s -> at most %.1f tok/s at batch %d; decode reaches %.1f%%\n", bandwidth_kind.c_str(),
                bw / 1e9, best_tps, batch, 100.0 * decode_tps / best_tps);
  } else {
    std::printf(" (no device bandwidth on backend %s)\n", be.name().c_str());
  }
  return r;
}

// --dequant: the GGUF file's quantized tensors dequantized to float32, and load_model of the
// whole file, each timed `repeats` times (medians reported).
nlohmann::json dequant_bench(const std::string& path, int repeats) {
  using clock = std::chrono::steady_clock;
  auto secs_since = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  const GgufFile f = GgufFile::open(path);
  int64_t elems = 0, tensors = 0;
  for (const auto& t : f.tensors())
    if (t.type != 0) elems += t.numel(), ++tensors;   // F32 tensors are views into the mapping, not work
  if (tensors == 0) throw std::runtime_error("--dequant: " + path + " has no quantized tensor");
  std::vector<double> deq, load;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = clock::now();
    int64_t done = 0;
    for (const auto& t : f.tensors())
      if (t.type != 0) done += f.to_f32(t).numel();
    deq.push_back(secs_since(t0));
    if (done != elems) throw std::logic_error("--dequant: dequantized " + std::to_string(done) + " elements, expected " +
                                              std::to_string(elems));
    t0 = clock::now();
    LoadedModel m = load_model(path);
    load.push_back(secs_since(t0));
  }
  const double d = median(deq), l = median(load);
  std::printf("dequantize: %lld elements of %lld quantized tensors in %.3f s (%.0f M elements/s)\n", (long long)elems,
              (long long)tensors, d, double(elems) / d / 1e6);
  std::printf("load_model: %.3f s for the whole file\n", l);
  return {{"model", path},           {"quantized_tensors", tensors}, {"quantized_elements", elems},
          {"dequant_seconds", d},    {"dequant_runs", deq},          {"load_model_seconds", l},
          {"load_model_runs", load}};
}

// --kernels: a decode step's block matmuls (N = 1) through each implementation the processor
// runs, `repeats` passes each, interleaved so that a slow spell hits them alike.
nlohmann::json kernels_bench(const std::string& path, int repeats) {
  using clock = std::chrono::steady_clock;
  LoadedModel m = load_model(path);
  std::vector<const QuantBlocks*> mats;
  auto add = [&](const Tensor& t) {
    if (t.defined() && t.blocks()) mats.push_back(t.blocks().get());
  };
  for (const LayerWeights& l : m.weights.layers)
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*t);
  add(m.weights.lm_head);
  if (mats.empty()) throw std::runtime_error("--kernels: " + path + " has no weight matrix held as GGUF blocks");
  int64_t widest = 0, most = 0;
  double bytes = 0;
  for (const QuantBlocks* q : mats) {
    widest = std::max(widest, q->cols), most = std::max(most, q->rows);
    bytes += double(q->rows) * double(q->row_bytes());
  }
  std::vector<float> x(static_cast<size_t>(widest)), out(static_cast<size_t>(most));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  using Kernel = void (*)(float*, const float*, const QuantBlocks&, const float*, int64_t);
  std::vector<std::pair<std::string, Kernel>> kernels = {{"portable", cpu::block_matmul_portable}};
  if (cpu::block_matmul_simd_available()) kernels.push_back({"avx2", cpu::block_matmul_avx2});
  if (cpu::block_matmul_avx512_available()) kernels.push_back({"avx512", cpu::block_matmul_avx512});
  // --cpu-activations q8's implementations: each matrix's input row quantized, then the
  // integer products, as the backend runs them (q8_matmul.h for Q8_0/Q4_1, q8k_matmul.h for
  // the K-quants).
  struct Q8Kernel {
    std::string name;
    cpu::Q8Outputs blocks;   // Q8_0, Q4_1
    cpu::Q8KOutputs k;       // Q4_K, Q5_K, Q6_K
  };
  std::vector<Q8Kernel> q8_kernels = {{"q8-portable", cpu::q8_outputs_portable, cpu::q8k_outputs_portable}};
  if (cpu::q8_avx2_available() && cpu::q8k_avx2_available())
    q8_kernels.push_back({"q8-avx2", cpu::q8_outputs_avx2, cpu::q8k_outputs_avx2});
  if (cpu::q8_avx512_available() && cpu::q8k_avx512_available())
    q8_kernels.push_back({"q8-avx512", cpu::q8_outputs_avx512, cpu::q8k_outputs_avx512});
  cpu::Q8Rows q8;
  cpu::Q8KRows q8k;
  std::map<std::string, std::vector<double>> runs;
  for (int r = 0; r <= repeats; ++r) {   // pass 0 warms up
    for (const auto& [name, run] : kernels) {
      const auto t0 = clock::now();
      for (const QuantBlocks* q : mats) run(out.data(), x.data(), *q, nullptr, 1);
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      if (r > 0) runs[name].push_back(s);
    }
    for (const Q8Kernel& kernel : q8_kernels) {
      const auto t0 = clock::now();
      for (const QuantBlocks* q : mats) {
        if (cpu::q8_matmul_supports(q->type)) {
          cpu::quantize_rows_q8(x.data(), 1, q->cols, q8);
          cpu::over_outputs(q->rows, [&](int64_t o0, int64_t o1) { kernel.blocks(out.data(), q8, *q, nullptr, o0, o1); });
        } else if (is_k_quant(q->type)) {
          cpu::quantize_rows_q8k(x.data(), 1, q->cols, q8k);
          cpu::over_outputs(q->rows, [&](int64_t o0, int64_t o1) { kernel.k(out.data(), q8k, *q, nullptr, o0, o1); });
        }
      }
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      if (r > 0) runs[kernel.name].push_back(s);
    }
  }
  for (const Q8Kernel& k : q8_kernels) kernels.push_back({k.name, nullptr});
  std::printf("%zu block matrices, %.1f MB of blocks per pass; block_matmul runs %s, q8_matmul %s, q8k_matmul %s\n",
              mats.size(), bytes / 1e6, cpu::block_matmul_kernel(), cpu::q8_matmul_kernel(), cpu::q8k_matmul_kernel());
  nlohmann::json report = {{"model", path}, {"matrices", mats.size()}, {"block_bytes", bytes},
                           {"chosen", cpu::block_matmul_kernel()}};
  for (const auto& [name, run] : kernels) {
    const double s = median(runs[name]);
    std::printf("%-8s %8.3f ms per pass  %6.2f GB/s\n", name.c_str(), s * 1e3, bytes / s / 1e9);
    report[name] = {{"seconds", s}, {"runs", runs[name]}};
  }
  return report;
}

// --q8-prefill: `rows` rows through every layer's block matrices of each q8 kernel family, three
// ways each, `repeats` interleaved passes: Q8_0/Q4_1/Q5_0 (q8_matmul.h) one-row tiles and GEMM
// (q8_gemm.h), the K-quants (q8k_matmul.h) one-row tiles and GEMM (q8k_gemm.h), and exact
// mode's float32 panels over the same matrices.
nlohmann::json q8_prefill_bench(const std::string& path, int64_t rows, int repeats) {
  using clock = std::chrono::steady_clock;
  auto cpu_seconds = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  };
  LoadedModel m = load_model(path);
  struct Family {
    std::string name;   // "q8" or "q8k"
    std::vector<const QuantBlocks*> mats;
    int64_t widest = 0, most = 0;
    double macs = 0;
  };
  Family q8, q8k;
  q8.name = "q8", q8k.name = "q8k";
  for (const LayerWeights& l : m.weights.layers)
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (!t->defined() || !t->blocks()) continue;
      const QuantBlocks* q = t->blocks().get();
      if (cpu::q8_matmul_supports(q->type)) q8.mats.push_back(q);
      if (is_k_quant(q->type)) q8k.mats.push_back(q);
    }
  if (q8.mats.empty() && q8k.mats.empty())
    throw std::runtime_error("--q8-prefill: " + path + " has no Q8_0/Q4_1/Q5_0 or K-quant layer matrix");
  const cpu::Q8MatmulBuild& build = cpu::chosen_kernels().q8_matmul.build;
  const cpu::Q8KMatmulBuild& kbuild = cpu::chosen_kernels().q8k_matmul.build;
  if (!build.gemm || !kbuild.gemm)
    throw std::runtime_error("--q8-prefill: the portable q8 kernels have no GEMM (LMSCOPE_CPU_KERNEL)");
  int64_t widest = 0, most = 0;
  for (Family* f : {&q8, &q8k})
    for (const QuantBlocks* q : f->mats) {
      widest = std::max(widest, q->cols), most = std::max(most, q->rows);
      f->macs += double(rows) * double(q->rows) * double(q->cols);
    }
  std::vector<float> x(size_t(rows * widest)), out(size_t(rows * most));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  cpu::Q8Rows q8rows;
  cpu::Q8KRows q8krows;
  // One way over one family's matrices; the rows' quantization is part of either q8 way's cost.
  auto pass = [&](const Family& f, const std::string& way) {
    for (const QuantBlocks* q : f.mats) {
      if (way == "f32-panels") {
        cpu::block_prefill_matmul(out.data(), x.data(), *q, nullptr, rows);
      } else if (f.name == "q8") {
        cpu::quantize_rows_q8(x.data(), rows, q->cols, q8rows);
        const cpu::Q8Outputs run = way == "q8-gemm" ? build.gemm : build.outputs;
        cpu::over_outputs(q->rows, [&](int64_t o0, int64_t o1) { run(out.data(), q8rows, *q, nullptr, o0, o1); });
      } else {
        cpu::quantize_rows_q8k(x.data(), rows, q->cols, q8krows);
        const cpu::Q8KOutputs run = way == "q8-gemm" ? kbuild.gemm : kbuild.outputs;
        cpu::over_outputs(q->rows, [&](int64_t o0, int64_t o1) { run(out.data(), q8krows, *q, nullptr, o0, o1); });
      }
    }
  };
  const std::vector<std::string> ways = {"q8-tiles", "q8-gemm", "f32-panels"};
  nlohmann::json report = {{"model", path}, {"rows", rows}};
  for (const Family* f : {&q8, &q8k}) {
    if (f->mats.empty()) continue;
    std::map<std::string, std::vector<double>> wall, cpu;
    for (int r = 0; r <= repeats; ++r)   // pass 0 warms up
      for (const std::string& way : ways) {
        const auto t0 = clock::now();
        const double c0 = cpu_seconds();
        pass(*f, way);
        if (r > 0) {
          wall[way].push_back(std::chrono::duration<double>(clock::now() - t0).count());
          cpu[way].push_back(cpu_seconds() - c0);
        }
      }
    const bool k = f->name == "q8k";
    std::printf("%zu %s layer matrices, %lld rows, %.2f G multiply-adds per pass; %s kernel %s\n", f->mats.size(),
                k ? "K-quant" : "Q8_0/Q4_1/Q5_0", (long long)rows, f->macs / 1e9, k ? "q8k_matmul" : "q8_matmul",
                k ? cpu::q8k_matmul_kernel() : cpu::q8_matmul_kernel());
    nlohmann::json family = {{"matrices", f->mats.size()}, {"macs", f->macs}};
    for (const std::string& way : ways) {
      const double w = median(wall[way]), c = median(cpu[way]);
      std::printf("  %-10s %8.3f s wall %8.3f s cpu  %6.1f GMAC/s per cpu second\n", way.c_str(), w, c,
                  f->macs / c / 1e9);
      family[way] = {{"wall_seconds", w}, {"cpu_seconds", c}, {"wall_runs", wall[way]}, {"cpu_runs", cpu[way]}};
    }
    report[f->name] = family;
  }
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-bench: tokens/s with no trace, an empty trace, and every hook to HDF5"};
  std::string model = "synthetic:tiny", backend_name = "cpu", configs = "none,empty,all", json_out;
  int prompt_len = 64, decode = 32, repeats = 3, batch = 1;
  std::string dtype = "f32", loop = "generate", cpu_activations = "f32";
  bool roofline = false, dequant = false, kernels = false;
  int64_t q8_prefill_rows = 0;
  app.add_option("--model", model, "synthetic:tiny, synthetic:smollm2, synthetic:deepseek-r1-1.5b, a model directory or a .gguf file")
      ->capture_default_str();
  app.add_option("--prompt-len", prompt_len)->capture_default_str();
  app.add_option("--decode", decode, "decode steps after the prefill")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per configuration (median reported)")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--configs", configs, "which of none,empty,all")->capture_default_str();
  app.add_option("--backend", backend_name, "cpu, cuda or auto")->capture_default_str();
  app.add_option("--dtype", dtype, "f32, or bf16 (cuda)")->capture_default_str();
  app.add_option("--cpu-activations", cpu_activations,
                 "cpu: f32 (exact), or q8 (llama.cpp's int8 activations before each block-quantized matmul)")
      ->capture_default_str();
  app.add_flag("--roofline", roofline, "decode against the memory roofline (bytes per step / measured bandwidth)");
  app.add_option("--loop", loop,
                 "generate: the full generation loop (host sampler and its audit); forward: forward + greedy "
                 "argmax only, the work scripts/bench_hf.py times")
      ->check(CLI::IsMember({"generate", "forward"}))
      ->capture_default_str();
  app.add_flag("--dequant", dequant,
               "with a .gguf --model: time dequantizing its quantized tensors and load_model instead of generating");
  app.add_flag("--kernels", kernels,
               "with a .gguf --model: time each block-matmul implementation over a decode step's weights");
  app.add_option("--q8-prefill", q8_prefill_rows,
                 "with a .gguf --model: time ROWS rows through the layers' Q8_0/Q4_1/Q5_0 and K-quant matrices: "
                 "q8 tiles, q8 GEMM, f32 panels")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--json", json_out, "also write the figures as JSON to this file")->check(cli::output_path());
  if (auto code = cli::parse(app, argc, argv, "lmscope-bench")) return *code;

  return cli::run_tool("lmscope-bench", [&] {
    if (repeats < 1) throw std::runtime_error("--repeats must be at least 1");
    if (!json_out.empty()) require_output_target(json_out);
    if (dequant) {
      if (!is_gguf_path(model) && !is_gguf_file(model)) throw std::runtime_error("--dequant needs a .gguf --model");
      nlohmann::json report = dequant_bench(model, repeats);
      if (!json_out.empty()) write_file_atomic(json_out, report.dump(2) + "\n");
      return 0;
    }
    if (q8_prefill_rows > 0) {
      if (!is_gguf_path(model) && !is_gguf_file(model)) throw std::runtime_error("--q8-prefill needs a .gguf --model");
      nlohmann::json report = q8_prefill_bench(model, q8_prefill_rows, repeats);
      if (!json_out.empty()) write_file_atomic(json_out, report.dump(2) + "\n");
      return 0;
    }
    if (kernels) {
      if (!is_gguf_path(model) && !is_gguf_file(model)) throw std::runtime_error("--kernels needs a .gguf --model");
      nlohmann::json report = kernels_bench(model, repeats);
      if (!json_out.empty()) write_file_atomic(json_out, report.dump(2) + "\n");
      return 0;
    }
    auto backend = make_backend(backend_name, dtype, cpu_activations);   // first: no device fails before the weights are made
    ModelConfig cfg;
    Weights w;
    if (model == "synthetic:tiny") {
      cfg = tiny_qwen2_shapes(1024);
      w = random_weights(cfg, 1, 0.3f);
    } else if (model == "synthetic:smollm2") {
      cfg = smollm2_135m_shapes();
      w = random_weights(cfg, 1, 0.02f);
    } else if (model == "synthetic:deepseek-r1-1.5b") {
      cfg = deepseek_r1_distill_qwen_1_5b_shapes();
      w = random_weights(cfg, 1, 0.02f);
    } else {   // a model directory or a .gguf file
      LoadedModel m = load_model(model);
      cfg = m.cfg;
      w = m.weights;
    }
    Decoder decoder(cfg, w, *backend);

    GenerateOptions opt;
    for (int b = 0; b < batch; ++b) {
      std::vector<int32_t> p(prompt_len);
      for (int i = 0; i < prompt_len; ++i) p[i] = (i * 7919 + b * 131 + 3) % cfg.vocab_size;
      opt.prompts.push_back(p);
    }
    opt.max_new_tokens = decode + 1;   // the prefill makes the first token, then `decode` steps
    opt.pad_id = 0;                     // no EOS: every run does the same work
    std::printf("model %s: %d layers, D=%d, H=%d/%d, F=%d, V=%d; batch %d, prompt %d, decode %d, %d repeats\n",
                model.c_str(), cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads,
                cfg.intermediate_size, cfg.vocab_size, batch, prompt_len, decode, repeats);
    if (backend->name() == "cpu")
      std::printf("cpu kernels: block_matmul %s, q8 %s / %s (K-quants), sgemm OpenBLAS %s\n", cpu::block_matmul_kernel(),
                  cpu::q8_matmul_kernel(), cpu::q8k_matmul_kernel(), openblas_get_corename());

    nlohmann::json report = {{"model", model},        {"batch", batch},   {"prompt_len", prompt_len}, {"loop", loop},
                             {"decode", decode},      {"backend", backend->name()},
                             {"dtype", backend->compute_dtype()}, {"cpu_activations", cpu_activations},
                             {"openblas_core", openblas_get_corename()}};
    std::vector<std::string> names = split_list(configs);
    for (const std::string& which : names)
      if (which != "none" && which != "empty" && which != "all")
        throw std::runtime_error("--configs: unknown '" + which + "' (none, empty, all)");
    // Repeats are interleaved (none, empty, all, none, ...) so that a slow spell of the
    // machine hits every configuration alike; medians are reported.
    std::map<std::string, std::vector<double>> pre, dec;
    std::map<std::string, int64_t> tensors;
    auto run = [&](Trace* trace) { return loop == "forward" ? forward_loop(decoder, opt, trace) : generate(decoder, opt, trace); };
    run(nullptr);   // warm-up: page in weights, start threads
    for (int r = 0; r < repeats; ++r)
      for (const std::string& which : names) {
        const std::string path = (std::filesystem::temp_directory_path() / "lmscope-bench.h5").string();
        std::unique_ptr<TraceWriter> writer;
        std::unique_ptr<Trace> trace;
        if (which == "empty") {
          trace = std::make_unique<Trace>(HookSet(), nullptr);
        } else if (which == "all") {
          writer = std::make_unique<TraceWriter>(path);
          trace = std::make_unique<Trace>(HookSet::all(cfg.num_layers), writer.get());
        }
        GenerateResult res = run(trace.get());
        if (writer) writer->commit(), std::filesystem::remove(path);
        if (trace) tensors[which] = trace->tensors_written();
        pre[which].push_back(res.prefill_tokens / res.prefill_seconds);
        dec[which].push_back(res.decode_tokens / res.decode_seconds);
      }
    Figures base;
    for (const std::string& which : names) {
      Figures f{median(pre[which]), median(dec[which])};
      if (which == "none") base = f;
      std::printf("%-6s prefill %9.1f tok/s   decode %8.1f tok/s", which.c_str(), f.prefill_tps, f.decode_tps);
      if (base.prefill_tps > 0 && which != "none")
        std::printf("   (x%.3f / x%.3f of none)", f.prefill_tps / base.prefill_tps, f.decode_tps / base.decode_tps);
      if (which == "all") std::printf("   %lld tensors written", (long long)tensors[which]);
      std::printf("\n");
      report[which] = {{"prefill_tok_s", f.prefill_tps}, {"decode_tok_s", f.decode_tps},
                       {"prefill_runs", pre[which]}, {"decode_runs", dec[which]}};
    }
    if (roofline) report["roofline"] = decode_roofline(cfg, w, *backend, batch, prompt_len, decode, median(dec[names[0]]));
    if (!json_out.empty()) write_file_atomic(json_out, report.dump(2) + "\n");
    return 0;
  });
}
