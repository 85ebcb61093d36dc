#!/usr/bin/env python3
"""The peer for lmscope-bench: HF transformers, same shapes, same work, same prompts.

Builds a model with the given shapes and random weights (or loads one with --load), then times
a prefill of --prompt-len tokens and --decode greedy decode steps with the KV cache, the way
lmscope-bench does (median of --repeats), for each --batch. Prints one JSON object.

    python scripts/bench_hf.py --model smollm2 --prompt-len 128 --decode 32 --threads 2
On a GPU (scripts/gpu-check.sh), with the weights saved for lmscope-bench to load, so that
both engines run the very same bf16 weights:
    python scripts/bench_hf.py --model deepseek-r1-1.5b --device cuda --dtype bfloat16 \
        --attn sdpa --batch 1,8 --prompt-len 512 --decode 64 --save /tmp/ds15
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
    # DeepSeek-R1-Distill-Qwen-1.5B: Qwen2, 28 layers, D 1536, GQA 12/2, F 8960, V 151936, untied
    "deepseek-r1-1.5b": dict(arch="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                             num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                             tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6,
                             max_position_embeddings=131072, use_sliding_window=False,
                             bos_token_id=151646, eos_token_id=151643),
    # golden/models/tiny-qwen2
    "tiny": dict(arch="qwen2", hidden_size=64, intermediate_size=176, num_hidden_layers=3,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=1024,
                 tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6,
                 max_position_embeddings=128),
}


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def build(name, device, dtype, attn):
    shape = dict(SHAPES[name])
    arch = shape.pop("arch")
    cfg_cls = transformers.LlamaConfig if arch == "llama" else transformers.Qwen2Config
    model_cls = transformers.LlamaForCausalLM if arch == "llama" else transformers.Qwen2ForCausalLM
    cfg = cfg_cls(**shape, attn_implementation=attn)
    torch.manual_seed(1)
    with torch.device(device):   # initialize where it runs: 1.5B parameters init fast on a GPU
        model = model_cls(cfg)
    return model.to(DTYPES[dtype]).eval(), cfg


def load(path, device, dtype, attn):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype], attn_implementation=attn)
    return model.to(device).eval(), model.config


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


@torch.inference_mode()
def run_once(model, cfg, prompt_len, decode, batch, device):
    # the prompts of lmscope-bench: row b, token i = (i * 7919 + b * 131 + 3) % V
    ids = torch.tensor([[(i * 7919 + b * 131 + 3) % cfg.vocab_size for i in range(prompt_len)]
                        for b in range(batch)], device=device)
    sync(device)
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    t1 = time.perf_counter()
    past = out.past_key_values
    for step in range(decode):
        pos = torch.full((batch, 1), prompt_len + step, device=device)
        out = model(input_ids=nxt, past_key_values=past, position_ids=pos, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    t2 = time.perf_counter()
    return batch * prompt_len / (t1 - t0), batch * decode / (t2 - t1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(SHAPES), default="smollm2")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--attn", choices=["eager", "sdpa"], default="eager", help="HF attention implementation")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes, e.g. 1,8")
    ap.add_argument("--save", help="also save the random model here (safetensors + config.json) for lmscope")
    ap.add_argument("--load", help="load this model directory instead of building one")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.load:
        model, cfg = load(a.load, a.device, a.dtype, a.attn)
    else:
        model, cfg = build(a.model, a.device, a.dtype, a.attn)
    if a.save:
        model.save_pretrained(a.save, safe_serialization=True)
    runs = []
    for batch in [int(b) for b in a.batch.split(",")]:
        run_once(model, cfg, min(a.prompt_len, 8), 2, batch, a.device)   # warm-up
        pre, dec = zip(*(run_once(model, cfg, a.prompt_len, a.decode, batch, a.device) for _ in range(a.repeats)))
        runs.append({"batch": batch, "prefill_tok_s": statistics.median(pre), "decode_tok_s": statistics.median(dec),
                     "prefill_runs": pre, "decode_runs": dec})
    device = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    print(json.dumps({"peer": f"hf-transformers {transformers.__version__} torch {torch.__version__}",
                      "model": a.load or a.model, "device": device, "dtype": a.dtype, "attn": a.attn,
                      "threads": a.threads, "prompt_len": a.prompt_len, "decode": a.decode,
                      "prefill_tok_s": runs[0]["prefill_tok_s"], "decode_tok_s": runs[0]["decode_tok_s"],
                      "by_batch": runs}))


if __name__ == "__main__":
    main()
