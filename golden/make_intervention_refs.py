#!/usr/bin/env python3
"""Hugging Face references for interventions (tests/intervene/intervention_golden_test.cpp),
written to golden/interventions/.

  venv/bin/python golden/make_intervention_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Each case is a list of interventions in lmscope's grammar (docs/interventions.md), a prompt or a
left-padded batch, greedy generation with and without the cache. HF transformers runs it with
torch hooks editing the same sites, written here independently of lmscope's C++:

  embed                       forward hook on model.embed_tokens (its output)
  layers.L.resid_pre          forward pre-hook on decoder layer L, in place on its input (the
                              layer keeps that tensor as its residual)
  layers.L.resid_mid          forward pre-hook on post_attention_layernorm, in place (the
                              residual it is added back to is the same tensor)
  layers.L.resid_post         forward hook on decoder layer L (its output)
  attn.q / attn.k / attn.v    forward hooks on q_proj / k_proj / v_proj (before RoPE; k and v
                              go into the cache edited, as lmscope's do)
  attn.q_rope / attn.k_rope   the modeling module's apply_rotary_pos_emb wrapped (its outputs)
  attn.probs                  the modeling module's eager_attention_forward wrapped: its
                              weights edited, the output made again as weights @ repeat_kv(v)
  attn.scores                 the same wrapper computing eager attention itself: the scores
                              q·k·scaling + mask edited, their softmax taken over the keys the
                              mask leaves visible (a query that sees none: zeros), as
                              docs/interventions.md says an edited score is read
  attn.z                      forward pre-hook on o_proj (its input, heads side by side)
  attn_out                    forward hook on self_attn (its first output)
  attn_norm / ffn_norm        forward hooks on input_layernorm / post_attention_layernorm
  ffn.gate / ffn.up           forward hooks on mlp.gate_proj / mlp.up_proj
  ffn.act                     forward pre-hook on mlp.down_proj (its input)
  ffn_out                     forward hook on mlp (its output)
  final_norm                  forward hook on model.norm (its output)

A token's position comes from the 2-D attention mask HF passes to the model (cumsum - 1, as
generate's position ids); pad columns are never edited; a token's step is 0 for the prompt, else
position - prompt length + 1. `mean` without a reference is each row's mean over its prompt
positions at the prefill, kept for later steps; `mean(ref.h5)`, `patch(src.h5)` and
`add(c, a.h5 - b.h5)` read HF's own activations from the committed HF goldens (golden/traces,
made by tools/lmscope-hf-trace): patch takes the source row's value at the same position (the
source's prompt only), mean the mean over every row's prompt positions of step 0, add the
difference at row 0's last prompt position.

Written per case and cache setting: HF's generated ids and per step and row the top 32 logits
of the last position (ids and values) and the scale (max |logit| of that row), for the logits
tolerance of docs/tolerances.md. Deterministic: eager attention, float32, CPU, one thread.
Needs golden/requirements.txt (torch, transformers, h5py; gguf + accelerate for SmolLM2).
"""
import json
import os
import re
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gguf_common import ROOT, arg_parser

OUT = os.path.join(ROOT, "golden", "interventions")
TOP = 32
NEW = 4

PROMPT_A = [330, 749, 537, 264, 935, 314, 267, 681, 289, 295, 16]      # golden/traces tiny-*-a
PROMPT_A2 = [330, 749, 537, 264, 935, 314, 267, 681, 42, 295, 16]      # the same length, one token changed
PROMPTS_B = [[42, 308, 333, 746, 3], [43, 392, 346, 287, 382, 962, 676, 3],
             [559, 642, 70, 781, 14, 274, 377, 271, 373, 260, 387, 274]]   # golden/traces tiny-qwen2-b
QA, QB = "golden/traces/tiny-qwen2-a.h5", "golden/traces/tiny-qwen2-b.h5"
VEC_D64 = "golden/interventions/vec-d64.json"
VEC_HD16 = "golden/interventions/vec-hd16.json"
VEC_D576 = "golden/interventions/vec-d576.json"

