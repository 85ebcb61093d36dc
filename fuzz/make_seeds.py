#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/): small valid files of
each format, made here from the formats' specifications and our own files, and one file per
hostile input of issue 17 that a regression test covers (the reproducers). Needs h5py and
numpy (Debian python3). Run from anywhere: python3 fuzz/make_seeds.py"""
import json
import os
import shutil
import struct

import h5py
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- safetensors + config.json --------------------------------------------------------------
def safetensors(tensors, pad_to=8, header_extra=""):
    """tensors: [(name, dtype, shape, bytes)] -> file bytes (header padded with spaces)."""
    h, data = {}, b""
    for name, dt, shape, raw in tensors:
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(h, separators=(",", ":"))
    if header_extra:
        text = text[:-1] + "," + header_extra + "}"
    while pad_to and len(text) % pad_to:
        text += " "
    return struct.pack("<Q", len(text)) + text.encode() + data


f32 = np.array([1.5, -2.0, 3.25, 0.0], "<f4").tobytes()
bf16 = np.array([0x3F80, 0xC000], "<u2").tobytes()
f16 = np.array([0x3C00, 0x3800], "<u2").tobytes()
small = [("a", "F32", [2, 2], f32), ("b", "BF16", [2], bf16), ("c", "F16", [2], f16)]
put("safetensors", "small.safetensors", safetensors(small))
# a header whose length is not a multiple of 4: the data starts at an odd address
text = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, separators=(",", ":")) + "  "
while (8 + len(text)) % 8 != 1:
    text += " "
put("safetensors", "misaligned_data.safetensors", struct.pack("<Q", len(text)) + text.encode() + f32)
deep = "[" * 10000 + "]" * 10000
put("safetensors", "deep_shape.safetensors",
    struct.pack("<Q", len('{"x":{"dtype":"F32","shape":%s,"data_offsets":[0,0]}}' % deep)) +
    ('{"x":{"dtype":"F32","shape":%s,"data_offsets":[0,0]}}' % deep).encode())
cfg = open(os.path.join(ROOT, "golden/models/tiny-qwen2/config.json")).read()
put("safetensors", "config.json", cfg)
c = json.loads(cfg)
put("safetensors", "config_layers_1e7.json", json.dumps(dict(c, num_hidden_layers=10000000)))
put("safetensors", "config_deep.json", cfg.replace('"architectures": [', '"architectures": [' + deep + ",", 1))

# ---- GGUF ------------------------------------------------------------------------------------
U32, I32, F32T, BOOL, STR, ARR, U64 = 4, 5, 6, 7, 8, 9, 10


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, payload):
    return gstr(key) + struct.pack("<I", typ) + payload


def gguf(kvs, tensors, alignment=32):
    """tensors: [(name, ne list (ggml order), ggml type, bytes)] packed with `alignment`."""
    infos, data = b"", b""
    for name, ne, typ, raw in tensors:
        while len(data) % alignment:
            data += b"\0"
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", typ, len(data))
        data += raw
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    while len(head) % alignment:
        head += b"\0"
    return head + data


def tiny_llama(block_count=2, alignment=None):
    D, F, Q, KV, V = 8, 16, 8, 4, 10
    a = "llama."
    kvs = [kv("general.architecture", STR, gstr("llama")), kv(a + "block_count", U32, struct.pack("<I", block_count)),
           kv(a + "context_length", U32, struct.pack("<I", 64)), kv(a + "embedding_length", U32, struct.pack("<I", D)),
           kv(a + "feed_forward_length", U32, struct.pack("<I", F)),
           kv(a + "attention.head_count", U32, struct.pack("<I", 2)),
           kv(a + "attention.head_count_kv", U32, struct.pack("<I", 1)),
           kv(a + "rope.freq_base", F32T, struct.pack("<f", 10000.0)),
           kv(a + "attention.layer_norm_rms_epsilon", F32T, struct.pack("<f", 1e-6)),
           kv(a + "rope.dimension_count", U32, struct.pack("<I", 4)),
           kv("tokenizer.ggml.model", STR, gstr("gpt2")),
           kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, V) + b"".join(gstr(t) for t in
                                                                           ["a", "b", "ab", "c", "d", "cd", " ", "<s>", "</s>", "x"])),
           kv("tokenizer.ggml.merges", ARR, struct.pack("<IQ", STR, 2) + gstr("a b") + gstr("c d")),
           kv("tokenizer.ggml.bos_token_id", U32, struct.pack("<I", 7)),
           kv("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", 8)),
           kv("tokenizer.chat_template", STR, gstr("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"))]
    if alignment is not None:
        kvs.append(kv("general.alignment", U32, struct.pack("<I", alignment)))
    rng = np.random.default_rng(0)

    def t(name, rows, cols=1):
        ne = [rows] if cols == 1 else [cols, rows]
        return (name, ne, 0, rng.standard_normal(rows * cols).astype("<f4").tobytes())
    ts = [t("token_embd.weight", V, D), t("output_norm.weight", D)]
    for l in range(2):
        p = "blk.%d." % l
        ts += [t(p + "attn_norm.weight", D), t(p + "attn_q.weight", Q, D), t(p + "attn_k.weight", KV, D),
               t(p + "attn_v.weight", KV, D), t(p + "attn_output.weight", D, Q), t(p + "ffn_norm.weight", D),
               t(p + "ffn_gate.weight", F, D), t(p + "ffn_up.weight", F, D), t(p + "ffn_down.weight", D, F)]
    return gguf(kvs, ts, alignment or 32)


put("gguf", "tiny-llama.gguf", tiny_llama())
put("gguf", "alignment_1.gguf", tiny_llama(alignment=1))
put("gguf", "alignment_2.gguf", tiny_llama(alignment=2))
put("gguf", "block_count_2e30.gguf", tiny_llama(block_count=1 << 30))

# ---- tokenizer.json + chat templates ---------------------------------------------------------
tok = open(os.path.join(ROOT, "golden/models/tiny-qwen2/tokenizer.json")).read()
put("tokenizer", "tokenizer.json", tok)
j = json.loads(tok)


def nested(key, leaf, depth):
    return '{"type":"Sequence","%s":[' % key * depth + leaf + "]}" * depth


for field, key, leaf in [("normalizer", "normalizers", '{"type":"NFC"}'),
                         ("pre_tokenizer", "pretokenizers", '{"type":"Digits"}'),
                         ("post_processor", "processors", '{"type":"ByteLevel"}')]:
    j2 = dict(j)
    j2[field] = "@@"
    put("tokenizer", "deep_%s.json" % field, json.dumps(j2).replace('"@@"', nested(key, leaf, 1000)))
j2 = json.loads(tok)
j2["model"]["vocab"]["zzz"] = 1 << 28
put("tokenizer", "vocab_id_2e28.json", json.dumps(j2))
tc = json.load(open(os.path.join(ROOT, "golden/models/tiny-qwen2/tokenizer_config.json")))
if "chat_template" in tc:
    put("tokenizer", "chat_template.jinja", tc["chat_template"])
put("tokenizer", "template_parens.jinja", "{{ " + "(" * 10000 + "1" + ")" * 10000 + " }}")
put("tokenizer", "template_concat.jinja", "{{ 'a'" + " ~ 'a'" * 10000 + " }}")
put("tokenizer", "template_ifs.jinja", "{% if x %}" * 1000 + "{% endif %}" * 1000)
put("tokenizer", "template_arith.jinja", "{{ (-9223372036854775807 - 1) // -1 }}{{ 10 ** 10 ** 10 }}{{ range(99999999) }}")

# ---- traces ----------------------------------------------------------------------------------
tdir = os.path.join(OUT, "trace")
os.makedirs(tdir, exist_ok=True)


def trace(name, edit=None):
    """A small complete trace in the schema of docs/trace-format.md (2 steps, kv appended)."""
    path = os.path.join(tdir, name)
    with h5py.File(path, "w", libver="earliest") as f:
        f.attrs["format"] = "lmscope-trace"
        f.attrs["format_version"] = 2
        f.attrs["prompts"] = "[[1,2,3]]"
        for step, (T, S) in enumerate([(3, 3), (1, 4)]):
            g = f.create_group("step_%04d" % step)
            for k, v in dict(step=step, use_cache=1, past_length=S - T, T=T, S=S).items():
                g.attrs[k] = np.int64(v)
            g.attrs["phase"] = "prefill" if step == 0 else "decode"
            for hook, axes, shape in [("tokens.input_ids", "B,T", (1, T)), ("embed", "B,T,D", (1, T, 4)),
                                      ("layers.0.attn.scores", "B,H,T,S", (1, 2, T, S)),
                                      ("logits", "B,T,V", (1, T, 8))]:
                ds = g.create_dataset(hook.replace(".", "/"), data=np.arange(np.prod(shape), dtype="f4").reshape(shape))
                ds.attrs["hook"], ds.attrs["axes"] = hook, axes
            for kvh in ("kv.0.k", "kv.0.v"):
                ds = g.create_dataset(kvh.replace(".", "/"), data=np.full((1, 1, T, 2), step, "f4"))
                ds.attrs.update({"hook": kvh, "axes": "B,Hkv,T,hd", "rows": "appended",
                                 "first_position": np.int64(S - T)})
        f.create_dataset("generated_ids", data=np.array([[5, 6]], "i4"))
        if edit:
            edit(f)
        f.attrs["complete"] = 1


trace("small.h5")
trace("format_string_array.h5", lambda f: f.attrs.__setitem__("format", np.array(["lmscope-trace", "x", "y"], dtype=h5py.string_dtype())))
trace("hard_link_cycle.h5", lambda f: f["step_0000/layers"].__setitem__("up", f["step_0000"]))
trace("soft_link_cycle.h5", lambda f: f["step_0000/layers"].__setitem__("up", h5py.SoftLink("/step_0000")))
trace("step_999999999.h5", lambda f: f.create_group("step_999999999"))
trace("axes_rank.h5", lambda f: f["step_0000/embed"].attrs.__setitem__("axes", "B"))
trace("kv_first_position_huge.h5", lambda f: f["step_0001/kv/0/k"].attrs.__setitem__("first_position", np.int64(1 << 40)))


def null_space(f):
    del f["step_0000/embed"]
    ds = f["step_0000"].create_dataset("embed", data=h5py.Empty("f4"))
    ds.attrs["hook"], ds.attrs["axes"] = "embed", "B,T,D"


trace("null_dataspace.h5", null_space)


def unallocated(f):
    ds = f["step_0000"].create_dataset("huge", shape=(1 << 32,), dtype="f4")
    ds.attrs["hook"], ds.attrs["axes"] = "huge", "B"


trace("unallocated_2e32.h5", unallocated)


# Issue 23: shapes that disagree with each other or with the root attributes (refused on open,
# trace/trace_layout.h), NaN where an integer belongs, links a trace never holds.
def replace(path, shape, dtype="f4", hook=None, axes=None, fill=0.5):
    def edit(f):
        old = f[path]
        hook_, axes_ = old.attrs.get("hook", hook), old.attrs.get("axes", axes)
        del f[path]
        ds = f.create_dataset(path, data=np.full(shape, fill, dtype))
        if hook_ is not None:
            ds.attrs["hook"], ds.attrs["axes"] = hook_, axes_
    return edit


trace("logits_T0.h5", replace("step_0000/logits", (1, 0, 8)))
trace("logits_V0.h5", replace("step_0001/logits", (1, 1, 0)))
trace("input_ids_empty.h5", replace("step_0000/tokens/input_ids", (1, 0), "i4"))
trace("generated_ids_B3.h5", replace("generated_ids", (3, 2), "i4", fill=5))
trace("input_ids_nan.h5", replace("step_0000/tokens/input_ids", (1, 3), "f4", fill=np.nan))
trace("step_T_2e31.h5", lambda f: f["step_0001"].attrs.__setitem__("T", np.int64(2**31 - 1)))
trace("n_steps_2e40.h5", lambda f: f.attrs.__setitem__("n_steps", np.int64(1 << 40)))
trace("format_version_nan.h5", lambda f: f.attrs.__setitem__("format_version", np.float64(np.nan)))
trace("external_link.h5", lambda f: f["step_0000"].__setitem__("lens", h5py.ExternalLink("small.h5", "/step_0000")))


def step_linked_twice(f):
    del f["step_0001"]
    f["step_0001"] = f["step_0000"]


trace("step_linked_twice.h5", step_linked_twice)
print("seeds in", OUT)
