"""Intervention sources held in memory: a run_with_cache cache as the source of Patch / Mean /
Add, a numpy vector for Add. Each equals, bit for bit, the same intervention with the values
read from a file (a trace written by m.trace, a vector file), which the command-line tests hold
to HF (tests/intervene); bad sources are ValueErrors with one line."""
import json

import h5py
import numpy as np
import pytest

import lmscope
from conftest import ROOT, TINY, TINY_IDS

# A second prompt of the tiny model of the same length (11 ids): the corrupted run.
OTHER_IDS = [17, 749, 42, 264, 935, 88, 267, 681, 7, 295, 16]


def trace_of(m, ids, path, hooks):
    m.trace(ids, out=str(path), hooks=hooks, max_new_tokens=1)
    return str(path)


def test_patch_from_a_cache_equals_patch_from_its_trace(tmp_path, tiny):
    _, clean = tiny.run_with_cache(TINY_IDS, names=["layers.*.resid_pre", "layers.*.attn.z"])
    clean_h5 = trace_of(tiny, TINY_IDS, tmp_path / "clean.h5", "layers.*.resid_pre,layers.*.attn.z")
    for site, sel in (("layers.1.resid_pre", dict(pos=3)), ("layers.*.attn.z", dict(head=1))):
        from_cache = tiny.run_with_hooks(OTHER_IDS, hooks=[lmscope.Patch(site, clean, **sel)])
        from_file = tiny.run_with_hooks(OTHER_IDS, hooks=[lmscope.Patch(site, clean_h5, **sel)])
        np.testing.assert_array_equal(from_cache, from_file, err_msg=site)
        assert np.max(np.abs(from_cache - tiny.run_with_hooks(OTHER_IDS))) > 1e-4, "the patch changed the run"


def test_mean_and_add_from_caches_equal_their_traces(tmp_path, tiny):
    _, a = tiny.run_with_cache(TINY_IDS, names=["layers.2.resid_pre"])
    _, b = tiny.run_with_cache(OTHER_IDS, names=["layers.2.resid_pre"])
    a_h5 = trace_of(tiny, TINY_IDS, tmp_path / "a.h5", "layers.2.resid_pre")
    b_h5 = trace_of(tiny, OTHER_IDS, tmp_path / "b.h5", "layers.2.resid_pre")
    pairs = [(lmscope.Mean("layers.2.resid_pre", a, pos=2), lmscope.Mean("layers.2.resid_pre", a_h5, pos=2)),
             (lmscope.Add("layers.2.resid_pre", 2.5, a, minus=b), lmscope.Add("layers.2.resid_pre", 2.5, a_h5, minus=b_h5))]
    for mem, files in pairs:
        assert str(mem) != str(files) and "<cache>" in str(mem)
        np.testing.assert_array_equal(tiny.run_with_hooks(OTHER_IDS, hooks=[mem]),
                                      tiny.run_with_hooks(OTHER_IDS, hooks=[files]), err_msg=str(files))


def test_add_of_an_array_equals_add_of_its_vector_file(tmp_path, tiny):
    vec_file = ROOT + "/golden/interventions/vec-d64.json"
    vec = np.array(json.load(open(vec_file)), dtype=np.float32)
    ours = tiny.run_with_hooks(TINY_IDS, hooks=[lmscope.Add("layers.2.resid_mid", 3, vec, pos=slice(2, 5))])
    ref = tiny.run_with_hooks(TINY_IDS, hooks=["layers.2.resid_mid[pos=2:5]=add(3, %s)" % vec_file])
    np.testing.assert_array_equal(ours, ref)
    # A list of numbers is a vector too.
    np.testing.assert_array_equal(
        ours, tiny.run_with_hooks(TINY_IDS, hooks=[lmscope.Add("layers.2.resid_mid", 3, vec.tolist(), pos=slice(2, 5))]))


def test_a_trace_records_what_came_from_memory(tmp_path, tiny):
    _, clean = tiny.run_with_cache(TINY_IDS, names=["layers.1.resid_pre"])
    out = tmp_path / "patched.h5"
    vec = np.linspace(-1, 1, tiny.info["hidden_size"], dtype=np.float32)
    tiny.trace(OTHER_IDS, out=str(out), hooks="logits", max_new_tokens=1,
               edits=[lmscope.Patch("layers.1.resid_pre", clean, pos=3), lmscope.Add("embed", 1, vec)])
    with h5py.File(out, "r") as f:
        record = json.loads(f.attrs["interventions"])
    assert record[0]["spec"] == "layers.1.resid_pre[pos=3]=patch(<cache>)"
    assert record[0]["source"]["memory"] == "<cache>" and len(record[0]["source"]["sha256"]) == 64
    assert record[1]["vector"]["memory"] == "<array>" and len(record[1]["vector"]["sha256"]) == 64