TINY_QWEN2_CASES = [
    # name, interventions, prompts
    ("z-head-zero", ["layers.1.attn.z[head=2]=zero"], [PROMPT_A]),
    ("act-neurons-zero", ["layers.0.ffn.act[neuron=5|17|100:120]=zero"], [PROMPT_A]),
    ("resid-pre-scale", ["layers.1.resid_pre=scale(0.5)"], [PROMPT_A]),
    ("resid-mid-add-file", [f"layers.2.resid_mid[pos=2:5]=add(3, {VEC_D64})"], [PROMPT_A]),
    ("attn-out-mean", ["layers.1.attn_out=mean"], [PROMPT_A]),
    ("ffn-out-mean-ref", [f"layers.0.ffn_out=mean({QB})"], [PROMPT_A]),
    ("resid-post-patch", [f"layers.1.resid_post[pos=3:9]=patch({QA})"], [PROMPT_A2]),
    ("z-patch-all-layers", [f"layers.*.attn.z[head=1]=patch({QA})"], [PROMPT_A2]),
    ("k-zero", ["layers.0.attn.k[head=1,pos=2]=zero"], [PROMPT_A]),
    ("v-scale", ["layers.1.attn.v[pos=0:3]=scale(2)"], [PROMPT_A]),
    ("q-scale", ["layers.2.attn.q[head=0]=scale(-1)"], [PROMPT_A]),
    ("k-rope-patch", [f"layers.0.attn.k_rope[head=0]=patch({QA})"], [PROMPT_A2]),
    ("q-rope-zero", ["layers.1.attn.q_rope[head=3]=zero"], [PROMPT_A]),
    ("probs-key-zero", ["layers.1.attn.probs[head=1,key=0]=zero"], [PROMPT_A]),
    ("probs-scale", ["layers.2.attn.probs[head=0,key=1:3]=scale(3)"], [PROMPT_A]),
    ("embed-zero", ["embed[pos=4]=zero"], [PROMPT_A]),
    ("steer-generated", [f"layers.2.resid_pre[step=1:]=add(2, {QA} - {QB})"], [PROMPT_A]),
    ("z-head-add-file", [f"layers.0.attn.z[head=0|3]=add(-1.5, {VEC_HD16})"], [PROMPT_A]),
    ("two-edits", ["layers.0.attn.z[head=1]=zero", "layers.2.ffn.act[pos=-1]=scale(0)"], [PROMPT_A]),
    # left-padded batch: every row edited at its own positions
    ("batch-z-last", ["layers.1.attn.z[head=2,pos=-1]=zero"], PROMPTS_B),
    ("batch-row-add", [f"layers.1.resid_post[row=1,pos=1:3]=add(2, {VEC_D64})"], PROMPTS_B),
    ("batch-k-first", ["layers.0.attn.k[pos=0]=zero"], PROMPTS_B),
    ("batch-attn-out-mean", ["layers.1.attn_out=mean"], PROMPTS_B),
    ("batch-probs", ["layers.0.attn.probs[key=-1]=zero"], PROMPTS_B),
    # the hooks editable since the hook table's `editable` column (docs/hooks.md)
    ("attn-norm-scale", ["layers.1.attn_norm[pos=2:6]=scale(0.5)"], [PROMPT_A]),
    ("ffn-norm-zero", ["layers.0.ffn_norm[pos=-1]=zero"], [PROMPT_A]),
    ("gate-neurons-zero", ["layers.1.ffn.gate[neuron=0:40]=zero"], [PROMPT_A]),
    ("up-scale", ["layers.2.ffn.up=scale(-1)"], [PROMPT_A]),
    ("final-norm-scale", ["final_norm[pos=-1]=scale(0.5)"], [PROMPT_A]),
    ("scores-head-zero", ["layers.1.attn.scores[head=2]=zero"], [PROMPT_A]),
    ("batch-scores-key", ["layers.0.attn.scores[key=0]=scale(2)"], PROMPTS_B),
]
TINY_LLAMA_CASES = [
    ("z-head-zero", ["layers.1.attn.z[head=2]=zero"], [PROMPT_A]),
    ("act-neurons-mean", ["layers.2.ffn.act[neuron=0:50]=mean"], [PROMPT_A]),
    ("k-rope-zero", ["layers.0.attn.k_rope[pos=1:4]=zero"], [PROMPT_A]),
    ("resid-add-batch", [f"layers.1.resid_pre[pos=-2]=add(5, golden/interventions/vec-d96.json)"], PROMPTS_B),
]
SMOLLM2_CASES = [
    ("z-heads-zero", ["layers.2.attn.z[head=0|4]=zero"]),
    ("act-neurons-zero", ["layers.10.ffn.act[neuron=0:200,pos=-3:]=zero"]),
    ("steer-add", [f"layers.6.resid_post=add(40, {VEC_D576})"]),
    ("attn-out-mean", ["layers.0:3.attn_out=mean"]),
    ("probs-bos", ["layers.5.attn.probs[key=0]=scale(0.5)"]),
    ("batch-z-last", ["layers.3.attn.z[head=1,pos=-1]=zero", "layers.20.ffn_out[pos=-1]=scale(3)"], "batch"),
]

