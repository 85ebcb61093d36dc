"""python/lmscope_trace.py against the committed goldens (real traces) and h5py read directly
at the paths docs/trace-format.md documents."""
import json
import os
import shutil
import sys
import types

import h5py
import numpy as np
import pytest

from conftest import GOLDEN_TRACES, golden
import lmscope_trace
from lmscope_trace import HookValue, Trace, tl_name

TINY = "golden/traces/tiny-qwen2-b.h5"   # B=3, left padding, GQA (H=4, Hkv=2), 3 layers, 4 steps


def step_path(step, hook):
    return "/step_%04d/%s" % (step, hook.replace(".", "/"))


def datasets_by_hook(group):
    """{hook attribute: dataset} for every dataset under a step group, read with h5py only."""
    out = {}

    def visit(_, obj):
        if isinstance(obj, h5py.Dataset):
            out[obj.attrs["hook"]] = obj
    group.visititems(visit)
    return out


# ---- values and axes -----------------------------------------------------------------------
@pytest.mark.parametrize("rel", GOLDEN_TRACES)
def test_every_hook_equals_h5py_at_the_documented_path(rel):
    path = golden(rel)
    with Trace(path) as t, h5py.File(path, "r") as f:
        assert t.steps == list(range(f.attrs["n_steps"]))
        for step in sorted({0, 1, t.steps[-1]}):
            by_hook = datasets_by_hook(f["step_%04d" % step])
            assert sorted(t.hooks(step)) == sorted(by_hook), "hooks() = the datasets' hook attributes"
            for name, ds in by_hook.items():
                assert ds.name == step_path(step, name), "stored at /step_NNNN/ + dots as slashes"
                hv = t.hook(name, step)
                assert isinstance(hv, HookValue)
                expected = f[step_path(step, name)][()]
                assert hv.values.dtype == expected.dtype
                assert hv.values.shape == expected.shape
                np.testing.assert_array_equal(hv.values, expected)
                assert hv.axes == tuple(ds.attrs["axes"].split(","))
                assert len(hv.axes) == hv.values.ndim
                values, axes = hv   # unpacks as a pair
                assert axes is hv.axes


def test_hook_default_step_is_the_prefill_and_unpacks():
    path = golden(TINY)
    with Trace(path) as t, h5py.File(path, "r") as f:
        probs, axes = t.hook("layers.0.attn.probs")
        np.testing.assert_array_equal(probs, f["step_0000/layers/0/attn/probs"][()])
        assert axes == ("B", "H", "T", "S")
        assert t.hook("layers.0.attn.q", step=2).axes == ("B", "H", "T", "hd")
        assert t.hook("layers.0.attn.z", step=2).axes == ("B", "T", "H", "hd")
        assert t.hook("tokens.input_ids").values.dtype == np.int32


def test_hooks_are_in_forward_order():
    with Trace(golden("golden/smollm2/smollm2-chat-0.h5")) as t:
        names = t.hooks(0)
        pos = {n: i for i, n in enumerate(names)}
        chain = ["tokens.input_ids", "embed", "mask.combined", "rope.cos",
                 "layers.0.attn_norm", "layers.0.attn.q", "layers.0.attn.q_rope",
                 "layers.0.attn.scores", "layers.0.attn.probs", "layers.0.attn.z",
                 "layers.0.attn_out", "layers.0.resid_mid", "layers.0.ffn_norm",
                 "layers.0.ffn.gate", "layers.0.ffn.act", "layers.0.ffn_out",
                 "layers.0.resid_post", "layers.1.resid_post", "layers.2.resid_post",
                 "layers.10.resid_post", "layers.29.resid_post", "final_norm", "logits",
                 "sample.candidates", "sample.chosen"]
        assert [pos[n] for n in chain] == sorted(pos[n] for n in chain)
        # all steps: the union, same order
        all_names = t.hooks()
        assert set(all_names) == set().union(*(t.hooks(s) for s in t.steps))
        assert [n for n in all_names if n in pos] == names


def test_unknown_hook_and_step_say_what_is_there():
    with Trace(golden(TINY)) as t:
        with pytest.raises(KeyError, match=r"no hook 'layers.0.attn.prob'.*layers.0.attn.probs"):
            t.hook("layers.0.attn.prob")
        with pytest.raises(KeyError, match=r"no step 9 .*steps: 0\.\.3"):
            t.hook("embed", step=9)
        with pytest.raises(KeyError, match="no step 9"):
            t.step_info(9)


