"""Interventions as Python objects: each is one spec of docs/interventions.md's grammar,
SITE[SELECTORS]=OP, so a Python run and `lmscope-trace --intervene` do the same edit.

    lmscope.Zero("layers.3.attn.z", head=2)                 # layers.3.attn.z[head=2]=zero
    lmscope.Add("layers.6.resid_pre", 4, "love.h5", minus="hate.h5")
    lmscope.Patch("layers.4.resid_pre", "clean.h5", pos=5)
"""
import os

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


class Intervention:
    """A site, its selectors and an op; str() is the spec text."""

    op = ""

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
        self.reference = None if reference is None else os.fspath(reference)

    def _op_text(self) -> str:
        return "mean" if self.reference is None else "mean(%s)" % self.reference


class Patch(Intervention):
    op = "patch"

    def __init__(self, site: str, source, **selectors):
        super().__init__(site, **selectors)
        self.source = os.fspath(source)

    def _op_text(self) -> str:
        return "patch(%s)" % self.source


class Add(Intervention):
    """x += c * vector: `source` a vector file (JSON array or numbers) or a trace; with `minus`,
    the difference of two traces' same site (ActAdd)."""

    op = "add"

    def __init__(self, site: str, c: float, source, minus=None, **selectors):
        super().__init__(site, **selectors)
        self.c = float(c)
        self.source = os.fspath(source)
        self.minus = None if minus is None else os.fspath(minus)

    def _op_text(self) -> str:
        what = self.source if self.minus is None else "%s - %s" % (self.source, self.minus)
        return "add(%r, %s)" % (self.c, what)