SITES = {"embed": "embed", "resid_pre": "resid_pre", "resid_mid": "resid_mid", "resid_post": "resid_post",
         "attn.q": "q", "attn.k": "k", "attn.v": "v", "attn.q_rope": "q_rope", "attn.k_rope": "k_rope",
         "attn.probs": "probs", "attn.z": "z", "attn_out": "attn_out", "ffn.act": "act", "ffn_out": "ffn_out",
         "attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "ffn.gate": "gate", "ffn.up": "up", "attn.scores": "scores"}
GLOBAL_SITES = ("embed", "final_norm")
TRACE_PATH = {"embed": "embed", "resid_pre": "layers/{L}/resid_pre", "resid_mid": "layers/{L}/resid_mid",
              "resid_post": "layers/{L}/resid_post", "q": "layers/{L}/attn/q", "k": "layers/{L}/attn/k",
              "v": "layers/{L}/attn/v", "q_rope": "layers/{L}/attn/q_rope", "k_rope": "layers/{L}/attn/k_rope",
              "probs": "layers/{L}/attn/probs", "z": "layers/{L}/attn/z", "attn_out": "layers/{L}/attn_out",
              "act": "layers/{L}/ffn/act", "ffn_out": "layers/{L}/ffn_out"}


# ---- the grammar, read independently of lmscope's C++ -------------------------------------
class Index:
    """A selector: half-open ranges, negative bounds counting from the axis end n."""

    def __init__(self, text):
        self.ranges = []
        if text is None:
            return
        for item in text.split("|"):
            if ":" in item:
                a, b = item.split(":")
                self.ranges.append((int(a) if a else 0, int(b) if b else None))
            else:
                self.ranges.append((int(item), int(item) + 1))

    def has(self, i, n):
        if not self.ranges:
            return True
        for a, b in self.ranges:
            if b is not None and (b < 0 or (b == 0 and a < 0)):
                b += n
            if a < 0:
                a += n
            if i >= a and (b is None or i < b):
                return True
        return False


class Spec:
    def __init__(self, text):
        m = re.fullmatch(r"(embed|final_norm|layers\.([^.]+)\.([a-z_.]+))(?:\[(.*)\])?=(\w+)(?:\((.*)\))?", text)
        if not m:
            raise ValueError(text)
        self.text = text
        self.site = m.group(1) if m.group(1) in GLOBAL_SITES else SITES[m.group(3)]
        layers = m.group(2)
        self.layers = Index(None if layers in (None, "*") else layers)
        sel = dict(kv.split("=") for kv in m.group(4).split(",")) if m.group(4) else {}
        self.sel = {k: Index(sel.get(k)) for k in ("head", "pos", "row", "step", "neuron", "key")}
        self.op, args = m.group(5), m.group(6)
        self.c, self.vec, self.source, self.minus = 1.0, None, None, None
        if self.op == "scale":
            self.c = float(args)
        elif self.op in ("patch", "mean") and args:
            self.source = args.strip()
        elif self.op == "add":
            c, what = args.split(",", 1)
            self.c, what = float(c), what.strip()
            if " - " in what:
                self.source, self.minus = [w.strip() for w in what.split(" - ")]
            elif what.endswith(".h5"):
                self.source = what
            else:
                with open(os.path.join(ROOT, what), encoding="utf-8") as f:
                    self.vec = json.load(f)


def read_source(path, site, layer):
    """step 0 of an HF golden trace as [B, T, rest...] float32, with each row's prompt length
    and first column (left padding)."""
    import h5py
    import numpy as np
    import torch
    with h5py.File(os.path.join(ROOT, path), "r") as f:
        ds = f["step_0000/" + TRACE_PATH[site].format(L=layer)]
        axes = ds.attrs["axes"]
        axes = (axes.decode() if isinstance(axes, bytes) else str(axes)).split(",")
        x = torch.from_numpy(np.asarray(ds[...], dtype=np.float32))
        x = x.movedim(axes.index("T"), 1)
        prompts = json.loads(f.attrs["prompts"])
    T = x.shape[1]
    return x, [len(p) for p in prompts], [T - len(p) for p in prompts]


# ---- the edits -----------------------------------------------------------------------------
class Editor:
    def __init__(self, specs, prompt_lens, cfg):
        import torch
        self.specs, self.prompt_lens, self.cfg = specs, prompt_lens, cfg
        self.ctx = None          # (real [B,T] bool, pos [B,T] long, key_pos [B,S] long)
        self.own_mean = {}       # (spec index, layer, row) -> rest tensor
        self.src = {}
        for i, s in enumerate(specs):
            if s.source and s.op == "patch":
                continue
            if s.source:                 # mean(ref) or add(c, a - b): per layer, one rest tensor
                for L in range(cfg.num_hidden_layers if s.site not in GLOBAL_SITES else 1):
                    if s.site not in GLOBAL_SITES and not s.layers.has(L, cfg.num_hidden_layers):
                        continue
                    x, lens, first = read_source(s.source, s.site, L)
                    if s.op == "mean":
                        rows = [x[b, first[b] + p] for b in range(len(lens)) for p in range(lens[b])]
                        self.src[(i, L)] = torch.stack(rows).mean(0)
                    else:
                        v = x[0, first[0] + lens[0] - 1].clone()
                        if s.minus:
                            y, ylens, yfirst = read_source(s.minus, s.site, L)
                            v = v - y[0, yfirst[0] + ylens[0] - 1]
                        self.src[(i, L)] = v

    def begin_forward(self, mask2d, position_ids, T):
        import torch
        if mask2d is None:    # HF drops an all-ones mask: every column real, positions 0..S-1
            B, S = position_ids.shape[0], int(position_ids.max()) + 1
            mask2d = torch.ones(B, S, dtype=torch.long)
        mask = mask2d.long()
        S = mask.shape[1]
        cum = mask.cumsum(-1) - 1
        self.ctx = (mask[:, S - T:] == 1, cum[:, S - T:], torch.where(mask == 1, cum, torch.full_like(cum, -1)))

    def edits(self, site, layer):
        return any(s.site == site and s.layers.has(layer, self.cfg.num_hidden_layers) for s in self.specs)

    def edit(self, site, layer, x):
        """x: a [B, T, rest...] view of the tensor at the site, edited in place."""
        import torch
        real, pos, key_pos = self.ctx
        B, T = x.shape[0], x.shape[1]
        lk = 0 if site in GLOBAL_SITES else layer     # the key of per-layer source values
        for i, s in enumerate(self.specs):
            if s.site != site or (site not in GLOBAL_SITES and not s.layers.has(layer, self.cfg.num_hidden_layers)):
                continue
            rest = torch.ones(x.shape[2:], dtype=torch.bool)
            if site in ("q", "k", "v", "q_rope", "k_rope", "z", "probs", "scores"):
                heads = x.shape[2]
                hsel = torch.tensor([s.sel["head"].has(h, heads) for h in range(heads)])
                rest &= hsel.view(-1, *([1] * (x.dim() - 3)))
            if site in ("act", "gate", "up"):
                n = x.shape[-1]
                rest &= torch.tensor([s.sel["neuron"].has(j, n) for j in range(n)])
            src = None
            if s.op == "patch":
                src = read_source(s.source, site, layer)
            for b in range(B):
                if not s.sel["row"].has(b, B):
                    continue
                L = self.prompt_lens[b]
                if s.op == "mean" and not s.source and (i, layer, b) not in self.own_mean:
                    sel = [t for t in range(T) if real[b, t] and pos[b, t] < L]
                    self.own_mean[(i, layer, b)] = x[b, sel].clone().mean(0)
                for t in range(T):
                    p = int(pos[b, t])
                    if not real[b, t] or not s.sel["pos"].has(p, L):
                        continue
                    if s.sel["step"].ranges and not s.sel["step"].has(0 if p < L else p - L + 1, 1 << 40):
                        continue
                    m = rest.clone()
                    if site in ("probs", "scores"):
                        kp = key_pos[b]
                        m &= torch.tensor([bool(kp[c] >= 0 and s.sel["key"].has(int(kp[c]), L)) for c in range(len(kp))])
                    v = x[b, t]
                    if s.op == "zero":
                        new = torch.zeros_like(v)
                    elif s.op == "scale":
                        new = v * s.c
                    elif s.op == "add":
                        add = torch.tensor(s.vec, dtype=torch.float32) if s.vec is not None else self.src[(i, lk)]
                        if add.numel() == v.numel():
                            add = add.reshape(v.shape)
                        new = v + (s.c * add).to(torch.float32)
                    elif s.op == "mean":
                        new = self.src[(i, lk)] if s.source else self.own_mean[(i, layer, b)]
                    else:   # patch
                        sx, slens, sfirst = src
                        sb = 0 if sx.shape[0] == 1 else b
                        if p >= slens[sb]:
                            continue
                        new = sx[sb, sfirst[sb] + p]
                    v.copy_(torch.where(m, new.to(v.dtype), v))


def install(model, editor, modeling):
    """The hooks and wrappers of the module doc; returns a function that removes them."""
    import torch
    handles = []
    core = model.model
    cfg = model.config
    H, Hkv = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // H

    def pre_model(mod, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        T = ids.shape[1] if ids is not None else kwargs["inputs_embeds"].shape[1]
        editor.begin_forward(kwargs.get("attention_mask"), kwargs.get("position_ids"), T)
    handles.append(core.register_forward_pre_hook(pre_model, with_kwargs=True))

    def out_hook(site, layer, heads=None):
        def f(mod, args, out):
            t = out[0] if isinstance(out, tuple) else out
            editor.edit(site, layer, t.view(*t.shape[:2], heads, -1) if heads else t)
            return out
        return f

    def in_hook(site, layer, heads=None):
        def f(mod, args, kwargs):
            t = args[0] if args else kwargs["hidden_states"]
            editor.edit(site, layer, t.view(*t.shape[:2], heads, -1) if heads else t)
        return f

    handles.append(core.embed_tokens.register_forward_hook(out_hook("embed", -1)))
    for L, layer in enumerate(core.layers):
        a = layer.self_attn
        handles.append(layer.register_forward_pre_hook(in_hook("resid_pre", L), with_kwargs=True))
        handles.append(layer.post_attention_layernorm.register_forward_pre_hook(in_hook("resid_mid", L), with_kwargs=True))
        handles.append(layer.register_forward_hook(out_hook("resid_post", L)))
        handles.append(a.q_proj.register_forward_hook(out_hook("q", L, H)))
        handles.append(a.k_proj.register_forward_hook(out_hook("k", L, Hkv)))
        handles.append(a.v_proj.register_forward_hook(out_hook("v", L, Hkv)))
        handles.append(a.o_proj.register_forward_pre_hook(in_hook("z", L, H), with_kwargs=True))
        handles.append(a.register_forward_hook(out_hook("attn_out", L)))
        handles.append(layer.mlp.down_proj.register_forward_pre_hook(in_hook("act", L), with_kwargs=True))
        handles.append(layer.mlp.register_forward_hook(out_hook("ffn_out", L)))
        handles.append(layer.input_layernorm.register_forward_hook(out_hook("attn_norm", L)))
        handles.append(layer.post_attention_layernorm.register_forward_hook(out_hook("ffn_norm", L)))
        handles.append(layer.mlp.gate_proj.register_forward_hook(out_hook("gate", L)))
        handles.append(layer.mlp.up_proj.register_forward_hook(out_hook("up", L)))
    handles.append(core.norm.register_forward_hook(out_hook("final_norm", -1)))

    rope0, eager0 = modeling.apply_rotary_pos_emb, modeling.eager_attention_forward
    current = {"layer": -1}

    def rope(q, k, cos, sin, *rest, **kw):
        q2, k2 = rope0(q, k, cos, sin, *rest, **kw)
        editor.edit("q_rope", current["layer"], q2.transpose(1, 2))
        editor.edit("k_rope", current["layer"], k2.transpose(1, 2))
        return q2, k2

    def eager_edited_scores(module, query, key, value, attention_mask, scaling):
        ks = modeling.repeat_kv(key, module.num_key_value_groups)
        scores = torch.matmul(query, ks.transpose(2, 3)) * scaling + attention_mask   # [B,H,T,S]
        editor.edit("scores", module.layer_idx, scores.transpose(1, 2))
        scores = scores.masked_fill(attention_mask != 0, float("-inf"))       # the mask still decides
        w = torch.nan_to_num(torch.softmax(scores, dim=-1, dtype=torch.float32), nan=0.0).to(query.dtype)
        vs = modeling.repeat_kv(value, module.num_key_value_groups)
        return torch.matmul(w, vs).transpose(1, 2).contiguous(), w

    def eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
        if editor.edits("scores", module.layer_idx):
            out, w = eager_edited_scores(module, query, key, value, attention_mask, scaling)
        else:
            out, w = eager0(module, query, key, value, attention_mask, scaling, dropout=dropout, **kw)
        w2 = w.clone()
        editor.edit("probs", module.layer_idx, w2.transpose(1, 2))
        if torch.equal(w2, w):
            return out, w
        vs = modeling.repeat_kv(value, module.num_key_value_groups)
        return torch.matmul(w2, vs).transpose(1, 2).contiguous(), w2

    def attn_pre(mod, args, kwargs):
        current["layer"] = mod.layer_idx
    for L, layer in enumerate(core.layers):
        handles.append(layer.self_attn.register_forward_pre_hook(attn_pre, with_kwargs=True))
    modeling.apply_rotary_pos_emb, modeling.eager_attention_forward = rope, eager

    def remove():
        for h in handles:
            h.remove()
        modeling.apply_rotary_pos_emb, modeling.eager_attention_forward = rope0, eager0
    return remove


def run_case(model, modeling, specs_text, prompts, use_cache, pad_id, eos_ids):
    import torch
    specs = [Spec(t) for t in specs_text]
    P = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (P - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) for p in prompts])
    editor = Editor(specs, [len(p) for p in prompts], model.config)
    remove = install(model, editor, modeling)
    try:
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False,
                                 use_cache=use_cache, pad_token_id=pad_id, eos_token_id=eos_ids,
                                 output_logits=True, return_dict_in_generate=True)
    finally:
        remove()
    steps = []
    for lg in out.logits:                                    # [B, V] per step, raw
        rows = []
        for b in range(lg.shape[0]):
            top = torch.topk(lg[b].float(), TOP)
            rows.append({"top_ids": [int(i) for i in top.indices], "top_logits": [float(v) for v in top.values],
                         "scale": float(lg[b].abs().max())})
        steps.append(rows)
    gen = out.sequences[:, P:].tolist()
    return gen, steps


