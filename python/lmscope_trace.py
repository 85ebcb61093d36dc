"""Read lmscope traces (HDF5, docs/trace-format.md) from Python: h5py + numpy only.

    from lmscope_trace import Trace
    t = Trace("trace.h5")                  # ValueError unless a complete lmscope trace
    t.steps                                # [0, 1, ...]: step 0 is the prefill
    t.hooks(0)                             # ['tokens.input_ids', 'embed', 'layers.0.resid_pre', ...]
    p = t.hook("layers.0.attn.probs")      # p.values: numpy array, p.axes: ('B', 'H', 'T', 'S')
    t.tokens(0)                            # the prompt's token pieces (or ids) of row 0
    t.labels(0, step=0)                    # one label per key position (pads shown as <pad>)
    tl = t.as_transformer_lens(0)          # {'blocks.0.attn.hook_pattern': array, ...}

Hook names and axes are the ones in docs/hooks.md; a value is stored at /step_NNNN/ + the
dotted name with dots as slashes, and each dataset carries its `hook` and `axes` attributes.
See docs/python.md.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import h5py
import numpy as np

__all__ = ["Trace", "HookValue", "TL_NAMES", "TL_NOTES", "tl_name"]
__version__ = "0.1.0"

FORMAT = "lmscope-trace"
FORMAT_VERSIONS = (1, 2)   # 2: kv.L.k / kv.L.v store each step's appended rows (KV_APPENDED)
KV_APPENDED = "appended"
# root attributes holding JSON text
JSON_ATTRS = ("config_json", "prompts", "missing_hooks", "eos_token_ids", "stop_strings", "stop_reasons")
_STEP_RE = re.compile(r"^step_(\d+)$")


# A dataset whose shape claims more than the file stores for it (an unallocated 2^36-element
# dataset) is refused before numpy allocates it. A filtered (compressed) dataset may hold up to
# this many times its stored bytes: deflate's best ratio on zeros is about 1030.
_MAX_COMPRESSION = 1100


class _Missing(KeyError):
    """A hook, step or row the caller asked for that the trace does not have (the API's
    KeyError); any other failure on a damaged file becomes one ValueError (_damaged)."""


def _damaged(method):
    """Public methods raise ValueError, in one line naming the file, for a damaged or hostile
    trace (h5py's KeyError/OSError on a broken link, RecursionError, AttributeError on an
    attribute of the wrong type, MemoryError...), and only _Missing as KeyError."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (_Missing, ValueError, IndexError, FileNotFoundError, ImportError):
            raise
        except Exception as e:   # noqa: BLE001 - every other failure is the file's
            msg = str(e).replace("\n", " ")
            raise ValueError("'%s': a damaged trace (%s: %s)" % (self.path, type(e).__name__, msg)) from None
    return wrapper


def _read(ds: h5py.Dataset, where: str) -> np.ndarray:
    """A numeric dataset's values, after checking what the file says about it: a value at all
    (not a null dataspace), numbers, and no more bytes than the file stores for it."""
    if ds.shape is None:
        raise ValueError("%s: a null dataspace (no value)" % where)
    if ds.dtype.kind not in "iuf":
        raise ValueError("%s: %s values, not numbers" % (where, ds.dtype))
    stored = ds.id.get_storage_size()
    limit = stored * (_MAX_COMPRESSION if ds.compression or ds.chunks else 1)
    if ds.size and ds.nbytes > limit:
        raise ValueError("%s: shape %s needs %d bytes but the file stores %d"
                         % (where, tuple(ds.shape), ds.nbytes, stored))
    return ds[()]


def _refuse_external_links(root: h5py.Group, path: str) -> None:
    """lmscope never writes an external link; following one would show another file's data
    (or block on a FIFO it names). Looked at without following it; each group visited once."""
    seen, todo = set(), [root]
    while todo:
        g = todo.pop()
        for name in g:
            link = g.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                raise ValueError("'%s' %s/%s: an external link (into another file); traces never "
                                 "hold one" % (path, g.name.rstrip("/"), name))
            obj = g.get(name)
            if isinstance(obj, h5py.Group):
                key = h5py.h5o.get_info(obj.id).addr   # the group itself, whatever link led to it
                if key not in seen:
                    seen.add(key)
                    todo.append(obj)


