// The backward pass of the decoder's prefill: d metric / d activation at every hook point, for
// a gradient of the logits (grad/metric.h). Activations only, not weights. It reads the
// forward's activations as a Trace kept them (SavedActivations) and walks the layers in
// reverse, one backward op (backend.h, "backward ops") per forward op of model/decoder.cpp.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"
#include "trace/hook_editor.h"
#include "trace/trace.h"

namespace lmscope {

// The forward's tensors that the backward reads, kept from a Trace as it offers them (a copy
// each: an offered tensor lives only during the call). Ask the Trace for
// backward_hook_globs(cfg) (and anything else to keep) so that they are offered.
class SavedActivations : public TraceSink {
 public:
  void offer(Hook h, int layer, const Tensor& t) override;
  // The tensor of hook h (layer; -1 for a global hook); throws std::logic_error when it was
  // not offered.
  const Tensor& get(Hook h, int layer = -1) const;
  bool has(Hook h, int layer = -1) const { return saved_.count({h, layer}) > 0; }

 private:
  std::map<std::pair<Hook, int>, Tensor> saved_;
};

// What the backward reads, as --hooks globs: resid_pre, q/k/v (and before their q/k norms),
// q_rope/k_rope, probs, resid_mid, gate/up of every layer, the last resid_post, rope.cos/sin.
std::string backward_hook_globs(const ModelConfig& cfg);
// Gemma 3's share of it: attn_out and ffn_out (each branch before its post-norm) and the
// sliding layers' rope.cos_local/sin_local; "" for the other families.
std::string gemma3_backward_hook_globs(const ModelConfig& cfg);

// Receives each gradient as it is computed (host float32, the hook's shape; valid during the
// call only). `wants` says which are wanted, so that the others are never copied.
struct GradientSink {
  std::function<bool(Hook h, int layer)> wants;
  std::function<void(Hook h, int layer, const Tensor& grad)> offer;
};

class DecoderBackward {
 public:
  // Weights are prepared for the backend as the Decoder prepares them (CPU: in place).
  DecoderBackward(const ModelConfig& cfg, const Weights& weights, Backend& backend);

  // The backward of one prefill (no past positions) from dlogits [B,T,V] (host): every
  // gradient the sink wants. The hooks of the metric's own input, the logits, included.
  // `editor` (may be null): the interventions the forward applied (trace/hook_editor.h), with
  // the forward's `ctx`. Each of them is elementwise affine (zero, mean, patch, add, scale), so
  // the gradient through an edited site is the one at the edited tensor times
  // a = edit(1) - edit(0): 0 where a value was replaced, the factor where it was scaled, 1
  // elsewhere. An edit of attn.probs is refused (its softmax' needs the unedited probs).
  void run(const SavedActivations& saved, const Tensor& dlogits, const GradientSink& sink,
           HookEditor* editor = nullptr, const EditContext& ctx = {});

 private:
  ModelConfig cfg_;
  Backend& be_;
  Weights w_;   // prepared for be_
};

}  // namespace lmscope
