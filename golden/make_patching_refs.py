#!/usr/bin/env python3
"""Makes golden/patching/: activation patching and attribution patching sweeps written in torch,
the references of lmscope-patch's wider sites and metrics (lib/experiments/patching.h,
docs/gradients.md "Attribution patching"; tests/intervene/patch_cli_test.cpp checks them).

  /work/venv-golden/bin/python golden/make_patching_refs.py

Hugging Face's own model in float64 with eager attention. Activation patching: the corrupted
prompt runs once per cell with that cell of the clean run written over it by a torch hook
(one head of attn.q / attn.v / attn.probs at every position, one position of attn.z / resid_pre,
one FFN neuron of ffn.act at every position), and the metric is read from its logits.
Attribution patching: per cell, sum of (a_clean - a_corrupted) * d metric / d a_corrupted, the
gradient by torch autograd on the corrupted run (make_grad_refs.Retain). The metrics are
make_grad_refs.metric_of's (lmscope's grammar, lib/grad/metric.h).
"""

import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "patching")
sys.path.insert(0, HERE)
import make_grad_refs as grad_refs  # noqa: E402  (Retain, metric_of)

SMOLLM2 = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_CLEAN = "The Eiffel Tower is in the city of"     # lesson 17's pair
SMOLLM2_CORRUPTED = "The Colosseum is in the city of"

# name, model (a directory, or a GGUF file that transformers dequantizes), clean and corrupted
# prompts, metric ("TOP1" is the corrupted run's likeliest next token, "PARIS" the id of
# " Paris"), sites (lmscope-patch --sites: SITE or SITE:AXIS)
CASES = [
    ("tiny-qwen2-logprob", "golden/models/tiny-qwen2", grad_refs.PATCH_CLEAN, grad_refs.PATCH_CORRUPTED,
     "logprob:pos=-1:TOP1", ["attn.q", "attn.v", "attn.probs", "attn.z:pos", "ffn.act:neuron=0:8"]),
    ("tiny-qwen2-loss", "golden/models/tiny-qwen2", grad_refs.PATCH_CLEAN, grad_refs.PATCH_CORRUPTED,
     "loss::", ["resid_pre", "attn.probs", "ffn.act:neuron=0:8"]),
    ("smollm2-logprob", SMOLLM2, SMOLLM2_CLEAN, SMOLLM2_CORRUPTED,
     "logprob:pos=-1:PARIS", ["attn.probs", "attn.v", "ffn.act:neuron=0:4"]),
]


class Patcher:
    """Hooks at every layer of an HF Llama/Qwen2 model that hand each swept tensor, in the layout
    the module makes it, to `self.edit(name, layer, tensor)`: capture (the clean run) or
    overwrite one cell (a patched run)."""

    def __init__(self, torch, model):
        self.torch, self.model = torch, model
        self.handles, self.patches, self.current = [], [], []
        self.edit = lambda name, layer, t: t

    def __enter__(self):
        torch = self.torch
        for i, layer in enumerate(self.model.model.layers):
            attn, mlp = layer.self_attn, layer.mlp
            reg = self.handles.append

            def pre_layer(mod, args, kwargs, i=i):
                self.current.append(i)
                if "hidden_states" in kwargs:
                    kwargs["hidden_states"] = self.edit("resid_pre", i, kwargs["hidden_states"])
                    return args, kwargs
                return (self.edit("resid_pre", i, args[0]),) + tuple(args[1:]), kwargs

            def post_layer(mod, args, kwargs, out):
                self.current.pop()
            reg(layer.register_forward_pre_hook(pre_layer, with_kwargs=True))
            reg(layer.register_forward_hook(post_layer, with_kwargs=True))
            for n in ("q", "v"):   # [B,T,X*hd]
                reg(getattr(attn, n + "_proj").register_forward_hook(
                    lambda mod, a, o, n=n, i=i: self.edit("attn." + n, i, o)))
            reg(attn.o_proj.register_forward_pre_hook(lambda mod, a, i=i: (self.edit("attn.z", i, a[0]),)))
            reg(mlp.down_proj.register_forward_pre_hook(lambda mod, a, i=i: (self.edit("ffn.act", i, a[0]),)))
        modeling = sys.modules[type(self.model.model.layers[0].self_attn).__module__]
        orig_attn = modeling.eager_attention_forward
        cap = self

        def eager_attention_forward(module, *args, **kwargs):
            orig_softmax = torch.nn.functional.softmax

            def softmax(inp, dim=-1, dtype=None, **kw):   # float64 throughout, then the edit
                return cap.edit("attn.probs", cap.current[-1], orig_softmax(inp, dim=dim, **kw))
            torch.nn.functional.softmax = softmax
            try:
                return orig_attn(module, *args, **kwargs)
            finally:
                torch.nn.functional.softmax = orig_softmax
        self.patches.append((modeling, "eager_attention_forward", orig_attn))
        modeling.eager_attention_forward = eager_attention_forward
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        for obj, attr, orig in self.patches:
            setattr(obj, attr, orig)
        return False


