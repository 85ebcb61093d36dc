#!/usr/bin/env python3
"""Makes the goldens on the real Qwen2 model, Qwen2.5-Coder-0.5B-Instruct Q4_K_M
(scripts/fetch-qwen2-model.sh), into golden/qwen2/:

  manifest.json   tokenization (English, Chinese, code; with and without special tokens), the
                  chat template's text and ids, and for each trace its prompts, padding, cache
                  setting and HF's greedy ids
  weights.json    for every one of the file's 291 tensors, its GGUF type, HF's name and shape,
                  and the sha256 of HF's float32 dequantization (row-major bytes) with its
                  first values: lmscope's m.weight(name) must give the same bytes
  *.h5            HF traces (tools/lmscope-hf-trace), pruned to stay small (Keep below)

  make_qwen2_golden.py [GGUF]       (default: models/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf)

Needs the pinned packages of golden/requirements.txt (torch on CPU). transformers reads the
GGUF with the gguf package, which dequantizes every block type to float32 as lmscope's exact
mode does; Qwen2's q/k are not permuted in GGUF, so HF's tensors are the file's, widened.
"""

import hashlib
import json
import os
import shlex
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_golden  # noqa: E402  (load_tool, deterministic, prune_trace, write_json)

MODEL_REL = "models/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf"
OUT_REL = "golden/qwen2"
SYSTEM = "You are a helpful assistant."   # short: Qwen's template adds a 20-token default otherwise

# Texts whose ids are checked (add_special_tokens False and True: Qwen2 adds no bos).
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "中华人民共和国成立于 1949 年。",
    "用一句话介绍北京。",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "<|im_start|>user\nHi<|im_end|>",
    "  spaces\tand\ttabs,  numbers 1234567 and émigré café ",
]
CHATS = [
    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "中华人民共和国成立于 1949 年。"}],   # no system: the template's default
    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Write a Python function that adds two numbers."},
     {"role": "assistant", "content": "def add(a, b):\n    return a + b"}, {"role": "user", "content": "Now subtract."}],
]

# What a pruned trace keeps (the rest of what HOOKS captures is dropped to stay small):
#   every step: tokens.*, mask.*, rope.* and sample.* (the greedy choice and the top-10 ids with
#     their raw logits: the logits of every step at the candidates that matter);
#   steps first..end-1: embed, final_norm, every layer's resid_post, and every hook of `layers`;
#   steps in logits_steps: the full last logits row (151,936 floats a prompt).
# layers.L.resid_pre is never kept: it is layers.(L-1).resid_post (embed for L = 0).
class Keep:
    def __init__(self, layers, first, end, logits_steps):
        self.layers, self.first, self.end, self.logits_steps = layers, first, end, logits_steps

    def __call__(self, step, hook):
        parts = hook.split(".")
        if parts[0] in ("tokens", "mask", "rope", "sample"):
            return True
        if hook == "logits":
            return step in self.logits_steps
        if not self.first <= step < self.end:
            return False
        if hook in ("embed", "final_norm") or (parts[0] == "layers" and parts[2] == "resid_post"):
            return True
        return parts[0] == "layers" and parts[2] != "resid_pre" and int(parts[1]) in self.layers

    def describe(self):
        return {"layers": list(self.layers), "steps": [self.first, self.end - 1], "logits_steps": list(self.logits_steps)}


