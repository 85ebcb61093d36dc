// The Llama/Qwen2/Qwen3/Gemma 3 decoder forward, in the order of HF's modeling_qwen2.py /
// modeling_llama.py / modeling_qwen3.py / modeling_gemma3.py.
//
// Shapes: B batch, T tokens this step, P = past positions in the cache, S = P + T,
// D hidden, H query heads, Hkv KV heads, hd head dim, F FFN width, V vocab.
#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "backend/forward_scope.h"
#include "kernels/dtype_convert.cuh"
#include "model/attend_probs.h"
#include "model/lens.h"
#include "model/masks.h"
#include "model/rope.h"
#include "trace/hook_queue.h"

namespace lmscope {

namespace {
Tensor prepare_or_empty(Backend& be, const Tensor& t) { return t.defined() && t.numel() ? be.prepare_weight(t) : Tensor(); }
}  // namespace

Decoder::Decoder(const ModelConfig& cfg, const Weights& w, Backend& backend) : cfg_(cfg), backend_(backend) {
  auto prep = [&](const Tensor& t) { return prepare_or_empty(backend_, t); };
  w_.embed = prep(w.embed);
  // A tied head is the embedding table itself: prepare it once.
  w_.lm_head = w.lm_head.same_storage(w.embed) ? w_.embed : prep(w.lm_head);
  w_.final_norm = prep(w.final_norm);
  for (const LayerWeights& lw : w.layers) {
    LayerWeights p;
    p.attn_norm = prep(lw.attn_norm);
    p.wq = prep(lw.wq), p.wk = prep(lw.wk), p.wv = prep(lw.wv);
    p.bq = prep(lw.bq), p.bk = prep(lw.bk), p.bv = prep(lw.bv);
    p.q_norm = prep(lw.q_norm), p.k_norm = prep(lw.k_norm);
    p.wo = prep(lw.wo), p.bo = prep(lw.bo);
    p.attn_post_norm = prep(lw.attn_post_norm);
    p.ffn_norm = prep(lw.ffn_norm);
    p.w_gate = prep(lw.w_gate), p.w_up = prep(lw.w_up), p.w_down = prep(lw.w_down);
    p.ffn_post_norm = prep(lw.ffn_post_norm);
    w_.layers.push_back(std::move(p));
  }
  w_.storage = w.storage;
  if (cfg_.embed_scaled) {
    const float s = std::sqrt(float(cfg_.hidden_size));
    embed_scale_ = backend_.compute_dtype() == "bf16" ? matmul_operand_bf16(s) : s;
  }
}

Tensor Decoder::forward(const StepInput& in, KVCache* cache, Trace* trace, LogitsFor which) {
  Backend& be = backend_;
  const int64_t B = in.input_ids.dim(0), T = in.input_ids.dim(1);
  const int64_t P = cache ? cache->length : 0, S = P + T;
  const int64_t D = cfg_.hidden_size, H = cfg_.num_heads, Hkv = cfg_.num_kv_heads;
  const int64_t hd = cfg_.head_dim, F = cfg_.intermediate_size, V = cfg_.vocab_size;
  if (in.attention_mask.dim(1) != S)
    throw std::logic_error("forward: attention_mask has " + std::to_string(in.attention_mask.dim(1)) +
                           " columns, expected past + T = " + std::to_string(S));
  if (cache && S > cache->capacity)
    throw std::runtime_error("forward: " + std::to_string(S) + " positions exceed the KV cache capacity " +
                             std::to_string(cache->capacity));

  ForwardScope step(be, B, T);

  // Offer a tensor to the trace; an unwanted hook costs this one check. hook() offers what no
  // edit may change (inputs, tables, cache views, records); site() every activation.
  HookQueue hooked(be, trace);
  auto hook = [&](Hook h, int layer, const Tensor& t) {
    if (trace && trace->wants(h, layer)) hooked.push(h, layer, t);
  };
  auto wants = [&](Hook h, int layer) { return trace && trace->wants(h, layer); };
  // An activation: when the hook table marks it editable (HookInfo::editable, trace/hooks.h),
  // the trace's editor (interventions, Python functions: trace/hook_editor.h) may change it (in
  // place, or rebinding t to an edited copy) before it is offered and before the next op reads
  // it. With no editor this is one pointer check more than hook().
  const EditContext edit_ctx{trace ? trace->step() : 0, &in.position_ids, &in.attention_mask};
  auto edits = [&](Hook h, int layer) { return trace && hook_info(h).editable && trace->edits(h, layer); };
  auto site = [&](Hook h, int layer, Tensor& t) {
    if (edits(h, layer)) trace->editor()->apply(be, h, layer, t, edit_ctx);
    hook(h, layer, t);
  };
  // quant.<hook>.q8 / .q8_scale: what a backend that quantizes activations (CPU
  // --cpu-activations q8) rounded `x` to before its matmul by W; nothing when none is asked for
  // or the backend does not quantize. `shape` is the hooked tensor's (x may be its flat view).
  auto quant_hooks = [&](Hook codes_hook, Hook scale_hook, int layer, const Tensor& x, const Tensor& W,
                         const Shape& shape) {
    if (!wants(codes_hook, layer) && !wants(scale_hook, layer)) return;
    Tensor codes, scales;
    if (!be.quantize_activations_for_hook(x, W, codes, scales)) return;
    hook(codes_hook, layer, codes.reshape(shape));
    hook(scale_hook, layer, scales);
  };

  // What this architecture does not compute: a request for it ("*") lacks nothing.
  if (trace && !cfg_.qk_norm) trace->set_not_in_model({Hook::AttnQNorm, Hook::AttnKNorm});
  if (trace && !cfg_.post_branch_norms) trace->set_not_in_model({Hook::AttnPostNorm, Hook::FfnPostNorm});
  if (trace && !cfg_.any_sliding())
    trace->set_not_in_model({Hook::MaskSliding, Hook::RopeCosLocal, Hook::RopeSinLocal});
  if (trace) trace->set_backend_activations(be.activations());   // which quant.* it computes

  hook(Hook::TokensInputIds, -1, in.input_ids);
  hook(Hook::TokensAttentionMask, -1, in.attention_mask);
  hook(Hook::TokensPositionIds, -1, in.position_ids);

  // ---- masks and rotary tables (host, small) --------------------------------------------
  if (wants(Hook::MaskCausal, -1)) hook(Hook::MaskCausal, -1, causal_mask(T, S));
  hook(Hook::MaskPadding, -1, in.attention_mask);
  Tensor mask_host = combined_mask(in.attention_mask, T);   // [B,T,S]  0 or -FLT_MAX
  hook(Hook::MaskCombined, -1, mask_host);
  Tensor cos_host, sin_host;                                 // [B,T,hd]
  rope_tables(cos_host, sin_host, in.position_ids, int(hd), cfg_.rope_theta);
  hook(Hook::RopeCos, -1, cos_host);
  hook(Hook::RopeSin, -1, sin_host);
  Tensor mask = be.upload(mask_host), cos = be.upload(cos_host), sin = be.upload(sin_host);

  // Gemma 3's sliding layers: a query sees only the last sliding_window columns, and RoPE
  // turns with their own base. The cache keeps every position (model/kv_cache.h): the window
  // is this mask alone, so a sliding layer reads the same cache as a global one.
  Tensor mask_local = mask, cos_local = cos, sin_local = sin;
  Tensor mask_local_host = mask_host;                        // [B,T,S] (an edit of scores reads it)
  if (cfg_.any_sliding()) {
    Tensor sliding_host = sliding_combined_mask(in.attention_mask, T, cfg_.sliding_window);  // [B,T,S]
    hook(Hook::MaskSliding, -1, sliding_host);
    Tensor cos_local_host, sin_local_host;                   // [B,T,hd]
    rope_tables(cos_local_host, sin_local_host, in.position_ids, int(hd), cfg_.rope_theta_local);
    hook(Hook::RopeCosLocal, -1, cos_local_host);
    hook(Hook::RopeSinLocal, -1, sin_local_host);
    mask_local_host = sliding_host;
    mask_local = be.upload(sliding_host);
    cos_local = be.upload(cos_local_host);
    sin_local = be.upload(sin_local_host);
  }

  // ---- embedding -------------------------------------------------------------------------
  Tensor x = be.alloc({B, T, D});                            // x: [B,T,D] the residual stream
  be.embed(x, be.upload(in.input_ids), w_.embed);
  if (cfg_.embed_scaled) {
    // Gemma 3: rows times sqrt(D), the scale rounded to the dtype the model computes in, as
    // HF's embed_scale.to(weight.dtype) (sqrt(640) = 25.298... is 25.25 in bfloat16).
    Tensor scaled = be.alloc({B, T, D});                     // scaled: [B,T,D]
    be.scale(scaled, x, embed_scale_);
    x = scaled;
  }
  site(Hook::Embed, -1, x);

  // The head on normed [B,T,D]. Its last column is computed on its own (B rows) whatever
  // else is asked for, so that what generation samples from does not depend on whether the
  // logits hook (or the caller) wants every position: a backend may round a row of a B*T-row
  // matmul otherwise than the same row among B (CPU float32: sgemm panels against the decode
  // kernels). last_column: [B,1,V] on the backend. every_position: host [B,T,V] from one
  // matmul over all T columns, its last column replaced by last_column's.
  auto last_column = [&](const Tensor& normed) {
    Tensor last = be.alloc({B, 1, D});                       // last: [B,1,D] column T-1
    be.select_column(last, normed, T - 1);
    Tensor logits = be.alloc({B, 1, V});                     // logits: [B,1,V]
    be.linear(logits, last, w_.lm_head, Tensor());
    return logits;
  };
  auto every_position = [&](const Tensor& normed) {
    const Tensor last_host = be.to_host(last_column(normed));
    if (T == 1) return last_host;   // every position is the last one
    Tensor logits = be.alloc({B, T, V});                     // logits: [B,T,V]
    be.linear(logits, normed, w_.lm_head, Tensor());
    // On the host (the CPU backend's to_host is the tensor itself: nothing reads it after this).
    Tensor host = be.to_host(logits);
    for (int64_t b = 0; b < B; ++b) std::copy_n(last_host.f32() + b * V, V, host.f32() + (b * T + T - 1) * V);
    return host;
  };

  // The logit lens of layer l (model/lens.h): the final norm and the head on resid_post, with
  // the ops and weights of the real logits below. Runs only for a layer whose lens.* hooks
  // are wanted; its top K are found on the host (a synchronous copy: lens runs trade speed
  // for seeing).
  auto lens = [&](int l, const Tensor& resid) {
    if (!wants(Hook::LensLogits, l) && !wants(Hook::LensTopkIds, l) && !wants(Hook::LensTopkProbs, l)) return;
    Tensor normed = be.alloc({B, T, D});                     // normed: [B,T,D]
    be.rmsnorm(normed, resid, w_.final_norm, cfg_.rms_norm_eps);
    const Tensor lens_logits = every_position(normed);       // lens_logits: [B,T,V] host
    hook(Hook::LensLogits, l, lens_logits);
    if (!wants(Hook::LensTopkIds, l) && !wants(Hook::LensTopkProbs, l)) return;
    const LensTopK top = lens_top_k(lens_logits, trace->lens_top_k());
    hook(Hook::LensTopkIds, l, top.ids);
    hook(Hook::LensTopkProbs, l, top.probs);
  };

  const float scale = cfg_.attention_scale();               // hd^-0.5 (Gemma 3: query_pre_attn_scalar^-0.5)
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    const bool sliding = cfg_.is_sliding(l);
    const Tensor& layer_mask = sliding ? mask_local : mask;  // [B,T,S]
    const Tensor& layer_mask_host = sliding ? mask_local_host : mask_host;  // [B,T,S] host
    const Tensor& layer_cos = sliding ? cos_local : cos;     // [B,T,hd]
    const Tensor& layer_sin = sliding ? sin_local : sin;     // [B,T,hd]
    site(Hook::ResidPre, l, x);

    // ---- attention: h = x + o_proj(attn(rope(q), rope(k), v)) ----
    Tensor xn = be.alloc({B, T, D});                         // xn: [B,T,D]
    be.rmsnorm(xn, x, lw.attn_norm, cfg_.rms_norm_eps);
    site(Hook::AttnNorm, l, xn);
    quant_hooks(Hook::QuantAttnNormQ8, Hook::QuantAttnNormQ8Scale, l, xn, lw.wq, xn.shape());

    Tensor q_flat = be.alloc({B, T, H * hd});                // q_flat: [B,T,H*hd]
    Tensor k_flat = be.alloc({B, T, Hkv * hd});              // k_flat: [B,T,Hkv*hd]
    Tensor v_flat = be.alloc({B, T, Hkv * hd});              // v_flat: [B,T,Hkv*hd]
    be.linear_group(xn, {{&q_flat, &lw.wq, &lw.bq}, {&k_flat, &lw.wk, &lw.bk}, {&v_flat, &lw.wv, &lw.bv}});
    Tensor q = be.alloc({B, H, T, hd});                      // q: [B,H,T,hd]
    Tensor k = be.alloc({B, Hkv, T, hd});                    // k: [B,Hkv,T,hd]
    Tensor v = be.alloc({B, Hkv, T, hd});                    // v: [B,Hkv,T,hd]
    be.split_heads(q, q_flat);
    be.split_heads(k, k_flat);
    be.split_heads(v, v_flat);
    site(Hook::AttnQ, l, q);
    site(Hook::AttnK, l, k);
    site(Hook::AttnV, l, v);

    // Qwen3, Gemma 3: each head's q and k RMS-normed over its hd values (weights [hd], shared by the
    // heads) before RoPE, so no head's scores grow with the scale of its projections.
    if (cfg_.qk_norm) {
      Tensor q_normed = be.alloc({B, H, T, hd});             // q_normed: [B,H,T,hd]
      Tensor k_normed = be.alloc({B, Hkv, T, hd});           // k_normed: [B,Hkv,T,hd]
      be.rmsnorm(q_normed, q, lw.q_norm, cfg_.rms_norm_eps);
      be.rmsnorm(k_normed, k, lw.k_norm, cfg_.rms_norm_eps);
      q = q_normed;
      k = k_normed;
      site(Hook::AttnQNorm, l, q);
      site(Hook::AttnKNorm, l, k);
    }

    Tensor q_rope = be.alloc({B, H, T, hd});                 // q_rope: [B,H,T,hd]
    Tensor k_rope = be.alloc({B, Hkv, T, hd});               // k_rope: [B,Hkv,T,hd]
    be.rope(q_rope, q, layer_cos, layer_sin);
    be.rope(k_rope, k, layer_cos, layer_sin);
    site(Hook::AttnQRope, l, q_rope);
    site(Hook::AttnKRope, l, k_rope);

    // Keys and values this step attends over: the cache (P old + T new positions), or
    // without a cache just this step's T.
    const Tensor* keys = &k_rope;                            // [B,Hkv,S(max),hd]
    const Tensor* values = &v;
    if (cache) {
      be.kv_write(cache->k[l], k_rope, P);
      be.kv_write(cache->v[l], v, P);
      keys = &cache->k[l];
      values = &cache->v[l];
      if (wants(Hook::KvK, l)) hook(Hook::KvK, l, be.kv_read(cache->k[l], S));
      if (wants(Hook::KvV, l)) hook(Hook::KvV, l, be.kv_read(cache->v[l], S));
    }

    // scores/probs [B,H,T,S]: only when asked for or edited. After an edit of the scores the
    // probs are their softmax again, after an edit of either z is made again from the probs
    // (model/attend_probs.h).
    const bool edit_scores = edits(Hook::AttnScores, l);
    const bool remake_z = edit_scores || edits(Hook::AttnProbs, l);
    Tensor scores, probs;
    if (wants(Hook::AttnScores, l) || edit_scores) scores = be.alloc({B, H, T, S});
    if (wants(Hook::AttnProbs, l) || remake_z) probs = be.alloc({B, H, T, S});
    Tensor z = be.alloc({B, T, H, hd});                      // z: [B,T,H,hd] = probs @ v
    be.attention(z, q_rope, *keys, *values, S, layer_mask, scale, scores.defined() ? &scores : nullptr,
                 probs.defined() ? &probs : nullptr);
    if (scores.defined()) site(Hook::AttnScores, l, scores);
    if (edit_scores) probs = probs_from_scores(be, scores, layer_mask_host);
    if (probs.defined()) site(Hook::AttnProbs, l, probs);
    if (remake_z) z = attend_probs(be, probs, *values, S);
    site(Hook::AttnZ, l, z);
    quant_hooks(Hook::QuantAttnZQ8, Hook::QuantAttnZQ8Scale, l, z.reshape({B, T, H * hd}), lw.wo, z.shape());

    Tensor attn_out = be.alloc({B, T, D});                   // attn_out: [B,T,D]
    be.linear(attn_out, z.reshape({B, T, H * hd}), lw.wo, lw.bo);
    site(Hook::AttnOut, l, attn_out);
    // Gemma 3: the branch is RMS-normed before it joins the stream.
    Tensor attn_branch = attn_out;                           // attn_branch: [B,T,D]
    if (cfg_.post_branch_norms) {
      attn_branch = be.alloc({B, T, D});
      be.rmsnorm(attn_branch, attn_out, lw.attn_post_norm, cfg_.rms_norm_eps);
      site(Hook::AttnPostNorm, l, attn_branch);
    }
    Tensor resid_mid = be.alloc({B, T, D});                  // resid_mid: [B,T,D]
    be.add(resid_mid, x, attn_branch);
    site(Hook::ResidMid, l, resid_mid);

    // ---- MLP: down_proj(silu(gate_proj(h)) * up_proj(h))  (Gemma 3: gelu_tanh for silu) ----
    Tensor hn = be.alloc({B, T, D});                         // hn: [B,T,D]
    be.rmsnorm(hn, resid_mid, lw.ffn_norm, cfg_.rms_norm_eps);
    site(Hook::FfnNorm, l, hn);
    quant_hooks(Hook::QuantFfnNormQ8, Hook::QuantFfnNormQ8Scale, l, hn, lw.w_gate, hn.shape());
    Tensor gate = be.alloc({B, T, F});                       // gate: [B,T,F]
    Tensor up = be.alloc({B, T, F});                         // up:   [B,T,F]
    const Tensor no_bias;
    be.linear_group(hn, {{&gate, &lw.w_gate, &no_bias}, {&up, &lw.w_up, &no_bias}});
    site(Hook::FfnGate, l, gate);
    site(Hook::FfnUp, l, up);
    Tensor act = be.alloc({B, T, F});                        // act: [B,T,F]
    if (cfg_.gelu_tanh_ffn) be.geglu_tanh(act, gate, up);
    else be.swiglu(act, gate, up);
    site(Hook::FfnAct, l, act);
    quant_hooks(Hook::QuantFfnActQ8, Hook::QuantFfnActQ8Scale, l, act, lw.w_down, act.shape());
    Tensor ffn_out = be.alloc({B, T, D});                    // ffn_out: [B,T,D]
    be.linear(ffn_out, act, lw.w_down, Tensor());
    site(Hook::FfnOut, l, ffn_out);
    Tensor ffn_branch = ffn_out;                             // ffn_branch: [B,T,D]
    if (cfg_.post_branch_norms) {
      ffn_branch = be.alloc({B, T, D});
      be.rmsnorm(ffn_branch, ffn_out, lw.ffn_post_norm, cfg_.rms_norm_eps);
      site(Hook::FfnPostNorm, l, ffn_branch);
    }
    Tensor resid_post = be.alloc({B, T, D});                 // resid_post: [B,T,D]
    be.add(resid_post, resid_mid, ffn_branch);
    site(Hook::ResidPost, l, resid_post);
    lens(l, resid_post);
    x = resid_post;
  }
  if (cache) cache->length = S;

  // ---- final norm and LM head ------------------------------------------------------------
  Tensor xf = be.alloc({B, T, D});                           // xf: [B,T,D]
  be.rmsnorm(xf, x, w_.final_norm, cfg_.rms_norm_eps);
  site(Hook::FinalNorm, -1, xf);
  quant_hooks(Hook::QuantFinalNormQ8, Hook::QuantFinalNormQ8Scale, -1, xf, w_.lm_head, xf.shape());

  // The head: the last column alone for generation (the largest matmul of a decode step),
  // every position when the logits hook, an edit of them or the caller asks for them.
  if (which == LogitsFor::LastPosition && !wants(Hook::Logits, -1) && !edits(Hook::Logits, -1)) {
    Tensor logits_host = be.to_host(last_column(xf));
    hooked.flush();
    return logits_host;
  }
  Tensor logits_host = every_position(xf);
  site(Hook::Logits, -1, logits_host);
  logits_host = be.to_host(logits_host);   // an edit hands back a backend tensor; the host's: itself
  hooked.flush();
  return logits_host;
}

}  // namespace lmscope