def cell_index(hook, axis, c, hd):
    """The slice of the module's tensor that is cell c: heads are hd columns of [B,T,X*hd] (q,
    v, z) or axis 1 of [B,H,T,S] (probs); positions axis 1 of [B,T,...] or axis 2 of probs."""
    full = slice(None)
    if hook == "attn.probs":
        return (full, c) if axis == "head" else (full, full, c)
    if axis == "head":
        return (full, full, slice(c * hd, (c + 1) * hd))
    if axis == "neuron":
        return (full, full, c)
    return (full, c)


def parse_site(site, cfg, T):
    """(hook, axis, columns) as lmscope-patch reads --sites."""
    hook, _, axis = site.partition(":")
    if axis.startswith("neuron="):
        a, b = axis[7:].split(":")
        return hook, "neuron", list(range(int(a), int(b)))
    if not axis:
        axis = "head" if hook.startswith("attn.") and hook != "attn.z:pos" else "pos"
    heads = cfg.num_key_value_heads if hook == "attn.v" else cfg.num_attention_heads
    return hook, axis, list(range(heads if axis == "head" else T))


def axis_of(hook, axis):
    """The axis of lmscope's layout (docs/hooks.md) that a cell runs along."""
    layouts = {"resid_pre": "BTD", "attn.q": "BHTd", "attn.v": "BHTd", "attn.probs": "BHTS",
               "attn.z": "BTHd", "ffn.act": "BTF"}
    return layouts[hook].index({"pos": "T", "head": "H", "neuron": "F"}[axis])


# Path patching (lmscope-patch --path-to, lib/experiments/path_patching.h): the tiny-qwen2 pair,
# the first case's metric, every sender head of layers 0-1 into one receiver head's input.
PATH_CASE = ("tiny-qwen2-path", "golden/models/tiny-qwen2", "logprob:pos=-1:TOP1",
             [("attn.q", 2, 1), ("attn.v", 2, 0)])


def path_case(torch, model, tok, name, rel, spec, receivers):
    """For each sender head (layer < the receiver's): (1) the corrupted run with the sender's
    attn.z from the clean run and every head of the layers between frozen at its corrupted value
    (MLPs recomputed), keeping the receiver's q/v input; (2) the corrupted run with only the
    receiver head's input from (1); the metric of (2)."""
    clean, corrupted = (tok(t, add_special_tokens=False)["input_ids"]
                        for t in (grad_refs.PATCH_CLEAN, grad_refs.PATCH_CORRUPTED))
    cfg = model.config
    hd = cfg.hidden_size // cfg.num_attention_heads
    with torch.no_grad():
        top = torch.argsort(model(input_ids=torch.tensor([corrupted]), use_cache=False).logits[0, -1],
                            descending=True, stable=True)[:1].tolist()
    spec = spec.replace("TOP1", str(top[0]))
    z = {}
    out = {}
    with Patcher(torch, model) as p, torch.no_grad():
        def run(ids):
            return model(input_ids=torch.tensor([ids]), use_cache=False).logits
        for which, ids in (("clean", clean), ("corrupted", corrupted)):
            def capture(hook, layer, t, which=which):
                if hook == "attn.z":
                    z[(which, layer)] = t.clone()
                return t
            p.edit = capture
            run(ids)
        for hook, rl, rh in receivers:
            grid = []
            for sl in range(rl):
                row = []
                for sh in range(cfg.num_attention_heads):
                    kept = {}
                    cols = cell_index("attn.z", "head", sh, hd)

                    def step1(h, l, t, sl=sl, cols=cols, hook=hook, rl=rl, kept=kept):
                        if h == "attn.z" and l == sl:
                            t = t.clone()
                            t[cols] = z[("clean", sl)][cols]
                        elif h == "attn.z" and sl < l < rl:
                            t = z[("corrupted", l)].clone()
                        elif h == hook and l == rl:
                            kept["input"] = t.clone()
                        return t
                    p.edit = step1
                    run(corrupted)
                    rcols = cell_index(hook, "head", rh, hd)

                    def step2(h, l, t, hook=hook, rl=rl, rcols=rcols, kept=kept):
                        if h == hook and l == rl:
                            t = t.clone()
                            t[rcols] = kept["input"][rcols]
                        return t
                    p.edit = step2
                    row.append(float(grad_refs.metric_of(torch, spec, run(corrupted), [corrupted], [len(corrupted)])))
                grid.append(row)
            out["layers.%d.%s[head=%d]" % (rl, hook, rh)] = grid
        p.edit = lambda h, l, t: t
        clean_metric = float(grad_refs.metric_of(torch, spec, run(clean), [clean], [len(clean)]))
        corrupted_logits = run(corrupted)
        corrupt_metric = float(grad_refs.metric_of(torch, spec, corrupted_logits, [corrupted], [len(corrupted)]))
    path = os.path.join(OUT, name + ".json")
    with open(path, "w") as f:
        json.dump({"model": rel, "clean": clean, "corrupted": corrupted, "metric": spec,
                   "clean_metric": clean_metric, "corrupt_metric": corrupt_metric,
                   "logit_scale": float(corrupted_logits.abs().max()),
                   "made_by": "golden/make_patching_refs.py: HF (float64, eager), torch hooks",
                   "receivers": out}, f, indent=1)
        f.write("\n")
    print("wrote %s: %s" % (os.path.relpath(path, ROOT), spec))