def test_bad_memory_sources_are_one_line_value_errors(tiny):
    _, no_z = tiny.run_with_cache(TINY_IDS, names=["layers.1.resid_pre"])
    _, short = tiny.run_with_cache(TINY_IDS[:5], names=["layers.1.resid_pre"])
    llama = lmscope.Model(ROOT + "/golden/models/tiny-llama")
    _, other_model = llama.run_with_cache(TINY_IDS, names=["layers.1.resid_pre"])
    D = tiny.info["hidden_size"]
    cases = [
        (lmscope.Patch("layers.1.attn.z", no_z), "holds no layers.1.attn.z"),
        (lmscope.Patch("layers.1.resid_pre", short), "patching needs prompts of equal length"),
        (lmscope.Patch("layers.1.resid_pre", other_model), "is a trace of another model"),
        (lmscope.Add("layers.1.resid_pre", 1, np.ones(D + 1)), "vector <array> holds %d numbers" % (D + 1)),
        (lmscope.Add("layers.1.resid_pre", 1, np.array([1.0] * (D - 1) + [np.nan])), "is not a finite float"),
        (lmscope.Add("layers.1.resid_pre", 1, np.ones((2, D))), "the vector must be one-dimensional"),
    ]
    for iv, needle in cases:
        with pytest.raises(ValueError) as e:
            tiny.run_with_hooks(OTHER_IDS, hooks=[iv])
        assert needle in str(e.value) and "\n" not in str(e.value), (str(iv), str(e.value))
    with pytest.raises(ValueError, match="minus"):
        lmscope.Add("embed", 1, np.ones(D), minus=no_z)


def test_aligned_add_adds_the_pairs_difference_position_by_position(tmp_path, tiny):
    """ActAdd's form: position p of the steered run gets c * (A[p] - B[p]) for p below the pair's
    length, and later positions nothing. Checked against the unsteered run's own resid_pre plus
    the arithmetic, at the layer edited (nothing upstream of it changed)."""
    site = "layers.1.resid_pre"
    _, a = tiny.run_with_cache(TINY_IDS, names=[site])
    _, b = tiny.run_with_cache(OTHER_IDS, names=[site])
    steered_ids = TINY_IDS + [5, 6, 7]                         # 14 tokens, the pair has 11
    _, clean = tiny.run_with_cache(steered_ids, names=[site])
    _, steered = tiny.run_with_cache(steered_ids, names=[site], hooks=[lmscope.Add(site, 2.0, a, minus=b, aligned=True)])
    diff = a[site][0] - b[site][0]                             # [11, D]
    np.testing.assert_allclose(steered[site][0, :11], clean[site][0, :11] + 2.0 * diff, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(steered[site][0, 11:], clean[site][0, 11:])
    # The same from trace files, bit for bit.
    a_h5 = trace_of(tiny, TINY_IDS, tmp_path / "a.h5", site)
    b_h5 = trace_of(tiny, OTHER_IDS, tmp_path / "b.h5", site)
    files = lmscope.Add(site, 2.0, a_h5, minus=b_h5, aligned=True)
    assert str(files).endswith(" - %s, aligned)" % b_h5)
    np.testing.assert_array_equal(tiny.run_with_hooks(steered_ids, hooks=[files]),
                                  tiny.run_with_hooks(steered_ids, hooks=[lmscope.Add(site, 2.0, a, minus=b, aligned=True)]))


def test_a_source_with_an_empty_prompt_is_refused(tmp_path, tiny):
    """A source row of 0 prompt tokens has no position to read (the last one would be -1)."""
    site = "layers.1.resid_pre"
    D = tiny.info["hidden_size"]
    _, real = tiny.run_with_cache(TINY_IDS, names=[site])
    empty = lmscope.ActivationCache({site: np.zeros((1, 0, D), dtype=np.float32)},
                                    run_info=dict(real.run_info, prompt_lengths=[0]))
    h5 = trace_of(tiny, TINY_IDS, tmp_path / "empty.h5", site)
    with h5py.File(h5, "r+") as f:
        f.attrs["prompts"] = "[[]]"
    _, short = tiny.run_with_cache(TINY_IDS[:5], names=[site])
    cases = [
        (lmscope.Add(site, 1, empty), "row 0's prompt has 0 tokens"),
        (lmscope.Add(site, 1, real, minus=empty), "row 0's prompt has 0 tokens"),
        (lmscope.Mean(site, empty), "row 0's prompt has 0 tokens"),
        (lmscope.Patch(site, empty), "row 0's prompt has 0 tokens"),
        (lmscope.Add(site, 1, h5), "row 0's prompt has 0 tokens"),
        (lmscope.Add(site, 1, real, minus=short, aligned=True), "pad the shorter prompt"),
    ]
    for iv, needle in cases:
        with pytest.raises(ValueError) as e:
            tiny.run_with_hooks(OTHER_IDS, hooks=[iv])
        assert needle in str(e.value) and "\n" not in str(e.value), (str(iv), str(e.value))
    with pytest.raises(ValueError, match="no positions to align"):
        lmscope.Add(site, 1, np.ones(D), aligned=True)
