#!/usr/bin/env python3
"""TransformerLens references for direct logit attribution (python/lmscope/attribution.py,
tests/python_module/test_attribution.py), written to golden/attribution/.

  venv/bin/pip install transformer_lens==4.3.0      # beside golden/requirements.txt's torch
  venv/bin/python golden/make_attribution_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Each file is TransformerLens 4.3's own decomposition of one prompt's last position: the model is
loaded by Hugging Face transformers (float32, eager attention; SmolLM2 from its GGUF file, which
HF dequantizes) and handed to TransformerLens (`TransformerBridge.boot_transformers(name,
hf_model=..., tokenizer=...)`: no hub access), then `enable_compatibility_mode()`, which folds
the final RMSNorm's weight into W_U as HookedTransformer did (the final norm's scale stays in the
cache as `ln_final.hook_scale`). Then, TL's calls:

    resid, labels = cache.decompose_resid(layer=-1, pos_slice=-1, return_labels=True)
    heads, head_labels = cache.stack_head_results(layer=-1, pos_slice=-1, return_labels=True)
    cache.logit_attrs(resid, tokens=a, incorrect_tokens=b, pos_slice=-1)   # and of heads

logit_attrs divides each component by the cached final-norm scale of that position (frozen: the
same scale for every component) and dots it with W_U[:, a] - W_U[:, b].

smollm2.json      SmolLM2-135M-Instruct, lesson 17's clean prompt "The Eiffel Tower is in the
                  city of", " Paris" (7042) against " Rome" (7268). Skipped, with a line, when
                  the GGUF file is absent.
tiny-qwen2.json   golden/models/tiny-qwen2 (untied lm_head, q/k/v biases) and tiny-llama (tied),
tiny-llama.json   the golden traces' prompt a (11 ids); a and b are the model's top-1 and top-2
                  tokens at the last position (chosen here, from HF's logits).

Each holds the ids, the answer pair, TL's logit difference from its logits (`logit_diff`), the
largest |logit| at the position (`logit_scale`, for the test's tolerance), the 1 + 2L labelled
components of decompose_resid and the L x H head results, as logit-difference contributions.
tiny-qwen2 has v biases: compatibility mode folds them into b_O, so TL's head results lack each
head's share b_V @ W_O_h, which `heads_value_bias` holds (TL's logit_attrs of it). The script
checks TL's own identities before writing: the components sum to the logit difference, and each
layer's heads (plus their value-bias shares) sum to its attn_out (no o_proj bias in these models).

tiny-gemma3.json  golden/models/tiny-gemma3, the same prompt. TransformerLens 4.3's bridge gives no
                  decomposition through Gemma 3's post-branch norms (its per-head results are
                  before the norm), so this one is written in torch from HF's own modules
                  (float64): the scaled embedding, each layer's post_attention_layernorm and
                  post_feedforward_layernorm outputs (what joins the stream), the final norm's
                  scale frozen as TL freezes it; a head's share is z_h @ W_O[:, h] through its
                  layer's post-norm with that norm's scale 1/rms(o_proj output) frozen too. The
                  script checks that the components sum to the final residual stream and the
                  logit difference, and each layer's heads to its attention component.

Deterministic (float32 on CPU, one thread, torch deterministic algorithms).
"""
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")          # everything is local; never reach the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse

from gguf_common import DEFAULT_MODEL, ROOT
from make_golden import deterministic, write_json

OUT = os.path.join(ROOT, "golden", "attribution")
SMOLLM2_PROMPT = "The Eiffel Tower is in the city of"
PARIS, ROME = 7042, 7268
TINY_IDS = [330, 749, 537, 264, 935, 314, 267, 681, 289, 295, 16]   # golden/traces prompt a
TINY = [("tiny-qwen2", "golden/models/tiny-qwen2"), ("tiny-llama", "golden/models/tiny-llama")]
# TL's own sums must close to float32 rounding of a few dozen adds of O(10) numbers.
IDENTITY_ATOL = 1e-4


def short(x):
    """8 significant digits: float32 holds about 7, so nothing is lost."""
    return float("%.8g" % x)


