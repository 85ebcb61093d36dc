"""What the module promises beyond parity: names, lifetimes, errors as Python exceptions."""
import gc
import os

import numpy as np
import pytest

import lmscope
from conftest import SMOLLM2, TINY, TINY_IDS

PARIS_SMOLLM2 = 7042                       # " Paris" in SmolLM2's vocabulary


def test_transformer_lens_names_and_layouts(tiny):
    _, cache = tiny.run_with_cache(TINY_IDS)
    np.testing.assert_array_equal(cache["pattern", 1], cache["layers.1.attn.probs"])
    np.testing.assert_array_equal(cache["blocks.1.attn.hook_pattern"], cache["layers.1.attn.probs"])
    q = cache["layers.1.attn.q"]                       # ours [B, H, T, hd]
    np.testing.assert_array_equal(cache["q", 1], q.transpose(0, 2, 1, 3))   # TL's [batch, pos, head, d_head]
    assert ("resid_pre", 0) in cache and ("resid_pre", 99) not in cache
    tl = cache.to_transformer_lens()
    assert "blocks.0.hook_resid_pre" in tl and "hook_embed" in tl
    with pytest.raises(KeyError):
        cache["nonsense", 1]


def test_to_transformer_lens_gives_tls_layout(tiny):
    # Two prompt lengths: one with as many tokens as heads (the shapes agree, only the values
    # tell the layouts apart) and one without.
    H = tiny.info["num_heads"]
    for ids in (TINY_IDS[:H], TINY_IDS):
        _, cache = tiny.run_with_cache(ids)
        tl = cache.to_transformer_lens()
        for ours, theirs in (("attn.q", "attn.hook_q"), ("attn.k", "attn.hook_k"), ("attn.v", "attn.hook_v"),
                             ("attn.q_rope", "attn.hook_rot_q"), ("attn.k_rope", "attn.hook_rot_k")):
            want = cache["layers.1." + ours].transpose(0, 2, 1, 3)   # ours [B, H, T, hd] -> TL's [batch, pos, head, d_head]
            assert tl["blocks.1." + theirs].shape[1] == len(ids), theirs
            np.testing.assert_array_equal(tl["blocks.1." + theirs], want, err_msg=theirs)
            np.testing.assert_array_equal(tl["blocks.1." + theirs], cache["blocks.1." + theirs], err_msg=theirs)
        np.testing.assert_array_equal(tl["blocks.1.attn.hook_pattern"], cache["layers.1.attn.probs"])


def test_a_hook_named_the_transformer_lens_way_sees_tls_layout(tiny):
    seen = {}

    def look(q, ctx):
        seen["shape"] = q.shape
        q[:, -1, 0, :] = 0       # TL's [batch, pos, head, d_head]: head 0 at the last position

    edited = tiny.run_with_hooks(TINY_IDS, hooks=[("blocks.1.attn.hook_q", look)])
    H, hd = tiny.info["num_heads"], tiny.info["head_dim"]
    assert seen["shape"] == (1, len(TINY_IDS), H, hd)
    same = tiny.run_with_hooks(TINY_IDS, hooks=[lmscope.Zero("layers.1.attn.q", head=0, pos=-1)])
    np.testing.assert_array_equal(edited, same)


def test_every_layer_glob_and_context(tiny):
    calls = []
    tiny.run_with_hooks(TINY_IDS, hooks=[("layers.*.resid_pre", lambda x, ctx: calls.append(
        (ctx["layer"], ctx["step"], ctx["positions"].tolist())))])
    assert [c[0] for c in calls] == list(range(tiny.info["num_layers"]))
    assert calls[0][1] == 0 and calls[0][2] == [list(range(len(TINY_IDS)))]


def test_arrays_outlive_the_model_and_the_cache(tiny):
    m = lmscope.Model(TINY)
    logits, cache = m.run_with_cache(TINY_IDS, names=["embed"])
    embed = cache["embed"]
    expected = embed.copy()
    del m, cache
    gc.collect()
    lmscope.Model(TINY).run_with_cache(TINY_IDS)   # new allocations over any freed memory
    np.testing.assert_array_equal(embed, expected)
    assert np.isfinite(logits).all()


def test_an_exception_in_a_hook_stops_the_run_with_that_exception(tiny, tmp_path):
    class Stop(Exception):
        pass

    def boom(x, ctx):
        raise Stop("from the hook at layer %d" % ctx["layer"])

    out = tmp_path / "t.h5"
    with pytest.raises(Stop, match="from the hook at layer 1"):
        tiny.trace(TINY_IDS, out=out, max_new_tokens=3, edits=[("layers.1.resid_pre", boom)])
    assert not out.exists()                 # no half-written trace
    assert tiny.generate(TINY_IDS, max_new_tokens=2).ids   # the model still runs


