#!/usr/bin/env python3
"""Hugging Face references for the logit lens (tests/golden/lens_golden_test.cpp), written to
golden/lens/ by tools/lmscope-hf-trace --lens (HF's own final norm and lm_head applied to each
decoder layer's output; see that tool's Capture._lens).

  venv/bin/python golden/make_lens_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

tiny-qwen2-lens.h5, tiny-llama-lens.h5
    golden/models/tiny-qwen2 and tiny-llama, prompt a of golden/traces (11 ids), 2 new tokens,
    greedy, cache; hooks tokens.* and lens.* (full lens logits, V = 1024, and the top 10).
smollm2-lens.h5
    SmolLM2-135M-Instruct from its GGUF file (HF dequantizes it to float32), the user message
    "What is the capital of France?" in HF's chat template (the template's own default system
    prompt, as `lmscope-lens --chat`), 6 new tokens (the 6th is " Paris"); hooks tokens.* and
    the lens top 10 (full logits would be 30 x 42 x 49152 floats). Skipped, with a line, when the
    GGUF file is absent.
manifest.json
    per trace: model, prompt ids, generated ids, K, and for SmolLM2 `lens_logits_scale`: per
    layer the largest |lens logit| over the run's positions, the `scale` of docs/tolerances.md
    for the test's logits tolerance. It is computed independently of the trace, from
    output_hidden_states of one forward over prompt + generated ids: norm(hidden_states[l+1])
    for l < 29, and hidden_states[30] as it is, since HF's last entry already has the final
    norm applied; the generator also checks that this route's top-1 ids equal the trace's at the
    prompt's last position in every layer whose top-2 gap is wider than 1e-3.

Deterministic (eager attention, float32 on CPU, one thread, torch deterministic algorithms).
Needs golden/requirements.txt (torch, transformers, h5py; gguf for SmolLM2).
"""
import json
import os
import shlex
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gguf_common import ROOT, arg_parser
from make_golden import PROMPT_A, deterministic, load_tool, write_json

OUT = os.path.join(ROOT, "golden", "lens")
K = 10
TINY = [("tiny-qwen2-lens", "golden/models/tiny-qwen2"), ("tiny-llama-lens", "golden/models/tiny-llama")]
TINY_NEW = 2
SMOLLM2_QUESTION = "What is the capital of France?"
SMOLLM2_NEW = 6


def trace(tool, model_path, model_rel, name, ids, n_new, hooks):
    out_rel = f"golden/lens/{name}.h5"
    argv = ["tools/lmscope-hf-trace", "--model", model_rel, "--prompt-ids", ",".join(map(str, ids)),
            "--max-new-tokens", str(n_new), "--hooks", hooks, "--out", out_rel]
    deterministic()
    return out_rel, tool.run_trace(model_path, [ids], os.path.join(ROOT, out_rel), max_new_tokens=n_new, hooks=hooks,
                                   command_line=shlex.join(argv), model_path=model_rel, quiet=True, lens_top_k=K)


def smollm2_scale(gguf_path, ids, out_rel):
    """Per layer max |lens logit| from output_hidden_states (see the module doc), and the check
    of its top-1 against the trace."""
    import h5py
    import torch
    import transformers
    gdir, gfile = os.path.dirname(os.path.abspath(gguf_path)), os.path.basename(gguf_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gfile, dtype=torch.float32,
                                                              attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        hs = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        n = len(hs) - 1
        scales = []
        with h5py.File(os.path.join(ROOT, out_rel), "r") as f:
            P = f["step_0000/tokens/input_ids"].shape[1]
            for l in range(n):
                h = hs[l + 1] if l == n - 1 else model.model.norm(hs[l + 1])   # the last is normed already
                z = model.lm_head(h)[0]
                scales.append(float(z.abs().max()))
                top2 = torch.topk(z[P - 1], 2)
                ours = int(f[f"step_0000/lens/layers/{l}/topk_ids"][0, P - 1, 0])
                if float(top2.values[0] - top2.values[1]) > 1e-3 and int(top2.indices[0]) != ours:
                    sys.exit(f"layer {l}: hidden_states route says {int(top2.indices[0])}, the trace {ours}")
    return scales


def main():
    ap = arg_parser("(not supported: regenerate and compare with git diff)", __doc__)
    args = ap.parse_args()
    import transformers
    tool = load_tool()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(ROOT, "golden", "traces", "manifest.json"), encoding="utf-8") as f:
        prompt_a = next(t["prompt_ids"][0] for t in json.load(f)["traces"] if t["name"] == "tiny-qwen2-a")
    manifest = {"about": "logit-lens references made by golden/make_lens_refs.py with tools/lmscope-hf-trace --lens",
                "transformers": transformers.__version__, "top_k": K, "traces": []}
    for name, model_rel in TINY:
        out_rel, s = trace(tool, os.path.join(ROOT, model_rel), model_rel, name, prompt_a, TINY_NEW, "tokens.*,lens.*")
        manifest["traces"].append({"name": name, "file": out_rel, "model": model_rel, "prompt_text": PROMPT_A,
                                   "prompt_ids": prompt_a, "max_new_tokens": TINY_NEW,
                                   "hooks": "tokens.*,lens.*", "generated_ids": s["generated_ids"][0]})
        print(f"{name}: generated {s['generated_ids'][0]}")
    if not os.path.exists(args.model):
        print(f"{args.model} is missing (scripts/fetch-model.sh): SmolLM2 lens reference skipped")
    else:
        gdir, gfile = os.path.dirname(os.path.abspath(args.model)), os.path.basename(args.model)
        tok = transformers.AutoTokenizer.from_pretrained(gdir, gguf_file=gfile)
        messages = [{"role": "user", "content": SMOLLM2_QUESTION}]
        chat = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tok(chat, add_special_tokens=False)["input_ids"]
        model_rel = f"models/{gfile}"
        hooks = "tokens.*,lens.layers.*.topk_ids,lens.layers.*.topk_probs"
        out_rel, s = trace(tool, args.model, model_rel, "smollm2-lens", ids, SMOLLM2_NEW, hooks)
        gen = s["generated_ids"][0]
        manifest["traces"].append({"name": "smollm2-lens", "file": out_rel, "model": model_rel, "messages": messages,
                                   "chat_text": chat, "prompt_ids": ids, "max_new_tokens": SMOLLM2_NEW,
                                   "hooks": hooks, "generated_ids": gen, "generated_text": tok.decode(gen),
                                   "lens_logits_scale": smollm2_scale(args.model, ids + gen[:-1], out_rel)})
        print(f"smollm2-lens: {len(ids)} prompt ids -> {tok.decode(gen)!r}")
    write_json(os.path.join(OUT, "manifest.json"), manifest)


if __name__ == "__main__":
    main()