class HookValue(NamedTuple):
    """One hook's value: the array as stored and its axis names (the dataset's `axes`)."""
    values: np.ndarray
    axes: Tuple[str, ...]


# ---- hook order and TransformerLens names (docs/hooks.md) ----------------------------------
# Per-layer hooks in forward order; `kv.L.*` (the cache after layer L) follow layer L's hooks.
_LAYER_ORDER = ["resid_pre", "attn_norm", "attn.q", "attn.k", "attn.v", "attn.q_norm", "attn.k_norm",
                "attn.q_rope", "attn.k_rope", "attn.scores", "attn.probs", "attn.z", "attn_out", "attn_post_norm",
                "resid_mid", "ffn_norm", "ffn.gate", "ffn.up", "ffn.act", "ffn_out", "ffn_post_norm", "resid_post"]
_KV_ORDER = ["k", "v"]
_HEAD_ORDER = ["tokens.input_ids", "tokens.attention_mask", "tokens.position_ids", "embed",
               "mask.causal", "mask.padding", "mask.combined", "mask.sliding", "rope.cos", "rope.sin",
               "rope.cos_local", "rope.sin_local"]
_TAIL_ORDER = ["final_norm", "logits", "sample.candidates", "sample.raw", "sample.penalized",
               "sample.scaled", "sample.probs", "sample.kept", "sample.survivors", "sample.u",
               "sample.chosen", "sample.finished"]

# Our name -> TransformerLens name (the TL column of docs/hooks.md). Per-layer entries are the
# part after `layers.L.`; their TL names go under `blocks.L.`.
TL_NAMES: Dict[str, str] = {
    "tokens.input_ids": "hook_tokens",
    "embed": "hook_embed",
    "final_norm": "ln_final.hook_normalized",
    "logits": "unembed.hook_out",
}
_TL_LAYER = {
    "resid_pre": "hook_resid_pre",
    "attn_norm": "ln1.hook_normalized",
    "attn.q": "attn.hook_q",
    "attn.k": "attn.hook_k",
    "attn.v": "attn.hook_v",
    "attn.q_rope": "attn.hook_rot_q",
    "attn.k_rope": "attn.hook_rot_k",
    "attn.scores": "attn.hook_attn_scores",
    "attn.probs": "attn.hook_pattern",
    "attn.z": "attn.hook_z",
    "attn_out": "hook_attn_out",
    "resid_mid": "hook_resid_mid",
    "ffn_norm": "ln2.hook_normalized",
    "ffn.gate": "mlp.hook_pre",
    "ffn.up": "mlp.hook_pre_linear",
    "ffn.act": "mlp.hook_post",
    "ffn_out": "hook_mlp_out",
    "resid_post": "hook_resid_post",
}
TL_NAMES.update({"layers.L." + k: "blocks.L." + v for k, v in _TL_LAYER.items()})

# Hooks whose stored [B,H,T,hd] layout is transposed to TL's [batch, pos, head, d_head].
_TL_TRANSPOSE = {"attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope"}

# Where an entry of as_transformer_lens() is NOT exactly what TransformerLens would hold.
TL_NOTES: Dict[str, str] = {
    "hook_normalized": "lmscope's norm output is AFTER the RMSNorm weight; TL's hook_normalized "
                       "is before it (ours = TL's * w). Not converted: the trace has no weights.",
    "attn.hook_k": "GQA models: Hkv heads, not repeated to H (gqa_map[h] is query head h's KV head).",
    "attn.hook_v": "GQA models: Hkv heads, not repeated to H (gqa_map[h] is query head h's KV head).",
    "attn.hook_rot_k": "GQA models: Hkv heads, not repeated to H; this step's rows only.",
    "attn.hook_attn_scores": "masked entries hold the additive mask value (-3.4028235e38 from "
                             "lmscope and HF eager), not -inf.",
}


