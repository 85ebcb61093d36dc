"""The module on the CUDA backend: Model(backend="cuda") runs the same forward, hooks and
interventions as on the CPU. Where there is no usable device (a build without CUDA, a machine
without a GPU) every test here skips with the backend's one line; the CPU emulator build
(build-cuda-emu/, docs/cuda.md) runs them in CI (ctest PythonModuleCuda).

Tolerances: float32 on both backends, different summation orders (cuBLAS and the gemv kernel vs
the CPU's sgemm), so activations agree to the CPU tolerances of docs/tolerances.md (atol 1e-5 +
rtol 2e-4 of the hook's max |value|, checked here as one bound per hook); tokens are equal."""
import numpy as np
import pytest

import lmscope
from conftest import TINY, TINY_IDS


@pytest.fixture(scope="module")
def cuda_tiny():
    try:
        return lmscope.Model(TINY, backend="cuda")
    except ValueError as e:   # the tools' one line: no device, or a build without CUDA
        pytest.skip("no CUDA device: %s" % e)


@pytest.fixture(scope="module")
def cpu_tiny():
    return lmscope.Model(TINY)


def assert_close(ours, ref, what):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    assert ours.shape == ref.shape, what
    bound = 1e-5 + 2e-4 * float(np.max(np.abs(ref)))
    worst = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
    assert worst <= bound, "%s: max |cuda - cpu| %.3g > %.3g" % (what, worst, bound)


def test_it_is_the_cuda_backend(cuda_tiny):
    assert cuda_tiny.info["backend"] == "cuda" and cuda_tiny.info["dtype"] == "f32"


def test_every_hook_agrees_with_the_cpu(cuda_tiny, cpu_tiny):
    logits, cache = cuda_tiny.run_with_cache(TINY_IDS)
    ref_logits, ref = cpu_tiny.run_with_cache(TINY_IDS)
    assert sorted(cache) == sorted(ref), "the CUDA path offers every hook the CPU path does"
    assert_close(logits, ref_logits, "logits")
    for name in ref:
        if ref[name].dtype.kind == "f":
            assert_close(cache[name], ref[name], name)
        else:
            np.testing.assert_array_equal(cache[name], ref[name], err_msg=name)


def test_a_python_hook_edits_the_device_tensor(cuda_tiny, cpu_tiny):
    def zero_head(z, ctx):
        z[:, :, 2, :] = 0     # attn.z is [B, T, H, hd]: head 2 everywhere

    edited = cuda_tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.attn.z", zero_head)])
    same = cuda_tiny.run_with_hooks(TINY_IDS, hooks=[lmscope.Zero("layers.1.attn.z", head=2)])
    np.testing.assert_array_equal(edited, same)       # one edit, two spellings, one backend: bits
    clean = cuda_tiny.run_with_hooks(TINY_IDS)
    assert np.max(np.abs(edited - clean)) > 1e-3, "the edit reached the forward"
    assert_close(edited, cpu_tiny.run_with_hooks(TINY_IDS, hooks=[("layers.1.attn.z", zero_head)]), "edited logits")


def test_generation_with_an_edit_matches_the_cpu(cuda_tiny, cpu_tiny):
    edit = [lmscope.Scale("layers.1.resid_pre", 0.5)]
    for use_cache in (True, False):
        g = cuda_tiny.generate(TINY_IDS, max_new_tokens=4, use_cache=use_cache, hooks=edit)
        ref = cpu_tiny.generate(TINY_IDS, max_new_tokens=4, use_cache=use_cache, hooks=edit)
        assert g.ids == ref.ids, "use_cache=%s" % use_cache
    # HF's greedy tokens for this edit (golden/interventions/tiny-qwen2.json, resid-pre-scale).
    assert g.ids == [[549, 1011, 86, 534]]


def test_bf16_runs(cuda_tiny):
    m = lmscope.Model(TINY, backend="cuda", dtype="bf16")
    assert m.info["dtype"] == "bf16"
    logits, _ = m.run_with_cache(TINY_IDS, names=["logits"])
    assert np.all(np.isfinite(logits))


def test_run_with_grads_matches_torch_autograd(cuda_tiny):
    """m.run_with_grads on the CUDA backend: every gradient of golden/grad's left-padded batch
    (made by golden/make_grad_refs.py: HF float64, autograd) within docs/tolerances.md's
    "Gradients" bound, 2e-4 of the tensor's max |torch grad|, as on the CPU (test_grads.py)."""
    from test_grads import GRAD_TOLERANCE, golden
    case, ref, metric = golden("tiny-qwen2-batch-logprob")
    _, _, grads = cuda_tiny.run_with_grads(case["prompts"], case["metric"])
    assert grads.run_info["metric_value"] == pytest.approx(metric, rel=1e-4, abs=1e-4)
    assert sorted(ref) == sorted(k for k in ref if k in grads), "a gradient for every hook of the golden"
    for hook, want in ref.items():
        scale = float(np.max(np.abs(want)))
        err = float(np.max(np.abs(grads[hook].astype(np.float64) - want)))
        assert err <= GRAD_TOLERANCE * scale + 1e-12, "%s: max |cuda - torch| %.3g of %.3g" % (hook, err, scale)


def test_attribution_patching_matches_the_cpu(cuda_tiny, cpu_tiny):
    """lmscope.attribution_patching (one backward of the corrupted run) on CUDA: the CPU's
    estimate, every cell, within 1e-3 of the largest |cell| (the bound test_grads.py holds both
    to torch's estimate with)."""
    clean, corrupted = TINY_IDS, TINY_IDS[:8] + [42] + TINY_IDS[9:]
    sites = ("resid_pre", "attn_out", "ffn_out", "attn.z")
    got = lmscope.attribution_patching(cuda_tiny, clean, corrupted, "logit_diff:pos=-1:549,434", sites=sites)
    want = lmscope.attribution_patching(cpu_tiny, clean, corrupted, "logit_diff:pos=-1:549,434", sites=sites)
    for site in sites:
        largest = float(np.max(np.abs(want[site])))
        assert largest > 0, site
        assert float(np.max(np.abs(got[site] - want[site]))) <= 1e-3 * largest, site
