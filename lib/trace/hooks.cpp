#include "trace/hooks.h"

#include <cstdio>
#include <algorithm>
#include <stdexcept>

#include "trace/select.h"

namespace lmscope {

namespace {
// HookInfo::editable. The reasons for each read-only group are docs/hooks.md's.
constexpr bool kEditable = true, kReadOnly = false;
const std::vector<HookInfo> kHooks = {
    {Hook::TokensInputIds, "tokens.input_ids", "B,T", false, kReadOnly},
    {Hook::TokensAttentionMask, "tokens.attention_mask", "B,S", false, kReadOnly},
    {Hook::TokensPositionIds, "tokens.position_ids", "B,T", false, kReadOnly},
    {Hook::Embed, "embed", "B,T,D", false, kEditable},
    {Hook::MaskCausal, "mask.causal", "T,S", false, kReadOnly},
    {Hook::MaskPadding, "mask.padding", "B,S", false, kReadOnly},
    {Hook::MaskCombined, "mask.combined", "B,T,S", false, kReadOnly},
    {Hook::MaskSliding, "mask.sliding", "B,T,S", false, kReadOnly},
    {Hook::RopeCos, "rope.cos", "B,T,hd", false, kReadOnly},
    {Hook::RopeSin, "rope.sin", "B,T,hd", false, kReadOnly},
    {Hook::RopeCosLocal, "rope.cos_local", "B,T,hd", false, kReadOnly},
    {Hook::RopeSinLocal, "rope.sin_local", "B,T,hd", false, kReadOnly},
    {Hook::ResidPre, "layers.{L}.resid_pre", "B,T,D", true, kEditable},
    {Hook::AttnNorm, "layers.{L}.attn_norm", "B,T,D", true, kEditable},
    {Hook::AttnQ, "layers.{L}.attn.q", "B,H,T,hd", true, kEditable},
    {Hook::AttnK, "layers.{L}.attn.k", "B,Hkv,T,hd", true, kEditable},
    {Hook::AttnV, "layers.{L}.attn.v", "B,Hkv,T,hd", true, kEditable},
    {Hook::AttnQNorm, "layers.{L}.attn.q_norm", "B,H,T,hd", true, kEditable},
    {Hook::AttnKNorm, "layers.{L}.attn.k_norm", "B,Hkv,T,hd", true, kEditable},
    {Hook::AttnQRope, "layers.{L}.attn.q_rope", "B,H,T,hd", true, kEditable},
    {Hook::AttnKRope, "layers.{L}.attn.k_rope", "B,Hkv,T,hd", true, kEditable},
    {Hook::AttnScores, "layers.{L}.attn.scores", "B,H,T,S", true, kEditable},
    {Hook::AttnProbs, "layers.{L}.attn.probs", "B,H,T,S", true, kEditable},
    {Hook::AttnZ, "layers.{L}.attn.z", "B,T,H,hd", true, kEditable},
    {Hook::AttnOut, "layers.{L}.attn_out", "B,T,D", true, kEditable},
    {Hook::AttnPostNorm, "layers.{L}.attn_post_norm", "B,T,D", true, kEditable},
    {Hook::ResidMid, "layers.{L}.resid_mid", "B,T,D", true, kEditable},
    {Hook::FfnNorm, "layers.{L}.ffn_norm", "B,T,D", true, kEditable},
    {Hook::FfnGate, "layers.{L}.ffn.gate", "B,T,F", true, kEditable},
    {Hook::FfnUp, "layers.{L}.ffn.up", "B,T,F", true, kEditable},
    {Hook::FfnAct, "layers.{L}.ffn.act", "B,T,F", true, kEditable},
    {Hook::FfnOut, "layers.{L}.ffn_out", "B,T,D", true, kEditable},
    {Hook::FfnPostNorm, "layers.{L}.ffn_post_norm", "B,T,D", true, kEditable},
    {Hook::ResidPost, "layers.{L}.resid_post", "B,T,D", true, kEditable},
    {Hook::KvK, "kv.{L}.k", "B,Hkv,S,hd", true, kReadOnly},
    {Hook::KvV, "kv.{L}.v", "B,Hkv,S,hd", true, kReadOnly},
    {Hook::LensLogits, "lens.layers.{L}.logits", "B,T,V", true, kReadOnly, /*opt_in=*/true},
    {Hook::LensTopkIds, "lens.layers.{L}.topk_ids", "B,T,K", true, kReadOnly, /*opt_in=*/true},
    {Hook::LensTopkProbs, "lens.layers.{L}.topk_probs", "B,T,K", true, kReadOnly, /*opt_in=*/true},
    {Hook::FinalNorm, "final_norm", "B,T,D", false, kEditable},
    {Hook::Logits, "logits", "B,T,V", false, kEditable},
    {Hook::SampleCandidates, "sample.candidates", "B,N", false, kReadOnly},
    {Hook::SampleRaw, "sample.raw", "B,N", false, kReadOnly},
    {Hook::SamplePenalized, "sample.penalized", "B,N", false, kReadOnly},
    {Hook::SampleScaled, "sample.scaled", "B,N", false, kReadOnly},
    {Hook::SampleProbs, "sample.probs", "B,N", false, kReadOnly},
    {Hook::SampleKept, "sample.kept", "B,N", false, kReadOnly},
    {Hook::SampleSurvivors, "sample.survivors", "B", false, kReadOnly},
    {Hook::SampleU, "sample.u", "B", false, kReadOnly},
    {Hook::SampleChosen, "sample.chosen", "B", false, kReadOnly},
    {Hook::SampleFinished, "sample.finished", "B", false, kReadOnly},
    {Hook::QuantQProjScale, "quant.layers.{L}.q_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantQProjSaturated, "quant.layers.{L}.q_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantKProjScale, "quant.layers.{L}.k_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantKProjSaturated, "quant.layers.{L}.k_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantVProjScale, "quant.layers.{L}.v_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantVProjSaturated, "quant.layers.{L}.v_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantOProjScale, "quant.layers.{L}.o_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantOProjSaturated, "quant.layers.{L}.o_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantGateProjScale, "quant.layers.{L}.gate_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantGateProjSaturated, "quant.layers.{L}.gate_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantUpProjScale, "quant.layers.{L}.up_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantUpProjSaturated, "quant.layers.{L}.up_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantDownProjScale, "quant.layers.{L}.down_proj.scale", "B,T", true, kReadOnly},
    {Hook::QuantDownProjSaturated, "quant.layers.{L}.down_proj.saturated", "B,T", true, kReadOnly},
    {Hook::QuantAttnNormQ8, "quant.layers.{L}.attn_norm.q8", "B,T,D", true, kReadOnly},
    {Hook::QuantAttnNormQ8Scale, "quant.layers.{L}.attn_norm.q8_scale", "B,T,blocks", true, kReadOnly},
    {Hook::QuantAttnZQ8, "quant.layers.{L}.attn.z.q8", "B,T,H,hd", true, kReadOnly},
    {Hook::QuantAttnZQ8Scale, "quant.layers.{L}.attn.z.q8_scale", "B,T,blocks", true, kReadOnly},
    {Hook::QuantFfnNormQ8, "quant.layers.{L}.ffn_norm.q8", "B,T,D", true, kReadOnly},
    {Hook::QuantFfnNormQ8Scale, "quant.layers.{L}.ffn_norm.q8_scale", "B,T,blocks", true, kReadOnly},
    {Hook::QuantFfnActQ8, "quant.layers.{L}.ffn.act.q8", "B,T,F", true, kReadOnly},
    {Hook::QuantFfnActQ8Scale, "quant.layers.{L}.ffn.act.q8_scale", "B,T,blocks", true, kReadOnly},
    {Hook::QuantFinalNormQ8, "quant.final_norm.q8", "B,T,D", false, kReadOnly},
    {Hook::QuantFinalNormQ8Scale, "quant.final_norm.q8_scale", "B,T,blocks", false, kReadOnly},
};

// "layers.{L}.attn.q" -> ("layers.", ".attn.q"); "kv.{L}.k" -> ("kv.", ".k")
void split_pattern(const char* pattern, std::string& prefix, std::string& suffix) {
  std::string p = pattern;
  size_t at = p.find("{L}");
  prefix = p.substr(0, at);
  suffix = p.substr(at + 3);
}
}  // namespace

const std::vector<HookInfo>& all_hooks() { return kHooks; }

const HookInfo& hook_info(Hook h) {
  int i = int(h);
  if (i < 0 || i >= int(kHooks.size())) throw std::logic_error("bad hook id");
  return kHooks[i];
}

std::string hook_name(Hook h, int layer) {
  const HookInfo& info = hook_info(h);
  if (!info.per_layer) return info.pattern;
  std::string prefix, suffix;
  split_pattern(info.pattern, prefix, suffix);
  return prefix + std::to_string(layer) + suffix;
}

std::string hook_generic_name(Hook h) {
  const HookInfo& info = hook_info(h);
  if (!info.per_layer) return info.pattern;
  std::string prefix, suffix;
  split_pattern(info.pattern, prefix, suffix);
  return prefix + "L" + suffix;
}

std::vector<Hook> editable_hooks() {
  std::vector<Hook> out;
  for (const HookInfo& info : kHooks)
    if (info.editable) out.push_back(info.id);
  return out;
}

std::optional<ParsedHook> parse_hook_name(const std::string& name) {
  for (const HookInfo& info : kHooks) {
    if (!info.per_layer) {
      if (name == info.pattern) return ParsedHook{info.id, -1};
      continue;
    }
    std::string prefix, suffix;
    split_pattern(info.pattern, prefix, suffix);
    if (name.size() <= prefix.size() + suffix.size()) continue;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    // More than nine digits names no layer of any model (and is past what stoi takes).
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    return ParsedHook{info.id, std::stoi(digits)};
  }
  return std::nullopt;
}

std::string hook_sort_key(const std::string& name) {
  // A gradient (lmscope-trace --grad: "grad.<hook>") after every activation, in its hook's order.
  static const std::string grad = "grad.";
  if (name.compare(0, grad.size(), grad) == 0) return "8|" + hook_sort_key(name.substr(grad.size()));
  char buf[64];
  auto parsed = parse_hook_name(name);
  if (!parsed) return "9|" + name;
  int idx = int(parsed->id);
  if (parsed->layer < 0) {
    // globals before the layers keep their table index; after-layer globals go to group 2
    bool after = idx >= int(Hook::FinalNorm);
    std::snprintf(buf, sizeof buf, "%d|%03d", after ? 2 : 0, idx);
  } else {
    std::snprintf(buf, sizeof buf, "1|%06d|%03d", parsed->layer, idx);
  }
  return buf;
}

std::vector<std::string> hook_axes(Hook h) { return split_list(hook_info(h).axes); }

int hook_axis(Hook h, const std::string& axis) {
  const std::vector<std::string> axes = hook_axes(h);
  auto it = std::find(axes.begin(), axes.end(), axis);
  return it == axes.end() ? -1 : int(it - axes.begin());
}

}  // namespace lmscope
