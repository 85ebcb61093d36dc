#!/usr/bin/env python3
"""Makes golden/grad/: torch autograd's gradients of a metric at every hook point, the references
of lmscope's backward pass (lib/grad/, docs/gradients.md; tests/grad checks them).

  /work/venv-golden/bin/python golden/make_grad_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Hugging Face's own model (eager attention), in float64 so that the reference's own rounding is
far below what is measured against it, with torch hooks that call retain_grad() on each hooked
tensor as the forward makes it; then metric.backward(). The metrics are lmscope's (lib/grad/
metric.h), written again here in torch from the logits:
  logit_diff:pos=P:A,B   logits[P, A] - logits[P, B]
  logprob:pos=P:A        log_softmax(logits[P])[A]
  loss:FROM:TO           mean over t in [FROM, TO) of -log_softmax(logits[t])[ids[t + 1]]
P counts a row's prompt tokens (padding skipped); a batch's metric is the sum of its rows'.

Each case is one HDF5 file: input_ids and attention_mask [B,T] (left padded, pad id 0),
grad/<hook> in lmscope's names and layouts (docs/hooks.md) as float32, the
metric's value as the attribute `metric`. The tiny models (tiny-gemma3 too: its window of 4 is
passed by every prompt, the batch left padded): every hook; SmolLM2 (Q4_1 GGUF,
dequantized by transformers' GGUF loader: the same values lmscope multiplies): layers 0, 14 and
29 and the globals, for a 9-token prompt. golden/grad/manifest.json lists the cases.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "grad")
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

PROMPT_A = "The golden fish spoke to the old man."          # make_golden.py's
PROMPTS_B = ["Hello world!", "I love pizza 🍕!", "def add(a, b):\n    return a + b"]
SMOLLM2_PROMPT = "The Eiffel Tower is in the city of"
SMOLLM2_LAYERS = (0, 14, 29)
# Attribution patching (tiny-qwen2): two prompts of one length that differ in a word
PATCH_CLEAN = "The golden fish spoke to the old man."
PATCH_CORRUPTED = "The golden fish spoke to the old cat."

# name, model dir, prompts, metric ("TOP2" is replaced by the model's two likeliest next tokens
# at the last position of the first row, so that the difference is one a user would ask for)
TINY_CASES = [
    ("tiny-qwen2-logit-diff", "golden/models/tiny-qwen2", [PROMPT_A], "logit_diff:pos=-1:TOP2"),
    ("tiny-qwen2-batch-logprob", "golden/models/tiny-qwen2", PROMPTS_B, "logprob:pos=-1:TOP1"),
    ("tiny-llama-loss", "golden/models/tiny-llama", [PROMPT_A], "loss:2:"),
    ("tiny-qwen3-batch-loss", "golden/models/tiny-qwen3", PROMPTS_B, "loss::"),
    ("tiny-qwen3-logit-diff", "golden/models/tiny-qwen3", [PROMPT_A], "logit_diff:pos=3:TOP2"),
    # Gemma 3 (window 4: layers 0 and 1 slide): left padding, every prompt past the window
    ("tiny-gemma3-batch-loss", "golden/models/tiny-gemma3", PROMPTS_B, "loss::"),
    ("tiny-gemma3-logit-diff", "golden/models/tiny-gemma3", [PROMPT_A], "logit_diff:pos=-1:TOP2"),
]


def pad_left(prompts, pad_id=0):
    """[B,T] ids and mask, each row's tokens in its last columns (HF tokenizers' left padding)."""
    T = max(len(p) for p in prompts)
    ids = [[pad_id] * (T - len(p)) + list(p) for p in prompts]
    mask = [[0] * (T - len(p)) + [1] * len(p) for p in prompts]
    return ids, mask


def parse_metric(spec):
    kind, a, b = spec.split(":", 2)
    if kind in ("logit_diff", "logprob"):
        return kind, int(a[len("pos="):]), [int(t) for t in b.split(",")]
    return kind, (int(a) if a else None), (int(b) if b else None)


def metric_of(torch, spec, logits, ids, lengths):
    """The metric as lib/grad/metric.cpp computes it, from logits [B,T,V] (float64)."""
    kind, x, y = parse_metric(spec)
    T = logits.shape[1]
    total = logits.new_zeros(())
    for b, n in enumerate(lengths):
        first = T - n
        if kind in ("logit_diff", "logprob"):
            c = first + (x if x >= 0 else n + x)
            if kind == "logit_diff":
                total = total + logits[b, c, y[0]] - logits[b, c, y[1]]
            else:
                total = total + torch.log_softmax(logits[b, c], -1)[y[0]]
        else:
            lo, hi = (x or 0), (y if y is not None else n - 1)
            cols = list(range(first + lo, first + hi))
            lp = torch.log_softmax(logits[b, cols], -1)                       # [n, V]
            nxt = torch.tensor([ids[b][c + 1] for c in cols])
            total = total - lp[torch.arange(len(cols)), nxt].mean()
    return total


class Retain:
    """retain_grad() on each hooked tensor of an HF Llama/Qwen2/Qwen3 model; grads() gives them
    back under lmscope's names and layouts."""

    def __init__(self, torch, model, layers=None):
        self.torch = torch
        self.model = model
        self.layers = set(range(len(model.model.layers)) if layers is None else layers)
        self.kept = {}           # lmscope name -> (tensor, layout fn)
        self.handles, self.patches = [], []
        self.current = []        # the layer whose forward runs

    def keep(self, name, t, layout=lambda g: g):
        t.retain_grad()
        self.kept[name] = (t, layout)

    def grads(self):
        return {n: layout(t.grad).float().numpy() for n, (t, layout) in self.kept.items()}

    def __enter__(self):
        torch, m = self.torch, self.model
        base = m.model
        reg = self.handles.append

        def embed_hook(mod, args, out):
            out = out.detach().clone().requires_grad_(True)   # the activations' graph starts here
            self.keep("embed", out)
            return out
        reg(base.embed_tokens.register_forward_hook(embed_hook))
        for i, layer in enumerate(base.layers):
            self._layer(i, layer)
        reg(base.norm.register_forward_hook(lambda mod, a, o: self.keep("final_norm", o)))
        reg(m.lm_head.register_forward_hook(lambda mod, a, o: self.keep("logits", o)))
        modeling = sys.modules[type(base.layers[0].self_attn).__module__]
        self._wrap(modeling)
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        for obj, attr, orig in reversed(self.patches):
            setattr(obj, attr, orig)
        return False

    def _layer(self, i, layer):
        attn, mlp = layer.self_attn, layer.mlp
        hd = attn.head_dim
        p = "layers.%d." % i
        reg = self.handles.append
        if i not in self.layers:
            def enter(mod, args, kwargs):
                self.current.append(i)

            def leave(mod, args, kwargs, out):
                self.current.pop()
            reg(layer.register_forward_pre_hook(enter, with_kwargs=True))
            reg(layer.register_forward_hook(leave, with_kwargs=True))
            return

        def heads_first(g):               # [B,T,X*hd] -> [B,X,T,hd]
            B, T = g.shape[:2]
            return g.reshape(B, T, -1, hd).transpose(1, 2)

        def pre_layer(mod, args, kwargs):
            self.current.append(i)
            h = kwargs.get("hidden_states", args[0] if args else None)
            self.keep(p + "resid_pre", h)

        def post_layer(mod, args, kwargs, out):
            self.current.pop()
            self.keep(p + "resid_post", out[0] if isinstance(out, tuple) else out)

        def out_hook(name, layout=lambda g: g):
            return lambda mod, a, o: self.keep(p + name, o, layout)

        def in_hook(name, layout=lambda g: g):
            return lambda mod, a: self.keep(p + name, a[0], layout)

        reg(layer.register_forward_pre_hook(pre_layer, with_kwargs=True))
        reg(layer.register_forward_hook(post_layer, with_kwargs=True))
        reg(layer.input_layernorm.register_forward_hook(out_hook("attn_norm")))
        for n in ("q", "k", "v"):
            reg(getattr(attn, n + "_proj").register_forward_hook(out_hook("attn." + n, heads_first)))
        gemma = getattr(layer, "pre_feedforward_layernorm", None) is not None
        if getattr(attn, "q_norm", None) is not None:
            # Qwen3 norms [B,T,X,hd] (then transposes), Gemma 3 [B,X,T,hd] (already transposed)
            heads = (lambda g: g) if gemma else (lambda g: g.transpose(1, 2))
            reg(attn.q_norm.register_forward_hook(out_hook("attn.q_norm", heads)))
            reg(attn.k_norm.register_forward_hook(out_hook("attn.k_norm", heads)))
        reg(attn.o_proj.register_forward_pre_hook(in_hook("attn.z", lambda g: g.reshape(*g.shape[:2], -1, hd))))
        reg(attn.o_proj.register_forward_hook(out_hook("attn_out")))
        if gemma:   # Gemma 3: post_attention_layernorm is the attention branch's own norm
            reg(layer.post_attention_layernorm.register_forward_hook(out_hook("attn_post_norm")))
            reg(layer.pre_feedforward_layernorm.register_forward_pre_hook(in_hook("resid_mid")))
            reg(layer.pre_feedforward_layernorm.register_forward_hook(out_hook("ffn_norm")))
            reg(layer.post_feedforward_layernorm.register_forward_hook(out_hook("ffn_post_norm")))
        else:
            reg(layer.post_attention_layernorm.register_forward_pre_hook(in_hook("resid_mid")))
            reg(layer.post_attention_layernorm.register_forward_hook(out_hook("ffn_norm")))
        reg(mlp.gate_proj.register_forward_hook(out_hook("ffn.gate")))
        reg(mlp.up_proj.register_forward_hook(out_hook("ffn.up")))
        reg(mlp.down_proj.register_forward_pre_hook(in_hook("ffn.act")))
        reg(mlp.down_proj.register_forward_hook(out_hook("ffn_out")))

    def _wrap(self, modeling):
        torch, cap = self.torch, self
        orig_rope, orig_attn = modeling.apply_rotary_pos_emb, modeling.eager_attention_forward

        def apply_rotary_pos_emb(q, k, cos, sin, *args, **kwargs):
            q_embed, k_embed = orig_rope(q, k, cos, sin, *args, **kwargs)
            layer = cap.current[-1]
            if layer in cap.layers:
                cap.keep("layers.%d.attn.q_rope" % layer, q_embed)
                cap.keep("layers.%d.attn.k_rope" % layer, k_embed)
            return q_embed, k_embed

        def eager_attention_forward(module, *args, **kwargs):
            layer = cap.current[-1]
            orig_softmax = torch.nn.functional.softmax
            scores = []

            def softmax(inp, dim=-1, dtype=None, **kw):   # float64 throughout: drop eager's float32 cast
                scores.append(inp)
                return orig_softmax(inp, dim=dim, **kw)
            torch.nn.functional.softmax = softmax
            try:
                out, probs = orig_attn(module, *args, **kwargs)
            finally:
                torch.nn.functional.softmax = orig_softmax
            if layer in cap.layers:
                cap.keep("layers.%d.attn.scores" % layer, scores[0])
                cap.keep("layers.%d.attn.probs" % layer, probs)
            return out, probs

        for attr, new in (("apply_rotary_pos_emb", apply_rotary_pos_emb),
                          ("eager_attention_forward", eager_attention_forward)):
            self.patches.append((modeling, attr, getattr(modeling, attr)))
            setattr(modeling, attr, new)


