#!/usr/bin/env python3
"""Hugging Face references for lmscope's stop conditions (tests/golden/stop_golden_test.cpp),
written to golden/stop/stop_refs.json.

  venv/bin/python golden/make_stop_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf] [--check]

Every case is greedy `model.generate(input_ids, attention_mask, max_new_tokens, do_sample=False,
pad_token_id, eos_token_id, stop_strings, tokenizer)` (transformers' EosTokenCriteria and
StopStringCriteria), float32, eager attention, one thread. Recorded: the prompt ids (padded by
this script, left), the settings and the new tokens HF returned ([B, steps]; finished rows
hold the pad id). `stop_reasons`: HF's own EosTokenCriteria and StopStringCriteria run again
over the output, step by step: the first that fires for a row names its reason (eos first);
a row where neither fires ran to max_new_tokens.

tiny-qwen2 cases use golden/models/tiny-qwen2 (its tokenizer.json, byte-level BPE). SmolLM2
cases load the HF model from the GGUF file (dequantized to float32), the chat prompts made by
HF's apply_chat_template; skipped (with a line) when the GGUF file is absent.
--check recomputes and compares with the committed file (exact).
"""
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gguf_common import ROOT, arg_parser

OUT = os.path.join(ROOT, "golden", "stop", "stop_refs.json")
TINY = "golden/models/tiny-qwen2"
FISH = [330, 749, 537, 264, 935, 314, 267, 681, 289, 295, 16]   # "The golden fish spoke to the old man."
BATCH = [[42, 308, 333, 746, 3], [43, 392, 346, 287, 382, 962, 676, 3],
         [559, 642, 70, 781, 14, 274, 377, 271, 373, 260, 387, 274]]   # traces/tiny-qwen2-b's prompts

# (name, prompts as ids, stop strings, max_new_tokens, eos ids or None = the model's, note)
TINY_CASES = [
    ("tiny-split-overhang", [FISH], ["\n o"], 16, None,
     "'\\n o' spans '.\\n' and ' old' and ends inside ' old': stops after ' old' (kept)"),
    ("tiny-prompt-only", [FISH], ["golden"], 8, None,
     "'golden' is in the prompt only: never matches (a match must end in the newest token)"),
    ("tiny-two-strings", [FISH], ["zzz", "HER"], 24, None, "the second string matches"),
    ("tiny-eos-list", [FISH], [], 8, [999, 224], "eos_token_id as a list: any of them finishes the row"),
    ("tiny-batch", BATCH, ["ER", " d"], 12, None, "left-padded batch: rows stop at different steps"),
]
SMOLLM2_CASES = [
    ("smollm2-haiku-comma-newline", "Write a haiku about the sea.", [",\n"], 40,
     "',' and '\\n' are separate tokens: the string spans the boundary"),
    ("smollm2-france-overhang", "What is the capital of France?", ["Par"], 16,
     "'Par' ends inside ' Paris': the row stops after ' Paris', which is kept"),
    ("smollm2-france-eos", "What is the capital of France?", ["\n\n"], 16,
     "no blank line: the row ends on <|im_end|>, the eos id"),
]


def generate(model, prompts, stops, max_new, eos, pad, tok):
    import torch
    T = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (T - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (T - len(p)) + [1] * len(p) for p in prompts])
    kw = {"stop_strings": stops, "tokenizer": tok} if stops else {}
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False,
                             pad_token_id=pad, eos_token_id=eos, top_k=None, top_p=None, temperature=None, **kw)
    return out[:, T:].tolist()


def reasons_of(prompts, new, stops, eos, pad, tok):
    """Why each row stopped: HF's own EosTokenCriteria and StopStringCriteria run over the
    output, step by step; the first step where one fires for a row is that row's reason (eos
    first, as lmscope orders them); rows where neither fires ran to max_new_tokens."""
    import torch
    from transformers.generation.stopping_criteria import EosTokenCriteria, StopStringCriteria
    T = max(len(p) for p in prompts)
    seq = torch.tensor([[pad] * (T - len(p)) + p + r for p, r in zip(prompts, new)])
    crit_eos = EosTokenCriteria(eos_token_id=eos)
    crit_str = StopStringCriteria(tokenizer=tok, stop_strings=stops) if stops else None
    out = ["max_new_tokens"] * len(new)
    for k in range(len(new[0])):
        ids = seq[:, :T + k + 1]
        e = crit_eos(ids, None).tolist()
        st = crit_str(ids, None).tolist() if crit_str else [False] * len(new)
        for b in range(len(new)):
            if out[b] == "max_new_tokens" and (e[b] or st[b]):
                out[b] = "eos" if e[b] else "stop_string"
    return out


def run_cases(model, tok, model_rel, cases, pad, default_eos):
    res = []
    for name, prompts, stops, max_new, eos, note in cases:
        e = eos if eos is not None else default_eos
        new = generate(model, prompts, stops, max_new, e, pad, tok)
        res.append({"name": name, "note": note, "model": model_rel, "prompts": prompts, "padding_side": "left",
                    "pad_token_id": pad, "eos_token_ids": e,
                    "stop_strings": stops, "max_new_tokens": max_new, "generated": new,
                    "stop_reasons": reasons_of(prompts, new, stops, e, pad, tok),
                    "text": [tok.decode(r) for r in new]})
        print(f"{name}: {new} {res[-1]['stop_reasons']}")
    return res


def main():
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    ap = arg_parser("compare with the committed file instead of writing")
    args = ap.parse_args()

    path = os.path.join(ROOT, TINY)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    cases = run_cases(model, tok, TINY, TINY_CASES, 0, [0])

    if os.path.exists(args.model):
        d, f = os.path.split(os.path.abspath(args.model))
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32, attn_implementation="eager")
        rel = os.path.relpath(os.path.abspath(args.model), ROOT)
        smol = []
        for name, q, stops, max_new, note in SMOLLM2_CASES:
            ids = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys"):
                ids = ids["input_ids"]
            smol.append((name, [list(ids)], stops, max_new, None, note))
        cases += run_cases(model, tok, rel, smol, 2, [2])
    else:
        print(f"{args.model} is missing: SmolLM2 cases not made (scripts/fetch-model.sh fetches it)")

    data = {"generator": "golden/make_stop_refs.py", "transformers": transformers.__version__,
            "torch": torch.__version__, "cases": cases}
    if args.check:
        with open(OUT) as fh:
            old = json.load(fh)
        same = [c["generated"] for c in old["cases"]] == [c["generated"] for c in cases]
        print("same as committed" if same else "DIFFERS from the committed file")
        sys.exit(0 if same else 1)
    with open(OUT, "w") as fh:
        fh.write(json.dumps({k: v for k, v in data.items() if k != "cases"})[:-1] + ', "cases": [\n')
        fh.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        fh.write("\n]}\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