# ---- root, steps ---------------------------------------------------------------------------
def test_attrs_parse_json_valued_attributes():
    path = golden(TINY)
    with Trace(path) as t, h5py.File(path, "r") as f:
        a = t.attrs
        assert set(a) == set(f.attrs)
        assert a["format"] == "lmscope-trace" and a["complete"] == 1 and a["format_version"] == 1
        assert isinstance(a["n_steps"], int)
        assert a["config_json"] == json.loads(f.attrs["config_json"])
        assert a["config_json"]["architectures"] == ["Qwen2ForCausalLM"]
        assert t.config is a["config_json"]
        assert a["prompts"] == json.loads(f.attrs["prompts"])
        assert len(a["prompts"]) == 3 and all(isinstance(i, int) for i in a["prompts"][0])
        assert a["missing_hooks"] == []
        np.testing.assert_array_equal(a["gqa_map"], [0, 0, 1, 1])
        assert a["padding_side"] == "left"


def test_step_info_and_generated_ids():
    path = golden(TINY)
    with Trace(path) as t, h5py.File(path, "r") as f:
        s0 = t.step_info(0)
        assert s0["phase"] == "prefill" and s0["step"] == 0 and s0["past_length"] == 0
        assert s0["T"] == s0["S"] == t.hook("tokens.input_ids").values.shape[1]
        s1 = t.step_info(1)
        assert s1["phase"] == "decode" and s1["use_cache"] == 1
        assert s1["T"] == 1 and s1["S"] == s1["past_length"] + 1 == s0["S"] + 1
        for k, v in f["step_0001"].attrs.items():
            assert s1[k] == (v.decode() if isinstance(v, bytes) else v)
        assert s1["sample"]["do_sample"] == 0
        np.testing.assert_array_equal(t.generated_ids, f["generated_ids"][()])
        assert t.generated_ids.shape == (3, 4)
    with Trace(golden("golden/traces/tiny-qwen2-c.h5")) as t:   # use_cache = 0: full recompute
        s2 = t.step_info(2)
        assert s2["use_cache"] == 0 and s2["T"] == s2["S"] == 13


# ---- TransformerLens names -----------------------------------------------------------------
TL_LAYER_KEYS = ["hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k",
                 "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k", "attn.hook_attn_scores",
                 "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_mid",
                 "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_pre_linear", "mlp.hook_post",
                 "hook_mlp_out", "hook_resid_post"]


@pytest.mark.parametrize("step", [0, 1])
def test_as_transformer_lens_keys_shapes_and_layouts(step):
    with Trace(golden(TINY)) as t:
        info = t.step_info(step)
        B, T, S = 3, info["T"], info["S"]
        H, Hkv, hd, D, F, V = 4, 2, 16, 64, 176, 1024
        tl = t.as_transformer_lens(step)
        expected = {"hook_tokens", "hook_embed", "ln_final.hook_normalized", "unembed.hook_out"}
        expected |= {"blocks.%d.%s" % (L, k) for L in range(3) for k in TL_LAYER_KEYS}
        assert set(tl) == expected
        assert tl["hook_tokens"].shape == (B, T)
        assert tl["hook_embed"].shape == (B, T, D)
        assert tl["unembed.hook_out"].shape == (B, T, V)
        for L in (0, 2):
            b = "blocks.%d." % L
            assert tl[b + "attn.hook_pattern"].shape == (B, H, T, S)   # [batch, head, query, key]
            assert tl[b + "attn.hook_attn_scores"].shape == (B, H, T, S)
            assert tl[b + "attn.hook_q"].shape == (B, T, H, hd)        # [batch, pos, head, d_head]
            assert tl[b + "attn.hook_rot_q"].shape == (B, T, H, hd)
            assert tl[b + "attn.hook_k"].shape == (B, T, Hkv, hd)      # GQA: Hkv, not repeated
            assert tl[b + "attn.hook_rot_k"].shape == (B, T, Hkv, hd)
            assert tl[b + "attn.hook_v"].shape == (B, T, Hkv, hd)
            assert tl[b + "attn.hook_z"].shape == (B, T, H, hd)
            assert tl[b + "mlp.hook_pre"].shape == (B, T, F)
            # values: same numbers as our hooks, q/k/v transposed [B,H,T,hd] -> [B,T,H,hd]
            ours = "layers.%d." % L
            np.testing.assert_array_equal(tl[b + "attn.hook_pattern"], t.hook(ours + "attn.probs", step).values)
            np.testing.assert_array_equal(tl[b + "attn.hook_q"],
                                          t.hook(ours + "attn.q", step).values.transpose(0, 2, 1, 3))
            np.testing.assert_array_equal(tl[b + "attn.hook_rot_k"],
                                          t.hook(ours + "attn.k_rope", step).values.transpose(0, 2, 1, 3))
            np.testing.assert_array_equal(tl[b + "attn.hook_z"], t.hook(ours + "attn.z", step).values)
            np.testing.assert_array_equal(tl[b + "hook_resid_pre"], t.hook(ours + "resid_pre", step).values)
            np.testing.assert_array_equal(tl[b + "ln1.hook_normalized"], t.hook(ours + "attn_norm", step).values)
            np.testing.assert_array_equal(tl[b + "mlp.hook_post"], t.hook(ours + "ffn.act", step).values)
        np.testing.assert_array_equal(tl["ln_final.hook_normalized"], t.hook("final_norm", step).values)
        np.testing.assert_array_equal(tl["hook_tokens"], t.hook("tokens.input_ids", step).values)


