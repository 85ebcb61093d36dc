"""m.run_with_grads (python/lmscope/__init__.py; lib/grad/, docs/gradients.md): the module's
gradients are the engine's, held to torch autograd's (golden/grad/, made by
golden/make_grad_refs.py) within the bound of docs/tolerances.md's "Gradients" (2e-4 of a
tensor's max |torch grad|), reachable by TransformerLens names, and a first-order prediction of
what an edit of the activation does to the metric."""
import json
import os

import h5py
import numpy as np
import pytest

import lmscope
from conftest import ROOT, TINY_IDS

GRAD_TOLERANCE = 2e-4      # of max |torch grad|; docs/tolerances.md, "Gradients"


def golden(name):
    with open(os.path.join(ROOT, "golden", "grad", "manifest.json"), encoding="utf-8") as f:
        case = next(c for c in json.load(f) if c["name"] == name)
    with h5py.File(os.path.join(ROOT, case["file"]), "r") as f:
        return case, {k: f["grad"][k][()] for k in f["grad"]}, float(f.attrs["metric"])


def check_against_torch(m, name, names=None):
    case, ref, metric = golden(name)
    logits, cache, grads = m.run_with_grads(case["prompts"], case["metric"], names=names)
    assert grads.run_info["metric_value"] == pytest.approx(metric, rel=1e-4, abs=1e-4)
    checked = 0
    for hook, want in ref.items():
        if hook not in grads:
            continue
        got = grads[hook]
        assert got.shape == want.shape, hook
        scale = float(np.max(np.abs(want)))
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        assert err <= GRAD_TOLERANCE * scale + 1e-12, "%s: max |ours - torch| %.3g of %.3g" % (hook, err, scale)
        checked += 1
    return logits, cache, grads, checked


def test_tiny_gradients_match_torch_autograd():
    m = lmscope.Model(os.path.join(ROOT, "golden", "models", "tiny-qwen2"))
    _, cache, grads, checked = check_against_torch(m, "tiny-qwen2-batch-logprob")
    assert checked == 57                                    # every hook of golden/grad's case
    assert set(grads) <= set(cache)                         # a gradient is of an activation asked for


def test_tiny_gemma3_gradients_match_torch_autograd():
    """Gemma 3: the post-branch norms, GeGLU, q/k norms and the sliding window (4, passed by
    every prompt of the left-padded batch) in the backward, held to HF's Gemma3ForCausalLM."""
    m = lmscope.Model(os.path.join(ROOT, "golden", "models", "tiny-gemma3"))
    _, _, grads, checked = check_against_torch(m, "tiny-gemma3-batch-loss")
    assert checked == 69                                    # every hook of golden/grad's case
    assert "layers.1.attn_post_norm" in grads and "layers.2.ffn_post_norm" in grads


def test_transformer_lens_names_and_layouts(tiny):
    _, cache, grads = tiny.run_with_grads(TINY_IDS, "logprob:pos=-1:16", names=["blocks.1.attn.hook_q", ("resid_pre", 1)])
    assert sorted(grads) == ["layers.1.attn.q", "layers.1.resid_pre"]
    np.testing.assert_array_equal(grads["blocks.1.hook_resid_pre"], grads["layers.1.resid_pre"])
    # TL's hook_q is [B, T, H, hd]; lmscope's attn.q is [B, H, T, hd]
    np.testing.assert_array_equal(grads["blocks.1.attn.hook_q"], grads["layers.1.attn.q"].transpose(0, 2, 1, 3))
    assert cache["layers.1.attn.q"].shape == grads["layers.1.attn.q"].shape


def test_gradient_predicts_a_small_edit(tiny):
    """metric(a + eps d) - metric(a - eps d) ~ 2 eps grad . d, the edit made by run_with_hooks."""
    site = "layers.1.resid_mid"
    _, cache, grads = tiny.run_with_grads(TINY_IDS, "logit_diff:pos=-1:16,17", names=[site])
    rng = np.random.default_rng(0)
    d = rng.standard_normal(cache[site].shape).astype(np.float32)
    eps = 1e-3 * float(np.abs(cache[site]).max())

    def metric_with(sign):
        def add(a, ctx):
            a += sign * eps * d
        logits = tiny.run_with_hooks(TINY_IDS, hooks=[(site, add)])
        return float(logits[0, -1, 16]) - float(logits[0, -1, 17])
    measured = (metric_with(+1) - metric_with(-1)) / (2 * eps)
    predicted = float(np.sum(grads[site].astype(np.float64) * d))
    assert measured == pytest.approx(predicted, rel=2e-2), (measured, predicted)


def test_bad_input_is_one_value_error(tiny):
    for metric, message in [("logprob:pos=-1:1024", "token id 1024 is outside the vocabulary (1024)"),
                            ("logprob:pos=11:5", "position 11 is outside the prompt (row 0 has 11 tokens)"),
                            ("loss:4:40", "the range [4, 40) is outside the prompt"),
                            ("logit_diff:pos=-1:5", "logit_diff takes 2 tokens, got 1"),
                            ("entropy:pos=-1:", "unknown metric 'entropy'")]:
        with pytest.raises(ValueError) as e:
            tiny.run_with_grads(TINY_IDS, metric)
        assert message in str(e.value) and "\n" not in str(e.value), (metric, str(e.value))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny.run_with_grads([5, 6, 4096], "logprob:pos=-1:5")


