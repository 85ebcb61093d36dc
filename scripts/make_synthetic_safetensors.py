#!/usr/bin/env python3
"""A Hugging Face model directory (config.json + model.safetensors) with random weights in a real
model's shapes, stored as bf16 (or f16, or f32), for measuring the CPU engine's memory and
speed on the files `snapshot_download` gives (docs/benchmarks.md "CPU memory"). By default
DeepSeek-R1-Distill-Qwen-1.5B's shapes (qwen2: 28 layers, hidden 1536, FFN 8960, 12 heads, 2 KV
heads, vocabulary 151936, untied head, q/k/v biases), as scripts/make_synthetic_gguf.py's GGUF.
No tokenizer: give the tools --prompt-ids.

  /usr/bin/python3 scripts/make_synthetic_safetensors.py ~/.cache/lmscope/r1-1.5b-shape-bf16   # ~3.5 GB
  lmscope-trace --model ~/.cache/lmscope/r1-1.5b-shape-bf16 --prompt-ids 1,2,3 --max-new-tokens 2

Weights are N(0, 0.02) from a fixed seed (norms 1, biases likewise), rounded to nearest even: a
pool of 2^24 draws, each tensor a run of the pool from a random start (drawing 1.8 G normals
would take most of an hour on a small machine; the engine's speed and memory do not depend on
the values). Needs numpy only (the safetensors layout is written here: an 8-byte header length, the JSON
header, the raw little-endian tensors). Not meant to be committed.
"""
import argparse
import json
import os

import numpy as np

from synthetic_shapes import add_shape_args


def to_bf16_bits(f32):
    """float32 -> bf16 bit patterns, round to nearest even (torch's .to(torch.bfloat16))."""
    bits = f32.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def encode(values, dtype):
    if dtype == "BF16":
        return to_bf16_bits(values).tobytes()
    if dtype == "F16":
        return values.astype(np.float16).tobytes()
    return values.astype(np.float32).tobytes()


def tensors(a):
    """(name, shape, kind) in HF Qwen2's names; kind: 'w' random matrix, 'b' bias, 'n' norm."""
    D, F, V = a.hidden, a.ffn, a.vocab
    hd = D // a.heads
    Q, KV = a.heads * hd, a.kv_heads * hd
    yield "model.embed_tokens.weight", (V, D), "w"
    for l in range(a.layers):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (D,), "n"
        yield p + "self_attn.q_proj.weight", (Q, D), "w"
        yield p + "self_attn.q_proj.bias", (Q,), "b"
        yield p + "self_attn.k_proj.weight", (KV, D), "w"
        yield p + "self_attn.k_proj.bias", (KV,), "b"
        yield p + "self_attn.v_proj.weight", (KV, D), "w"
        yield p + "self_attn.v_proj.bias", (KV,), "b"
        yield p + "self_attn.o_proj.weight", (D, Q), "w"
        yield p + "post_attention_layernorm.weight", (D,), "n"
        yield p + "mlp.gate_proj.weight", (F, D), "w"
        yield p + "mlp.up_proj.weight", (F, D), "w"
        yield p + "mlp.down_proj.weight", (D, F), "w"
    yield "model.norm.weight", (D,), "n"
    yield "lm_head.weight", (V, D), "w"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    add_shape_args(ap)
    a = ap.parse_args()
    st_dtype = {"bf16": "BF16", "f16": "F16", "f32": "F32"}[a.dtype]
    size = 4 if a.dtype == "f32" else 2

    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in tensors(a):
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)   # the data starts 8-byte aligned

    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(1)
    pool = np.frombuffer(encode(rng.normal(0.0, 0.02, 1 << 24).astype(np.float32), st_dtype), np.uint8)
    with open(os.path.join(a.out_dir, "model.safetensors"), "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for name, shape, kind in tensors(a):
            if kind == "n":
                f.write(encode(np.ones(shape, np.float32), st_dtype))
                continue
            left = int(np.prod(shape)) * size
            at = int(rng.integers(0, pool.size // size)) * size
            while left:
                n = min(left, pool.size - at)
                f.write(pool[at:at + n].tobytes())
                left -= n
                at = 0
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": a.hidden, "intermediate_size": a.ffn, "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "vocab_size": a.vocab,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": None,
        "bos_token_id": min(151646, a.vocab - 1), "eos_token_id": min(151643, a.vocab - 1),
        "torch_dtype": {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype],
    }
    with open(os.path.join(a.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{a.out_dir}: {offset / 2**20:.0f} MiB of {a.dtype} weights")


if __name__ == "__main__":
    main()
