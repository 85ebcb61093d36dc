"""Direct logit attribution (python/lmscope/attribution.py, docs/attribution.md) held to
TransformerLens 4.3's decomposition of the same prompt (golden/attribution/, made by
golden/make_attribution_refs.py from HF's float32 model: decompose_resid, stack_head_results,
logit_attrs with the final norm's scale frozen), and to the identities it rests on.

Tolerance against TL: the `logits` row of docs/tolerances.md (atol 1e-5, rtol 2e-4 of the
reference's largest |value|), applied to the vector of components. Each component is a D-long
dot of a float32 activation (held to HF within 1e-4 of its scale) with the unembedding
direction, as a logit is, so the logits' allowance is the one that fits. Measured: at most
3.7e-6 (tiny-llama), 2.1e-6 on SmolLM2, about 1% of the allowance; 7.3e-6 under the other
sgemm kernels of docs/tolerances.md (docs/attribution.md)."""
import json
import os

import numpy as np
import pytest

import lmscope
from conftest import ROOT, TINY_IDS

PARIS, ROME = 7042, 7268                  # " Paris", " Rome" in SmolLM2's vocabulary
EPS32 = 2.0 ** -24                        # float32's unit roundoff


def reference(name):
    with open(os.path.join(ROOT, "golden", "attribution", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def within_logits_tolerance(ours, ref, scale=None):
    """scale: the reference's largest |value| unless given (a logit difference is held by the
    largest |logit| of its position, as the logits are: a near-tie is no reason to be stricter)."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    bound = 1e-5 + 2e-4 * (float(np.max(np.abs(ref))) if scale is None else scale)
    err = float(np.max(np.abs(ours - ref)))
    assert err <= bound, "max |ours - TransformerLens| = %.3g > %.3g" % (err, bound)


def check_against_transformer_lens(m, ref):
    a, b = ref["answer"]
    logits, cache = m.run_with_cache(ref["ids"], names=lmscope.attribution_hooks(m, heads=True))
    L = m.info["num_layers"]

    attr = m.logit_attribution(cache, (a, b))
    assert attr.labels == ["embed"] + ["layers.%d.%s" % (l, k) for l in range(L) for k in ("attn_out", "ffn_out")]
    # TL's labels in the same order: embed, 0_attn_out, 0_mlp_out, ...
    assert list(ref["components"]) == ["embed"] + ["%d_%s" % (l, k) for l in range(L) for k in ("attn_out", "mlp_out")]
    within_logits_tolerance(attr.values, list(ref["components"].values()))
    within_logits_tolerance([attr.total], [ref["logit_diff"]], scale=ref["logit_scale"])

    # Heads: lmscope's z includes the v bias, TL's compatibility mode moves each head's share of
    # it into b_O (golden/make_attribution_refs.py), so a head here is TL's head plus that share.
    heads = m.logit_attribution(cache, (a, b), heads=True)
    tl_heads = np.array(ref["heads"]) + np.array(ref.get("heads_value_bias", 0.0))
    assert heads.heads().shape == tl_heads.shape == (L, m.info["num_heads"])
    within_logits_tolerance(heads.heads(), tl_heads)
    return logits, cache, attr


@pytest.mark.parametrize("name", ["tiny-qwen2", "tiny-llama"])
def test_tiny_models_match_transformer_lens(name):
    ref = reference(name)
    check_against_transformer_lens(lmscope.Model(os.path.join(ROOT, ref["model"])), ref)


def test_smollm2_matches_transformer_lens(smollm2):
    ref = reference("smollm2")
    assert smollm2.tokenize(ref["prompt"]).ids == ref["ids"]
    assert ref["answer"] == [PARIS, ROME]
    logits, cache, attr = check_against_transformer_lens(smollm2, ref)
    # The answers by their text are the same pair.
    by_text = smollm2.logit_attribution(cache, (" Paris", " Rome"))
    np.testing.assert_array_equal(by_text.values, attr.values)
    # Lesson 17's clean logit difference, +2.86, is what the components add up to.
    assert abs(attr.total - 2.86) < 0.005


def test_tiny_gemma3_matches_torch():
    """Gemma 3's components are the post-normed branches (attn_post_norm, ffn_post_norm) and a
    head's share goes through its layer's frozen post-norm: held to the same decomposition made
    from HF's own modules in float64 (golden/attribution/tiny-gemma3.json; TransformerLens 4.3
    has none through the post-norms), with the logits' tolerance as above."""
    ref = reference("tiny-gemma3")
    m = lmscope.Model(os.path.join(ROOT, ref["model"]))
    a, b = ref["answer"]
    _, cache = m.run_with_cache(ref["ids"], names=lmscope.attribution_hooks(m, heads=True))
    L = m.info["num_layers"]
    attr = m.logit_attribution(cache, (a, b))
    assert attr.labels == ["embed"] + ["layers.%d.%s" % (l, k) for l in range(L) for k in ("attn_post_norm", "ffn_post_norm")]
    within_logits_tolerance(attr.values, list(ref["components"].values()))
    within_logits_tolerance([attr.total], [ref["logit_diff"]], scale=ref["logit_scale"])
    heads = m.logit_attribution(cache, (a, b), heads=True)
    assert heads.heads().shape == (L, m.info["num_heads"])
    within_logits_tolerance(heads.heads(), np.array(ref["heads"]))
    # A layer's heads through its frozen post-norm add up to its attention component.
    within_logits_tolerance(heads.heads().sum(1), attr.values[1::2])


@pytest.mark.parametrize("heads", [False, True])
def test_components_sum_to_the_logit_difference(tiny, heads):
    """The components add up to the logit difference up to float32 rounding: the engine adds
    them into the residual stream in float32, (n-1) roundings of at most EPS32 times the running
    sum's |value| each (the textbook bound for a sum); a head adds its o_proj dot of H*hd terms."""
    logits, cache = tiny.run_with_cache(TINY_IDS, names=lmscope.attribution_hooks(tiny, heads=heads))
    a, b = 549, 593
    attr = tiny.logit_attribution(cache, (a, b), heads=heads)
    dec = tiny.decompose(cache, heads=heads)
    read = attr.scale * tiny.weight("model.norm.weight") * (tiny.weight("lm_head.weight")[a] - tiny.weight("lm_head.weight")[b])
    terms = len(dec.labels) - 1 + (tiny.info["num_heads"] * tiny.info["head_dim"] if heads else 0)
    bound = terms * EPS32 * float(np.abs(read) @ np.abs(dec.stack).sum(0))
    assert abs(attr.values.sum() - attr.total) <= bound, (attr.values.sum() - attr.total, bound)
    assert bound < 1e-3 * np.max(np.abs(attr.values))        # it resolves 0.1% of the largest share
    # total is the logit difference the engine computed (the logits' tolerance of docs/tolerances.md).
    within_logits_tolerance([attr.total], [float(logits[0, -1, a]) - float(logits[0, -1, b])],
                            scale=float(np.max(np.abs(logits[0, -1]))))


def test_head_results_sum_to_attn_out(tiny):
    """TL's hook_result: head h's z_h @ W_O[:, h]; the heads add up to the engine's attn_out
    within its float32 o_proj dot of K = H*hd terms: K * EPS32 * sum_k |z_k W_dk|."""
    _, cache = tiny.run_with_cache(TINY_IDS, names=["layers.*.attn.z", "layers.*.attn_out"])
    K = tiny.info["num_heads"] * tiny.info["head_dim"]
    for layer in range(tiny.info["num_layers"]):
        res = tiny.head_results(cache, layer)                              # [B, T, H, D]
        z = cache["layers.%d.attn.z" % layer]                              # [B, T, H, hd]
        assert res.shape == z.shape[:3] + (tiny.info["hidden_size"],)
        W_O = tiny.weight("model.layers.%d.self_attn.o_proj.weight" % layer)   # [D, H*hd]
        bound = K * EPS32 * (np.abs(z.reshape(*z.shape[:2], K)) @ np.abs(W_O).T)   # [B, T, D]
        err = np.abs(res.sum(2) - cache["layers.%d.attn_out" % layer])
        assert np.all(err <= 2 * bound), layer                             # both sides round


def test_one_token_and_a_direction(tiny):
    """One token: its own logit, split. A direction: the same read of any vector in the
    unembedding's space (here W_U[a] - W_U[b] written out, equal to the pair's)."""
    logits, cache = tiny.run_with_cache(TINY_IDS, names=lmscope.attribution_hooks(tiny))
    one = tiny.logit_attribution(cache, 549)
    within_logits_tolerance([one.total], [logits[0, -1, 549]], scale=float(np.max(np.abs(logits[0, -1]))))
    np.testing.assert_array_equal(tiny.logit_attribution(cache, np.array([549, 593])).values,
                                  tiny.logit_attribution(cache, (549, 593)).values)
    W_U = tiny.weight("lm_head.weight")
    direction = W_U[549].astype(np.float64) - W_U[593]
    np.testing.assert_allclose(tiny.logit_attribution(cache, direction).values,
                               tiny.logit_attribution(cache, (549, 593)).values, rtol=0, atol=1e-12)


def one_line_error(fn, *words):
    with pytest.raises(ValueError) as e:
        fn()
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in words), text