def test_as_transformer_lens_leaves_out_what_the_trace_lacks():
    with Trace(golden("golden/smollm2/smollm2-chat-0.h5")) as t:
        tl = t.as_transformer_lens(0)
        assert "blocks.0.attn.hook_pattern" in tl and "blocks.29.hook_resid_post" in tl
        assert "blocks.5.attn.hook_pattern" not in tl   # only layers 0,1,15,29 were traced inside
        assert tl["blocks.0.attn.hook_pattern"].shape == (1, 9, 27, 27)
        assert tl["blocks.0.attn.hook_q"].shape == (1, 27, 9, 64)
        assert tl["blocks.0.attn.hook_k"].shape == (1, 27, 3, 64)
        assert len(tl) == len({tl_name(n) for n in t.hooks(0)} - {None})


def test_tl_name_follows_docs_hooks_md():
    assert tl_name("layers.3.attn.probs") == "blocks.3.attn.hook_pattern"
    assert tl_name("layers.3.resid_pre") == "blocks.3.hook_resid_pre"
    assert tl_name("layers.12.ffn.up") == "blocks.12.mlp.hook_pre_linear"
    assert tl_name("embed") == "hook_embed"
    assert tl_name("final_norm") == "ln_final.hook_normalized"
    assert tl_name("logits") == "unembed.hook_out"
    for none in ("kv.0.k", "mask.combined", "rope.cos", "tokens.attention_mask", "sample.chosen",
                 "layers.0.nothing"):
        assert tl_name(none) is None
    assert "AFTER" in lmscope_trace.TL_NOTES["hook_normalized"]
    assert "TRANSPOSED" in Trace.as_transformer_lens.__doc__


# ---- xarray (optional) ---------------------------------------------------------------------
def test_xarray_true_builds_a_dataarray_with_dims_equal_axes(monkeypatch):
    made = {}

    class DataArray:   # stands in for xarray.DataArray: records how it was called
        def __init__(self, data, dims, name=None, attrs=None):
            made.update(data=data, dims=dims, name=name)

    monkeypatch.setitem(sys.modules, "xarray", types.SimpleNamespace(DataArray=DataArray))
    with Trace(golden(TINY)) as t:
        da = t.hook("layers.1.attn.probs", step=1, xarray=True)
        assert isinstance(da, DataArray)
        assert made["dims"] == ("B", "H", "T", "S") and made["name"] == "layers.1.attn.probs"
        np.testing.assert_array_equal(made["data"], t.hook("layers.1.attn.probs", 1).values)


def test_xarray_true_without_xarray_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)   # import xarray -> ImportError
    with Trace(golden(TINY)) as t:
        with pytest.raises(ImportError, match="needs xarray"):
            t.hook("embed", xarray=True)
        assert isinstance(t.hook("embed"), HookValue)


def test_real_xarray_when_installed():
    xr = pytest.importorskip("xarray", reason="xarray is optional (not installed here)")
    with Trace(golden(TINY)) as t:
        da = t.hook("layers.0.attn.probs", xarray=True)
        assert isinstance(da, xr.DataArray) and da.dims == ("B", "H", "T", "S")