def make_case(torch, h5py, np, model, name, prompts, spec, layers=None, model_rel=""):
    ids, mask = pad_left(prompts)
    lengths = [len(p) for p in prompts]
    with Retain(torch, model, layers) as r:
        # Positions as HF generate (and lmscope) give them to a left-padded batch: cumsum(mask) - 1,
        # 0 at the pads; a plain forward would give every row 0..T-1.
        m = torch.tensor(mask)
        positions = (m.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=torch.tensor(ids), attention_mask=m, position_ids=positions, use_cache=False)
        logits = out.logits                                               # [B,T,V] float64
        if "TOP" in spec:                                                 # the likeliest next tokens
            top = torch.argsort(logits[0, -1], descending=True, stable=True)[:2].tolist()
            spec = spec.replace("TOP2", "%d,%d" % (top[0], top[1])).replace("TOP1", str(top[0]))
        metric = metric_of(torch, spec, logits, ids, lengths)
        metric.backward()
        grads = r.grads()
    path = os.path.join(OUT, name + ".h5")
    with h5py.File(path, "w") as f:
        f.attrs["metric_spec"] = spec
        f.attrs["metric"] = float(metric)
        f.attrs["model"] = model_rel
        f.attrs["made_by"] = "golden/make_grad_refs.py: HF transformers (float64, eager) + torch autograd"
        f.create_dataset("input_ids", data=np.array(ids, dtype=np.int32))
        f.create_dataset("attention_mask", data=np.array(mask, dtype=np.int32))
        for n in sorted(grads):
            big = grads[n].nbytes > 65536          # small ones contiguous, as lmscope's writer does
            f.create_dataset("grad/" + n, data=grads[n], compression="gzip" if big else None)
    print("wrote %s: %s = %.6f, %d gradients" % (os.path.relpath(path, ROOT), spec, float(metric), len(grads)))
    return {"name": name, "model": model_rel, "prompts": [list(map(int, p)) for p in prompts], "metric": spec,
            "padding_side": "left", "file": "golden/grad/" + name + ".h5",
            "layers": sorted(layers) if layers is not None else None}


