// lmscope-quant's measurement: the model once in float32 (the reference; for a GGUF, its
// dequantized weights) and once per scheme, all through one QuantBackend and the one forward,
// traced with the same hooks and compared hook by hook (compare/metrics.h: max|a - ref| /
// max|ref|), position by position (KL of the next-token distributions, top-1 agreement) and
// as a whole (perplexity of the text, generate/score.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/weights.h"
#include "quant/model_weights.h"
#include "quant/scheme.h"

namespace lmscope::quant {

// The per-layer hooks compared, in forward order.
const std::vector<std::string>& compared_layer_hooks();   // "attn_norm", "attn_out", ...

struct PositionResult {
  int64_t t = 0;             // the distribution over the token after position t
  int32_t ref_top1 = 0, top1 = 0;
  double kl = 0;             // KL(reference || scheme), nats
};

struct SchemeResult {
  std::string name;
  int64_t bytes = 0;                   // the weights as the scheme would store them
  int64_t saturated_weights = 0;       // weights the clamp changed (w8-std)
  int64_t saturated_activations = 0;   // activation values the clamp changed (a8-static)
  int calibration_prompts = 0;         // a8-static
  std::vector<std::vector<double>> layer_errors;   // [layer][compared_layer_hooks()]
  double final_norm_error = 0, logits_error = 0;
  std::vector<PositionResult> positions;
  double mean_kl = 0, max_kl = 0, top1_agreement = 0, perplexity = 0;
  std::vector<MatrixStats> matrices;   // per quantized matrix (weight schemes)
};

struct QuantReport {
  std::vector<int32_t> ids;
  int64_t float_bytes = 0;
  double perplexity = 0;   // the reference's
  int num_layers = 0;
  bool keep_norms_float = true;
  std::vector<SchemeResult> schemes;
};

struct QuantOptions {
  bool keep_norms_float = true;
  std::vector<std::vector<int32_t>> calibration;   // a8-static's prompts
  // Called once for the reference ("float32") and once per scheme, with the decoder set up as
  // that run's (its weights, its activation scheme): lmscope-quant --trace-prefix writes a
  // trace there (runs/run.h run_traced), e.g. a student for lmscope-diff --kl-temperature.
  std::function<void(const std::string& run, Decoder& d)> also;
};

// `w` as loaded (GGUF blocks attached or not); `ids` at least 2 tokens. Throws
// std::runtime_error for a8-static without calibration prompts.
QuantReport run_quant(const ModelConfig& cfg, const Weights& w, Backend& backend, const std::vector<int32_t>& ids,
                      const std::vector<SchemeSpec>& schemes, const QuantOptions& opt);

using PieceFn = std::function<std::string(int32_t)>;
std::string quant_report_text(const QuantReport& r, const PieceFn& piece);
std::string quant_report_json(const QuantReport& r, const PieceFn& piece);

}  // namespace lmscope::quant
