#include "quant/model_weights.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "io/gguf_dequant.h"

namespace lmscope::quant {

const std::vector<LinearSlot>& linear_slots() {
  static const std::vector<LinearSlot> k = {
      {"q_proj", &LayerWeights::wq},       {"k_proj", &LayerWeights::wk}, {"v_proj", &LayerWeights::wv},
      {"o_proj", &LayerWeights::wo},       {"gate_proj", &LayerWeights::w_gate},
      {"up_proj", &LayerWeights::w_up},    {"down_proj", &LayerWeights::w_down},
  };
  return k;
}

namespace {

// The float32 values without blocks: a GGUF weight held as blocks only is dequantized.
Tensor unblocked(const Tensor& t) {
  Tensor c = t.values_f32();
  c.set_blocks(nullptr);
  return c;
}

Tensor from_values(const Shape& shape, const std::vector<float>& v) {
  Tensor t = Tensor::zeros(shape);
  std::memcpy(t.f32(), v.data(), v.size() * sizeof(float));
  return t;
}

int64_t norms_bytes(const LayerWeights& l) { return 4 * (l.attn_norm.numel() + l.ffn_norm.numel()); }

int64_t bias_bytes(const LayerWeights& l) {
  int64_t n = 0;
  for (const Tensor* b : {&l.bq, &l.bk, &l.bv, &l.bo})
    if (b->defined()) n += b->numel();
  return 4 * n;
}

// Quantizes t (2-D, or a 1-D norm as one row) into `out`, recording its stats.
Tensor quantize_tensor(const Tensor& t, int layer, const char* name, WeightScheme s, SchemeWeights& out) {
  const int64_t rows = t.ndim() == 2 ? t.dim(0) : 1, cols = t.dim(-1);
  QuantizedMatrix q = quantize_matrix(t.f32(), rows, cols, s);
  MatrixStats st;
  st.layer = layer, st.name = name, st.rows = rows, st.cols = cols, st.saturated = q.saturated;
  if (!q.scales.empty()) {
    auto [lo, hi] = std::minmax_element(q.scales.begin(), q.scales.end());
    st.scale_min = *lo, st.scale_max = *hi;
  }
  out.matrices.push_back(st);
  out.saturated += q.saturated;
  out.bytes += matrix_bytes(rows, cols, s);
  return from_values(t.shape(), q.values);
}

}  // namespace

Weights float_reference(const Weights& w) {
  Weights r = w;
  r.embed = unblocked(w.embed);
  r.lm_head = w.lm_head.same_storage(w.embed) ? r.embed : unblocked(w.lm_head);   // a tied head stays tied
  for (LayerWeights& l : r.layers)
    for (const LinearSlot& s : linear_slots()) l.*s.member = unblocked(l.*s.member);
  return r;
}

int64_t float_bytes(const Weights& w) {
  int64_t n = 4 * (w.embed.numel() + w.final_norm.numel());
  if (!w.lm_head.same_storage(w.embed)) n += 4 * w.lm_head.numel();
  for (const LayerWeights& l : w.layers) {
    n += norms_bytes(l) + bias_bytes(l);
    for (const LinearSlot& s : linear_slots()) n += 4 * (l.*s.member).numel();
  }
  return n;
}

SchemeWeights quantize_weights(const Weights& w, WeightScheme s, bool keep_norms_float) {
  SchemeWeights out;
  out.weights = w;
  out.bytes = float_bytes(w);
  for (size_t L = 0; L < w.layers.size(); ++L) {
    LayerWeights& l = out.weights.layers[L];
    for (const LinearSlot& slot : linear_slots()) {
      out.bytes -= 4 * (l.*slot.member).numel();
      l.*slot.member = quantize_tensor(w.layers[L].*slot.member, int(L), slot.name, s, out);
    }
    if (!keep_norms_float && s != WeightScheme::Float) {
      out.bytes -= norms_bytes(l);
      l.attn_norm = quantize_tensor(w.layers[L].attn_norm, int(L), "input_layernorm", s, out);
      l.ffn_norm = quantize_tensor(w.layers[L].ffn_norm, int(L), "post_attention_layernorm", s, out);
    }
  }
  return out;
}

SchemeWeights stored_blocks_weights(const Weights& w) {
  SchemeWeights out;
  out.weights = float_reference(w);   // the embedding and head as the reference multiplies them
  out.bytes = float_bytes(w);
  for (size_t L = 0; L < w.layers.size(); ++L)
    for (const LinearSlot& slot : linear_slots()) {
      const Tensor& src = w.layers[L].*slot.member;
      Tensor fresh = Tensor::zeros(src.shape());
      if (const auto& b = src.blocks()) {
        const uint32_t ggml_type = ggml_type_of(b->type);
        for (int64_t r = 0; r < b->rows; ++r)
          dequantize_row(ggml_type, b->data + r * b->row_bytes(), fresh.f32() + r * b->cols, b->cols);
        out.bytes += int64_t(b->rows * b->row_bytes()) - 4 * src.numel();
      } else {   // float32, or F16/BF16 as stored (widened exactly; stored at 2 bytes a weight)
        const Tensor values = src.values_f32();
        std::memcpy(fresh.f32(), values.f32(), values.nbytes());
        out.bytes -= int64_t(4 - dtype_size(src.dtype())) * src.numel();
      }
      out.weights.layers[L].*slot.member = fresh;
    }
  return out;
}

}  // namespace lmscope::quant
