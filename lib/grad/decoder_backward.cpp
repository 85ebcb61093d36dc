// The decoder's forward (model/decoder.cpp) in reverse: from d metric / d logits back to the
// embedding, one backward op per forward op, the gradient of each hooked tensor offered as it
// is made. A tensor read in two places (the residual stream, a norm's output read by q, k and
// v) gets the sum of both gradients, as autograd sums them.
//
// Shapes: B batch, T tokens (a prefill: S = T), D hidden, H query heads, Hkv KV heads, hd head
// dim, F FFN width, V vocab. dX is d metric / d X and has X's shape.
#include "grad/decoder_backward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lmscope {

void SavedActivations::offer(Hook h, int layer, const Tensor& t) {
  Tensor copy = Tensor::zeros(t.shape(), t.dtype());
  std::copy_n(static_cast<const char*>(t.raw()), t.nbytes(), static_cast<char*>(copy.raw()));
  saved_[{h, layer}] = std::move(copy);
}

const Tensor& SavedActivations::get(Hook h, int layer) const {
  auto it = saved_.find({h, layer});
  if (it == saved_.end()) throw std::logic_error("backward: the forward did not keep " + hook_name(h, layer));
  return it->second;
}

std::string backward_hook_globs(const ModelConfig& cfg) {
  std::string globs = "rope.cos,rope.sin,layers.*.resid_pre,layers.*.attn.q,layers.*.attn.k,layers.*.attn.v,"
                      "layers.*.attn.q_rope,layers.*.attn.k_rope,layers.*.attn.probs,layers.*.resid_mid,"
                      "layers.*.ffn.gate,layers.*.ffn.up,";
  globs += gemma3_backward_hook_globs(cfg);
  return globs + "layers." + std::to_string(cfg.num_layers - 1) + ".resid_post";
}

// Gemma 3's extra forward math read by its backward: a branch's output before its post-norm
// (attn_out, ffn_out) and the sliding layers' RoPE tables. Nothing for the other families.
std::string gemma3_backward_hook_globs(const ModelConfig& cfg) {
  std::string globs;
  if (cfg.post_branch_norms) globs += "layers.*.attn_out,layers.*.ffn_out,";
  if (cfg.any_sliding()) globs += "rope.cos_local,rope.sin_local,";
  return globs;
}

namespace {
Tensor prepare_or_empty(Backend& be, const Tensor& t) { return t.defined() && t.numel() ? be.prepare_weight(t) : Tensor(); }

// Gemma 3's post-branch norm (branch = rmsnorm(out) * w before it joins the stream; w the
// multiplier 1 + w_HF as held): the gradient of the branch's output `out` from that of the
// normed branch, which is the residual stream's.
Tensor post_norm_backward(Backend& be, const Tensor& dbranch, const Tensor& out, const Tensor& w, float eps) {
  Tensor dout = be.alloc(out.shape());                       // dout: [B,T,D]
  be.rmsnorm_backward(dout, dbranch, out, w, eps);
  return dout;
}
}  // namespace

DecoderBackward::DecoderBackward(const ModelConfig& cfg, const Weights& w, Backend& backend)
    : cfg_(cfg), be_(backend) {
  auto prep = [&](const Tensor& t) { return prepare_or_empty(be_, t); };
  // The backward reads the matrices (multiplied by their transposes) and the norm weights;
  // no bias has a gradient for an activation.
  w_.lm_head = prep(w.lm_head);
  w_.final_norm = prep(w.final_norm);
  for (const LayerWeights& lw : w.layers) {
    LayerWeights p;
    p.attn_norm = prep(lw.attn_norm);
    p.wq = prep(lw.wq), p.wk = prep(lw.wk), p.wv = prep(lw.wv);
    p.q_norm = prep(lw.q_norm), p.k_norm = prep(lw.k_norm);
    p.wo = prep(lw.wo);
    p.ffn_norm = prep(lw.ffn_norm);
    p.attn_post_norm = prep(lw.attn_post_norm), p.ffn_post_norm = prep(lw.ffn_post_norm);   // Gemma 3
    p.w_gate = prep(lw.w_gate), p.w_up = prep(lw.w_up), p.w_down = prep(lw.w_down);
    w_.layers.push_back(std::move(p));
  }
  w_.storage = w.storage;
}

