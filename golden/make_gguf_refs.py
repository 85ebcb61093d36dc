#!/usr/bin/env python3
"""Reference values for lmscope's GGUF tests (tests/gguf), written to golden/gguf/.

  venv/bin/python golden/make_gguf_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf] [--check]

dequant_refs.json   for each ggml type lmscope dequantizes: a few raw blocks and the float32
                    values the `gguf` package's dequantize gives for them (bit patterns, hex).
                    Blocks come from the SmolLM2 file where it holds that type (Q4_1, Q8_0,
                    F32); otherwise from gguf's own quantize (Q4_0, Q5_0, Q5_1, BF16, and
                    more Q4_1/Q8_0) on seeded random data, or, for the k-quants and IQ4_NL,
                    which gguf cannot quantize, random bytes with finite random fp16 scales.
smollm2_hf.json     what HF transformers' GGUF loader (from_pretrained(dir, gguf_file=...),
                    which dequantizes with gguf and reverse-permutes q/k) produces for
                    SmolLM2: a few rows of layer 0 and 29 q_proj/k_proj, an embedding row,
                    the config it derives, and the file's tensor-type counts and sha256.

Everything is deterministic (fixed seeds). --check regenerates into memory and compares with
the committed files. Needs golden/requirements.txt (gguf, numpy, torch, transformers).
"""
import collections
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

from gguf_common import ROOT, arg_parser, require_model, sha256_file

OUT = os.path.join(ROOT, "golden", "gguf")


