#!/usr/bin/env python3
"""The peer for lmscope-bench: HF transformers on the CPU, same shapes, same work.

Builds a model with the given shapes and random weights (float32, eager attention), then times
a prefill of --prompt-len tokens and --decode greedy decode steps with the KV cache, the way
lmscope-bench does (median of --repeats). Prints one JSON object.

    python scripts/bench_hf.py --model smollm2 --prompt-len 128 --decode 32 --threads 2
Needs torch + transformers (golden/requirements.txt); CI never runs it.
"""
import argparse
import json
import statistics
import time

import torch
import transformers

SHAPES = {
    # SmolLM2-135M-Instruct: Llama, 30 layers, D 576, GQA 9/3, F 1536, V 49152, tied
    "smollm2": dict(arch="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                    tie_word_embeddings=True, rope_theta=100000.0, rms_norm_eps=1e-5,
                    max_position_embeddings=8192),
    # golden/models/tiny-qwen2
    "tiny": dict(arch="qwen2", hidden_size=64, intermediate_size=176, num_hidden_layers=3,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=1024,
                 tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6,
                 max_position_embeddings=128),
}


def build(name):
    shape = dict(SHAPES[name])
    arch = shape.pop("arch")
    cfg_cls = transformers.LlamaConfig if arch == "llama" else transformers.Qwen2Config
    model_cls = transformers.LlamaForCausalLM if arch == "llama" else transformers.Qwen2ForCausalLM
    cfg = cfg_cls(**shape, attn_implementation="eager")
    torch.manual_seed(1)
    return model_cls(cfg).float().eval(), cfg


@torch.inference_mode()
def run_once(model, cfg, prompt_len, decode):
    ids = torch.tensor([[(i * 7919 + 3) % cfg.vocab_size for i in range(prompt_len)]])
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    t1 = time.perf_counter()
    past = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    t2 = time.perf_counter()
    for step in range(decode):
        pos = torch.tensor([[prompt_len + step]])
        out = model(input_ids=nxt, past_key_values=past, position_ids=pos, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    t3 = time.perf_counter()
    return prompt_len / (t1 - t0), decode / (t3 - t2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(SHAPES), default="smollm2")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model, cfg = build(a.model)
    run_once(model, cfg, min(a.prompt_len, 8), 2)   # warm-up
    pre, dec = zip(*(run_once(model, cfg, a.prompt_len, a.decode) for _ in range(a.repeats)))
    print(json.dumps({"peer": f"hf-transformers {transformers.__version__} torch {torch.__version__}",
                      "model": a.model, "threads": a.threads, "prompt_len": a.prompt_len,
                      "decode": a.decode, "prefill_tok_s": statistics.median(pre),
                      "decode_tok_s": statistics.median(dec)}))


if __name__ == "__main__":
    main()