def tl_decomposition(hf, tok, name, ids, a=None, b=None):
    """TL's decomposition of the last position of `ids`; a, b default to the top-2 tokens."""
    import torch
    from transformer_lens.model_bridge import TransformerBridge

    with torch.no_grad():
        vbias = value_bias_results(hf)       # [L*H, D] or None, before the bridge folds weights in place
    bridge = TransformerBridge.boot_transformers(name, hf_model=hf, tokenizer=tok)
    bridge.enable_compatibility_mode()       # ln_final.w folded into W_U, as HookedTransformer
    deterministic()
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(torch.tensor([ids]))
        last = logits[0, -1]                                          # [V]
        if a is None:
            a, b = [int(i) for i in torch.topk(last, 2).indices]
        resid, labels = cache.decompose_resid(layer=-1, pos_slice=-1, return_labels=True)   # [1+2L, 1, D]
        heads, head_labels = cache.stack_head_results(layer=-1, pos_slice=-1, return_labels=True)  # [L*H, 1, D]
        resid_ld = cache.logit_attrs(resid, tokens=a, incorrect_tokens=b, pos_slice=-1)[:, 0]    # [1+2L]
        heads_ld = cache.logit_attrs(heads, tokens=a, incorrect_tokens=b, pos_slice=-1)[:, 0]    # [L*H]
        vbias_ld = None if vbias is None else cache.logit_attrs(
            vbias[:, None, :], tokens=a, incorrect_tokens=b, pos_slice=-1)[:, 0]
    cfg = bridge.cfg
    L, H = cfg.n_layers, cfg.n_heads
    logit_diff = float(last[a] - last[b])
    assert labels == ["embed"] + [f"{l}_{k}" for l in range(L) for k in ("attn_out", "mlp_out")], labels
    assert head_labels == [f"L{l}H{h}" for l in range(L) for h in range(H)], head_labels[:3]
    # TL's identities, before anything is written.
    assert abs(float(resid_ld.sum()) - logit_diff) < IDENTITY_ATOL, (float(resid_ld.sum()), logit_diff)
    per_layer = heads_ld.reshape(L, H).sum(1) + (0 if vbias_ld is None else vbias_ld.reshape(L, H).sum(1))
    assert float((per_layer - resid_ld[1::2]).abs().max()) < IDENTITY_ATOL, (per_layer, resid_ld[1::2])
    from importlib.metadata import version

    import transformers
    return {
        "made_by": "golden/make_attribution_refs.py: transformer_lens %s (TransformerBridge, compatibility mode), "
                   "transformers %s, torch %s; decompose_resid / stack_head_results + logit_attrs"
                   % (version("transformer_lens"), transformers.__version__, torch.__version__),
        "ids": [int(i) for i in ids],
        "pos": -1,
        "answer": [a, b],
        "logit_diff": short(logit_diff),
        "logit_scale": short(float(last.abs().max())),
        "components": {lab: short(v) for lab, v in zip(labels, resid_ld.tolist())},
        "heads": [[short(v) for v in row] for row in heads_ld.reshape(L, H).tolist()],
        **({} if vbias_ld is None else
           {"heads_value_bias": [[short(v) for v in row] for row in vbias_ld.reshape(L, H).tolist()]}),
    }


def gemma3_decomposition(hf, ids):
    """Gemma 3's decomposition of the last position of `ids` from HF's modules (module doc)."""
    import torch
    import transformers
    hf.requires_grad_(False)                                                    # numbers, not a graph
    kept, handles = {}, []
    keep = lambda key, f: (lambda mod, args, out: kept.__setitem__(key, f(args, out)))
    base = hf.model
    handles.append(base.embed_tokens.register_forward_hook(keep("embed", lambda a, o: o)))
    for l, layer in enumerate(base.layers):
        handles.append(layer.self_attn.o_proj.register_forward_hook(keep("%d_z" % l, lambda a, o: (a[0], o))))
        handles.append(layer.post_attention_layernorm.register_forward_hook(keep("%d_attn" % l, lambda a, o: o)))
        handles.append(layer.post_feedforward_layernorm.register_forward_hook(keep("%d_mlp" % l, lambda a, o: o)))
    handles.append(base.norm.register_forward_hook(keep("resid", lambda a, o: a[0])))
    with torch.no_grad():
        last = hf(input_ids=torch.tensor([ids])).logits[0, -1]                  # [V]
    for h in handles:
        h.remove()
    a, b = [int(i) for i in torch.topk(last, 2).indices]
    cfg = hf.config
    L, H, hd, eps = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.head_dim, cfg.rms_norm_eps
    rms = lambda x: torch.sqrt((x * x).mean() + eps)                            # x [D]
    resid = kept["resid"][0, -1]                                                # [D]
    W_U = hf.lm_head.weight                                                     # [V, D]
    read = (1.0 + base.norm.weight) * (W_U[a] - W_U[b]) / rms(resid)            # [D] final norm frozen
    labels = ["embed"] + ["%d_%s" % (l, k) for l in range(L) for k in ("attn_post_norm", "ffn_post_norm")]
    parts = [kept["embed"][0, -1]] + [kept["%d_%s" % (l, k)][0, -1] for l in range(L) for k in ("attn", "mlp")]
    heads = []
    for l, layer in enumerate(base.layers):
        z, out = kept["%d_z" % l]                                               # [1,T,H*hd], [1,T,D]
        W_O = layer.self_attn.o_proj.weight.reshape(-1, H, hd)                  # [D, H, hd]
        result = torch.einsum("hk,dhk->hd", z[0, -1].reshape(H, hd), W_O)       # [H, D]
        heads.append(result * (1.0 + layer.post_attention_layernorm.weight) / rms(out[0, -1]))
    heads = torch.stack(heads)                                                  # [L, H, D]
    comp = torch.stack(parts) @ read                                            # [1+2L]
    heads_ld = heads @ read                                                     # [L, H]
    logit_diff = float(last[a] - last[b])
    # The identities, before anything is written: the parts are the stream (HF adds them in
    # float64), the heads their layer's attention part up to the float32 norm inside HF's RMSNorm.
    assert float((torch.stack(parts).sum(0) - resid).abs().max()) < 1e-9 * float(resid.abs().max())
    assert abs(float(comp.sum()) - logit_diff) < IDENTITY_ATOL, (float(comp.sum()), logit_diff)
    assert float((heads_ld.sum(1) - comp[1::2]).abs().max()) < IDENTITY_ATOL, (heads_ld.sum(1), comp[1::2])
    return {
        "made_by": "golden/make_attribution_refs.py: HF transformers %s Gemma3ForCausalLM (float64) and torch %s; "
                   "the post-norm outputs, final norm and post-norms' scales frozen" % (transformers.__version__, torch.__version__),
        "ids": [int(i) for i in ids],
        "pos": -1,
        "answer": [a, b],
        "logit_diff": short(logit_diff),
        "logit_scale": short(float(last.abs().max())),
        "components": {lab: short(v) for lab, v in zip(labels, comp.tolist())},
        "heads": [[short(v) for v in row] for row in heads_ld.tolist()],
    }


