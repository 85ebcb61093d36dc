"""Direct logit attribution: how much each component wrote a logit difference (docs/attribution.md).

The residual stream entering the final norm is a sum: the embedding, then each layer's attention
output and MLP output. The logits read it through the final RMSNorm and the unembedding, and the
only non-linear part of that read is the norm's scale 1/rms(x), one number per position. Freeze
it at the value of the run (as TransformerLens does) and the read is linear, so the logit
difference splits exactly into one term per component:

    logit[a] - logit[b] = sum_c  (x_c / rms(x)) . (w_norm * (W_U[a] - W_U[b]))

x = sum_c x_c is `layers.{N-1}.resid_post` at the position, w_norm the final norm's weight. An
attention output splits further into its heads: head h's result is z_h @ W_O[:, h] (TL's
hook_result), computed here from the cache's `attn.z` and o_proj's weight, only when asked
(heads=True); an o_proj bias, where a model has one, is then its own component.

Gemma 3 RMS-norms each branch before it joins the stream, so its components are the normed
branches, `layers.L.attn_post_norm` and `layers.L.ffn_post_norm` (the embedding is the scaled
one, `embed`). A head's share goes through its layer's post-norm with that norm's scale
1/rms(attn_out) frozen at the run's value, as the final norm's is: head h's component is
result_h / rms(attn_out) * w_post, and the heads sum to attn_post_norm.

    logits, cache = m.run_with_cache(prompt, names=lmscope.attribution_hooks(m, heads=True))
    attr = m.logit_attribution(cache, (" Paris", " Rome"), heads=True)
    attr["L23H3"], attr.heads()          # one head's share; all of them as [L, H]
"""
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["attribution_hooks", "head_results", "decompose", "logit_attribution", "Decomposition", "Attribution"]

Answer = Union[int, str, Tuple, np.ndarray]


@dataclass
class Decomposition:
    """The final residual stream at one position, split into components that sum to it."""
    labels: List[str]          # "embed", "layers.L.attn_out" (or "LlHh" per head, "layers.L.attn.o_bias"), "layers.L.ffn_out";
                               # Gemma 3: "layers.L.attn_post_norm", "layers.L.ffn_post_norm"
    stack: np.ndarray          # [C, D] float64: each component's vector at the position
    resid: np.ndarray          # [D] float64: layers.{N-1}.resid_post at the position, what they sum to
    row: int
    pos: int                   # the position, counted from 0


@dataclass
class Attribution:
    """Each component's share of a logit difference (or of one logit, or of any direction)."""
    labels: List[str]
    values: np.ndarray         # [C] float64: component c's contribution, in logits
    total: float               # the same read of the whole residual stream: the logit difference itself
    scale: float               # the frozen final-norm scale 1 / rms(resid) of the position
    num_heads: int
    row: int
    pos: int

    def __getitem__(self, label: str) -> float:
        return float(self.values[self.labels.index(label)])

    def heads(self) -> np.ndarray:
        """[L, H]: each head's share (KeyError unless made with heads=True)."""
        idx = [i for i, lab in enumerate(self.labels) if re.fullmatch(r"L\d+H\d+", lab)]
        if not idx:
            raise KeyError("no per-head components: call logit_attribution(..., heads=True)")
        return self.values[idx].reshape(-1, self.num_heads)

    def top(self, k: int = 10) -> List[Tuple[str, float]]:
        """The k components of largest |share|, largest first."""
        order = np.argsort(-np.abs(self.values), kind="stable")[:k]
        return [(self.labels[i], float(self.values[i])) for i in order]


def attribution_hooks(model, heads: bool = False) -> List[str]:
    """The hooks decompose() reads: pass as run_with_cache(..., names=...). With heads, attn.z
    too (attn_out stays, so the same cache serves heads=False)."""
    last = model.info["num_layers"] - 1
    names = ["embed", "layers.*.attn_out", "layers.*.ffn_out", "layers.%d.resid_post" % last]
    if _post_branch_norms(model):                 # Gemma 3: the normed branches join the stream
        names += ["layers.*.attn_post_norm", "layers.*.ffn_post_norm"]
    return names + (["layers.*.attn.z"] if heads else [])