def test_bad_input_is_one_line_as_a_python_exception(tiny, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such model"):
        lmscope.Model(tmp_path / "absent.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 20)
    with pytest.raises(ValueError) as e:
        lmscope.Model(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="not an editable site"):
        tiny.run_with_hooks(TINY_IDS, hooks=[("kv.1.k", lambda x, c: None)])
    with pytest.raises(ValueError, match="layer 40 is outside"):
        tiny.run_with_hooks(TINY_IDS, hooks=[("layers.40.resid_pre", lambda x, c: None)])
    with pytest.raises(ValueError, match="intervention 'layers.1.attn.z\\[head=99\\]=zero'"):
        tiny.run_with_hooks(TINY_IDS, hooks=["layers.1.attn.z[head=99]=zero"])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny.run_with_cache([10 ** 6])
    with pytest.raises(ValueError, match="temperature"):
        tiny.generate(TINY_IDS, do_sample=True, temperature=0)
    with pytest.raises(ValueError, match="names no known hook"):
        tiny.run_with_cache(TINY_IDS, names=["resid_post"])
    with pytest.raises(ValueError, match=r"returned shape \[1,1,64\], the tensor is \[1,11,64\]"):
        tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.resid_pre", lambda x, c: x[:, :1])])


def test_tokenize_decode_and_chat(smollm2):
    t = smollm2.tokenize("Hello world")
    assert smollm2.decode(t.ids) == "Hello world"
    assert len(t.pieces) == len(t.ids) and t.encoding["ids"] == t.ids
    text = smollm2.apply_chat_template([{"role": "user", "content": "Hi"}])
    assert text.startswith("<|im_start|>") and text.endswith("<|im_start|>assistant\n")
    chat = smollm2.tokenize("Hi", chat=True)
    assert chat.pieces[0] == "<|im_start|>" and smollm2.decode(chat.ids) == text


def test_stream_sees_every_token(smollm2):
    seen = []
    g = smollm2.generate("What is the capital of France?", chat=True, max_new_tokens=30,
                         stream=lambda step, toks: seen.append(toks[0]))
    assert seen == g.ids[0] and g.stop_reasons == ["eos"]
    assert "Paris" in g.text[0]


def test_the_forward_runs_without_the_gil(smollm2):
    import threading
    import time
    window = {}
    long_prompt = " ".join(["The cat sat on the mat."] * 16)   # one call of about a second

    def run():
        window["start"] = time.monotonic()
        smollm2.generate(long_prompt, max_new_tokens=4, use_cache=False)
        window["end"] = time.monotonic()

    t = threading.Thread(target=run)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.monotonic())
    t.join()
    inside = [x for x in ticks if window["start"] + 0.01 < x < window["end"] - 0.01]
    assert window["end"] - window["start"] > 0.05    # long enough to tell
    assert len(inside) > 100                         # this thread kept running during the forward


def test_one_model_from_several_threads(tiny, tmp_path):
    # Runs of one Model from three threads take turns (docs/python.md, "Threads"): each trace
    # keeps its own prompt's /tokenizer record, and each cache is the one its thread asked for.
    import threading
    import h5py
    prompts = ["The cat sat on the mat.", "A dog ran in the park today.", "Hello world"]
    want = {p: tiny.run_with_cache(p, names="embed")[1]["embed"] for p in prompts}
    errors, seen = [], {}

    def run(i):
        try:
            for k in range(10):
                p = prompts[(i + k) % 3]
                out = str(tmp_path / ("t%d_%d.h5" % (i, k)))
                tiny.trace(p, out=out, max_new_tokens=1)
                with h5py.File(out, "r") as f:
                    assert "tokenizer/row_0" in f, out + " has no /tokenizer record"
                    seen[out] = f["tokenizer/row_0/text"][()].decode()
                    assert seen[out] == p, "%s: the tokenizer record of %r, not %r" % (out, seen[out], p)
                    np.testing.assert_array_equal(f["tokenizer/row_0/ids"][()], tiny.tokenize(p).ids)
                np.testing.assert_array_equal(tiny.run_with_cache(p, names="embed")[1]["embed"], want[p])
        except Exception as e:   # noqa: BLE001 (reported below, naming the thread)
            errors.append("thread %d: %r" % (i, e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(seen) == 30


def test_ctrl_c_ends_a_long_generation():
    # SIGINT while the forward runs without the GIL: KeyboardInterrupt at the next step, not
    # after the last one. SmolLM2 without the cache: 200 steps would take tens of seconds; the
    # signal comes once the first step is out.
    import subprocess
    import sys
    import textwrap
    from conftest import BUILD
    if not os.path.isfile(SMOLLM2):
        pytest.skip("%s is absent (scripts/fetch-model.sh fetches it)" % SMOLLM2)
    script = textwrap.dedent("""
        import os, signal, sys, threading, time
        import lmscope
        m = lmscope.Model(%r)
        steps = []
        def interrupt():
            while not steps:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            m.generate("Tell me a long story.", max_new_tokens=200, use_cache=False, eos_ids=[],
                       stream=lambda step, toks: steps.append(step))
        except KeyboardInterrupt:
            print("interrupted after %%d of 200 steps" %% len(steps))
            sys.exit(0)
        print("not interrupted: %%d steps" %% len(steps))
        sys.exit(1)
    """) % SMOLLM2
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "interrupted after" in r.stdout, r.stdout + r.stderr
    assert int(r.stdout.split("after ")[1].split(" ")[0]) < 100, r.stdout


def _read_safetensors(path):
    """A .safetensors file read by hand (an 8-byte little-endian header length, a JSON header of
    dtype/shape/offsets, then the data): the reference for m.weight()."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = np.frombuffer(data[a:b], dtype=np.uint16 if info["dtype"] in ("BF16", "F16") else np.float32)
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] == "F16":
            raw = raw.view(np.float16).astype(np.float32)
        out[name] = raw.reshape(info["shape"])
    return out


def test_weights_are_the_checkpoints_tensors(tiny):
    ref = _read_safetensors(TINY + "/model.safetensors")
    names = tiny.weight_names()
    assert "model.layers.1.self_attn.o_proj.weight" in names and "lm_head.weight" in names
    for name in names:
        if name in ref:
            np.testing.assert_array_equal(tiny.weight(name), ref[name], err_msg=name)
    assert set(ref) <= set(names)
    with pytest.raises(KeyError, match="no weight 'model.layers.9.mlp.up_proj.weight'"):
        tiny.weight("model.layers.9.mlp.up_proj.weight")


def _some_rows(R):
    """Rows to ask for: the last, the first, the middle twice, one counted from the end, out of order."""
    return [R - 1, 0, R // 2, -1, R // 2]


def _same_bits(got, want, name):
    assert got.dtype == np.float32 and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), np.ascontiguousarray(want, np.float32).view(np.uint32),
                                  err_msg=name)


@pytest.mark.parametrize("model", ["tiny-qwen2", "tiny-qwen2-bf16", "tiny-llama"])
def test_weight_rows_are_the_checkpoints_rows(model):
    """m.weight(name, rows=r) reads only rows r, bit for bit the file's rows (F32, BF16 held as
    stored and widened; tiny-llama's head is tied: lm_head.weight is the embedding) and the
    full weight's: every weight, vectors included (a row of a vector is one number)."""
    path = os.path.join(os.path.dirname(TINY), model)
    ref = _read_safetensors(path + "/model.safetensors")
    m = lmscope.Model(path)
    tied = "lm_head.weight" not in ref
    assert tied == (model == "tiny-llama")
    for name in m.weight_names():
        file_name = "model.embed_tokens.weight" if tied and name == "lm_head.weight" else name
        rows = _some_rows(len(ref[file_name]))
        _same_bits(m.weight(name, rows=rows), ref[file_name][rows], name)
        _same_bits(m.weight(name, rows=np.array(rows)), m.weight(name)[rows], name)
    assert m.weight("lm_head.weight", rows=[]).shape == (0, m.info["hidden_size"])


def test_weight_rows_of_gguf_blocks_and_a_tied_head(smollm2):
    """SmolLM2's Q4_1 blocks, one row dequantized at a time, are the whole matrix's rows bit for
    bit; its head is tied, so lm_head.weight's rows are the embedding's."""
    E = smollm2.weight("model.embed_tokens.weight")
    rows = _some_rows(len(E)) + [PARIS_SMOLLM2]
    _same_bits(smollm2.weight("lm_head.weight", rows=rows), E[rows], "lm_head.weight")
    _same_bits(smollm2.weight("model.embed_tokens.weight", rows=rows), E[rows], "model.embed_tokens.weight")
    for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.29.mlp.down_proj.weight",
                 "model.norm.weight"):
        W = smollm2.weight(name)
        _same_bits(smollm2.weight(name, rows=_some_rows(len(W))), W[_some_rows(len(W))], name)


@pytest.mark.parametrize("rows, error, words", [
    ([49152], IndexError, "row 49152 is outside the weight's 49152 rows (-49152..49151)"),
    ([0, -49153], IndexError, "row -49153 is outside the weight's 49152 rows (-49152..49151)"),
    ([2 ** 70], IndexError, "row 1180591620717411303424 is outside"),
    (3, TypeError, "rows is a list of row indices (rows=[3], not rows=3)"),
    ("12", TypeError, "rows is a list of row indices"),
    ([1.0], TypeError, "a row is an int, not 1.0"),
    ([True], TypeError, "a row is an int, not True"),
    ([np.bool_(True)], TypeError, "a row is an int, not "),
    (np.array([True, False]), TypeError, "a row is an int, not "),
    (np.array([[1, 2]]), TypeError, "a row is an int, not array([1, 2])"),
])
def test_weight_rows_refuses_bad_rows_in_one_line(smollm2, rows, error, words):
    with pytest.raises(error) as e:
        smollm2.weight("lm_head.weight", rows=rows)
    text = str(e.value)
    assert "\n" not in text and text.startswith("weight('lm_head.weight', rows=...): ") and words in text, text


def _write_gguf(path, arch, meta, tensors):
    """A GGUF v3 file written by hand (the format of ggml's docs/gguf.md: magic, version, counts,
    key/values, tensor infos with ggml's reversed shapes, data aligned to 32): `meta` maps keys to
    ints (uint32), floats (float32), strings or lists of strings; `tensors` maps names to float32
    or float16 arrays, or to (uint16 array, 30) for bf16."""
    import struct

    def string(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta) + 1)
    head += string("general.architecture") + struct.pack("<I", 8) + string(arch)
    for k, v in meta.items():
        if isinstance(v, int):
            value = struct.pack("<II", 4, v)
        elif isinstance(v, float):
            value = struct.pack("<If", 6, v)
        elif isinstance(v, str):
            value = struct.pack("<I", 8) + string(v)
        else:
            value = struct.pack("<IIQ", 9, 8, len(v)) + b"".join(string(e) for e in v)
        head += string(k) + value
    data = b""
    for name, t in tensors.items():
        a, ggml_type = t if isinstance(t, tuple) else (t, {np.dtype(np.float32): 0, np.dtype(np.float16): 1}[t.dtype])
        head += string(name) + struct.pack("<I", a.ndim) + struct.pack("<%dQ" % a.ndim, *reversed(a.shape))
        head += struct.pack("<IQ", ggml_type, len(data))
        data += a.tobytes() + b"\0" * (-a.nbytes % 32)
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % 32) + data)