def check_hooks_bite(model, modeling, prompt, pad_id, eos_ids):
    """Every wrapped site changes the output when zeroed: a hook that silently does not fire
    would make a reference equal to the clean run."""
    import torch
    clean = run_case(model, modeling, [], [prompt], True, pad_id, eos_ids)[1][0][0]["top_logits"]
    for site in SITES:
        spec = "embed=zero" if site == "embed" else f"layers.0.{site}=scale(0.5)"
        got = run_case(model, modeling, [spec], [prompt], True, pad_id, eos_ids)[1][0][0]["top_logits"]
        if got == clean:
            sys.exit(f"{spec}: HF's output did not change: the hook does not reach the forward")


def make(model_rel, model, modeling, cases, name, pad_id, eos_ids, extra):
    import transformers
    check_hooks_bite(model, modeling, cases[0][2][0], pad_id, eos_ids)
    out = {"about": "HF references for interventions, made by golden/make_intervention_refs.py",
           "transformers": transformers.__version__, "model": model_rel, "top": TOP, "max_new_tokens": NEW,
           "pad_token_id": pad_id, "eos_token_ids": eos_ids, "cases": []}
    out.update(extra)
    for case_name, specs, prompts in cases:
        for use_cache in (True, False):
            gen, steps = run_case(model, modeling, specs, prompts, use_cache, pad_id, eos_ids)
            out["cases"].append({"name": case_name, "interventions": specs, "prompt_ids": prompts,
                                 "padding_side": "left", "use_cache": use_cache, "generated_ids": gen, "steps": steps})
            print(f"{name} {case_name} cache={use_cache}: {gen}")
    path = os.path.join(OUT, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}")