def value_bias_results(hf):
    """Each head's share of the v bias, b_V[kv(h)] @ W_O[:, h] ([L*H, D]), or None without one.
    Compatibility mode folds it into b_O (fold_value_biases: a head's pattern sums to 1, so its
    v bias reaches the output whatever it attends to); TL's head results then lack it, and its
    attn_out = sum of heads + b_O."""
    import torch
    cfg = hf.config
    H, Hkv = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    out = []
    for layer in hf.model.layers:
        attn = layer.self_attn
        if attn.v_proj.bias is None:
            return None
        W_O = attn.o_proj.weight                                      # [D, H*hd]
        b_v = attn.v_proj.bias.reshape(Hkv, hd)                       # [Hkv, hd]
        for h in range(H):
            out.append(W_O[:, h * hd:(h + 1) * hd] @ b_v[h // (H // Hkv)])   # [D]
    return torch.stack(out)                                           # [L*H, D]


def main():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    for name, rel in TINY:
        path = os.path.join(ROOT, rel)
        hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
        tok = AutoTokenizer.from_pretrained(path)
        ref = tl_decomposition(hf, tok, path, TINY_IDS)
        ref = {"model": rel, **ref}
        write_json(os.path.join(OUT, name + ".json"), ref)
        print("wrote golden/attribution/%s.json: logit diff %.4f" % (name, ref["logit_diff"]))
    rel = "golden/models/tiny-gemma3"
    hf = AutoModelForCausalLM.from_pretrained(os.path.join(ROOT, rel), dtype=torch.float64,
                                              attn_implementation="eager").eval()
    ref = {"model": rel, **gemma3_decomposition(hf, TINY_IDS)}
    write_json(os.path.join(OUT, "tiny-gemma3.json"), ref)
    print("wrote golden/attribution/tiny-gemma3.json: logit diff %.4f" % ref["logit_diff"])
    if not os.path.isfile(args.model):
        print("%s is absent (scripts/fetch-model.sh fetches it): smollm2.json not made" % args.model)
        return
    d, f = os.path.split(os.path.abspath(args.model))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    hf = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32, attn_implementation="eager").eval()
    ids = tok(SMOLLM2_PROMPT, add_special_tokens=False)["input_ids"]
    ref = tl_decomposition(hf, tok, "HuggingFaceTB/SmolLM2-135M-Instruct", ids, PARIS, ROME)
    ref = {"model": os.path.relpath(os.path.abspath(args.model), ROOT), "prompt": SMOLLM2_PROMPT, **ref}
    write_json(os.path.join(OUT, "smollm2.json"), ref)
    print("wrote golden/attribution/smollm2.json: logit diff %.4f" % ref["logit_diff"])


if __name__ == "__main__":
    sys.exit(main())
