"""lmscope.patch_sweep (python/lmscope/patching.py; lib/experiments/patching.h, docs/patching.md):
the C++ sweep lmscope-patch runs, from Python, held to the torch sweeps of golden/patching/
(golden/make_patching_refs.py) within docs/patching.md's bounds, with any function of the logits
as the metric."""
import json
import os

import numpy as np
import pytest

import lmscope
from conftest import ROOT


def golden(name):
    with open(os.path.join(ROOT, "golden", "patching", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def case():
    ref = golden("tiny-qwen2-logprob")
    return ref, lmscope.Model(os.path.join(ROOT, ref["model"]))


def test_sweep_and_attribution_equal_torch(case):
    ref, m = case
    r = lmscope.patch_sweep(m, ref["clean"], ref["corrupted"], list(ref["sites"]), metric=ref["metric"], method="both")
    tol = 2 * (1e-5 + 2e-4 * ref["logit_scale"])    # the logits row of docs/tolerances.md, twice
    assert r.clean_metric == pytest.approx(ref["clean_metric"], abs=tol)
    assert r.corrupt_metric == pytest.approx(ref["corrupt_metric"], abs=tol)
    for site, want in ref["sites"].items():
        g = r[site]
        assert g.metric.shape == np.array(want["patched"]).shape, site
        assert np.max(np.abs(g.metric - want["patched"])) <= tol, site
        est = np.array(want["attribution"])
        assert np.max(np.abs(g.attribution - est)) <= 1e-3 * np.max(np.abs(est)), site
        assert np.allclose(g.normalized, (g.metric - r.corrupt_metric) / (r.clean_metric - r.corrupt_metric))
        assert -1.0 <= g.pearson <= 1.0, site
    assert r["attn.v"].columns == "head" and r["attn.v"].column_index == [0, 1]      # KV heads
    assert r["ffn.act:neuron=0:8"].columns == "neuron"


def test_a_function_of_the_logits_is_the_metric(case):
    """metric=fn: the same log-probability computed in numpy from each row's [T, V] logits gives
    the spec's sweep (float64 from the same float32 logits; the forward differs only in making
    every position's logits)."""
    ref, m = case
    token = int(ref["metric"].rsplit(":", 1)[1])
    seen = []

    def logprob(logits):
        seen.append(logits.shape)
        last = logits[-1].astype(np.float64)
        return last[token] - (np.log(np.sum(np.exp(last - last.max()))) + last.max())
    by_fn = lmscope.patch_sweep(m, ref["clean"], ref["corrupted"], ["attn.probs"], metric=logprob, rows_per_forward=5)
    by_spec = lmscope.patch_sweep(m, ref["clean"], ref["corrupted"], ["attn.probs"], metric=ref["metric"])
    assert seen[0] == (len(ref["clean"]), m.info["vocab_size"])
    assert len(seen) == 2 + by_fn["attn.probs"].metric.size                      # unpatched runs, then one per cell
    assert by_fn.forwards == 3                                                    # 12 cells, 5 rows a forward
    assert np.max(np.abs(by_fn["attn.probs"].metric - by_spec["attn.probs"].metric)) <= 1e-5


def test_bad_input_is_one_value_error(case):
    ref, m = case
    clean, corrupted = ref["clean"], ref["corrupted"]
    for kwargs, message in [
        (dict(sites=["attn.foo"], metric=ref["metric"]), "unknown site 'attn.foo'"),
        (dict(sites=["resid_pre:neuron=0:4"], metric=ref["metric"]), "resid_pre has no axis"),
        (dict(sites=["resid_pre"], metric="logprob:pos=-1:99999"), "outside the vocabulary"),
        (dict(sites=["resid_pre"], metric="logprob:pos=40:5"), "position 40 is outside the prompt"),
        (dict(sites=["resid_pre"], metric=lambda logits: "x"), "returned 'x', not a number"),
        (dict(sites=["resid_pre"], metric=lambda logits: 1.0, method="attribution"), "needs a metric it can differentiate"),
    ]:
        with pytest.raises(ValueError, match=message):
            lmscope.patch_sweep(m, clean, corrupted, **kwargs)
    with pytest.raises(ValueError, match="clean prompt has 11 tokens, corrupted 10"):
        lmscope.patch_sweep(m, clean, corrupted[:-1], ["resid_pre"], metric=ref["metric"])