def _post_branch_norms(model) -> bool:
    """Gemma 3: each branch is RMS-normed (post_attention_layernorm, post_feedforward_layernorm)
    before the residual add. HF's post_feedforward_layernorm is in no other family lmscope runs."""
    return "model.layers.0.post_feedforward_layernorm.weight" in model.weight_names()


def head_results(model, cache, layer: int) -> np.ndarray:
    """Each head's output of `layer`, z_h @ W_O[:, h] (TL's attn.hook_result): [B, T, H, D] float32.
    The heads sum to attn_out minus o_proj's bias (if any)."""
    z = _hook(cache, "layers.%d.attn.z" % layer, "head_results")                 # [B, T, H, hd]
    return _through_o_proj(model, layer, z)                                     # [B, T, H, D]


def _through_o_proj(model, layer: int, z: np.ndarray) -> np.ndarray:
    """z [..., H, hd] -> each head's result [..., H, D]: head h's slice of o_proj, no bias."""
    W_O = model.weight("model.layers.%d.self_attn.o_proj.weight" % layer)       # [D, H*hd]
    H, hd = z.shape[-2], z.shape[-1]
    return np.einsum("...hk,dhk->...hd", z, W_O.reshape(-1, H, hd))             # [..., H, D]


def decompose(model, cache, pos: int = -1, row: int = 0, heads: bool = False) -> Decomposition:
    """The components of the final residual stream at position `pos` of batch row `row`: the
    embedding, then per layer its attention output (or, heads=True, each head's result and the
    o_proj bias if the model has one) and its MLP output (`ffn_out`)."""
    return _decompose(model, cache, pos, row, heads, "decompose")


def _decompose(model, cache, pos: int, row: int, heads: bool, where: str) -> Decomposition:
    L = model.info["num_layers"]
    resid = _hook(cache, "layers.%d.resid_post" % (L - 1), where)               # [B, T, D]
    row, pos = _position(cache, resid.shape, row, pos, where)
    at = lambda name: _hook(cache, name, where)[row, pos].astype(np.float64)    # [D]
    names = set(model.weight_names()) if heads else set()
    post = _post_branch_norms(model)
    attn_site, ffn_site = ("attn_post_norm", "ffn_post_norm") if post else ("attn_out", "ffn_out")
    labels, parts = ["embed"], [at("embed")]
    for layer in range(L):
        if heads:
            z = _hook(cache, "layers.%d.attn.z" % layer, where)[row, pos].astype(np.float64)   # [H, hd]
            per_head = _through_o_proj(model, layer, z)                         # [H, D] float64
            if post:                                                            # through the frozen post-norm
                per_head = per_head * _post_norm_read(model, layer, at("layers.%d.attn_out" % layer))
            labels += ["L%dH%d" % (layer, h) for h in range(len(per_head))]
            parts += list(per_head)
            bias = "model.layers.%d.self_attn.o_proj.bias" % layer
            if bias in names:
                labels.append("layers.%d.attn.o_bias" % layer)
                parts.append(model.weight(bias).astype(np.float64))             # [D]
        else:
            labels.append("layers.%d.%s" % (layer, attn_site))
            parts.append(at("layers.%d.%s" % (layer, attn_site)))
        labels.append("layers.%d.%s" % (layer, ffn_site))
        parts.append(at("layers.%d.%s" % (layer, ffn_site)))
    return Decomposition(labels, np.stack(parts), resid[row, pos].astype(np.float64), row, pos)


def _post_norm_read(model, layer: int, attn_out: np.ndarray) -> np.ndarray:
    """[D]: Gemma 3's attention post-norm as a linear map with its scale frozen, w_post / rms(attn_out)
    (w_post the multiplier 1 + w as lmscope holds it), so that the heads sum to attn_post_norm."""
    eps = float(model.cfg.get("rms_norm_eps", 1e-6))
    w = model.weight("model.layers.%d.post_attention_layernorm.weight" % layer).astype(np.float64)   # [D]
    return w / np.sqrt(np.mean(attn_out ** 2) + eps)


