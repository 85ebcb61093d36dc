"""Reference values for lmscope's quantization schemes (lib/quant), computed with NumPy from
the formulas docs/quantization.md states, on small fixed matrices; w4-group is also checked
against the gguf package's own Q4_0 quantizer (gguf-py quants.quantize/dequantize), bit for bit.
Writes golden/quant/refs.json. Every float is float32 arithmetic, stored as its exact value.

    venv/bin/python golden/make_quant_refs.py
"""
import json
import os

import numpy as np

F = np.float32
HERE = os.path.dirname(os.path.abspath(__file__))
STD_MULTIPLE = 3.0   # lib/quant/weight_quant.h kStdMultiple


def sym_int8(x, scale):
    r = np.round(x / scale)   # float32 division, round half to even
    sat = int(np.count_nonzero((r > 127) | (r < -127)))
    q = np.clip(r, -127, 127)
    return q.astype(np.int8), (q * scale).astype(F), sat


def sym_scale(amax):
    return np.where(amax > 0, amax / F(127), F(1)).astype(F)


def w8_channel(W):
    s = sym_scale(np.abs(W).max(axis=1))
    q, v, sat = sym_int8(W, s[:, None])
    return q, s, v, sat


def w8_tensor(W):
    s = sym_scale(np.abs(W).max())
    q, v, sat = sym_int8(W, s)
    return q, np.array([s], F), v, sat


def w8_std(W):
    std = W.astype(np.float64).std(axis=1)   # ddof = 0
    s = sym_scale((STD_MULTIPLE * std).astype(F))
    q, v, sat = sym_int8(W, s[:, None])
    return q, s, v, sat


def w4_group(W):
    blocks = W.reshape(-1, 32)
    imax = np.abs(blocks).argmax(axis=1)
    m = blocks[np.arange(len(blocks)), imax]
    d = (m / F(-8)).astype(F)
    with np.errstate(divide="ignore"):
        idv = np.where(d == 0, F(0), F(1) / d).astype(F)
    q = np.clip(np.trunc(blocks * idv[:, None] + F(8.5)), 0, 15).astype(np.int8)
    dh = d.astype(np.float16).astype(F)
    v = ((q.astype(F) - F(8)) * dh[:, None]).astype(F)
    return q.reshape(W.shape), dh, v.reshape(W.shape), 0


def a8_token(X):
    s = sym_scale(np.abs(X).max(axis=1))
    q, v, sat = sym_int8(X, s[:, None])
    return q, s, v, sat


def a8_static(X, lo, hi):
    lo, hi = min(F(lo), F(0)), max(F(hi), F(0))
    scale = F((F(hi) - F(lo)) / F(255))
    zp = int(np.clip(np.round(-F(lo) / scale), 0, 255))
    r = np.round(X / scale) + F(zp)
    sat = int(np.count_nonzero((r > 255) | (r < 0)))
    q = np.clip(r, 0, 255)
    return q.astype(np.int32), scale, zp, ((q - F(zp)) * scale).astype(F), sat


def check_gguf_q4_0(W, v):
    try:
        from gguf import GGMLQuantizationType, quants
    except ImportError:
        print("gguf package absent: Q4_0 not cross-checked")
        return False
    b = quants.quantize(W, GGMLQuantizationType.Q4_0)
    g = quants.dequantize(b, GGMLQuantizationType.Q4_0).reshape(W.shape)
    assert np.array_equal(g.view(np.uint32), v.view(np.uint32)), "w4-group differs from gguf Q4_0"
    return True


def main():
    rng = np.random.default_rng(14)
    W = (rng.standard_normal((6, 64)) * 0.05).astype(F)
    W[1, 5] = F(0.9)      # an outlier: w8-tensor's scale follows it, w8-std clips it
    W[3, 40] = F(-0.7)
    W[4, :] = F(0)        # an all-zero row
    X = (rng.standard_normal((3, 64)) * 2).astype(F)
    X[2, 7] = F(40)       # an activation outlier
    out = {"W": W.tolist(), "X": X.tolist(), "std_multiple": STD_MULTIPLE, "weights": {}, "activations": {}}
    for name, fn in [("w8-channel", w8_channel), ("w8-tensor", w8_tensor), ("w8-std", w8_std), ("w4-group", w4_group)]:
        q, s, v, sat = fn(W)
        out["weights"][name] = {"codes": q.astype(int).ravel().tolist(), "scales": [float(x) for x in s],
                                "values": [float(x) for x in v.ravel()], "saturated": sat}
    out["w4_group_matches_gguf"] = check_gguf_q4_0(W, np.array(out["weights"]["w4-group"]["values"], F).reshape(W.shape))
    q, s, v, sat = a8_token(X)
    out["activations"]["a8-token"] = {"scales": [float(x) for x in s], "values": [float(x) for x in v.ravel()],
                                      "saturated": sat}
    lo, hi = -3.0, 5.0   # a calibrated range narrower than X: values beyond it saturate
    q, scale, zp, v, sat = a8_static(X, lo, hi)
    out["activations"]["a8-static"] = {"lo": lo, "hi": hi, "scale": float(scale), "zero_point": zp,
                                       "values": [float(x) for x in v.ravel()], "saturated": sat}
    os.makedirs(os.path.join(HERE, "quant"), exist_ok=True)
    with open(os.path.join(HERE, "quant", "refs.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