# The traced runs: (name, kind, prompts, padding side, new tokens, use_cache, what is kept).
# kind "chat": each prompt is a conversation, rendered by HF's chat template; "text": raw text.
BATCH = ["The capital of France is", "中华人民共和国成立于", "def add(a, b):"]   # 5, 3 and 6 ids
TRACES = [
    ("qwen2-chat-en", "chat", [[{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": "What is the capital of France?"}]],
     "left", 8, True, Keep((0,), 0, 2, (0, 1))),
    ("qwen2-chat-zh", "chat", [[{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": "中华人民共和国成立于 1949 年。"}]],
     "left", 8, True, Keep((), 0, 2, (0,))),
    ("qwen2-code", "text", ["def fib(n):\n"], "left", 8, True, Keep((0, 23), 0, 2, (0, 1))),
    # a left-padded batch, with the cache and without it (whose step 0 is the same prefill, so
    # only its step 1, the whole sequence again, is kept)
    ("qwen2-batch-cache", "text", BATCH, "left", 4, True, Keep((0,), 0, 2, ())),
    ("qwen2-batch-nocache", "text", BATCH, "left", 4, False, Keep((0,), 1, 2, ())),
]
# Captured before pruning: the globals, every layer's resid_post, every hook of layers 0 and 23
# (the first and the last), the last logits row of each step, the sampling audit.
HOOKS = ",".join(["tokens.*", "embed", "mask.*", "rope.*", "final_norm", "logits", "sample.*",
                  "layers.*.resid_post", "layers.0.*", "layers.23.*"])


def tokenization(tok):
    texts = [{"text": t, "ids": tok(t, add_special_tokens=False)["input_ids"],
              "ids_special": tok(t, add_special_tokens=True)["input_ids"]} for t in TEXTS]
    chats = []
    for messages in CHATS:
        text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        chats.append({"messages": messages, "chat_text": text, "ids": tok(text, add_special_tokens=False)["input_ids"]})
    return {"texts": texts, "chats": chats}


def weights(model, gguf_path):
    """sha256 of HF's float32 dequantization of every tensor, with the GGUF type it came from."""
    import gguf
    import numpy as np
    reader = gguf.GGUFReader(gguf_path)
    gguf_type = {t.name: t.tensor_type.name for t in reader.tensors}
    # GGUF name -> HF name, the map transformers' loader used (the same tensor names lmscope uses).
    n_layers = model.config.num_hidden_layers
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, n_layers)
    state = model.state_dict()
    out = []
    for hf_name, value in state.items():
        if "rotary_emb" in hf_name:
            continue
        base, suffix = hf_name.rsplit(".", 1)
        gname = name_map.get_name(base)
        assert gname is not None, hf_name
        gname = f"{gname}.{suffix}"
        a = np.ascontiguousarray(value.detach().float().numpy())
        out.append({"hf_name": hf_name, "gguf_name": gname, "gguf_type": gguf_type[gname],
                    "shape": list(a.shape), "sha256_f32": hashlib.sha256(a.tobytes()).hexdigest(),
                    "first": [float(x) for x in a.reshape(-1)[:4]]})
    assert len(out) == len(reader.tensors), (len(out), len(reader.tensors))
    return out


def main():
    import transformers
    gguf_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(make_golden.REPO, MODEL_REL)
    if not os.path.isfile(gguf_path):
        sys.exit(f"{gguf_path} is missing: run scripts/fetch-qwen2-model.sh first")
    out_dir = os.path.join(make_golden.REPO, OUT_REL)
    os.makedirs(out_dir, exist_ok=True)
    gdir, gfile = os.path.dirname(os.path.abspath(gguf_path)), os.path.basename(gguf_path)
    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(gdir, gguf_file=gfile)

    model = transformers.AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gfile, dtype="float32")
    make_golden.write_json(os.path.join(out_dir, "weights.json"),
                           {"about": f"HF's float32 dequantization of every tensor of {MODEL_REL} "
                                     "(golden/make_qwen2_golden.py); sha256_f32 is over the row-major bytes",
                            "transformers": transformers.__version__, "weights": weights(model, gguf_path)})
    del model

    tool = make_golden.load_tool()
    manifest = {"about": f"goldens on Qwen2.5-Coder-0.5B-Instruct Q4_K_M (scripts/fetch-qwen2-model.sh), made by "
                         f"golden/make_qwen2_golden.py with tools/lmscope-hf-trace",
                "model": MODEL_REL, "hooks": HOOKS, "logits_rows": "last",
                "kept": "every step: tokens.*, mask.*, rope.*, sample.*; steps kept.steps (inclusive): embed, "
                        "final_norm, every layer's resid_post, every hook of kept.layers; steps kept.logits_steps: "
                        "the last logits row",
                "tokenization": tokenization(tok), "traces": []}
    for name, kind, prompts, side, new_tokens, use_cache, keep in TRACES:
        texts = [tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False) if kind == "chat" else p
                 for p in prompts]
        ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        out_rel = f"{OUT_REL}/{name}.h5"
        argv = ["tools/lmscope-hf-trace", "--model", MODEL_REL, "--hooks", HOOKS, "--logits-rows", "last",
                "--padding-side", side, "--max-new-tokens", str(new_tokens), "--out", out_rel]
        argv += [a for i in ids for a in ("--prompt-ids", ",".join(map(str, i)))]
        if not use_cache:
            argv.append("--no-cache")
        make_golden.deterministic()
        full = os.path.join(out_dir, name + ".full.h5")
        summary = tool.run_trace(gguf_path, ids, full, padding_side=side, max_new_tokens=new_tokens,
                                 use_cache=use_cache, hooks=HOOKS, logits_rows="last",
                                 command_line=shlex.join(argv), model_path=MODEL_REL, quiet=True)
        make_golden.prune_trace(full, os.path.join(out_dir, name + ".h5"), keep)
        os.remove(full)
        gen = summary["generated_ids"]
        manifest["traces"].append({
            "name": name, "file": out_rel, "texts": texts, "prompt_ids": ids, "kept": keep.describe(),
            "max_new_tokens": new_tokens, "use_cache": use_cache, "padding_side": side,
            "pad_token_id": summary["pad_token_id"], "eos_token_ids": summary["eos_token_ids"],
            "generated_ids": gen, "generated_text": [tok.decode(g) for g in gen]})
        print(f"{name}: {[len(i) for i in ids]} prompt ids -> {[tok.decode(g) for g in gen]!r}")
    make_golden.write_json(os.path.join(out_dir, "manifest.json"), manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
