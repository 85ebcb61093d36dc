"""The module is the engine the tools run: its arrays, edits and generations equal what
lmscope-trace writes for the same settings, bit for bit (the same code runs; any difference
would be a different forward, hook set or generation loop)."""
import numpy as np
import pytest

import lmscope
from conftest import SMOLLM2, TINY, TINY_IDS, tool


def traced(tmp_path, model, *args):
    out = tmp_path / "cli.h5"
    hooks = () if "--hooks" in args else ("--hooks", "*")   # every hook, as the module's cache holds
    code, stdout, err = tool("lmscope-trace", "-q", "--model", model, "--out", out, *hooks, *args)
    assert code == 0, err
    return lmscope.Trace(str(out)), stdout


def test_run_with_cache_equals_the_trace_file_bit_for_bit(tmp_path, tiny):
    logits, cache = tiny.run_with_cache(TINY_IDS)
    t, _ = traced(tmp_path, TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)), "--max-new-tokens", "1")
    stored = t.hooks(0)
    assert set(stored) == set(cache)   # every hook of the prefill, kv.* included
    for name in stored:
        if name.startswith("kv."):   # the cache rows: the trace keeps them per step (trace-format.md)
            continue
        assert name in cache, name
        assert cache[name].dtype == t.hook(name, 0).values.dtype, name
        np.testing.assert_array_equal(cache[name], t.hook(name, 0).values, err_msg=name)
    np.testing.assert_array_equal(logits, t.hook("logits", 0).values)
    assert logits.shape == (1, len(TINY_IDS), tiny.info["vocab_size"])


def test_a_python_edit_equals_the_same_intervention_on_the_command_line(tmp_path, tiny):
    def zero_head_2(z, ctx):        # attn.z is [B, T, H, hd]
        assert ctx["layer"] == 1 and ctx["hook"] == "layers.1.attn.z"
        z[:, :, 2, :] = 0

    spec = "layers.1.attn.z[head=2]=zero"
    by_python = tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.attn.z", zero_head_2)])
    by_spec = tiny.run_with_hooks(TINY_IDS, hooks=[lmscope.Zero("layers.1.attn.z", head=2)])
    t, _ = traced(tmp_path, TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)), "--max-new-tokens", "1",
                  "--hooks", "logits", "--intervene", spec)
    np.testing.assert_array_equal(by_python, t.hook("logits", 0).values)
    np.testing.assert_array_equal(by_spec, t.hook("logits", 0).values)
    clean = tiny.run_with_hooks(TINY_IDS)
    assert np.abs(clean - by_python).max() > 1e-3   # the edit changed the logits
    # Returning a new array instead of editing in place is the same edit.
    by_return = tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.attn.z", lambda z, ctx: z * np.array(
        [1, 1, 0, 1], dtype=np.float32)[None, None, :, None])])
    np.testing.assert_array_equal(by_return, by_python)


def test_generate_equals_lmscope_trace_greedy_and_sampled(tmp_path, tiny):
    ids = ",".join(map(str, TINY_IDS))
    for args, kw in [((), {}),
                     (("--do-sample", "--temperature", "0.8", "--top-k", "20", "--seed", "7"),
                      dict(do_sample=True, temperature=0.8, top_k=20, seed=7))]:
        g = tiny.generate(TINY_IDS, max_new_tokens=8, **kw)
        _, out = traced(tmp_path, TINY, "--prompt-ids", ids, "--max-new-tokens", "8", "--hooks", "logits", *args)
        assert "row 0: %s" % ",".join(map(str, g.ids[0])) in out
        assert "row 0 stop: %s" % g.stop_reasons[0] in out


def test_generate_with_an_edit_every_step_equals_the_command_line(tmp_path, tiny):
    g = tiny.generate(TINY_IDS, max_new_tokens=6, hooks=[("layers.0.resid_post", lambda x, ctx: x * 0.5)])
    _, out = traced(tmp_path, TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)), "--max-new-tokens", "6",
                    "--hooks", "logits", "--intervene", "layers.0.resid_post=scale(0.5)")
    assert "row 0: %s" % ",".join(map(str, g.ids[0])) in out
    assert g.ids != tiny.generate(TINY_IDS, max_new_tokens=6).ids


def test_trace_writes_the_file_lmscope_trace_writes(tmp_path, tiny):
    ours = tmp_path / "py.h5"
    tiny.trace(TINY_IDS, out=ours, max_new_tokens=3)
    cli, _ = traced(tmp_path, TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)), "--max-new-tokens", "3")
    mine = lmscope.Trace(str(ours))
    assert mine.steps == cli.steps
    for s in cli.steps:
        assert mine.hooks(s) == cli.hooks(s)
        for name in cli.hooks(s):
            np.testing.assert_array_equal(mine.hook(name, s).values, cli.hook(name, s).values, err_msg=name)
    code, out, err = tool("lmscope-diff", ours, cli.path)
    assert code == 0, out + err


def test_a_batch_left_padded_equals_the_command_line(tmp_path, tiny):
    short = TINY_IDS[:6]
    logits, cache = tiny.run_with_cache([TINY_IDS, short], names=["layers.1.attn.probs"])
    t, _ = traced(tmp_path, TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)), "--prompt-ids",
                  ",".join(map(str, short)), "--max-new-tokens", "1", "--hooks", "logits,layers.1.attn.probs")
    np.testing.assert_array_equal(logits, t.hook("logits", 0).values)
    np.testing.assert_array_equal(cache["layers.1.attn.probs"], t.hook("layers.1.attn.probs", 0).values)
    assert list(cache) == ["layers.1.attn.probs"]   # only what was asked (logits come apart)


def test_smollm2_text_prompt_cache_and_generate(tmp_path, smollm2):
    prompt = "The Eiffel Tower is in the city of"
    logits, cache = smollm2.run_with_cache(prompt, names=["layers.*.resid_post"])
    t, _ = traced(tmp_path, SMOLLM2, "--prompt", prompt, "--max-new-tokens", "1", "--hooks", "logits,layers.*.resid_post")
    for l in range(smollm2.info["num_layers"]):
        name = "layers.%d.resid_post" % l
        np.testing.assert_array_equal(cache[name], t.hook(name, 0).values, err_msg=name)
    np.testing.assert_array_equal(logits, t.hook("logits", 0).values)
    g = smollm2.generate(prompt, max_new_tokens=5)
    _, out = traced(tmp_path, SMOLLM2, "--prompt", prompt, "--max-new-tokens", "5", "--hooks", "logits")
    assert "row 0: %s" % ",".join(map(str, g.ids[0])) in out
    assert g.text[0].startswith(" Paris")