def attribution_case(torch, model, tok, model_rel):
    """Attribution patching in torch: (a_clean - a_corrupted) . d metric / d a_corrupted per cell
    (layer, position) of resid_pre, attn_out and ffn_out, and per (layer, position, head) of
    attn.z; the metric taken on the corrupted run."""
    clean = tok(PATCH_CLEAN, add_special_tokens=False)["input_ids"]
    corrupted = tok(PATCH_CORRUPTED, add_special_tokens=False)["input_ids"]
    assert len(clean) == len(corrupted)
    acts = {}
    for name, ids in (("clean", clean), ("corrupted", corrupted)):
        with Retain(torch, model) as r:
            out = model(input_ids=torch.tensor([ids]), use_cache=False)
            if name == "corrupted":
                top = torch.argsort(out.logits[0, -1], descending=True, stable=True)[:2].tolist()
                spec = "logit_diff:pos=-1:%d,%d" % (top[0], top[1])
                metric_of(torch, spec, out.logits, [ids], [len(ids)]).backward()
                grads = r.grads()
            acts[name] = {n: layout(t).detach().float().numpy() for n, (t, layout) in r.kept.items()}
    L = len(model.model.layers)
    est = {site: [[float(v) for v in ((acts["clean"]["layers.%d.%s" % (l, site)] -
                                        acts["corrupted"]["layers.%d.%s" % (l, site)]) *
                                       grads["layers.%d.%s" % (l, site)])[0].astype("float64").sum(-1)]
                   for l in range(L)] for site in ("resid_pre", "attn_out", "ffn_out")}
    # attn.z per head: summed over hd only, [L, T, H]
    est["attn.z"] = [((acts["clean"]["layers.%d.attn.z" % l] - acts["corrupted"]["layers.%d.attn.z" % l]) *
                      grads["layers.%d.attn.z" % l])[0].astype("float64").sum(-1).tolist() for l in range(L)]
    path = os.path.join(OUT, "attribution-patching-tiny-qwen2.json")
    with open(path, "w") as f:
        json.dump({"model": model_rel, "clean": clean, "corrupted": corrupted, "metric": spec,
                   "made_by": "golden/make_grad_refs.py: HF (float64, eager) + torch autograd",
                   "estimate": est}, f, indent=1)
        f.write("\n")
    print("wrote %s: %s" % (os.path.relpath(path, ROOT), spec))


