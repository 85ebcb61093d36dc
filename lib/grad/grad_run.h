// One prefill with gradients: the forward (model/decoder.cpp, unchanged) with a Trace that keeps
// what the backward reads, the metric and its gradient of the logits (grad/metric.h), then the
// backward (grad/decoder_backward.h). What m.run_with_grads and lmscope-trace --grad run.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "generate/batch.h"
#include "grad/metric.h"
#include "model/config.h"
#include "model/weights.h"
#include "trace/hook_editor.h"

namespace lmscope {

struct GradRequest {
  std::vector<std::vector<int32_t>> prompts;   // one row each (ids), padded as HF tokenizers pad
  PaddingSide padding_side = PaddingSide::Left;
  int32_t pad_id = 0;
  bool use_cache = true;    // the prefill writes a KV cache (as generate's first step) or not
  MetricSpec metric;        // tokens resolved (resolve_metric_tokens)
  std::string hooks;        // --hooks globs of the activations and gradients to return ("" none)
  std::string layers;       // --layers ranges for those ("" all)
  HookEditor* editor = nullptr;   // interventions applied in the forward, and differentiated (not owned)
  bool backward = true;     // false: the forward and the metric only (no grads)
};

struct GradResult {
  Tensor input_ids, attention_mask;                            // [B,T], [B,T]
  Tensor logits;                                               // [B,T,V]
  double metric = 0;
  double forward_seconds = 0, backward_seconds = 0;              // wall clock
  std::vector<std::pair<std::string, Tensor>> activations;     // the asked hooks, forward order
  std::vector<std::pair<std::string, Tensor>> grads;           // d metric / d each, hook names
};

// The gradients of a run as grad.<hook> datasets of the trace's current step, with the hook's
// axes, and the metric as the root attributes grad_metric and grad_metric_value
// (docs/trace-format.md, "Gradients").
class TraceWriter;
void write_grads(TraceWriter& w, const GradResult& r, const MetricSpec& metric);

// Throws std::invalid_argument in one line for bad input (a token outside the vocabulary, a
// position outside a prompt, a NaN metric, an unknown hook glob), and std::runtime_error on a
// backend without backward ops (the CPU and CUDA backends have them, CUDA at --dtype f32 only).
GradResult run_with_grads(const ModelConfig& cfg, const Weights& weights, Backend& backend, const GradRequest& req);

}  // namespace lmscope
