// Hook points: every tensor the forward pass offers to the trace, with its stable dotted
// name and axis names (docs/hooks.md). The forward refers to hooks by Hook id + layer so that
// asking "is this wanted?" is one table lookup, never a string build.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace lmscope {

enum class Hook : int {
  // global, before the layers
  TokensInputIds, TokensAttentionMask, TokensPositionIds, Embed,
  MaskCausal, MaskPadding, MaskCombined, MaskSliding, RopeCos, RopeSin, RopeCosLocal, RopeSinLocal,
  // per layer
  ResidPre, AttnNorm, AttnQ, AttnK, AttnV, AttnQNorm, AttnKNorm, AttnQRope, AttnKRope, AttnScores, AttnProbs,
  AttnZ, AttnOut, AttnPostNorm, ResidMid, FfnNorm, FfnGate, FfnUp, FfnAct, FfnOut, FfnPostNorm, ResidPost, KvK, KvV,
  // per layer, opt-in (see HookInfo::opt_in): the logit lens of resid_post (model/lens.h)
  LensLogits, LensTopkIds, LensTopkProbs,
  // global, after the layers
  FinalNorm, Logits,
  SampleCandidates, SampleRaw, SamplePenalized, SampleScaled, SampleProbs, SampleKept,
  SampleSurvivors, SampleU, SampleChosen, SampleFinished,
  // per layer, under an activation quantization scheme (lib/quant/quant_backend.h): the
  // scale each row entering a linear was quantized with, and how many of its values saturated
  QuantQProjScale, QuantQProjSaturated, QuantKProjScale, QuantKProjSaturated,
  QuantVProjScale, QuantVProjSaturated, QuantOProjScale, QuantOProjSaturated,
  QuantGateProjScale, QuantGateProjSaturated, QuantUpProjScale, QuantUpProjSaturated,
  QuantDownProjScale, QuantDownProjSaturated,
  // under a backend that quantizes activations before a block-quantized matmul (CPU
  // --cpu-activations q8): the int8 codes of the tensor it quantized, and the per-block scales
  QuantAttnNormQ8, QuantAttnNormQ8Scale, QuantAttnZQ8, QuantAttnZQ8Scale,
  QuantFfnNormQ8, QuantFfnNormQ8Scale, QuantFfnActQ8, QuantFfnActQ8Scale,
  QuantFinalNormQ8, QuantFinalNormQ8Scale,
  Count
};

struct HookInfo {
  Hook id;
  const char* pattern;   // "layers.{L}.attn.q" ({L} replaced by the layer)
  const char* axes;      // "B,H,T,hd"
  bool per_layer;
  // An edit (an intervention, a Python function) may change the tensor before the next op of
  // the forward reads it: Decoder::forward hands it to the trace's editor (trace/hook_editor.h),
  // the intervention grammar takes it as a site (intervene/spec.h), the Python module takes a
  // function for it. The forward's activations are editable; inputs, tables, cache views and
  // records are not (docs/hooks.md, "Which hooks can be edited", says why per group).
  bool editable = false;
  // Computed only for the trace, at a cost (the lens runs the LM head once more per layer):
  // selected only by a glob that spells out the hook's first name part ("lens.*",
  // "lens.layers.*.topk_ids"), never by "*" or "*.logits".
  bool opt_in = false;
};

const HookInfo& hook_info(Hook h);
std::vector<std::string> hook_axes(Hook h);                // {"B","H","T","hd"}
int hook_axis(Hook h, const std::string& axis);            // index of "T" in those, or -1
const std::vector<HookInfo>& all_hooks();          // in forward order
std::string hook_name(Hook h, int layer = -1);     // "layers.3.attn.q"
std::string hook_generic_name(Hook h);             // "layers.L.attn.q", "embed"
std::vector<Hook> editable_hooks();                // HookInfo::editable, in forward order

// Parses a dotted name back: "layers.3.attn.q" -> {AttnQ, 3}. nullopt if unknown.
struct ParsedHook { Hook id; int layer; };
std::optional<ParsedHook> parse_hook_name(const std::string& name);

// Sort key that puts hook names in forward order: globals before layers, layers in order,
// within a layer the order of the table, kv.L.* and lens.layers.L.* right after layers.L.*, then final_norm,
// logits, sample.*; then the gradients (grad.<hook>) in the same order. Unknown names sort last,
// alphabetically.
std::string hook_sort_key(const std::string& name);

}  // namespace lmscope