def test_smollm2_matches_torch_autograd_with_text_tokens(smollm2):
    case, _, _ = golden("smollm2-logit-diff")
    assert case["metric"] == "logit_diff:pos=-1:7042,7268"          # " Paris", " Rome"
    _, _, grads, checked = check_against_torch(smollm2, "smollm2-logit-diff")
    assert checked == 57
    # The same metric with its tokens as text.
    _, _, by_text = smollm2.run_with_grads(case["prompts"], "logit_diff:pos=-1: Paris, Rome", names=["embed"])
    np.testing.assert_array_equal(by_text["embed"], grads["embed"])


def test_gradients_of_the_intervened_model(tiny):
    """Interventions apply in the forward that is differentiated: a zero-ablation gives the path
    through its site no gradient, and a scaled site's gradient is that of the scaled model (the
    same finite edit as above, made with the intervention in place)."""
    _, _, ablated = tiny.run_with_grads(TINY_IDS, "logit_diff:pos=-1:16,17", names=["layers.1.*"],
                                        hooks=[lmscope.Zero("layers.1.attn_out")])
    assert np.abs(ablated["layers.1.attn_out"]).max() > 0          # the gradient at the edited tensor
    for upstream in ("layers.1.attn.z", "layers.1.attn.v", "layers.1.attn.probs"):
        assert not ablated[upstream].any(), upstream                # nothing flows through a zero
    np.testing.assert_array_equal(ablated["layers.1.resid_pre"], ablated["layers.1.resid_mid"])

    site, scale = "layers.1.resid_pre", lmscope.Scale("layers.1.ffn_out", 0.25)
    _, cache, grads = tiny.run_with_grads(TINY_IDS, "logit_diff:pos=-1:16,17", names=[site], hooks=[scale])
    d = np.random.default_rng(1).standard_normal(cache[site].shape).astype(np.float32)
    eps = 1e-3 * float(np.abs(cache[site]).max())

    def metric_with(sign):
        def add(a, ctx):
            a += sign * eps * d
        logits = tiny.run_with_hooks(TINY_IDS, hooks=[scale, (site, add)])
        return float(logits[0, -1, 16]) - float(logits[0, -1, 17])
    measured = (metric_with(+1) - metric_with(-1)) / (2 * eps)
    assert measured == pytest.approx(float(np.sum(grads[site].astype(np.float64) * d)), rel=2e-2)
    _, _, plain = tiny.run_with_grads(TINY_IDS, "logit_diff:pos=-1:16,17", names=[site])
    assert not np.allclose(plain[site], grads[site], rtol=1e-3)     # the scale changed the gradient

    with pytest.raises(ValueError, match="cannot be differentiated"):
        tiny.run_with_grads(TINY_IDS, "logprob:pos=-1:5", hooks=[("layers.1.attn.z", lambda a, ctx: None)])
    with pytest.raises(ValueError, match="edit of layers.0.attn.probs: not yet"):
        tiny.run_with_grads(TINY_IDS, "logprob:pos=-1:5", hooks=[lmscope.Zero("layers.0.attn.probs")])


def test_attribution_patching_matches_a_torch_sweep():
    """lmscope.attribution_patching against the same estimate written in torch
    (golden/grad/attribution-patching-tiny-qwen2.json: HF float64, autograd), every cell of
    resid_pre / attn_out / ffn_out and every head's cell of attn.z. Each cell is a dot of an
    activation difference with a gradient, each held to HF within their own bounds; the sum is
    held at 1e-3 of the largest |cell| (measured: see docs/gradients.md)."""
    with open(os.path.join(ROOT, "golden", "grad", "attribution-patching-tiny-qwen2.json"), encoding="utf-8") as f:
        ref = json.load(f)
    m = lmscope.Model(os.path.join(ROOT, ref["model"]))
    est = lmscope.attribution_patching(m, ref["clean"], ref["corrupted"], ref["metric"],
                                       sites=("resid_pre", "attn_out", "ffn_out", "attn.z"))
    assert est["attn.z"].shape == (1, 3, len(ref["clean"]), 4)      # [B, L, T, H]
    worst = 0.0
    for site, want in ref["estimate"].items():
        want = np.array(want)                                  # [L, T] ([L, T, H] for attn.z)
        got = est[site][0]
        assert got.shape == want.shape, site
        rel = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
        worst = max(worst, rel)
        assert rel <= 1e-3, "%s: %.3g of max |cell|" % (site, rel)
    print("attribution patching: worst %.3g of max |cell|" % worst)
    # The positions before the first differing token have no activation difference: exactly 0.
    first = next(i for i, (a, b) in enumerate(zip(ref["clean"], ref["corrupted"])) if a != b)
    assert not est["resid_pre"][0, :, :first].any()
    with pytest.raises(ValueError, match="differ in length"):
        lmscope.attribution_patching(m, ref["clean"], ref["corrupted"][:-1], "logprob:pos=-1:5")


def test_prob_is_the_logprob_times_p():
    """prob:pos=P:A (lmscope-patch's prob, in lib/grad's grammar): d p / d x = p · d log p / d x,
    so its gradient at every hook is the log-prob's scaled by p, and its value exp(log p)."""
    m = lmscope.Model(os.path.join(ROOT, "golden", "models", "tiny-qwen2"))
    _, _, g_log = m.run_with_grads(TINY_IDS, "logprob:pos=-1:5", names=["layers.1.resid_mid", "logits"])
    _, _, g_p = m.run_with_grads(TINY_IDS, "prob:pos=-1:5", names=["layers.1.resid_mid", "logits"])
    p = g_p.run_info["metric_value"]
    assert p == pytest.approx(np.exp(g_log.run_info["metric_value"]), rel=1e-6)
    for hook in ("layers.1.resid_mid", "logits"):
        want = p * g_log[hook].astype(np.float64)
        assert np.max(np.abs(g_p[hook] - want)) <= 1e-6 * np.max(np.abs(want)) + 1e-12, hook
