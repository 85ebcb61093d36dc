#include "grad/grad_run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "grad/decoder_backward.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "trace/hook_set.h"
#include "trace/trace_writer.h"

namespace lmscope {

namespace {

// A trace sink that passes each tensor to both the backward's store and the caller's.
class KeepBoth : public TraceSink {
 public:
  KeepBoth(SavedActivations& saved, const HookSet& kept, const HookSet& asked)
      : saved_(saved), kept_(kept), asked_(asked) {}
  void offer(Hook h, int layer, const Tensor& t) override {
    if (kept_.enabled(h, layer)) saved_.offer(h, layer, t);
    if (asked_.enabled(h, layer)) asked.emplace_back(hook_name(h, layer), copy(t));
  }
  std::vector<std::pair<std::string, Tensor>> asked;

 private:
  static Tensor copy(const Tensor& t) {
    Tensor c = Tensor::zeros(t.shape(), t.dtype());
    std::copy_n(static_cast<const char*>(t.raw()), t.nbytes(), static_cast<char*>(c.raw()));
    return c;
  }
  SavedActivations& saved_;
  const HookSet& kept_;    // what the backward reads
  const HookSet& asked_;   // what the caller asked for
};

HookSet hook_set(const std::string& globs, const std::string& layer_ranges, int layers) {
  try {
    return globs.empty() ? HookSet() : HookSet(globs, layer_ranges, layers);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

// The hooks of a or b.
HookSet either(const HookSet& a, const HookSet& b, int layers) {
  std::string globs;
  for (const auto& names : {a.enabled_names(), b.enabled_names()})
    for (const std::string& n : names) globs += (globs.empty() ? "" : ",") + n;
  return HookSet(globs, "", layers);
}

}  // namespace

void write_grads(TraceWriter& w, const GradResult& r, const MetricSpec& metric) {
  for (const auto& [name, g] : r.grads) {
    const auto parsed = parse_hook_name(name);
    w.write("grad." + name, hook_info(parsed->id).axes, g.shape(), g.f32());
  }
  w.set_root_attr("grad_metric", metric.text);
  w.set_root_attr("grad_metric_value", r.metric);
}

GradResult run_with_grads(const ModelConfig& cfg, const Weights& weights, Backend& backend, const GradRequest& req) {
  const int L = cfg.num_layers;
  // The bf16 forward rounds each matmul's input to bf16, a step the backward does not
  // differentiate; refused before the forward runs.
  if (backend.compute_dtype() != "f32")
    throw std::runtime_error("gradients: the " + backend.name() + " backend's --dtype " + backend.compute_dtype() +
                             " has no backward ops (use --dtype f32)");
  for (const auto& p : req.prompts)
    for (int32_t id : p)
      if (id < 0 || id >= cfg.vocab_size)
        throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                    std::to_string(cfg.vocab_size) + ")");
  const HookSet asked = hook_set(req.hooks, req.layers, L);
  const HookSet kept = hook_set(backward_hook_globs(cfg), "", L);

  // ---- the forward, keeping what the backward reads ----
  const Batch batch = Batch::from_prompts(req.prompts, req.padding_side, req.pad_id);   // [B,T]
  const StepInput in{batch.ids_tensor(), batch.position_ids(), batch.mask_tensor()};
  std::optional<Decoder> decoder;   // dropped after the forward: see below
  decoder.emplace(cfg, weights, backend);
  SavedActivations saved;
  KeepBoth sink(saved, kept, asked);
  Trace trace(either(kept, asked, L), nullptr);
  trace.set_sink(&sink);
  std::vector<int64_t> lengths;
  for (const auto& p : req.prompts) lengths.push_back(int64_t(p.size()));
  if (req.editor) {
    req.editor->begin_run(lengths, 1);
    trace.set_editor(req.editor);
  }
  StepInfo info;
  info.step = 0;
  info.phase = "prefill";
  info.use_cache = req.use_cache;
  info.past_length = 0;
  info.T = info.S = batch.cols();
  trace.begin_step(info);
  std::optional<KVCache> cache;
  if (req.use_cache) cache.emplace(backend, cfg, batch.rows(), batch.cols());
  GradResult r;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  r.logits = decoder->forward(in, cache ? &*cache : nullptr, &trace, LogitsFor::AllPositions);   // [B,T,V]
  // The forward's prepared weights and cache go before the backward prepares its own: on a
  // device backend they are a copy of every matrix (CPU: views of the loaded weights).
  cache.reset();
  decoder.reset();
  r.forward_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  r.input_ids = in.input_ids;
  r.attention_mask = in.attention_mask;
  r.activations = std::move(sink.asked);

  // ---- the metric and its gradient of the logits ----
  const MetricGrad mg = metric_and_grad(req.metric, r.logits, in.input_ids, lengths,
                                        req.padding_side == PaddingSide::Left);
  r.metric = mg.value;
  if (!req.backward) return r;

  // ---- the backward ----
  DecoderBackward backward(cfg, weights, backend);
  GradientSink grads;
  grads.wants = [&](Hook h, int layer) { return asked.enabled(h, layer); };
  grads.offer = [&](Hook h, int layer, const Tensor& g) {
    Tensor c = Tensor::zeros(g.shape());
    std::copy_n(g.f32(), g.numel(), c.f32());
    r.grads.emplace_back(hook_name(h, layer), std::move(c));
  };
  const auto t1 = clock::now();
  backward.run(saved, mg.dlogits, grads, req.editor, EditContext{0, &in.position_ids, &in.attention_mask});
  r.backward_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  // In forward order, as the activations are.
  std::sort(r.grads.begin(), r.grads.end(),
            [](const auto& a, const auto& b) { return hook_sort_key(a.first) < hook_sort_key(b.first); });
  return r;
}

}  // namespace lmscope