def test_bad_input_is_one_line(tiny):
    _, cache = tiny.run_with_cache(TINY_IDS, names=lmscope.attribution_hooks(tiny))
    V = tiny.info["vocab_size"]
    one_line_error(lambda: tiny.logit_attribution(cache, (V, 593)), "token %d" % V, "vocabulary", "0..%d" % (V - 1))
    one_line_error(lambda: tiny.logit_attribution(cache, (549, -1)), "token -1", "vocabulary")
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593), pos=11), "position 11", "outside the prompt", "11 tokens")
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593), pos=-12), "position -12", "outside the prompt")
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593), row=1), "row 1", "outside the batch")
    one_line_error(lambda: tiny.logit_attribution(cache, (" Paris", 593)), "' Paris' is 3 tokens")
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593, 1)), "2 tokens")
    one_line_error(lambda: tiny.logit_attribution(cache, np.zeros(5)), "%d numbers" % tiny.info["hidden_size"])
    one_line_error(lambda: tiny.logit_attribution(cache, np.full(tiny.info["hidden_size"], np.nan)), "NaN")
    # heads=True reads attn.z, which this cache did not keep: the line says how to keep it.
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593), heads=True), "layers.0.attn.z", "attribution_hooks")


def test_padding_position_is_refused(tiny):
    _, cache = tiny.run_with_cache([TINY_IDS, TINY_IDS[:7]], names=lmscope.attribution_hooks(tiny))
    # Row 1 is left-padded by 4: positions 0..3 are padding, 4..10 its prompt.
    one_line_error(lambda: tiny.logit_attribution(cache, (549, 593), row=1, pos=2), "position 2 of row 1 is padding", "4..10")
    last = tiny.logit_attribution(cache, (549, 593), row=1)
    alone = tiny.logit_attribution(tiny.run_with_cache(TINY_IDS[:7], names=lmscope.attribution_hooks(tiny))[1], (549, 593))
    within_logits_tolerance(last.values, alone.values)
