"""Hook names: lmscope's (docs/hooks.md), TransformerLens's, and TL's short form ("pattern", 3).

lmscope's names are the keys everywhere; TransformerLens names are accepted as aliases, with
TL's layout where it differs from ours (q/k/v/rot_q/rot_k: ours [B,H,T,hd], TL's
[batch, pos, head, d_head]). The mapping itself is python/lmscope_trace.py's (TL_NAMES).
"""
import re
from typing import Optional, Tuple

from lmscope_trace import TL_NAMES, tl_name

__all__ = ["resolve", "tl_name", "TRANSPOSED"]

# Ours -> TL's, reversed; per-layer entries keep the "L" placeholder ("blocks.L.attn.hook_z").
_FROM_TL = {v: k for k, v in TL_NAMES.items()}

# TL's short names (utils.get_act_name): cache["pattern", 3] is blocks.3.attn.hook_pattern.
_SHORT = {
    "embed": "embed", "resid_pre": "layers.L.resid_pre", "resid_mid": "layers.L.resid_mid",
    "resid_post": "layers.L.resid_post", "attn_out": "layers.L.attn_out", "mlp_out": "layers.L.ffn_out",
    "pattern": "layers.L.attn.probs", "attn_scores": "layers.L.attn.scores", "q": "layers.L.attn.q",
    "k": "layers.L.attn.k", "v": "layers.L.attn.v", "z": "layers.L.attn.z", "rot_q": "layers.L.attn.q_rope",
    "rot_k": "layers.L.attn.k_rope", "pre": "layers.L.ffn.gate", "pre_linear": "layers.L.ffn.up",
    "post": "layers.L.ffn.act",
}

# Hooks whose TL layout is ours with axes 1 and 2 swapped.
TRANSPOSED = {"attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope"}


def resolve(name) -> Tuple[str, bool]:
    """(lmscope's name, whether the caller wants TL's layout) for an lmscope name or glob, a
    TransformerLens name, or a (short name, layer) pair. KeyError for a name neither knows."""
    if isinstance(name, tuple):
        short, layer = name
        ours = _SHORT.get(short)
        if ours is None:
            raise KeyError("unknown TransformerLens short name %r (known: %s)" % (short, ", ".join(sorted(_SHORT))))
        return ours.replace("L", str(int(layer)), 1) if "L" in ours else ours, _transposed(ours)
    m = re.match(r"^blocks\.(\d+)\.(.+)$", name)
    if m:
        ours = _FROM_TL.get("blocks.L." + m.group(2))
        if ours is None:
            raise KeyError("unknown TransformerLens name %r" % name)
        return ours.replace("L", m.group(1), 1), _transposed(ours)
    if name in _FROM_TL:
        return _FROM_TL[name], False
    return name, False


def _transposed(ours: str) -> bool:
    return ours.split(".", 2)[-1] in TRANSPOSED


def layer_of(name: str) -> Optional[int]:
    m = re.match(r"^layers\.(\d+)\.", name)
    return int(m.group(1)) if m else None
