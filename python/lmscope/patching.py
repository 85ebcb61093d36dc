"""Patching sweeps from Python (docs/interventions.md, "Activation patching"; docs/gradients.md,
"Attribution patching"): the sweep lmscope-patch runs (lib/experiments/patching.h), with any
metric of the logits.

    r = lmscope.patch_sweep(m, "The Eiffel Tower is in the city of", "The Colosseum is in the city of",
                            sites=["attn.probs", "ffn.act:neuron=0:64"], metric="logprob:pos=-1: Paris")
    r["attn.probs"].normalized          # [L, H]: 0 = the corrupted run, 1 = the clean run
    lmscope.patch_sweep(m, clean, corrupted, ["resid_pre"], metric=lambda logits: logits[-1, 7042] - logits[-1].max())

Each cell is one patched row of a batched forward of the corrupted prompt (rows_per_forward rows
a forward), as lmscope-patch does it."""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence, Union

import numpy as np

DEFAULT_SITES = ("resid_pre", "attn_out", "ffn_out", "attn.z")


@dataclass
class PatchGrid:
    """One site's cells, [layer, column] each (a site without layers: one row). Arrays of the
    method that did not run are empty."""
    site: str
    columns: str                  # "position", "head" or "neuron"
    column_index: List[int]       # the position, head or neuron of each column
    metric: np.ndarray            # activation patching: each patched run's metric
    normalized: np.ndarray        # (patched - corrupted) / (clean - corrupted)
    attribution: np.ndarray       # attribution patching: the estimate of patched - corrupted
    attribution_normalized: np.ndarray
    attribution_by_position: np.ndarray   # [layer, position, column]: each cell split by position
    pearson: float                # both methods: the correlation of the two normalized grids


@dataclass
class PatchSweep:
    clean_ids: List[int]
    corrupt_ids: List[int]
    clean_metric: float
    corrupt_metric: float
    grids: Dict[str, PatchGrid] = field(default_factory=dict)
    forwards: int = 0
    seconds: float = 0.0

    def __getitem__(self, site: str) -> PatchGrid:
        return self.grids[site]


def patch_sweep(model, clean, corrupted, sites: Sequence[str] = DEFAULT_SITES,
                metric: Union[str, Callable[[np.ndarray], float]] = None, method: str = "activation",
                rows_per_forward: int = 32, chat: bool = False) -> PatchSweep:
    """Patch each cell of `sites` from the clean run into the corrupted one (prompts: text or
    ids, one each, of one token count). sites: lmscope-patch --sites' names (an editable hook
    without "layers.L.", optionally ":pos", ":head" or ":neuron=A:B"). metric: a spec
    (logit_diff:pos=P:A,B, logprob:pos=P:A, prob:pos=P:A, loss:FROM:TO, or logit-diff:A,B /
    prob:A at the last position) or a function of one row's logits [T, V] (float32) returning a
    number. method: "activation" (one patched row per cell), "attribution" (the linear estimate;
    a spec metric only) or "both". ValueError for bad input, in one line."""
    if metric is None:
        raise ValueError("patch_sweep: metric is required (a spec string or a function of the logits)")
    if method not in ("activation", "attribution", "both"):
        raise ValueError("patch_sweep: method %r (activation, attribution or both)" % (method,))
    if isinstance(sites, str):
        sites = [sites]

    def one(prompt, what):
        if isinstance(prompt, str):
            return [model.apply_chat_template([{"role": "user", "content": prompt}])] if chat else [prompt]
        ids = [int(x) for x in (prompt.tolist() if isinstance(prompt, np.ndarray) else prompt)]
        if not ids:
            raise ValueError("patch_sweep: the %s prompt is empty" % what)
        return [ids]
    fn = metric
    if callable(metric):
        def fn(logits):   # a number, or a one-line ValueError naming what came back
            v = metric(logits)
            try:
                return float(v)
            except (TypeError, ValueError):
                raise ValueError("patch_sweep: the metric function returned %r, not a number" % (v,)) from None
    r = model._engine.patch_sweep(one(clean, "clean"), one(corrupted, "corrupted"), not chat, list(sites), fn,
                                  method != "attribution", method != "activation", rows_per_forward)
    out = PatchSweep(list(r["clean_ids"]), list(r["corrupt_ids"]), r["clean_metric"], r["corrupt_metric"],
                     forwards=r["forwards"], seconds=r["seconds"])
    for site, g in r["sites"].items():
        out.grids[site] = PatchGrid(site, g["columns"], list(g["column_index"]),
                                    np.array(g["metric"], dtype=np.float64), np.array(g["normalized"], dtype=np.float64),
                                    np.array(g["attribution"], dtype=np.float64),
                                    np.array(g["attribution_normalized"], dtype=np.float64),
                                    np.array(g["attribution_by_position"], dtype=np.float64), g["pearson"])
    return out