def tl_name(hook: str) -> Optional[str]:
    """The TransformerLens name of an lmscope hook name, or None when TL has none."""
    m = re.match(r"^layers\.(\d+)\.(.+)$", hook)
    if m:
        tl = _TL_LAYER.get(m.group(2))
        return None if tl is None else "blocks.%s.%s" % (m.group(1), tl)
    return None if hook.startswith("layers.") else TL_NAMES.get(hook)


def _natural_key(name: str):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in name.split(".")]


def _order_key(name: str):
    """Forward order: tokens/embed/masks/rope, each layer (then its kv cache), final norm,
    logits, sampling audit; names this table does not know go last, in natural order."""
    if name in _HEAD_ORDER:
        return (0, _HEAD_ORDER.index(name))
    m = re.match(r"^(layers|kv)\.(\d+)\.(.+)$", name)
    if m:
        kind, layer, rest = m.group(1), int(m.group(2)), m.group(3)
        if kind == "layers" and rest in _LAYER_ORDER:
            return (1, layer, 0, _LAYER_ORDER.index(rest))
        if kind == "kv" and rest in _KV_ORDER:
            return (1, layer, 1, _KV_ORDER.index(rest))
        return (1, layer, 2, _natural_key(rest))
    if name in _TAIL_ORDER:
        return (2, _TAIL_ORDER.index(name))
    return (3, _natural_key(name))