def _gpt2_byte_alphabet():
    """GPT-2's byte -> printable character table (the byte-level BPE alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_weight_widens_a_ggufs_half_matrices(tmp_path, half):
    """A GGUF's F16/BF16 matrices are held as stored (2 bytes a weight); m.weight() still gives
    them as float32, the file's values widened exactly. The tiny Qwen2 written as a GGUF by hand
    (llama.cpp's tensor names), its matrices rounded to the half type, vectors float32."""
    import json
    ref = _read_safetensors(TINY + "/model.safetensors")
    c = json.load(open(TINY + "/config.json"))
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
             "self_attn.o_proj.weight": "attn_output.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
             "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
    for p in "qkv":
        parts["self_attn.%s_proj.weight" % p] = "attn_%s.weight" % p
        parts["self_attn.%s_proj.bias" % p] = "attn_%s.bias" % p
    for L in range(c["num_hidden_layers"]):
        for hf, gg in parts.items():
            names["model.layers.%d.%s" % (L, hf)] = "blk.%d.%s" % (L, gg)
    want, tensors = {}, {}
    for hf, gg in names.items():
        v = ref[hf]
        if v.ndim == 2 and half == "f16":
            stored = v.astype(np.float16)
            want[hf], tensors[gg] = stored.astype(np.float32), stored
        elif v.ndim == 2:   # bf16: the top 16 bits, rounded to nearest even
            u = v.view(np.uint32).astype(np.uint64)
            stored = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            want[hf], tensors[gg] = (stored.astype(np.uint32) << 16).view(np.float32), (stored, 30)
        else:
            want[hf], tensors[gg] = v, v
    meta = {"qwen2.block_count": c["num_hidden_layers"], "qwen2.context_length": c["max_position_embeddings"],
            "qwen2.embedding_length": c["hidden_size"], "qwen2.feed_forward_length": c["intermediate_size"],
            "qwen2.attention.head_count": c["num_attention_heads"],
            "qwen2.attention.head_count_kv": c["num_key_value_heads"], "qwen2.vocab_size": c["vocab_size"],
            "qwen2.rope.freq_base": float(c["rope_theta"]),
            "qwen2.attention.layer_norm_rms_epsilon": float(c["rms_norm_eps"]),
            # a stand-in byte-level BPE (GPT-2's byte alphabet, one merge), as the module loads one
            "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2",
            "tokenizer.ggml.tokens": _gpt2_byte_alphabet() + ["\u0120t"] +
                                     ["<filler_%d>" % i for i in range(c["vocab_size"] - 257)],
            "tokenizer.ggml.merges": ["\u0120 t"]}
    path = str(tmp_path / ("tiny.%s.gguf" % half))
    _write_gguf(path, "qwen2", meta, tensors)
    m = lmscope.Model(path)
    assert sorted(m.weight_names()) == sorted(want)
    for name, w in want.items():
        got = m.weight(name)
        assert got.dtype == np.float32 and got.shape == w.shape, name
        np.testing.assert_array_equal(got, w, err_msg=name)
        _same_bits(m.weight(name, rows=_some_rows(len(w))), w[_some_rows(len(w))], name)   # one row widened at a time
    assert not np.array_equal(want["lm_head.weight"], ref["lm_head.weight"])   # the rounding was real


def test_direct_logit_attribution_from_the_weights(smollm2):
    """The logits are the final norm's output times the unembedding: the identity direct logit
    attribution rests on, with the GGUF's blocks dequantized by m.weight()."""
    ids = smollm2.tokenize("The Eiffel Tower is in the city of").ids
    logits, cache = smollm2.run_with_cache(ids, names=["final_norm", "embed"])
    W_U = smollm2.weight("lm_head.weight")                       # [V, D]
    ours = cache["final_norm"][0, -1].astype(np.float64) @ W_U.T.astype(np.float64)
    scale = float(np.max(np.abs(logits[0, -1])))
    assert np.max(np.abs(ours - logits[0, -1])) <= 1e-5 + 2e-4 * scale   # the logits tolerance
    # The embedding hook is the embedding matrix's rows.
    np.testing.assert_array_equal(cache["embed"][0], smollm2.weight("model.embed_tokens.weight")[ids])


def test_a_full_disk_is_an_error_and_a_clean_exit(tmp_path):
    # A trace that hits a file-size limit raises the tools' one-line error; the script that
    # catches it must then exit normally. HDF5 1.10 keeps the file whose close failed in its
    # handle table, and its atexit handler closed it again: SIGSEGV at exit. lmscope keeps HDF5
    # from installing that handler, which works only before any HDF5 call (h5py's import).
    import resource
    import subprocess
    import sys
    import textwrap
    from conftest import BUILD
    script = textwrap.dedent("""
        import lmscope
        m = lmscope.Model(%r)
        try:
            m.trace(%r, out=%r, max_new_tokens=8)
        except Exception as e:
            print("raised:", type(e).__name__, str(e).splitlines()[0][:200])
        print("end of script")
    """) % (TINY, "The cat sat on the mat. " * 8, str(tmp_path / "t.h5"))

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                       preexec_fn=limit)
    assert "raised:" in r.stdout and "end of script" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 0, "exit status %d after the script ended\n%s%s" % (r.returncode, r.stdout, r.stderr)
    assert not os.path.exists(tmp_path / "t.h5"), "a half-written trace was left"


def test_wrong_types_are_value_errors_naming_the_setting(tiny):
    # pybind11 said "Unable to cast Python instance to C++ type (#define PYBIND11_DETAILED_...)"
    # and a 12-digit layer "IndexError: stoi".
    with pytest.raises(ValueError, match=r"seed=-1: expected an integer from 0 to 2\*\*64 - 1"):
        tiny.generate(TINY_IDS, do_sample=True, seed=-1, max_new_tokens=1)
    with pytest.raises(ValueError, match=r"top_k='3': expected an integer"):
        tiny.generate(TINY_IDS, do_sample=True, top_k="3", max_new_tokens=1)
    with pytest.raises(ValueError, match=r"hook for 'layers.1.resid_pre': expected a function"):
        tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.resid_pre", 42)])
    with pytest.raises(ValueError, match=r"a hook is \(site, fn\)"):
        tiny.run_with_hooks(TINY_IDS, hooks=[42])
    with pytest.raises(ValueError, match=r"'layers.99999999999.resid_pre' is not an editable site"):
        tiny.run_with_hooks(TINY_IDS, hooks=[("layers.99999999999.resid_pre", lambda x, ctx: None)])
