"""The report's attention view in a notebook cell: lmscope.attention_view(cache_or_trace, layer).

    _, cache = m.run_with_cache(ids, names="layers.*.attn.probs")
    lmscope.attention_view(cache, 18, head=6, tokens=[m.decode([i]) for i in ids])

The object it returns shows itself as HTML (`_repr_html_`): the heatmap of lmscope-report's
Attention section (lib/report/attention_view.js, the same script, taken from the compiled
module), the head's probabilities inline, no network: it works offline and in a saved notebook.
Hover a row (or its label) to frame it and list its query's top keys; the window inputs crop
to query and key columns; the colour scale is linear, log or rank (docs/report.md)."""
import base64
import itertools
import json
from typing import Optional, Sequence

import numpy as np

from ._core import attention_view_script as _view_script

_LEVELS = 65535   # probabilities as 16-bit levels, as the report stores them (lib/report/attention_store.h)
_SCALES = ("linear", "log", "rank")
_ids = itertools.count()


def _probs_and_labels(source, layer: int, step: int, row: int):
    """[H, T, S] probabilities of one layer and row, the key labels (or None) and the column of
    query 0, from an ActivationCache or an lmscope.Trace (or a trace file's path)."""
    name = "layers.%d.attn.probs" % int(layer)
    if isinstance(source, str):
        from lmscope_trace import Trace
        with Trace(source) as tr:
            return _probs_and_labels(tr, layer, step, row)
    if hasattr(source, "hook") and hasattr(source, "labels"):   # lmscope.Trace
        p = np.asarray(source.hook(name, step).values)
        past = int(source.step_info(step).get("past_length", 0))
        try:
            labels = source.labels(row, step)
        except (KeyError, ValueError):
            labels = None
        return p, labels, past
    if name not in source:
        raise KeyError("%s is not in this cache: run_with_cache(..., names=\"layers.*.attn.probs\")" % name)
    return np.asarray(source[name]), None, 0


def _check(p: np.ndarray, row: int) -> np.ndarray:
    if p.ndim != 4:
        raise ValueError("attention probabilities are [batch, head, query, key]; got shape %s" % (p.shape,))
    if not 0 <= row < p.shape[0]:
        raise IndexError("row %d: the probabilities have %d row(s)" % (row, p.shape[0]))
    p = p[row].astype(np.float64)
    if not np.all(np.isfinite(p)) or p.min() < -1e-6 or p.max() > 1 + 1e-6:
        raise ValueError("attention probabilities outside [0, 1] (an edited pattern?); min %g, max %g" % (p.min(), p.max()))
    return p


class AttentionView:
    """One layer's heads as the report's heatmap, for a notebook (`_repr_html_`)."""

    def __init__(self, probs: np.ndarray, labels: Sequence[str], layer: int, head: Optional[int], past: int = 0,
                 scale: str = "linear", window=None):
        self.probs, self.labels, self.layer, self.head, self.past = probs, list(labels), layer, head, past
        self.scale, self.window = scale, window

    def __repr__(self) -> str:
        H, T, S = self.probs.shape
        return "lmscope.AttentionView(layer %d, %s, %d queries x %d keys)" % (
            self.layer, "head %d" % self.head if self.head is not None else "%d heads" % H, T, S)

    def _repr_html_(self) -> str:
        H, T, S = self.probs.shape
        heads = [self.head] if self.head is not None else list(range(H))
        # Each head's [T, S] levels, little-endian 16 bits, base64: within 1/131070 of the value.
        levels = np.rint(np.clip(self.probs[heads], 0, 1) * _LEVELS).astype("<u2")
        uid = "lmscope-av-%d" % next(_ids)
        state = {"scale": self.scale}
        if self.window is not None:
            (q0, q1), (k0, k1) = self.window
            state.update(q=[q0 - self.past, q1 - self.past], k=[k0, k1])
        data = {"id": uid, "layer": self.layer, "heads": heads, "T": T, "S": S, "past": self.past,
                "cols": self.labels, "rows": self.labels[self.past:self.past + T], "state": state,
                "levels": base64.b64encode(levels.tobytes()).decode("ascii"), "max": _LEVELS}
        blob = json.dumps(data).replace("</", "<\\/")
        return ("<div class=\"lmscope-attention-view\" id=\"%s\" style=\"max-width: 1400px\">"
                "<div style=\"font: 14px 'DejaVu Sans', sans-serif\">layer %d, <label>head <select id=\"%s-head\">%s</select></label>"
                "</div><div id=\"%s-box\"></div></div>\n<script>%s</script>\n<script>%s</script>\n") % (
            uid, self.layer, uid, "".join("<option value=\"%d\">%d</option>" % (i, h) for i, h in enumerate(heads)), uid,
            _view_script(), _DRAW.replace("/*DATA*/", blob))


# Decodes the levels and draws the chosen head with lmscopeAttentionView; the window and scale
# carry over when another head is chosen.
_DRAW = """(function () {
  var d = /*DATA*/;
  var bin = atob(d.levels), n = bin.length / 2, lv = new Uint16Array(n);
  for (var i = 0; i < n; i++) lv[i] = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
  var box = document.getElementById(d.id + "-box"), sel = document.getElementById(d.id + "-head"), state = d.state;
  function draw() {
    var h = +sel.value, base = h * d.T * d.S;
    lmscopeAttentionView(box, { id: d.id, rows: d.rows, cols: d.cols, past: d.past, state: state,
      prob: function (q, k) { return lv[base + q * d.S + k] / d.max; },
      onstate: function (s) { state = s; } });
  }
  sel.addEventListener("change", draw);
  draw();
})();"""


def attention_view(source, layer: int, head: Optional[int] = None, step: int = 0, row: int = 0,
                   tokens: Optional[Sequence] = None, scale: str = "linear", window=None) -> AttentionView:
    """The attention of `layer` (every head with a selector, or `head`) as the report draws it.

    source: an ActivationCache holding layers.L.attn.probs (run_with_cache(..., names=
    "layers.*.attn.probs")), an lmscope.Trace or a trace file's path (then `step` chooses the
    step). tokens: a label per key column (the prompt's pieces; default: the trace's labels,
    else the column numbers). scale: "linear", "log" or "rank". window: ((first query column,
    last), (first key column, last)) to open on; default: every token when cells of 3 px fit
    the cell's width, else the first tokens that do."""
    if scale not in _SCALES:
        raise ValueError("scale %r: one of %s" % (scale, ", ".join(_SCALES)))
    p, labels, past = _probs_and_labels(source, layer, step, row)
    p = _check(p, row)
    H, T, S = p.shape
    if head is not None and not 0 <= head < H:
        raise IndexError("head %d: layer %d has %d heads (0..%d)" % (head, layer, H, H - 1))
    if tokens is not None:
        labels = [str(t) for t in tokens]
    if labels is None:
        labels = [str(i) for i in range(S)]
    if len(labels) != S:
        raise ValueError("tokens: %d labels for %d key columns" % (len(labels), S))
    return AttentionView(p, [str(x) for x in labels], int(layer), head, past, scale, window)