def logit_attribution(model, cache, answer: Answer, pos: int = -1, row: int = 0,
                      heads: bool = False) -> Attribution:
    """Each component's share of a logit difference at `pos` (default: the last position), with
    the final norm's scale frozen (module doc). `answer`: a pair (a, b) of token ids or one-token
    strings for logit[a] - logit[b]; one id or string for that logit alone; or a direction of D
    numbers in the unembedding's space (the final norm's weight is applied to it)."""
    u = _direction(model, answer)                                               # [D]
    dec = _decompose(model, cache, pos, row, heads, "logit_attribution")
    eps = float(model.cfg.get("rms_norm_eps", 1e-6))
    scale = 1.0 / np.sqrt(np.mean(dec.resid ** 2) + eps)                        # frozen: one number for all
    w = model.weight("model.norm.weight").astype(np.float64)                    # [D]
    read = scale * w * u                                                        # [D]
    return Attribution(dec.labels, dec.stack @ read, float(dec.resid @ read), float(scale),
                       model.info["num_heads"], dec.row, dec.pos)


# ---- checks: each bad input is one line --------------------------------------------------------

def _hook(cache, name: str, where: str) -> np.ndarray:
    if name not in cache:
        raise ValueError("%s: the cache lacks %s; run_with_cache(prompt, names=lmscope.attribution_hooks(m, "
                         "heads=...)) keeps what it reads" % (where, name))
    return cache[name]


def _position(cache, shape: Sequence[int], row: int, pos: int, where: str) -> Tuple[int, int]:
    """(row, pos) checked against the cache's [B, T, D] and, in a padded batch, the row's prompt."""
    B, T = shape[0], shape[1]
    if not -B <= row < B:
        raise ValueError("%s: row %d is outside the batch (%d rows)" % (where, row, B))
    if not -T <= pos < T:
        raise ValueError("%s: position %d is outside the prompt (%d tokens: -%d..%d)" % (where, pos, T, T, T - 1))
    row, pos = row % B, pos % T
    info = getattr(cache, "run_info", None) or {}
    lengths: Optional[Sequence[int]] = info.get("prompt_lengths")
    if lengths and lengths[row] < T:
        n = lengths[row]
        first = T - n if info.get("padding_side", "left") == "left" else 0
        if not first <= pos < first + n:
            raise ValueError("%s: position %d of row %d is padding (its prompt is positions %d..%d)"
                             % (where, pos, row, first, first + n - 1))
    return row, pos


def _direction(model, answer: Answer) -> np.ndarray:
    """The unembedding direction [D] float64 of an answer (see logit_attribution)."""
    if isinstance(answer, np.ndarray) and answer.dtype.kind in "iu":
        answer = answer.tolist()                                                # ids, as a list or one int
    if isinstance(answer, np.ndarray) and answer.dtype.kind == "f":
        D = model.info["hidden_size"]
        if answer.shape != (D,):
            raise ValueError("logit_attribution: a direction is %d numbers (D), not shape %s" % (D, answer.shape))
        if not np.all(np.isfinite(answer)):
            raise ValueError("logit_attribution: the direction holds NaN or inf")
        return answer.astype(np.float64)
    if isinstance(answer, (tuple, list)) and len(answer) == 2:
        a, b = (_token(model, t) for t in answer)
        W_ab = model.weight("lm_head.weight", rows=[a, b]).astype(np.float64)  # [2, D]: the two rows only
        return W_ab[0] - W_ab[1]
    if isinstance(answer, (tuple, list)):
        raise ValueError("logit_attribution: an answer pair is 2 tokens (a, b), not %d" % len(answer))
    return model.weight("lm_head.weight", rows=[_token(model, answer)])[0].astype(np.float64)


def _token(model, t) -> int:
    V = model.info["vocab_size"]
    if isinstance(t, str):
        ids = list(model._engine.encode(t, False)[0])     # no BOS (Gemma's tokenizer adds one)
        if len(ids) != 1:
            raise ValueError("logit_attribution: %r is %d tokens %s, not one" % (t, len(ids), ids))
        return ids[0]
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool) and 0 <= t < V:
        return int(t)
    raise ValueError("logit_attribution: token %r is outside the vocabulary (ids 0..%d)" % (t, V - 1))