void DecoderBackward::run(const SavedActivations& saved, const Tensor& dlogits_host, const GradientSink& sink,
                          HookEditor* editor, const EditContext& ctx) {
  Backend& be = be_;
  const int64_t B = dlogits_host.dim(0), T = dlogits_host.dim(1);
  const int64_t D = cfg_.hidden_size, H = cfg_.num_heads, Hkv = cfg_.num_kv_heads;
  const int64_t hd = cfg_.head_dim, F = cfg_.intermediate_size;
  const float eps = cfg_.rms_norm_eps, scale = cfg_.attention_scale();   // hd^-0.5 (Gemma 3: query_pre_attn_scalar^-0.5)

  auto offer = [&](Hook h, int layer, const Tensor& g) {
    if (sink.wants(h, layer)) sink.offer(h, layer, be.to_host(g));
  };
  auto act = [&](Hook h, int layer) { return be.upload(saved.get(h, layer)); };
  // A tensor read in two places: the sum of the two gradients.
  auto sum = [&](const Tensor& a, const Tensor& b) {
    Tensor s = be.alloc(a.shape());
    be.add(s, a, b);
    return s;
  };
  const Tensor cos = act(Hook::RopeCos, -1), sin = act(Hook::RopeSin, -1);   // [B,T,hd]
  // Gemma 3's sliding layers turn by their own base (10,000): [B,T,hd]
  const Tensor cos_local = cfg_.any_sliding() ? act(Hook::RopeCosLocal, -1) : Tensor();
  const Tensor sin_local = cfg_.any_sliding() ? act(Hook::RopeSinLocal, -1) : Tensor();
  // The gradient at an edited site (of the tensor after the edit, what the next op read) to
  // the gradient of the tensor before it: times a = edit(1) - edit(0), element by element.
  auto through_edit = [&](Hook h, int layer, Tensor& g) {
    if (!editor || !editor->edits(h, layer)) return;
    auto filled = [&](float v) {
      Tensor t = Tensor::zeros(g.shape());
      std::fill_n(t.f32(), t.numel(), v);
      return be.upload(t);
    };
    Tensor ones = filled(1.0f), zeros = filled(0.0f);
    editor->apply(be, h, layer, ones, ctx);
    editor->apply(be, h, layer, zeros, ctx);
    const Tensor a1 = be.to_host(ones), a0 = be.to_host(zeros);
    Tensor out = be.to_host(g);
    Tensor scaled = Tensor::zeros(g.shape());
    for (int64_t i = 0; i < g.numel(); ++i) scaled.f32()[i] = out.f32()[i] * (a1.f32()[i] - a0.f32()[i]);
    g = be.upload(scaled);
  };

  // ---- LM head and final norm: logits = final_norm(x) @ lm_head^T ----------------------------
  Tensor dlogits = be.upload(dlogits_host);                  // dlogits: [B,T,V]
  offer(Hook::Logits, -1, dlogits);
  through_edit(Hook::Logits, -1, dlogits);
  Tensor dxf = be.alloc({B, T, D});                          // dxf: [B,T,D] d final_norm
  be.linear_backward(dxf, dlogits, w_.lm_head);
  offer(Hook::FinalNorm, -1, dxf);
  through_edit(Hook::FinalNorm, -1, dxf);
  Tensor dx = be.alloc({B, T, D});                           // dx: [B,T,D] d of the residual stream
  be.rmsnorm_backward(dx, dxf, act(Hook::ResidPost, cfg_.num_layers - 1), w_.final_norm, eps);

  for (int l = cfg_.num_layers - 1; l >= 0; --l) {
    const LayerWeights& lw = w_.layers[l];
    offer(Hook::ResidPost, l, dx);
    through_edit(Hook::ResidPost, l, dx);

    // A branch's output gradient from that of the stream it is added to: the same tensor, or
    // (Gemma 3) through the branch's post-norm, whose own gradient is the stream's.   [B,T,D]
    auto branch_grad = [&](Hook post_norm, Hook out, const Tensor& dstream, const Tensor& norm_w) {
      if (!cfg_.post_branch_norms) return dstream;
      offer(post_norm, l, dstream);
      Tensor dbranch = dstream;                              // dbranch: [B,T,D]
      through_edit(post_norm, l, dbranch);
      return post_norm_backward(be, dbranch, act(out, l), norm_w, eps);
    };

    // ---- MLP: resid_post = resid_mid + down_proj(silu(gate_proj(hn)) * up_proj(hn)) ----
    // (Gemma 3: gelu_tanh for silu, and the branch RMS-normed before the add.)
    Tensor dffn_out = branch_grad(Hook::FfnPostNorm, Hook::FfnOut, dx, lw.ffn_post_norm);   // dffn_out: [B,T,D]
    offer(Hook::FfnOut, l, dffn_out);                        // d ffn_out (= d resid_post without post-norms)
    through_edit(Hook::FfnOut, l, dffn_out);
    Tensor dact = be.alloc({B, T, F});                       // dact: [B,T,F]
    be.linear_backward(dact, dffn_out, lw.w_down);
    offer(Hook::FfnAct, l, dact);
    through_edit(Hook::FfnAct, l, dact);
    Tensor dgate = be.alloc({B, T, F});                      // dgate: [B,T,F]
    Tensor dup = be.alloc({B, T, F});                        // dup:   [B,T,F]
    if (cfg_.gelu_tanh_ffn) be.geglu_tanh_backward(dgate, dup, dact, act(Hook::FfnGate, l), act(Hook::FfnUp, l));
    else be.swiglu_backward(dgate, dup, dact, act(Hook::FfnGate, l), act(Hook::FfnUp, l));
    offer(Hook::FfnGate, l, dgate);
    offer(Hook::FfnUp, l, dup);
    through_edit(Hook::FfnGate, l, dgate);
    through_edit(Hook::FfnUp, l, dup);
    Tensor dhn_gate = be.alloc({B, T, D});                   // dhn_gate: [B,T,D]
    Tensor dhn_up = be.alloc({B, T, D});                     // dhn_up:   [B,T,D]
    be.linear_backward(dhn_gate, dgate, lw.w_gate);
    be.linear_backward(dhn_up, dup, lw.w_up);
    Tensor dhn = sum(dhn_gate, dhn_up);                      // dhn: [B,T,D] d ffn_norm
    offer(Hook::FfnNorm, l, dhn);
    through_edit(Hook::FfnNorm, l, dhn);
    Tensor dmid_norm = be.alloc({B, T, D});                  // dmid_norm: [B,T,D] via the norm
    be.rmsnorm_backward(dmid_norm, dhn, act(Hook::ResidMid, l), lw.ffn_norm, eps);
    Tensor dmid = sum(dx, dmid_norm);                        // dmid: [B,T,D] d resid_mid
    offer(Hook::ResidMid, l, dmid);
    through_edit(Hook::ResidMid, l, dmid);

    // ---- attention: resid_mid = x + o_proj(attn(rope(q), rope(k), v)) ----
    Tensor dattn_out = branch_grad(Hook::AttnPostNorm, Hook::AttnOut, dmid, lw.attn_post_norm);   // dattn_out: [B,T,D]
    offer(Hook::AttnOut, l, dattn_out);                      // d attn_out (= d resid_mid without post-norms)
    through_edit(Hook::AttnOut, l, dattn_out);
    Tensor dz = be.alloc({B, T, H, hd});                     // dz: [B,T,H,hd]
    be.linear_backward(dz, dattn_out, lw.wo);
    offer(Hook::AttnZ, l, dz);
    through_edit(Hook::AttnZ, l, dz);
    // softmax' needs the probs before an edit of them; an edit of the scores sits inside
    // attention_backward's one op (dscores to dq/dk).
    for (Hook inside : {Hook::AttnProbs, Hook::AttnScores})
      if (editor && editor->edits(inside, l))
        throw std::invalid_argument("gradients through an edit of " + hook_name(inside, l) +
                                    ": not yet (edit attn.z instead)");
    Tensor dq_rope = be.alloc({B, H, T, hd});                // dq_rope: [B,H,T,hd]
    Tensor dk_rope = be.alloc({B, Hkv, T, hd});              // dk_rope: [B,Hkv,T,hd]
    Tensor dv = be.alloc({B, Hkv, T, hd});                   // dv:      [B,Hkv,T,hd]
    Tensor dscores = be.alloc({B, H, T, T});                 // dscores: [B,H,T,S]
    Tensor dprobs = be.alloc({B, H, T, T});                  // dprobs:  [B,H,T,S]
    be.attention_backward(dq_rope, dk_rope, dv, dscores, dprobs, dz, act(Hook::AttnQRope, l),
                          act(Hook::AttnKRope, l), act(Hook::AttnV, l), act(Hook::AttnProbs, l), scale);
    offer(Hook::AttnProbs, l, dprobs);
    offer(Hook::AttnScores, l, dscores);
    offer(Hook::AttnQRope, l, dq_rope);
    offer(Hook::AttnKRope, l, dk_rope);
    offer(Hook::AttnV, l, dv);
    through_edit(Hook::AttnQRope, l, dq_rope);
    through_edit(Hook::AttnKRope, l, dk_rope);
    through_edit(Hook::AttnV, l, dv);
    Tensor dq = be.alloc({B, H, T, hd});                     // dq: [B,H,T,hd] before RoPE
    Tensor dk = be.alloc({B, Hkv, T, hd});                   // dk: [B,Hkv,T,hd]
    const bool sliding = cfg_.is_sliding(l);                 // its probs hold its window: dscores is 0 outside
    be.rope_backward(dq, dq_rope, sliding ? cos_local : cos, sliding ? sin_local : sin);
    be.rope_backward(dk, dk_rope, sliding ? cos_local : cos, sliding ? sin_local : sin);
    if (cfg_.qk_norm) {   // Qwen3, Gemma 3: q and k were RMS-normed per head before RoPE
      offer(Hook::AttnQNorm, l, dq);
      offer(Hook::AttnKNorm, l, dk);
      through_edit(Hook::AttnQNorm, l, dq);
      through_edit(Hook::AttnKNorm, l, dk);
      Tensor dq_pre = be.alloc({B, H, T, hd});               // dq_pre: [B,H,T,hd]
      Tensor dk_pre = be.alloc({B, Hkv, T, hd});             // dk_pre: [B,Hkv,T,hd]
      be.rmsnorm_backward(dq_pre, dq, act(Hook::AttnQ, l), lw.q_norm, eps);
      be.rmsnorm_backward(dk_pre, dk, act(Hook::AttnK, l), lw.k_norm, eps);
      dq = dq_pre;
      dk = dk_pre;
    }
    offer(Hook::AttnQ, l, dq);
    offer(Hook::AttnK, l, dk);
    through_edit(Hook::AttnQ, l, dq);
    through_edit(Hook::AttnK, l, dk);
    Tensor dq_flat = be.alloc({B, T, H * hd});               // dq_flat: [B,T,H*hd]
    Tensor dk_flat = be.alloc({B, T, Hkv * hd});             // dk_flat: [B,T,Hkv*hd]
    Tensor dv_flat = be.alloc({B, T, Hkv * hd});             // dv_flat: [B,T,Hkv*hd]
    be.merge_heads(dq_flat, dq);
    be.merge_heads(dk_flat, dk);
    be.merge_heads(dv_flat, dv);
    Tensor dxn_q = be.alloc({B, T, D});                      // dxn_q: [B,T,D]
    Tensor dxn_k = be.alloc({B, T, D});                      // dxn_k: [B,T,D]
    Tensor dxn_v = be.alloc({B, T, D});                      // dxn_v: [B,T,D]
    be.linear_backward(dxn_q, dq_flat, lw.wq);
    be.linear_backward(dxn_k, dk_flat, lw.wk);
    be.linear_backward(dxn_v, dv_flat, lw.wv);
    Tensor dxn = sum(sum(dxn_q, dxn_k), dxn_v);              // dxn: [B,T,D] d attn_norm
    offer(Hook::AttnNorm, l, dxn);
    through_edit(Hook::AttnNorm, l, dxn);
    Tensor dx_norm = be.alloc({B, T, D});                    // dx_norm: [B,T,D] via the norm
    be.rmsnorm_backward(dx_norm, dxn, act(Hook::ResidPre, l), lw.attn_norm, eps);
    dx = sum(dmid, dx_norm);                                 // dx: [B,T,D] d resid_pre
    offer(Hook::ResidPre, l, dx);
    through_edit(Hook::ResidPre, l, dx);
  }
  // ---- embedding: resid_pre of layer 0 is the embedding's output ----
  offer(Hook::Embed, -1, dx);
}

}  // namespace lmscope