def main():
    import h5py
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    manifest = []
    for name, rel, texts, spec in TINY_CASES:
        path = os.path.join(ROOT, rel)
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64, attn_implementation="eager").eval()
        model.requires_grad_(False)
        prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        manifest.append(make_case(torch, h5py, np, model, name, prompts, spec, model_rel=rel))
        if name == "tiny-qwen2-logit-diff":
            attribution_case(torch, model, tok, rel)
    if os.path.isfile(args.model):
        d, f = os.path.split(os.path.abspath(args.model))
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float64,
                                                     attn_implementation="eager").eval()
        model.requires_grad_(False)
        ids = tok(SMOLLM2_PROMPT, add_special_tokens=False)["input_ids"]
        paris, rome = (tok(" Paris", add_special_tokens=False)["input_ids"], tok(" Rome", add_special_tokens=False)["input_ids"])
        assert len(paris) == 1 and len(rome) == 1
        rel = os.path.relpath(os.path.abspath(args.model), ROOT)
        manifest.append(make_case(torch, h5py, np, model, "smollm2-logit-diff", [ids],
                                  "logit_diff:pos=-1:%d,%d" % (paris[0], rome[0]), SMOLLM2_LAYERS, rel))
    else:
        print("%s is absent (scripts/fetch-model.sh fetches it): no SmolLM2 case" % args.model)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
