// lmscope-trace's default --hooks (docs/hooks.md, "The default set"): the hooks lmscope-report
// and lmscope-step draw, and layers.*.attn.z, the event on which a live --step walk draws a
// layer's attention page. Left out, for '*' to add: resid_pre, attn_norm, attn.v, attn.scores
// (the step page takes its masked cells from mask.combined, the report never reads them),
// ffn_norm, final_norm and the cache (kv.*).
#pragma once

namespace lmscope {

inline constexpr const char* kDefaultTraceHooks =
    "tokens.*,mask.*,rope.*,embed,layers.*.attn.q,layers.*.attn.k,layers.*.attn.q_rope,layers.*.attn.k_rope,"
    "layers.*.attn.probs,layers.*.attn.z,layers.*.attn_out,layers.*.resid_mid,layers.*.ffn.gate,layers.*.ffn.up,"
    "layers.*.ffn.act,layers.*.ffn_out,layers.*.resid_post,logits,sample.*";

}  // namespace lmscope
