// A whole model's weights under a weight scheme: each layer's seven linears (and, with
// keep_norms_float off, its RMSNorm weights) quantized and dequantized (weight_quant.h); the
// embedding, the LM head and the final norm stay float32 in every scheme.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/weights.h"
#include "quant/weight_quant.h"

namespace lmscope::quant {

// The seven linears of a layer, in forward order, by their HF names.
struct LinearSlot {
  const char* name;            // "q_proj"
  Tensor LayerWeights::*member;
};
const std::vector<LinearSlot>& linear_slots();

struct MatrixStats {
  int layer = 0;
  std::string name;            // "q_proj", or "input_layernorm" / "post_attention_layernorm"
  int64_t rows = 0, cols = 0, saturated = 0;
  float scale_min = 0, scale_max = 0;
};

struct SchemeWeights {
  Weights weights;                  // float32 tensors, none with GGUF blocks attached
  std::vector<MatrixStats> matrices;
  int64_t bytes = 0;                // every weight as the scheme would store it
  int64_t saturated = 0;
};

// The float32 reference: the same tensors without their GGUF blocks, so that every scheme
// and the reference multiply through the same float32 matmul.
Weights float_reference(const Weights& w);

// `w` must be float32 (float_reference's output).
SchemeWeights quantize_weights(const Weights& w, WeightScheme s, bool keep_norms_float);

// The identity check: each linear dequantized again from the GGUF blocks it was loaded from
// (Q8_0/Q4_1 as stored), into fresh float32 tensors. A linear without blocks is copied (F16/BF16
// widened, counted at 2 bytes a weight in `bytes`). The
// result equals the reference bit for bit, so every error lmscope-quant reports for it is 0.
SchemeWeights stored_blocks_weights(const Weights& w);

// Bytes of the float32 model (tied embedding counted once).
int64_t float_bytes(const Weights& w);

}  // namespace lmscope::quant