def _py(value):
    """HDF5 attribute -> plain Python: bytes -> str, numpy scalars -> int/float/str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _strings(ds: h5py.Dataset):
    """A (variable-length UTF-8) string dataset as str / list of str."""
    v = ds.asstr()[()] if h5py.check_string_dtype(ds.dtype) is not None else ds[()]
    if isinstance(v, np.ndarray):
        return [_py(x) for x in v.tolist()]
    return _py(v)


class Trace:
    """A complete lmscope trace, opened read-only.

    Refuses (ValueError, one line) a file that is not HDF5, has no `format = lmscope-trace`
    root attribute, or lacks `complete = 1` (a writer sets it last, docs/trace-format.md).
    Keeps the file open until close() (or use it as a context manager).
    """

    @_damaged
    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise FileNotFoundError("cannot open trace '%s': No such file or directory" % self.path)
        if os.path.isdir(self.path):
            raise ValueError("cannot open trace '%s': it is a directory" % self.path)
        if not h5py.is_hdf5(self.path):
            raise ValueError("'%s' is not an lmscope trace (not an HDF5 file)" % self.path)
        self._f = h5py.File(self.path, "r")
        try:
            root = self._f.attrs
            if "format" not in root:
                raise ValueError("'%s' is not an lmscope trace (no 'format' attribute)" % self.path)
            if _py(root["format"]) != FORMAT:
                raise ValueError("'%s' is not an lmscope trace (format is %r, not %r)"
                                 % (self.path, _py(root["format"]), FORMAT))
            complete = _py(root["complete"]) if "complete" in root else None
            if isinstance(complete, np.ndarray):
                complete = complete.tolist()   # an array is not the scalar 1
            if isinstance(complete, str) or complete != 1:
                raise ValueError("'%s' is an incomplete lmscope trace (no complete=1: its writer "
                                 "did not finish)" % self.path)
            version = _py(root["format_version"]) if "format_version" in root else 1
            if version not in FORMAT_VERSIONS:   # a newer layout would read as wrong values
                raise ValueError("'%s' has format_version %r; this reader reads %s"
                                 % (self.path, version, ", ".join(map(str, FORMAT_VERSIONS))))
            _refuse_external_links(self._f, self.path)
        except Exception:
            self._f.close()
            raise
        steps = {}
        for name, obj in self._f.items():
            m = _STEP_RE.match(name)
            if m and isinstance(obj, h5py.Group):
                steps[int(m.group(1))] = name
        self._step_groups = dict(sorted(steps.items()))
        self._hooks_cache: Dict[int, List[str]] = {}
        self._kv: Dict[str, tuple] = {}   # kv hook -> (step, cache so far, S): see _kv_cache
        self._attrs = None

    # ---- file handling -------------------------------------------------------------------
    def close(self) -> None:
        if self._f:
            self._f.close()

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        a = self.attrs
        return "<lmscope Trace %r: %s, backend %s, %d steps>" % (
            self.path, a.get("producer", "?"), a.get("backend", "?"), len(self.steps))

    @property
    def h5(self) -> h5py.File:
        """The underlying h5py.File, for anything this reader does not wrap."""
        return self._f

    # ---- root ----------------------------------------------------------------------------
    @property
    @_damaged
    def attrs(self) -> dict:
        """Root attributes as plain Python; the JSON ones (config_json, prompts, missing_hooks,
        eos_token_ids, stop_strings, stop_reasons) parsed from their text; arrays (gqa_map) stay
        numpy arrays."""
        if self._attrs is None:
            out = {}
            for k, v in self._f.attrs.items():
                v = _py(v)
                if k in JSON_ATTRS and isinstance(v, str):
                    try:
                        v = json.loads(v)
                    except ValueError:
                        pass   # keep the text if a producer wrote something else
                out[k] = v
            self._attrs = out
        return self._attrs

    @property
    @_damaged
    def config(self) -> dict:
        """The model's config.json (the parsed `config_json` attribute); {} when absent."""
        c = self.attrs.get("config_json")
        return c if isinstance(c, dict) else {}

    @property
    @_damaged
    def generated_ids(self) -> np.ndarray:
        """int32 [B, N]: the N new tokens of each row (finished rows hold pad_token_id)."""
        return _read(self._f["generated_ids"], "'%s' generated_ids" % self.path)

    @property
    def steps(self) -> List[int]:
        """Step numbers present: 0 is the prefill, 1... the decode steps."""
        return list(self._step_groups)

    def _step(self, step: int) -> h5py.Group:
        try:
            return self._f[self._step_groups[int(step)]]
        except KeyError:
            raise _Missing("no step %r in '%s' (steps: %s)" % (step, self.path, self._steps_text())) from None

    def _steps_text(self) -> str:
        s = self.steps
        return "none" if not s else ("%d..%d" % (s[0], s[-1]) if s == list(range(s[0], s[-1] + 1))
                                     else ", ".join(map(str, s)))

    @_damaged
    def step_info(self, step: int) -> dict:
        """The step group's attributes (step, phase, use_cache, past_length, T, S), plus the
        sampling settings under 'sample' when the step has a /sample group."""
        g = self._step(step)
        info = {k: _py(v) for k, v in g.attrs.items()}
        if "sample" in g and isinstance(g["sample"], h5py.Group) and len(g["sample"].attrs):
            info["sample"] = {k: _py(v) for k, v in g["sample"].attrs.items()}
        return info

    # ---- hooks ---------------------------------------------------------------------------
    def _step_hooks(self, step: int) -> List[str]:
        step = int(step)
        if step not in self._hooks_cache:
            g = self._step(step)
            names = []

            def visit(path, obj):
                if isinstance(obj, h5py.Dataset):
                    h = obj.attrs.get("hook")
                    names.append(_py(h) if h is not None else path.replace("/", "."))
            g.visititems(visit)
            self._hooks_cache[step] = sorted(names, key=_order_key)
        return self._hooks_cache[step]

    @_damaged
    def hooks(self, step: Optional[int] = None) -> List[str]:
        """Dotted hook names present in `step` (all steps when None), in forward order."""
        if step is not None:
            return list(self._step_hooks(step))
        seen = set()
        for s in self.steps:
            seen.update(self._step_hooks(s))
        return sorted(seen, key=_order_key)

    def _dataset(self, name: str, step: int) -> h5py.Dataset:
        g = self._step(step)
        path = name.replace(".", "/")
        obj = g.get(path)
        if not isinstance(obj, h5py.Dataset):
            close = difflib.get_close_matches(name, self._step_hooks(step), n=3)
            hint = ("; did you mean %s?" % ", ".join(close)) if close else ""
            raise _Missing("no hook %r in step %d of '%s'%s" % (name, int(step), self.path, hint))
        return obj

    @_damaged
    def hook(self, name: str, step: int = 0, xarray: bool = False):
        """The value of hook `name` (dotted, docs/hooks.md) at `step`.

        Returns HookValue(values, axes): the numpy array exactly as stored (float32 or int32)
        and its axis names from the dataset's `axes` attribute, e.g. ('B', 'H', 'T', 'S').
        With xarray=True returns an xarray.DataArray with dims = axes (ImportError, saying so,
        when xarray is not installed: this module needs only h5py and numpy).
        """
        ds = self._dataset(name, step)
        if _py(ds.attrs.get("rows")) == KV_APPENDED:
            values, axes_attr = self._kv_cache(name, int(step)), "B,Hkv,S,hd"
        else:
            values, axes_attr = _read(ds, "'%s' step %d %s" % (self.path, int(step), name)), _py(ds.attrs.get("axes", ""))
        axes = tuple(a for a in axes_attr.split(",") if a) if axes_attr else ()
        if len(axes) != np.ndim(values):   # no/odd axes attribute: never guess from the name
            axes = tuple("dim_%d" % i for i in range(np.ndim(values)))
        if xarray:
            try:
                import xarray as xr
            except ImportError:
                raise ImportError("hook(..., xarray=True) needs xarray (pip install xarray); "
                                  "without it use hook(...).values and .axes") from None
            return xr.DataArray(values, dims=axes, name=name,
                                attrs={"hook": name, "step": int(step)})
        return HookValue(values, axes)

    def _kv_cache(self, name: str, step: int) -> np.ndarray:
        """kv.L.k / kv.L.v stored as each step's appended rows (rows = "appended",
        first_position): the whole cache [B,Hkv,S,hd] after `step`, rebuilt by writing steps
        0..step's rows at their positions in order, as the cache was written."""
        kept = self._kv.get(name)
        start, cache, S = (kept if kept is not None and kept[0] <= step else (-1, None, 0))
        for s in range(start + 1, step + 1):
            where = "'%s' step %d %s" % (self.path, s, name)
            try:
                ds = self._dataset(name, s)
            except _Missing:
                raise ValueError("%s: missing, so the cache of step %d cannot be rebuilt (each step "
                                 "stores only the rows it appended)" % (where, step)) from None
            if _py(ds.attrs.get("rows")) != KV_APPENDED or "first_position" not in ds.attrs:
                raise ValueError("%s: not appended cache rows with a first_position" % where)
            rows, first = _read(ds, where), int(_py(ds.attrs["first_position"]))
            if rows.ndim != 4:
                raise ValueError("%s: appended cache rows must be [B,Hkv,T,hd]" % where)
            filled = 0 if cache is None else cache.shape[2]
            if not 0 <= first <= filled:
                raise ValueError("%s: first_position %d is not within the %d cache positions of the "
                                 "earlier steps" % (where, first, filled))
            end = first + rows.shape[2]
            if cache is None:
                cache = rows.copy()
            else:
                if end > filled:
                    pad = np.zeros(cache.shape[:2] + (end - filled,) + cache.shape[3:], cache.dtype)
                    cache = np.concatenate([cache, pad], axis=2)
                cache[:, :, first:end] = rows   # numpy says so when B, Hkv or hd differ
            S = end
        self._kv[name] = (step, cache, S)
        return cache[:, :, :S].copy()

    @_damaged
    def hook_attrs(self, name: str, step: int = 0) -> dict:
        """All attributes of hook `name`'s dataset at `step` (`hook`, `axes`, and any a producer
        adds, e.g. `rows = last` on logits kept for the last position only)."""
        return {k: _py(v) for k, v in self._dataset(name, step).attrs.items()}

    @_damaged
    def as_transformer_lens(self, step: int = 0) -> Dict[str, np.ndarray]:
        """This step's hooks that have a TransformerLens name, keyed by it (docs/hooks.md):
        'hook_embed', 'blocks.3.hook_resid_pre', 'blocks.3.attn.hook_pattern',
        'ln_final.hook_normalized', ... Hooks absent from the trace are absent here.

        Layouts follow TL's:
          * attn.hook_q / hook_k / hook_v / hook_rot_q / hook_rot_k are TRANSPOSED from our
            [B, H(kv), T, hd] to TL's [batch, pos, head, d_head];
          * attn.hook_pattern / hook_attn_scores are [batch, head, query, key] = ours [B,H,T,S];
          * attn.hook_z is [batch, pos, head, d_head] = ours [B,T,H,hd];
          * everything else keeps our layout ([B,T,D], [B,T,F], [B,T,V], [B,T]).
        Not the same values as TL (see TL_NOTES), not faked:
          * ln1/ln2/ln_final.hook_normalized are AFTER the RMSNorm weight (TL's are before);
          * GQA models: hook_k / hook_v / hook_rot_k keep Hkv heads (not repeated to H);
          * masked scores hold -3.4028235e38 rather than -inf.
        On decode steps (T = 1 with a KV cache) query positions are this step's tokens only.
        """
        out = {}
        for name in self._step_hooks(step):
            tl = tl_name(name)
            if tl is None:
                continue
            values = _read(self._dataset(name, step), "'%s' step %d %s" % (self.path, int(step), name))
            rest = name.split(".", 2)[2] if name.startswith("layers.") else name
            if rest in _TL_TRANSPOSE and values.ndim == 4:
                values = np.ascontiguousarray(values.transpose(0, 2, 1, 3))
            out[tl] = values
        return out

    # ---- tokens --------------------------------------------------------------------------
    @_damaged
    def tokens(self, row: int = 0) -> List[Union[str, int]]:
        """Row `row`'s prompt tokens: the readable pieces from /tokenizer/row_B/pieces when the
        trace has them (str, one per id), else its ids (int): /tokenizer/row_B/ids, or the
        `prompts` root attribute (the prompt before padding)."""
        g = self._f.get("tokenizer/row_%d" % int(row))
        if isinstance(g, h5py.Group):
            if isinstance(g.get("pieces"), h5py.Dataset):
                return _strings(g["pieces"])
            if isinstance(g.get("ids"), h5py.Dataset):
                return [int(i) for i in g["ids"][()]]
        prompts = self.attrs.get("prompts")
        if not isinstance(prompts, list) or not 0 <= int(row) < len(prompts):
            n = len(prompts) if isinstance(prompts, list) else 0
            raise IndexError("no row %r in '%s' (%d prompt rows)" % (row, self.path, n))
        return [int(i) for i in prompts[int(row)]]

    @_damaged
    def labels(self, row: int = 0, step: int = 0, pad: str = "<pad>") -> List[str]:
        """One label per KEY position of `step` (S of them; the queries are the last T), for
        plots: the token's piece where /tokenizer/row_B has it, else its id; `pad` where
        tokens.attention_mask is 0. Ids come from the tokens.input_ids hooks (steps 0..step
        with a KV cache, this step alone without), so those hooks must be in the trace."""
        info = self.step_info(step)
        S = int(info["S"])
        parts = []
        s = int(step)
        while True:
            parts.insert(0, self.hook("tokens.input_ids", s).values[int(row)])
            if not self.step_info(s).get("past_length", 0) or s == 0:
                break
            s -= 1
        ids = np.concatenate(parts)[-S:]
        if len(ids) != S:
            raise ValueError("'%s': step %d has S=%d key positions but tokens.input_ids give %d"
                             % (self.path, int(step), S, len(ids)))
        names = {}
        tok = self._f.get("tokenizer/row_%d" % int(row))
        if isinstance(tok, h5py.Group) and "ids" in tok and "pieces" in tok:
            names = dict(zip((int(i) for i in tok["ids"][()]), _strings(tok["pieces"])))
        mask = None
        for hook in ("tokens.attention_mask", "mask.padding"):
            if hook in self._step_hooks(step):
                mask = self.hook(hook, step).values[int(row)]
                break
        return [pad if mask is not None and mask[i] == 0 else names.get(int(t), str(int(t)))
                for i, t in enumerate(ids)]

    @_damaged
    def tokenizer(self, row: int = 0) -> dict:
        """Everything under /tokenizer/row_B as a dict of name -> str / list / array
        (merges/* keyed 'merges/left' ...); {} when the trace has no tokenizer record."""
        g = self._f.get("tokenizer/row_%d" % int(row))
        out = {}
        if isinstance(g, h5py.Group):
            def visit(path, obj):
                if isinstance(obj, h5py.Dataset):
                    out[path] = (_strings(obj) if h5py.check_string_dtype(obj.dtype) is not None
                                 else obj[()])
            g.visititems(visit)
        return out