def hexf32(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes().hex()


def block_entry(qtype, raw, source):
    """raw: uint8 bytes of whole blocks. Expected = gguf's dequantize of exactly these bytes."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(1, -1)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert raw.size % size == 0
    y = dequantize(raw, qtype).reshape(-1).astype(np.float32, copy=False)
    assert y.size == raw.size // size * block
    return {"type": qtype.name, "type_id": int(qtype), "block_size": block, "type_size": size,
            "n_blocks": raw.size // size, "source": source,
            "block_bytes": raw.tobytes().hex(), "expected_f32": hexf32(y)}


def file_blocks(reader, name, picks):
    t = next(t for t in reader.tensors if t.name == name)
    _, size = gguf.GGML_QUANT_SIZES[t.tensor_type]
    flat = np.asarray(t.data).reshape(-1).view(np.uint8)
    n = flat.size // size
    idx = [p if p >= 0 else n + p for p in picks]
    raw = np.concatenate([flat[i * size:(i + 1) * size] for i in idx])
    return t.tensor_type, raw, f"{name} blocks {idx} of the SmolLM2 Q4_1 file"


def random_data(rng, n_blocks, block):
    # Mixed scales per block, plus a zero block and a constant block (d = 0 edge cases).
    x = rng.standard_normal((n_blocks, block)).astype(np.float32)
    x *= np.float32(10.0) ** rng.uniform(-3, 1, size=(n_blocks, 1)).astype(np.float32)
    if n_blocks >= 3:
        x[1] = 0
        x[2] = np.float32(0.37)
    return x


def random_kquant_blocks(rng, qtype, n_blocks):
    """Random bytes, then the fp16 scale fields set to finite values of either sign."""
    _, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    # offsets of the half fields (d, dmin) in each layout (ggml-common.h)
    halves = {Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.IQ4_NL: [0]}[qtype]
    for b in range(n_blocks):
        for off in halves:
            v = np.float16(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-4, -1))
            raw[b, off:off + 2] = np.frombuffer(v.tobytes(), dtype=np.uint8)
    return raw.reshape(-1)


def make_dequant_refs(model_path):
    rng = np.random.default_rng(20261129)
    entries = []
    require_model(model_path)
    r = gguf.GGUFReader(model_path)
    entries.append(block_entry(*file_blocks(r, "blk.0.attn_q.weight", [0, 1, 17, 5000, -1])))
    entries.append(block_entry(*file_blocks(r, "blk.29.ffn_down.weight", [0, 12345, -1])))
    entries.append(block_entry(*file_blocks(r, "token_embd.weight", [0, 18, 400000, -1])))
    entries.append(block_entry(*file_blocks(r, "output_norm.weight", [0, 1, 2, 3, 575])))

    for qtype in (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0):
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        x = random_data(rng, 6, block)
        raw = quantize(x.reshape(1, -1), qtype).reshape(-1)
        entries.append(block_entry(qtype, raw, "gguf quantize of seeded random data (block 1 zero, 2 constant)"))

    # F16: random values plus zeros, subnormals, the largest finite, infinities, a quiet NaN.
    special = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
                        0x7C00, 0xFC00, 0x7E00, 0x3C00, 0xBC00, 0x3555], dtype=np.uint16)
    vals = rng.standard_normal(50).astype(np.float16).view(np.uint16)
    f16 = np.concatenate([special, vals]).astype("<u2")
    entries.append(block_entry(Q.F16, f16.view(np.uint8), "fp16 specials (zero, subnormal, max, inf, qNaN) + random"))

    # BF16: gguf's quantize (round to nearest even) of random data, plus specials.
    x = (rng.standard_normal(50) * 10.0 ** rng.uniform(-30, 30, 50)).astype(np.float32)
    bf = quantize(x.reshape(1, -1), Q.BF16).reshape(-1).view("<u2")
    special = np.array([0x0000, 0x8000, 0x0001, 0x007F, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80],
                       dtype=np.uint16)
    bf = np.concatenate([special, bf]).astype("<u2")
    entries.append(block_entry(Q.BF16, bf.view(np.uint8), "bf16 specials + gguf quantize of random data"))

    for qtype in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K):
        raw = random_kquant_blocks(rng, qtype, 3)
        entries.append(block_entry(qtype, raw, "seeded random bytes with finite random fp16 scales"))

    # IQ4_NL (llama-quantize's fallback for the IQ types): its own seed, after every other entry,
    # so that adding it left their bytes as they were.
    raw = random_kquant_blocks(np.random.default_rng(20261205), Q.IQ4_NL, 6)
    entries.append(block_entry(Q.IQ4_NL, raw, "seeded random bytes with finite random fp16 scales"))

    return {"generator": "golden/make_gguf_refs.py", "gguf_version": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
            "note": "expected_f32 = little-endian float32 bytes of gguf.quants.dequantize(block_bytes)",
            "entries": entries}


def unpermute(w, n_head):
    # inverse of convert_hf_to_gguf LlamaModel.permute, written independently of transformers
    hd = w.shape[0] // n_head
    return w.reshape(n_head, hd // 2, 2, -1).transpose(0, 2, 1, 3).reshape(w.shape)


def make_hf_refs(model_path):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    d, name = os.path.split(os.path.abspath(model_path))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32)
    model.eval()
    cfg = model.config
    sd = model.state_dict()

    # Independent check: gguf dequant + our own numpy un-permute == what HF loaded.
    r = gguf.GGUFReader(model_path)
    tens = {t.name: t for t in r.tensors}
    def deq(name):
        t = tens[name]
        return dequantize(np.asarray(t.data), t.tensor_type).reshape([int(x) for x in reversed(t.shape)])
    for layer in (0, 29):
        q = unpermute(deq(f"blk.{layer}.attn_q.weight"), cfg.num_attention_heads)
        k = unpermute(deq(f"blk.{layer}.attn_k.weight"), cfg.num_key_value_heads)
        hq = sd[f"model.layers.{layer}.self_attn.q_proj.weight"].numpy()
        hk = sd[f"model.layers.{layer}.self_attn.k_proj.weight"].numpy()
        assert np.array_equal(q.view(np.uint32), hq.view(np.uint32)), f"layer {layer} q differs from HF"
        assert np.array_equal(k.view(np.uint32), hk.view(np.uint32)), f"layer {layer} k differs from HF"
        assert not np.array_equal(deq(f"blk.{layer}.attn_q.weight"), hq), "HF did not un-permute q"
    emb = sd["model.embed_tokens.weight"].numpy()
    assert np.array_equal(emb, deq("token_embd.weight"))
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()

    rows = {}
    q_rows = [0, 1, 31, 32, 63, 64, 100, 575]   # head boundaries: hd = 64, halves of 32
    k_rows = [0, 1, 32, 65, 191]
    for layer, qs, ks in ((0, q_rows, k_rows), (29, [7, 540], [150])):
        hq = sd[f"model.layers.{layer}.self_attn.q_proj.weight"].numpy()
        hk = sd[f"model.layers.{layer}.self_attn.k_proj.weight"].numpy()
        rows[f"model.layers.{layer}.self_attn.q_proj.weight"] = {str(i): hexf32(hq[i]) for i in qs}
        rows[f"model.layers.{layer}.self_attn.k_proj.weight"] = {str(i): hexf32(hk[i]) for i in ks}
    rows["model.embed_tokens.weight"] = {str(i): hexf32(emb[i]) for i in (0, 2, 49151)}
    rows["model.norm.weight"] = {"0": hexf32(sd["model.norm.weight"].numpy())}

    types = collections.Counter(t.tensor_type.name for t in r.tensors)
    return {
        "generator": "golden/make_gguf_refs.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "file": os.path.basename(model_path),
        "file_sha256": sha256_file(model_path),
        "file_tensor_types": dict(sorted(types.items())),
        "tensor_count": len(r.tensors),
        "token_embd_type": tens["token_embd.weight"].tensor_type.name,
        "has_output_weight": "output.weight" in tens,
        "hf_config": {k: getattr(cfg, k, None) for k in (
            "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
            "rms_norm_eps", "tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id")},
        "hf_rope_theta": (cfg.rope_parameters or {}).get("rope_theta") if hasattr(cfg, "rope_parameters") else getattr(cfg, "rope_theta", None),
        "hf_lm_head_is_embed": tied,
        "note": "rows: little-endian float32 bytes (hex) of HF's loaded parameters, row index -> values",
        "rows": rows,
    }


def main():
    ap = arg_parser("compare with the committed files instead of writing")
    ap.add_argument("--skip-hf", action="store_true", help="only the dequantization references")
    args = ap.parse_args()

    outputs = {"dequant_refs.json": make_dequant_refs(args.model)}
    if not args.skip_hf:
        outputs["smollm2_hf.json"] = make_hf_refs(args.model)
    os.makedirs(OUT, exist_ok=True)
    bad = 0
    for fname, obj in outputs.items():
        text = json.dumps(obj, indent=1, sort_keys=False) + "\n"
        path = os.path.join(OUT, fname)
        if args.check:
            same = os.path.exists(path) and open(path).read() == text
            print(f"{path}: {'same' if same else 'DIFFERS'}")
            bad += not same
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {path} ({len(text)} bytes)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
