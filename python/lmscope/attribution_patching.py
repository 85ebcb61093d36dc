"""Attribution patching (docs/gradients.md, "Attribution patching"): the linear estimate of an
activation-patching sweep from one forward of the clean prompt and one forward + backward of
the corrupted one. For a cell (layer l, position t) of a site:

    estimate[l, t] = sum over D of (a_clean - a_corrupted)[l, t, :] * d metric / d a_corrupted[l, t, :]

the first-order change of the metric on the corrupted run if that cell's activation were
replaced by the clean run's (what lmscope-patch measures by running the forward once per cell).
The metric is taken on the corrupted run, in run_with_grads' grammar."""
from typing import Dict, Sequence

import numpy as np

SITES = ("resid_pre", "attn_out", "ffn_out", "attn.z")


def attribution_patching(model, clean, corrupted, metric: str,
                         sites: Sequence[str] = ("resid_pre", "attn_out", "ffn_out")) -> Dict[str, np.ndarray]:
    """{site: estimate} for each site: [B, L, T] for resid_pre / attn_out / ffn_out, [B, L, T, H]
    for "attn.z" (each head's cell: the sum over its hd values). clean and corrupted are prompts
    (text or ids, or batches of them) of the same token count per row."""
    for s in sites:
        if s not in SITES:
            raise ValueError("attribution_patching: unknown site %r (sites: %s)" % (s, ", ".join(SITES)))
    names = ["layers.*." + s for s in sites]
    _, clean_cache = model.run_with_cache(clean, names=",".join(names))
    _, corrupted_cache, grads = model.run_with_grads(corrupted, metric, names=",".join(names))
    layers = model.info["num_layers"]
    out = {}
    for s in sites:
        cells = []
        for l in range(layers):
            name = "layers.%d.%s" % (l, s)
            a, b = clean_cache[name], corrupted_cache[name]                 # [B, T, D] ([B, T, H, hd]) each
            if a.shape != b.shape:
                raise ValueError("attribution_patching: the clean and corrupted prompts differ in length "
                                 "(%s: %s vs %s tokens)" % (name, a.shape[1], b.shape[1]))
            cells.append(((a.astype(np.float64) - b) * grads[name]).sum(-1))  # [B, T] ([B, T, H] for z)
        out[s] = np.stack(cells, axis=1)                                     # [B, L, T] ([B, L, T, H])
    return out
