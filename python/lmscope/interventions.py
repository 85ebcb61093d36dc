"""Interventions as Python objects: each is one spec of docs/interventions.md's grammar,
SITE[SELECTORS]=OP, so a Python run and `lmscope-trace --intervene` do the same edit.

    lmscope.Zero("layers.3.attn.z", head=2)                 # layers.3.attn.z[head=2]=zero
    lmscope.Add("layers.6.resid_pre", 4, "love.h5", minus="hate.h5")
    lmscope.Patch("layers.4.resid_pre", "clean.h5", pos=5)

A source may also be in memory: the cache of run_with_cache instead of a trace file
(Patch("layers.4.resid_pre", clean_cache, pos=5)), and a numpy vector instead of a vector file
(Add("layers.6.resid_pre", 4, vec)). The spec text then names them "<cache>" / "<array>", and
a trace records their sha256.
"""
import os

import numpy as np

__all__ = ["Intervention", "Zero", "Scale", "Mean", "Patch", "Add"]

_SELECTORS = ("pos", "row", "step", "head", "neuron", "key")


def _selector_text(value) -> str:
    if isinstance(value, slice):
        if value.step not in (None, 1):
            raise ValueError("a selector slice has no step: %r" % (value,))
        return "%s:%s" % ("" if value.start is None else value.start, "" if value.stop is None else value.stop)
    if isinstance(value, (list, tuple)):
        return "|".join(_selector_text(v) for v in value)
    return str(int(value))


def _is_run(x) -> bool:
    """A run held in memory: run_with_cache's ActivationCache."""
    return getattr(x, "run_info", None) is not None


def _source(x):
    """A trace path, or a run in memory (kept as is)."""
    return x if _is_run(x) else os.fspath(x)


def _label(x) -> str:
    return "<cache>" if _is_run(x) else x


def _memory_run(cache) -> dict:
    return dict(cache.run_info, hooks=cache)


class Intervention:
    """A site, its selectors and an op; str() is the spec text."""

    op = ""

    def memory(self):
        """What the spec takes from memory instead of files ({"source": run, "vector": array,
        ...}), or None: the engine's form (python/src/memory_sources.h)."""
        out = {}
        for key in ("source", "minus", "reference"):
            value = getattr(self, key, None)
            if value is not None and _is_run(value):
                out["minus" if key == "minus" else "source"] = _memory_run(value)
        vector = getattr(self, "vector", None)
        if vector is not None:
            out["vector"] = vector
        return out or None

    def __init__(self, site: str, **selectors):
        unknown = set(selectors) - set(_SELECTORS)
        if unknown:
            raise ValueError("unknown selector %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(_SELECTORS)))
        self.site = site
        self.selectors = {k: v for k, v in selectors.items() if v is not None}

    def _op_text(self) -> str:
        return self.op

    def __str__(self) -> str:
        sel = ",".join("%s=%s" % (k, _selector_text(v)) for k, v in self.selectors.items())
        return "%s%s=%s" % (self.site, "[%s]" % sel if sel else "", self._op_text())

    def __repr__(self) -> str:
        return "lmscope.%s(%r)" % (type(self).__name__, str(self))


class Zero(Intervention):
    op = "zero"


class Scale(Intervention):
    op = "scale"

    def __init__(self, site: str, c: float, **selectors):
        super().__init__(site, **selectors)
        self.c = float(c)

    def _op_text(self) -> str:
        return "scale(%r)" % self.c


class Mean(Intervention):
    op = "mean"

    def __init__(self, site: str, reference=None, **selectors):
        super().__init__(site, **selectors)
        self.reference = None if reference is None else _source(reference)

    def _op_text(self) -> str:
        return "mean" if self.reference is None else "mean(%s)" % _label(self.reference)


class Patch(Intervention):
    op = "patch"

    def __init__(self, site: str, source, **selectors):
        super().__init__(site, **selectors)
        self.source = _source(source)

    def _op_text(self) -> str:
        return "patch(%s)" % _label(self.source)


class Add(Intervention):
    """x += c * vector: `source` a vector (a numpy array or list of numbers, a vector file: JSON
    array or numbers), a trace or a cache; with `minus`, the difference of two runs' same site.
    Of two runs, by default one steering vector: the last prompt position of row 0 of each,
    added at every selected position. aligned=True: ActAdd as Turner et al. do it, the two
    prompts' difference position by position ([T, D], prompts of one length), position p of
    this run getting the difference at p and positions from T on nothing."""

    op = "add"

    def __init__(self, site: str, c: float, source, minus=None, aligned: bool = False, **selectors):
        super().__init__(site, **selectors)
        self.c = float(c)
        self.vector = None
        self.aligned = bool(aligned)
        if isinstance(source, (np.ndarray, list, tuple)):
            if minus is not None:
                raise ValueError("Add: `minus` subtracts a run from a run; give a trace or cache, not a vector")
            if self.aligned:
                raise ValueError("Add: aligned=True takes runs (traces or caches); a vector has no positions to align")
            self.vector = np.ascontiguousarray(source, dtype=np.float64)
            self.source = None
        else:
            self.source = _source(source)
        self.minus = None if minus is None else _source(minus)

    def _op_text(self) -> str:
        if self.vector is not None:
            return "add(%r, <array>)" % self.c
        what = _label(self.source) if self.minus is None else "%s - %s" % (_label(self.source), _label(self.minus))
        return "add(%r, %s%s)" % (self.c, what, ", aligned" if self.aligned else "")