# ---- refusals ------------------------------------------------------------------------------
def refused(path, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        Trace(path)
    assert "\n" not in str(e.value), "one line"
    assert str(path) in str(e.value)


def test_refuses_a_file_that_is_not_hdf5(tmp_path):
    p = tmp_path / "notes.h5"
    p.write_text("not a trace\n")
    refused(p, "is not an lmscope trace \\(not an HDF5 file\\)")


def test_refuses_hdf5_without_format(tmp_path):
    p = tmp_path / "other.h5"
    with h5py.File(p, "w") as f:
        f.attrs["complete"] = 1
        f["x"] = np.zeros(3)
    refused(p, "is not an lmscope trace \\(no 'format' attribute\\)")


def test_refuses_a_wrong_format(tmp_path):
    p = tmp_path / "wrong.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        f.attrs["format"] = "something-else"
    refused(p, "is not an lmscope trace \\(format is 'something-else'")


@pytest.mark.parametrize("how", ["zero", "absent"])
def test_refuses_an_incomplete_trace(tmp_path, how):
    p = tmp_path / "cut.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        if how == "zero":
            f.attrs["complete"] = 0
        else:
            del f.attrs["complete"]
    refused(p, "is an incomplete lmscope trace \\(no complete=1")


def test_refuses_a_newer_format_version(tmp_path):
    p = tmp_path / "newer.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        f.attrs["format_version"] = 3
    refused(p, "has format_version 3; this reader reads 1, 2")


# ---- hostile files: one ValueError naming the file, whatever is wrong ------------------------
def damaged(path, call, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        call()
    assert "\n" not in str(e.value), "one line"
    assert str(path) in str(e.value)


def test_refuses_an_external_link(tmp_path):
    # a hook borrowed from another file would read as this trace's; a link into a FIFO blocked
    p = tmp_path / "ext.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        del f["step_0000/logits"]
        f["step_0000/logits"] = h5py.ExternalLink(golden(TINY), "/step_0000/logits")
    refused(p, "/step_0000/logits: an external link \\(into another file\\); traces never hold one")


def test_a_dataset_larger_than_the_file_stores_is_not_allocated(tmp_path):
    # 2^34 float32 (64 GiB) declared, nothing stored: MemoryError (or the machine's memory) before
    p = tmp_path / "huge.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        del f["step_0000/logits"]
        d = f.create_dataset("step_0000/logits", shape=(1, 1 << 17, 1 << 17), dtype="f4")
        d.attrs["hook"], d.attrs["axes"] = "logits", "B,T,V"
    with Trace(p) as t:
        damaged(p, lambda: t.hook("logits"), "step 0 logits: shape \\(1, 131072, 131072\\) needs "
                "68719476736 bytes but the file stores 0")


def test_a_broken_link_or_an_odd_attribute_is_a_value_error(tmp_path):
    p = tmp_path / "odd.h5"
    shutil.copy(golden(TINY), p)
    with h5py.File(p, "r+") as f:
        f["step_0000/embed"].attrs["axes"] = 7              # a number where text belongs
        f["step_0000/dangling"] = h5py.SoftLink("/nowhere")
        del f["step_0001"].attrs["S"]
    with Trace(p) as t:
        damaged(p, lambda: t.hook("embed"), "a damaged trace \\(AttributeError")
        assert "dangling" not in t.hooks(0)   # a dangling link is no hook, not a crash
        damaged(p, lambda: t.labels(0, step=1), "a damaged trace \\(KeyError")
        with pytest.raises(KeyError, match="no hook 'nothing'"):   # the API's own KeyError stays
            t.hook("nothing")


# ---- kv.L.k / kv.L.v stored as appended rows (format_version 2) ---------------------------
def appended_copy(src, dst, drop=None):
    """The golden (whole cache at every step, as HF wrote it) rewritten as lmscope writes it
    now: step n keeps the rows S-T..S-1 it appended, with rows = "appended", first_position."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f.attrs["format_version"] = 2
        for name in [n for n in f if n.startswith("step_")]:
            g = f[name]
            S, T = int(g.attrs["S"]), int(g.attrs["T"])
            for ds in list(datasets_by_hook(g).values()):
                hook = ds.attrs["hook"]
                if not hook.startswith("kv."):
                    continue
                rows, path = ds[:, :, S - T:], ds.name
                del f[path]
                if (name, hook) == drop:
                    continue
                new = f.create_dataset(path, data=rows)
                new.attrs.update({"hook": hook, "axes": "B,Hkv,T,hd", "rows": "appended",
                                  "first_position": np.int32(S - T)})


def test_appended_kv_rows_read_back_as_the_whole_cache(tmp_path):
    p = tmp_path / "appended.h5"
    appended_copy(golden(TINY), p)
    with Trace(golden(TINY)) as ref, Trace(p) as t:
        kv = [h for h in ref.hooks(0) if h.startswith("kv.")]
        assert len(kv) == 6
        for step in reversed(ref.steps):            # out of order too: rebuilt from step 0
            for hook in kv:
                a, r = t.hook(hook, step), ref.hook(hook, step)
                assert a.axes == r.axes == ("B", "Hkv", "S", "hd")
                np.testing.assert_array_equal(a.values, r.values)
                assert t.h5[step_path(step, hook)].shape[2] == t.step_info(step)["T"]
        for step in ref.steps:
            np.testing.assert_array_equal(t.hook("kv.1.k", step).values, ref.hook("kv.1.k", step).values)


def test_appended_kv_rows_with_a_step_missing_say_so(tmp_path):
    p = tmp_path / "gap.h5"
    appended_copy(golden(TINY), p, drop=("step_0001", "kv.0.v"))
    with Trace(p) as t:
        assert t.hook("kv.0.v", 0).values.shape[2] == t.step_info(0)["S"]
        with pytest.raises(ValueError, match="step 1 kv.0.v: missing, so the cache of step 2 cannot be rebuilt"):
            t.hook("kv.0.v", 2)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file"):
        Trace(tmp_path / "nope.h5")


def test_close_and_context_manager():
    with Trace(golden(TINY)) as t:
        assert t.h5  # open
        assert "4 steps" in repr(t)
    assert not t.h5  # closed


# ---- tokens --------------------------------------------------------------------------------
def test_tokens_without_tokenizer_group_are_the_prompt_ids():
    path = golden(TINY)
    with Trace(path) as t, h5py.File(path, "r") as f:
        assert "tokenizer" not in f   # no committed golden has one: see the test below
        prompts = json.loads(f.attrs["prompts"])
        for row in range(3):
            assert t.tokens(row) == prompts[row]
        assert t.tokens(1) == [43, 392, 346, 287, 382, 962, 676, 3]
        with pytest.raises(IndexError, match="no row 3"):
            t.tokens(3)
        assert t.tokenizer(0) == {}


@pytest.mark.parametrize("rel,row,step,expected", [
    # left padding, KV cache: pads first, then the prompt, then this row's generated tokens
    ("golden/traces/tiny-qwen2-b.h5", 0, 0, ["<pad>"] * 7 + ["42", "308", "333", "746", "3"]),
    ("golden/traces/tiny-qwen2-b.h5", 0, 2, ["<pad>"] * 7 + ["42", "308", "333", "746", "3", "152", "346"]),
    # right padding: the pads sit between the prompt and the generated tokens
    ("golden/traces/tiny-qwen2-r.h5", 0, 2, ["42", "308", "333", "746", "3"] + ["<pad>"] * 7 + ["472", "703"]),
    # no KV cache: the step's own input_ids cover every key position
    ("golden/traces/tiny-qwen2-c.h5", 0, 2,
     ["330", "749", "537", "264", "935", "314", "267", "681", "289", "295", "16", "549", "1011"]),
])
def test_labels_name_every_key_position(rel, row, step, expected):
    with Trace(golden(rel)) as t:
        labels = t.labels(row, step)
        assert labels == expected
        assert len(labels) == t.step_info(step)["S"]
        gen = t.generated_ids[row]
        if step > 0:
            assert labels[-step:] == [str(i) for i in gen[:step]]


def add_tokenizer_row(f, row, text, ids, pieces, words, kinds, word_ids_offset):
    """/tokenizer/row_B as docs/trace-format.md and lib/tokenizer/encode_trace.cpp write it:
    variable-length UTF-8 strings, int32 ids and offsets, merges/* with M = 0 rows."""
    s = h5py.string_dtype("utf-8")
    g = f.create_group("tokenizer/row_%d" % row)
    g.create_dataset("text", data=text, dtype=s)
    g.create_dataset("ids", data=np.array(ids, np.int32))
    g.create_dataset("pieces", data=pieces, dtype=s)
    g.create_dataset("words", data=words, dtype=s)
    g.create_dataset("word_kind", data=kinds, dtype=s)
    g.create_dataset("word_ids_offset", data=np.array(word_ids_offset, np.int32))
    g.create_dataset("symbols", data=np.zeros(0, np.int32))
    g.create_dataset("word_symbols_offset", data=np.zeros(len(words) + 1, np.int32))
    for m in ("word", "step", "left", "right", "merged", "rank", "position"):
        g.create_dataset("merges/" + m, data=np.zeros(0, np.int32))
    for m in ("left_text", "right_text", "merged_text"):
        g.create_dataset("merges/" + m, shape=(0,), dtype=s)


def test_tokens_are_the_pieces_when_the_trace_has_a_tokenizer_group(tmp_path):
    p = tmp_path / "with-tokenizer.h5"
    shutil.copy(golden(TINY), p)
    pieces0 = ["<|im_start|>", "Hello", " world", "\\xE4\\xB8", "\u00e9t\u00e9"]
    with h5py.File(p, "r+") as f:
        add_tokenizer_row(f, 0, "Hello world", [1, 2, 3, 4, 5], pieces0,
                          ["<|im_start|>", "Hello", " world\u4e2d", "\u00e9t\u00e9"],
                          ["post", "bpe", "bpe", "bpe"], [0, 1, 2, 4, 5])
        g = f.create_group("tokenizer/row_1")   # ids only, no pieces
        g.create_dataset("ids", data=np.array([7, 8], np.int32))
    with Trace(p) as t:
        assert t.tokens(0) == pieces0
        assert all(isinstance(x, str) for x in t.tokens(0))
        assert t.tokens(1) == [7, 8]
        assert t.tokens(2) == t.attrs["prompts"][2]   # no row_2: the prompt ids
        tok = t.tokenizer(0)
        assert tok["text"] == "Hello world" and tok["word_kind"] == ["post", "bpe", "bpe", "bpe"]
        np.testing.assert_array_equal(tok["ids"], [1, 2, 3, 4, 5])
        assert tok["merges/left_text"] == []
    with h5py.File(p, "r+") as f:   # pieces of the real prompt ids: labels() shows them
        del f["tokenizer/row_0"]
        ids = json.loads(f.attrs["prompts"])[0]
        add_tokenizer_row(f, 0, "x", ids, ["p%d" % i for i in ids], ["x"], ["bpe"], [0, len(ids)])
    with Trace(p) as t:
        assert t.labels(0, 1) == ["<pad>"] * 7 + ["p%d" % i for i in t.attrs["prompts"][0]] + \
            [str(t.generated_ids[0, 0])]


def test_pip_install_installs_the_reader():
    # pip install ./python (python/pyproject.toml) installs what CMake's component "python" holds.
    root = os.path.dirname(os.path.dirname(os.path.abspath(lmscope_trace.__file__)))
    assert 'install.components = ["python"]' in open(os.path.join(root, "python", "pyproject.toml")).read()
    cmake = open(os.path.join(root, "CMakeLists.txt")).read()
    assert "install(FILES ${PROJECT_SOURCE_DIR}/python/lmscope_trace.py DESTINATION . COMPONENT python)" in cmake
    assert os.path.samefile(lmscope_trace.__file__, os.path.join(root, "python", "lmscope_trace.py"))


def test_docs_python_md_example_prints_what_the_doc_shows(capsys, monkeypatch):
    """The attention-pattern example in docs/python.md runs and prints the lines shown under it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(lmscope_trace.__file__)))
    doc = open(os.path.join(root, "docs", "python.md"), encoding="utf-8").read()
    example = doc.split("## Example", 1)[1]
    code, after = example.split("```python\n", 1)[1].split("```\n", 1)
    shown = after.split("```\n", 1)[1].split("```", 1)[0]   # the next block: the output
    monkeypatch.chdir(root)
    exec(compile(code, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    expected = [l for l in shown.splitlines() if l != "..."]
    assert len(expected) >= 3, "the doc shows the printed table"
    assert printed[:len(expected)] == expected