def write_vector(rel, n, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    v = (torch.randn(n, generator=g) * 0.5).tolist()
    with open(os.path.join(ROOT, rel), "w", encoding="utf-8") as f:
        json.dump([round(x, 6) for x in v], f)
        f.write("\n")


def main():
    ap = arg_parser("(not supported: regenerate and compare with git diff)", __doc__)
    args = ap.parse_args()
    import torch
    import transformers
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen2 import modeling_qwen2
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for rel, n, seed in ((VEC_D64, 64, 1), (VEC_HD16, 16, 2), ("golden/interventions/vec-d96.json", 96, 3),
                         (VEC_D576, 576, 4)):
        write_vector(rel, n, seed)

    def load(path, **kw):
        m = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager", **kw)
        m.eval()
        return m

    make("golden/models/tiny-qwen2", load(os.path.join(ROOT, "golden/models/tiny-qwen2")), modeling_qwen2,
         TINY_QWEN2_CASES, "tiny-qwen2", 0, [0], {})
    make("golden/models/tiny-llama", load(os.path.join(ROOT, "golden/models/tiny-llama")), modeling_llama,
         TINY_LLAMA_CASES, "tiny-llama", 0, [2], {})
    if not os.path.exists(args.model):
        print(f"{args.model} is missing (scripts/fetch-model.sh): SmolLM2 references skipped")
        return
    with open(os.path.join(ROOT, "golden", "smollm2", "manifest.json"), encoding="utf-8") as f:
        chats = json.load(f)["traces"]
    chat = chats[0]
    gdir, gfile = os.path.dirname(os.path.abspath(args.model)), os.path.basename(args.model)
    cases = [(c[0], c[1], [t["prompt_ids"] for t in chats] if len(c) > 2 else [chat["prompt_ids"]]) for c in SMOLLM2_CASES]
    make(f"models/{gfile}", load(gdir, gguf_file=gfile), modeling_llama, cases, "smollm2",
         chat["pad_token_id"], chat["eos_token_ids"], {"prompt_from": chat["name"]})


if __name__ == "__main__":
    main()
