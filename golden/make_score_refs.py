#!/usr/bin/env python3
"""Hugging Face references for lmscope-score (tests/score), written to golden/score/.

  venv/bin/python golden/make_score_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf] [--check]

tiny-qwen2.json   golden/models/tiny-qwen2 (safetensors): two texts alone and a right-padded
                  batch of two.
smollm2.json      SmolLM2-135M-Instruct, the HF model loaded from the GGUF file itself
                  (from_pretrained(dir, gguf_file=...) dequantizes it to float32, as for
                  golden/smollm2/): two texts alone and the two as a right-padded batch.
                  Skipped (with a line) when the GGUF file is absent.

For every case: the texts, HF's ids (tokenizer(text), i.e. add_special_tokens=True, the
tokenizer's default), and what HF computes:
  loss            model(input_ids, attention_mask, labels).loss, labels = input_ids with pads
                  set to -100: cross-entropy of logits[:, :-1] against labels[:, 1:], mean over
                  the non-ignored tokens of the whole batch (transformers' ForCausalLMLoss).
  loss_f64        the same mean recomputed from HF's logits in float64 (shows how far HF's own
                  float32 reduction is from exact; it is not what the tests compare with).
  rows[b].nll[i]  cross_entropy(reduction="none") of token i+1 given tokens 0..i (float32, as HF's
                  loss computes it), for the row's real tokens; nll_f64 the same in float64.
  rows[b].argmax[i], top2_margin[i]   HF's top choice at position i and its logit lead over the
                  runner-up (the tests compare top choices only where this margin is wide).
  logits_scale    max |logit| over the real positions: the `scale` of docs/tolerances.md.

Padding is on the right: real tokens keep positions 0..n-1 (a forward without position_ids
uses column indices), and no label is predicted from a pad column.

Deterministic: eager attention, float32 on CPU, one thread. --check recomputes and compares with
the committed files (ids exactly, numbers within 1e-6).
Needs golden/requirements.txt (torch, transformers; gguf + accelerate for SmolLM2).
"""
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gguf_common import ROOT, arg_parser

OUT = os.path.join(ROOT, "golden", "score")
TINY = "golden/models/tiny-qwen2"

TINY_CASES = [
    ("tiny-qwen2-text-0", ["The golden fish spoke to the old man."]),
    ("tiny-qwen2-text-1", ["I love pizza, and the old man loves the sea."]),
    ("tiny-qwen2-batch", ["Hello world!", "The golden fish spoke to the old man."]),
]
SMOLLM2_CASES = [
    ("smollm2-text-0", ["The capital of France is Paris."]),
    ("smollm2-text-1", ["Once upon a time, a little cat loved to sleep in the warm sun."]),
    ("smollm2-batch", ["The capital of France is Paris.",
                       "Once upon a time, a little cat loved to sleep in the warm sun."]),
]


def score_case(model, tok, name, texts, pad_id, model_rel):
    import torch
    import torch.nn.functional as F

    ids = [tok(t)["input_ids"] for t in texts]   # add_special_tokens=True: the tokenizer's default
    T = max(len(r) for r in ids)
    input_ids = torch.tensor([r + [pad_id] * (T - len(r)) for r in ids])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in ids])
    labels = input_ids.masked_fill(mask == 0, -100)
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    logits = out.logits.float()                                  # [B, T, V]
    rows, total64, count, scale = [], 0.0, 0, 0.0
    for b, r in enumerate(ids):
        n = len(r)
        lg = logits[b, :n - 1]                                   # positions predicting 1..n-1
        target = torch.tensor(r[1:])
        nll = F.cross_entropy(lg, target, reduction="none")
        nll64 = F.cross_entropy(lg.double(), target, reduction="none")
        top2 = torch.topk(lg, 2, dim=-1)
        rows.append({"nll": [float(x) for x in nll], "nll_f64": [float(x) for x in nll64],
                     "argmax": [int(x) for x in top2.indices[:, 0]],
                     "top2_margin": [float(x) for x in top2.values[:, 0] - top2.values[:, 1]]})
        total64 += float(nll64.sum())
        count += n - 1
        scale = max(scale, float(logits[b, :n].abs().max()))
    return {"name": name, "model": model_rel, "texts": texts, "add_special_tokens": True,
            "padding_side": "right", "pad_id": pad_id, "ids": ids,
            "loss": float(out.loss), "loss_f64": total64 / count, "n_predicted": count,
            "logits_scale": scale, "rows": rows}


def make(model_path, tok_kwargs, model_rel, cases):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    path, kw = model_path, dict(tok_kwargs)
    tok = AutoTokenizer.from_pretrained(path, **kw)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager", **kw)
    model.eval()
    pad = model.config.pad_token_id
    if pad is None:
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return {"generator": "golden/make_score_refs.py", "transformers": transformers.__version__,
            "torch": torch.__version__, "model": model_rel,
            "cases": [score_case(model, tok, name, texts, int(pad), model_rel) for name, texts in cases]}


def compare(new, old, where=""):
    """Ids and strings exactly, numbers within 1e-6 (the versions are not compared); returns
    the differences."""
    if where in (".transformers", ".torch"):
        return []
    if isinstance(new, float) or isinstance(old, float):
        return [] if abs(float(new) - float(old)) <= 1e-6 else [f"{where}: {old} -> {new}"]
    if isinstance(new, dict) and isinstance(old, dict):
        if new.keys() != old.keys():
            return [f"{where}: keys {sorted(old)} -> {sorted(new)}"]
        return [d for k in new for d in compare(new[k], old[k], f"{where}.{k}")]
    if isinstance(new, list) and isinstance(old, list):
        if len(new) != len(old):
            return [f"{where}: length {len(old)} -> {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(new, old)) for d in compare(a, b, f"{where}[{i}]")]
    return [] if new == old else [f"{where}: {old!r} -> {new!r}"]


def main():
    ap = arg_parser("compare with the committed files instead of writing")
    args = ap.parse_args()
    outputs = {"tiny-qwen2.json": make(os.path.join(ROOT, TINY), {}, TINY, TINY_CASES)}
    if os.path.exists(args.model):
        d, f = os.path.split(os.path.abspath(args.model))
        outputs["smollm2.json"] = make(d, {"gguf_file": f}, f"models/{f}", SMOLLM2_CASES)
    else:
        print(f"{args.model} is missing: smollm2.json not made (scripts/fetch-model.sh fetches it)")
    bad = False
    os.makedirs(OUT, exist_ok=True)
    for fname, data in outputs.items():
        path = os.path.join(OUT, fname)
        for c in data["cases"]:
            print(f"{fname} {c['name']}: loss {c['loss']:.7f} (f64 {c['loss_f64']:.7f}), "
                  f"{c['n_predicted']} predicted, logits scale {c['logits_scale']:.2f}")
        if args.check:
            with open(path, encoding="utf-8") as fh:
                diffs = compare(data, json.load(fh))
            for d in diffs[:20]:
                print(f"{fname}{d}")
            bad |= bool(diffs)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
