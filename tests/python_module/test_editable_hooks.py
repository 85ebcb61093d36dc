"""Every hook the hook table marks editable (HookInfo::editable, lib/trace/hooks.cpp; listed by
lmscope._core.editable_hooks()) takes a Python function and the built-in edits, inside the
forward: a function that zeroes it and lmscope.Zero both change the logits, and a function that
leaves it alone does not. The list is the table's, so a hook made editable is tested here with
no new line (the command line: tests/intervene/editable_hooks_cli_test.cpp).

Each hook is edited at layer 1 of 3 of the first committed tiny model that computes it
(attn.q_norm / attn.k_norm: Qwen3 and Gemma 3; attn_post_norm / ffn_post_norm: Gemma 3 only)."""
import os

import numpy as np
import pytest

import lmscope
from lmscope import _core
from conftest import ROOT, TINY_IDS

TINY3 = os.path.join(ROOT, "golden", "models", "tiny-qwen3")
GEMMA3 = os.path.join(ROOT, "golden", "models", "tiny-gemma3")


@pytest.fixture(scope="module")
def models(tiny):
    return [tiny, lmscope.Model(TINY3), lmscope.Model(GEMMA3)]


def _model_with(models, name):
    """The first model that computes the hook `name`, and its unedited logits."""
    for m in models:
        logits, cache = m.run_with_cache(TINY_IDS, names=[name])
        if name in cache:
            return m, logits
    pytest.fail("%s is editable but no committed tiny model computes it" % name)


def test_the_table_lists_every_activation():
    sites = _core.editable_hooks()
    assert sites[0] == "embed" and sites[-2:] == ["final_norm", "logits"]
    for read_only in ("tokens.input_ids", "mask.combined", "rope.cos", "kv.L.k", "sample.probs"):
        assert read_only not in sites
    assert len(sites) >= 23


@pytest.mark.parametrize("site", _core.editable_hooks())
def test_every_editable_hook_is_edited_by_python(models, site):
    name = site.replace("layers.L.", "layers.1.")
    m, clean = _model_with(models, name)
    seen = []

    def zero(a, ctx):
        seen.append((ctx["hook"], a.shape))
        a[...] = 0

    edited = m.run_with_hooks(TINY_IDS, hooks=[(name, zero)])
    assert seen and seen[0][0] == name
    assert len(seen[0][1]) == len(_core.hook_axes(name).split(","))   # the table's axes
    assert np.abs(edited - clean).max() > 1e-3, "zeroing %s did not change the logits" % name

    builtin = m.run_with_hooks(TINY_IDS, hooks=[lmscope.Zero(name)])
    np.testing.assert_array_equal(builtin, edited)   # the same zeros, by the grammar's path

    # Written back unchanged, the tensor gives the logits again. Bit for bit, except after
    # attn.scores and attn.probs, from which the attention is then made again on the host
    # (float32 softmax and sums in key order, lib/model/attend_probs.h) instead of by the
    # backend's kernels. Logits here reach 10.2, where float32's spacing is 1e-6; the two paths
    # measured 4.3e-6 apart (AVX2); 1e-4 leaves room for other kernels' summation orders, and a
    # real edit moves them by more than 1e-3 (above; doubled scores: 0.85).
    unchanged = m.run_with_hooks(TINY_IDS, hooks=[(name, lambda a, ctx: None)])
    if name.endswith(("attn.scores", "attn.probs")):
        np.testing.assert_allclose(unchanged, clean, rtol=0, atol=1e-4)
    else:
        np.testing.assert_array_equal(unchanged, clean)


# Edits that the forward's algebra says are the same edit, made at two hooks: the newly
# editable hooks reach the next op as the forward would. Doubling is exact in float32, so the
# linear ones agree bit for bit; doubling the scores is doubling q after RoPE (scores = q·k/√hd),
# one path through the backend's attention and one through the host's softmax (within 1e-4, as
# above; measured 4.2e-6).
@pytest.mark.parametrize("a, b", [
    ("layers.1.ffn.up=scale(2)", "layers.1.ffn.act=scale(2)"),             # act = silu(gate) * up
    ("final_norm=scale(2)", "logits=scale(2)"),                            # logits = final_norm @ W (no bias)
])
def test_edits_the_algebra_makes_equal_are_equal(tiny, a, b):
    np.testing.assert_array_equal(tiny.run_with_hooks(TINY_IDS, hooks=[a]), tiny.run_with_hooks(TINY_IDS, hooks=[b]))


def test_scaled_scores_are_scaled_queries(tiny):
    scores = tiny.run_with_hooks(TINY_IDS, hooks=["layers.1.attn.scores=scale(2)"])
    queries = tiny.run_with_hooks(TINY_IDS, hooks=["layers.1.attn.q_rope=scale(2)"])
    assert np.abs(scores - tiny.run_with_hooks(TINY_IDS)).max() > 1e-3
    np.testing.assert_allclose(scores, queries, rtol=0, atol=1e-4)


def test_zeroed_scores_attend_evenly_to_the_visible_keys(tiny):
    """A zeroed score row is a uniform row over the keys the mask leaves visible: masked keys
    (the future) keep probability 0."""
    seen = {}

    def keep(a, ctx):
        seen["probs"] = a.copy()

    tiny.run_with_hooks(TINY_IDS, hooks=["layers.1.attn.scores=zero", ("layers.1.attn.probs", keep)])
    probs = seen["probs"][0]                                               # [H, T, S]
    T = probs.shape[1]
    expected = np.tril(np.ones((T, T), np.float32)) / np.arange(1, T + 1, dtype=np.float32)[:, None]
    np.testing.assert_allclose(probs, np.broadcast_to(expected, probs.shape), rtol=1e-6, atol=0)


def test_an_edit_of_a_sliding_layers_scores_keeps_its_window():
    """Gemma 3's layer 0 slides (window 4 on tiny-gemma3, an 11-token prompt): scores written
    back unchanged give the logits again (within the host softmax's 1e-4, as above), so the
    probabilities made from them use that layer's window, not the global causal mask; zeroed,
    a query attends evenly to the 4 keys its window shows, and to no other."""
    m = lmscope.Model(GEMMA3)
    clean = m.run_with_hooks(TINY_IDS)
    unchanged = m.run_with_hooks(TINY_IDS, hooks=[("layers.0.attn.scores", lambda a, ctx: None)])
    np.testing.assert_allclose(unchanged, clean, rtol=0, atol=1e-4)
    seen = {}

    def keep(a, ctx):
        seen["probs"] = a.copy()

    m.run_with_hooks(TINY_IDS, hooks=["layers.0.attn.scores=zero", ("layers.0.attn.probs", keep)])
    row = seen["probs"][0, 0, len(TINY_IDS) - 1]                           # the last query's row [S]
    expected = np.zeros(len(TINY_IDS), np.float32)
    expected[-4:] = 0.25
    np.testing.assert_allclose(row, expected, rtol=1e-6, atol=0)
