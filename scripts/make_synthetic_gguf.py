#!/usr/bin/env python3
"""A GGUF with random weights in a real model's shapes, for measuring load time and memory
(docs/benchmarks.md "CPU memory"): by default DeepSeek-R1-Distill-Qwen-1.5B's (qwen2: 28
layers, hidden 1536, FFN 8960, 12 heads, 2 KV heads, vocabulary 151936, untied head, q/k/v
biases, RoPE theta 10000, RMSNorm eps 1e-6). Every matrix is quantized to Q4_1 with the
`gguf` package's quantize (norms and biases stay F32), as a Q4_1 llama.cpp file holds them; or,
with --type f16 / f32, stored as such (the input of llama.cpp's llama-quantize); or, with --type
q4_k_m --ggml BUILD/bin/libggml-base.so, quantized by llama.cpp's own quantizer
(ggml_quantize_chunk, what llama-quantize runs per tensor) as a Q4_K_M file mixes the types:
Q6_K for output.weight and for attn_v / ffn_down of the layers llama-quantize gives more bits
(the first and last eighth, and every third between), Q4_K for every other matrix.
A stand-in byte-level tokenizer (the 256 byte tokens, one merge, numbered filler up to the
vocabulary) lets the tools load it; give it --prompt-ids.

  venv/bin/python scripts/make_synthetic_gguf.py /tmp/r1-1.5b-shape.Q4_1.gguf   # gguf, numpy
  lmscope-trace --model /tmp/r1-1.5b-shape.Q4_1.gguf --prompt-ids 1,2,3 --max-new-tokens 1
  venv/bin/python scripts/make_synthetic_gguf.py /tmp/r1-1.5b-shape.f16.gguf --type f16    # ~3.6 GB
  llama-quantize /tmp/r1-1.5b-shape.f16.gguf /tmp/r1-1.5b-shape.Q4_K_M.gguf Q4_K_M

Weights are N(0, 0.02) from a fixed seed; the file (~1.1 GB as Q4_1) is not meant to be committed.
--layers/--hidden/... make smaller files of the same layout.
"""
import argparse

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize

from synthetic_shapes import add_shape_args


def byte_tokens():
    """GPT-2's byte -> printable character table (the byte-level BPE alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def add_tokenizer(w, vocab):
    tokens = byte_tokens() + ["\u0120t"]   # "Ġt": the one merge, "Ġ t"
    tokens += [f"<filler_{i}>" for i in range(vocab - len(tokens))]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_merges(["\u0120 t"])
    w.add_eos_token_id(vocab - 1)


def ggml_quantizer(lib_path):
    """llama.cpp's ggml_quantize_chunk from its libggml-base.so: float32 rows -> blocks (uint8)."""
    import ctypes
    if not lib_path:
        raise SystemExit("--type q4_k_m needs --ggml BUILD/bin/libggml-base.so (scripts/build-llamacpp.sh)")
    lib = ctypes.CDLL(lib_path)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_void_p]

    def run(v, qtype):
        v = np.ascontiguousarray(v, dtype=np.float32)
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        out = np.zeros((v.shape[0], v.shape[1] // block * size), dtype=np.uint8)
        lib.ggml_quantize_chunk(int(qtype), v.ctypes.data, out.ctypes.data, 0, v.shape[0], v.shape[1], None)
        return out
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    add_shape_args(ap)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--type", choices=["q4_1", "f16", "f32", "q4_k_m"], default="q4_1", help="how the matrices are stored")
    ap.add_argument("--ggml", help="q4_k_m: llama.cpp's libggml-base.so (scripts/build-llamacpp.sh builds it)")
    a = ap.parse_args()
    D, F, V, H, Hkv = a.hidden, a.ffn, a.vocab, a.heads, a.kv_heads
    hd = D // H
    rng = np.random.default_rng(a.seed)

    w = gguf.GGUFWriter(a.out, "qwen2")
    w.add_name("random weights, DeepSeek-R1-Distill-Qwen-1.5B shapes")
    w.add_file_type({"q4_1": gguf.LlamaFileType.MOSTLY_Q4_1, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "f32": gguf.LlamaFileType.ALL_F32, "q4_k_m": gguf.LlamaFileType.MOSTLY_Q4_K_M}[a.type])
    ggml_quantize = ggml_quantizer(a.ggml) if a.type == "q4_k_m" else None
    w.add_block_count(a.layers)
    w.add_context_length(131072)
    w.add_embedding_length(D)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_vocab_size(V)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    add_tokenizer(w, V)

    def more_bits(layer):   # llama.cpp's use_more_bits(i, n)
        n = a.layers
        return layer < n // 8 or layer >= 7 * n // 8 or (layer - n // 8) % 3 == 2

    def matrix(name, rows, cols, k_type=Q.Q4_K):
        # Quantized a slab of rows at a time: the float32 of a [151936, 1536] head is 0.9 GB.
        slabs = []
        for r0 in range(0, rows, 8192):
            n = min(8192, rows - r0)
            v = rng.standard_normal((n, cols), dtype=np.float32) * np.float32(0.02)
            if a.type == "q4_1":
                slabs.append(quantize(v, Q.Q4_1))
            elif a.type == "q4_k_m":
                slabs.append(ggml_quantize(v, k_type))
            else:
                slabs.append(v.astype(np.float16 if a.type == "f16" else np.float32))
        if a.type in ("q4_1", "q4_k_m"):
            w.add_tensor(name, np.concatenate(slabs), raw_dtype=Q.Q4_1 if a.type == "q4_1" else k_type)
        else:
            w.add_tensor(name, np.concatenate(slabs))

    def vector(name, n, value=None):
        v = np.full(n, value, np.float32) if value is not None else rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)
        w.add_tensor(name, v)

    matrix("token_embd.weight", V, D)
    for L in range(a.layers):
        p = f"blk.{L}."
        vector(p + "attn_norm.weight", D, 1.0)
        matrix(p + "attn_q.weight", H * hd, D)
        matrix(p + "attn_k.weight", Hkv * hd, D)
        matrix(p + "attn_v.weight", Hkv * hd, D, Q.Q6_K if more_bits(L) else Q.Q4_K)
        vector(p + "attn_q.bias", H * hd)
        vector(p + "attn_k.bias", Hkv * hd)
        vector(p + "attn_v.bias", Hkv * hd)
        matrix(p + "attn_output.weight", D, H * hd)
        vector(p + "ffn_norm.weight", D, 1.0)
        matrix(p + "ffn_gate.weight", F, D)
        matrix(p + "ffn_up.weight", F, D)
        matrix(p + "ffn_down.weight", D, F, Q.Q6_K if more_bits(L) else Q.Q4_K)
    vector("output_norm.weight", D, 1.0)
    matrix("output.weight", V, D, Q.Q6_K)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
