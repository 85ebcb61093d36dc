"""m.weight(name) on the real Qwen2 model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M,
scripts/fetch-qwen2-model.sh) against transformers' own dequantization of the same file
(golden/qwen2/weights.json, made by golden/make_qwen2_golden.py): every one of its 291
tensors, of each type the file holds (Q4_K, Q6_K, Q5_0, Q8_0, F32), bit for bit, by the
sha256 of the float32 bytes; m.weight(name, rows=...) gives those matrices' rows bit for bit.
Skipped when the model is absent."""
import hashlib
import json
import os

import numpy as np
import pytest

from conftest import ROOT

QWEN2 = os.path.join(ROOT, "models", "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf")
REFS = os.path.join(ROOT, "golden", "qwen2", "weights.json")


@pytest.fixture(scope="module")
def qwen2():
    if not os.path.isfile(QWEN2):
        pytest.skip("%s is absent (scripts/fetch-qwen2-model.sh fetches it)" % QWEN2)
    import lmscope
    return lmscope.Model(QWEN2)


def refs():
    with open(REFS, encoding="utf-8") as f:
        return json.load(f)["weights"]


def test_refs_cover_every_type_in_the_file():
    types = {r["gguf_type"] for r in refs()}
    assert types == {"Q4_K", "Q6_K", "Q5_0", "Q8_0", "F32"}
    assert len(refs()) == 291


def test_weight_names_are_hugging_faces(qwen2):
    assert sorted(qwen2.weight_names()) == sorted(r["hf_name"] for r in refs())


@pytest.mark.parametrize("gguf_type", ["Q4_K", "Q6_K", "Q5_0", "Q8_0", "F32"])
def test_weight_equals_transformers_dequantization(qwen2, gguf_type):
    for r in refs():
        if r["gguf_type"] != gguf_type:
            continue
        w = qwen2.weight(r["hf_name"])
        assert w.dtype == np.float32 and list(w.shape) == r["shape"], r["hf_name"]
        # the first values say where a mismatch is; the hash holds every element
        assert w.reshape(-1)[:4].tolist() == r["first"], r["hf_name"]
        assert hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest() == r["sha256_f32"], r["hf_name"]
        # rows=: those rows alone, dequantized one at a time, are the checked matrix's rows bit for bit
        rows = [len(w) - 1, 0, len(w) // 2, -1]
        got = qwen2.weight(r["hf_name"], rows=rows)
        assert got.dtype == np.float32 and got.shape == w[rows].shape, r["hf_name"]
        np.testing.assert_array_equal(got.view(np.uint32), w[rows].view(np.uint32), err_msg=r["hf_name"])
