"""Attribution patching (docs/gradients.md, "Attribution patching"): the linear estimate of an
activation-patching sweep from one forward of the clean prompt and one forward + backward of
the corrupted one. For a cell (layer l, position t) of a site:

    estimate[l, t] = sum over D of (a_clean - a_corrupted)[l, t, :] * d metric / d a_corrupted[l, t, :]

the first-order change of the metric on the corrupted run if that cell's activation were
replaced by the clean run's (what lmscope-patch measures by running the forward once per cell).
The metric is taken on the corrupted run, in run_with_grads' grammar. Computed by the engine's
sweep (lmscope-patch --method attribution, lib/experiments/attribution_patching.cpp), row by row."""
from typing import Dict, Sequence

import numpy as np

from .patching import patch_sweep


def attribution_patching(model, clean, corrupted, metric: str,
                         sites: Sequence[str] = ("resid_pre", "attn_out", "ffn_out")) -> Dict[str, np.ndarray]:
    """{site: estimate} for each site (lmscope-patch --sites' names): [B, L, T] for a site of
    whole vectors (resid_pre, attn_out, ffn_out, ...), [B, L, T, H] for a site with heads
    ("attn.z": each head's cell, the sum over its hd values; k/v: KV heads), [B, L, T, N] for
    "ffn.act:neuron=A:B". clean and corrupted are prompts (text or ids, or batches of them) of
    the same token count per row; a batch's rows of different lengths are left-padded with 0."""
    from . import _prompts   # one prompt or a batch -> a list of rows
    clean_rows, corrupted_rows = _prompts(clean), _prompts(corrupted)
    if len(clean_rows) != len(corrupted_rows):
        raise ValueError("attribution_patching: %d clean prompts and %d corrupted" % (len(clean_rows), len(corrupted_rows)))
    per_row = []
    for a, b in zip(clean_rows, corrupted_rows):
        try:
            r = patch_sweep(model, a, b, list(sites), metric=metric, method="attribution")
        except ValueError as e:
            if "tokens, corrupted" in str(e):   # the engine's "clean prompt has 9 tokens, corrupted 10"
                raise ValueError("attribution_patching: the clean and corrupted prompts differ in length (%s)" % e) from None
            raise
        out = {}
        for s in sites:
            g = r[s]
            cells = np.array(g.attribution_by_position, dtype=np.float64)      # [L, T, C]
            out[s] = cells.sum(-1) if g.columns == "position" else cells       # [L, T] or [L, T, C]
        per_row.append(out)
    T = max(o[sites[0]].shape[1] for o in per_row)

    def left_pad(x):   # [L, t, ...] -> [L, T, ...], zeros first
        pad = [(0, 0)] * x.ndim
        pad[1] = (T - x.shape[1], 0)
        return np.pad(x, pad)
    return {s: np.stack([left_pad(o[s]) for o in per_row]) for s in sites}     # [B, L, T(, C)]