def make_case(torch, np, model, tok, name, rel, texts, spec, sites):
    clean, corrupted = (tok(t, add_special_tokens=False)["input_ids"] for t in texts)
    assert len(clean) == len(corrupted), name
    T, cfg = len(clean), model.config
    hd = cfg.hidden_size // cfg.num_attention_heads
    L = cfg.num_hidden_layers

    def logits_of(ids):
        with torch.no_grad():
            return model(input_ids=torch.tensor([ids]), use_cache=False).logits

    with torch.no_grad():
        corrupted_logits = model(input_ids=torch.tensor([corrupted]), use_cache=False).logits
    top = torch.argsort(corrupted_logits[0, -1], descending=True, stable=True)[:1].tolist()
    paris = tok(" Paris", add_special_tokens=False)["input_ids"]
    spec = spec.replace("TOP1", str(top[0])).replace("PARIS", str(paris[0]))
    # max |logit| of the corrupted run: what the logits tolerance of a patched metric scales by
    logit_scale = float(corrupted_logits.abs().max())

    def metric(logits, ids):
        return float(grad_refs.metric_of(torch, spec, logits, [ids], [len(ids)]))

    kept = {}
    with Patcher(torch, model) as p:
        def capture(hook, layer, t):
            kept[(hook, layer)] = t.detach().clone()
            return t
        p.edit = capture
        clean_metric = metric(logits_of(clean), clean)
        p.edit = lambda hook, layer, t: t
        corrupt_metric = metric(logits_of(corrupted), corrupted)
        out = {}
        for site in sites:
            hook, axis, cols = parse_site(site, cfg, T)
            grid = []
            for layer in range(L):
                row = []
                for c in cols:
                    idx = cell_index(hook, axis, c, hd)

                    def patch(h, l, t, hook=hook, layer=layer, idx=idx):
                        if h != hook or l != layer:
                            return t
                        t = t.clone()
                        t[idx] = kept[(hook, layer)][idx]
                        return t
                    p.edit = patch
                    row.append(metric(logits_of(corrupted), corrupted))
                grid.append(row)
            out[site] = {"patched": grid}
            p.edit = lambda hook, layer, t: t

    # attribution: lmscope's layouts (make_grad_refs.Retain), autograd on the corrupted run
    acts = {}
    for which, ids in (("clean", clean), ("corrupted", corrupted)):
        with grad_refs.Retain(torch, model) as r:
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits
            if which == "corrupted":
                grad_refs.metric_of(torch, spec, logits, [ids], [len(ids)]).backward()
                grads = r.grads()
            acts[which] = {n: layout(t).detach().numpy() for n, (t, layout) in r.kept.items()}
    for site in sites:
        hook, axis, cols = parse_site(site, cfg, T)
        k = axis_of(hook, axis)
        grid = []
        for layer in range(L):
            n = "layers.%d.%s" % (layer, hook)
            prod = (acts["clean"][n] - acts["corrupted"][n]) * grads[n].astype(np.float64)
            sums = np.moveaxis(prod, k, 0).reshape(prod.shape[k], -1).sum(-1)
            grid.append([float(sums[c]) for c in cols])
        out[site]["attribution"] = grid
    path = os.path.join(OUT, name + ".json")
    with open(path, "w") as f:
        json.dump({"model": rel, "clean": clean, "corrupted": corrupted, "metric": spec,
                   "clean_metric": clean_metric, "corrupt_metric": corrupt_metric, "logit_scale": logit_scale,
                   "made_by": "golden/make_patching_refs.py: HF (float64, eager), torch hooks and autograd",
                   "sites": out}, f, indent=1)
        f.write("\n")
    print("wrote %s: %s, clean %.6f, corrupted %.6f" % (os.path.relpath(path, ROOT), spec, clean_metric, corrupt_metric))


def main():
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for name, rel, clean, corrupted, spec, sites in CASES:
        path = os.path.join(ROOT, rel)
        if not os.path.exists(path):
            print("%s is absent (scripts/fetch-model.sh fetches it): no %s case" % (rel, name))
            continue
        if os.path.isfile(path):   # a GGUF file: transformers dequantizes it (the values lmscope multiplies)
            d, f = os.path.split(path)
            tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
            model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float64, attn_implementation="eager")
        else:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64, attn_implementation="eager")
        model.eval().requires_grad_(False)
        make_case(torch, np, model, tok, name, rel, (clean, corrupted), spec, sites)
        if name == "tiny-qwen2-logprob":
            path_case(torch, model, tok, PATH_CASE[0], PATH_CASE[1], PATH_CASE[2], PATH_CASE[3])


if __name__ == "__main__":
    sys.exit(main())
