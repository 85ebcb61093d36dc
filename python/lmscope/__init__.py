"""lmscope in Python: the engine itself, in the process (docs/python.md).

    import lmscope
    m = lmscope.Model("models/SmolLM2-135M-Instruct.Q4_1.gguf")
    logits, cache = m.run_with_cache("The Eiffel Tower is in the city of")
    cache["layers.3.attn.probs"]          # numpy float32 [B, H, T, S], lmscope's name
    cache["pattern", 3]                   # the same, by TransformerLens's short name
    m.run_with_hooks(ids, hooks=[("layers.3.attn.z", fn), lmscope.Zero("layers.5.attn.z", head=1)])
    m.generate("Hello", max_new_tokens=20).text
    logits, cache, grads = m.run_with_grads(prompt, "logit_diff:pos=-1: Paris, Rome")   # docs/gradients.md
    lmscope.collect(path, "corpus.txt", "acts/", hooks=["layers.15.resid_post"])   # docs/collect.md
    lmscope.ActivationDataset("acts/").batches(4096)
    lmscope.sweep_pairs(path, "ioi.jsonl", sites="resid_pre", workers=2)         # docs/collect.md

Every run is lmscope-trace's run (generate() with Hugging Face's semantics, the same hook
points and interventions); m.trace(..., out="t.h5") writes the very file lmscope-trace writes.
"""
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

# The engine first, before h5py (lmscope_trace and names import it): its HDF5 library, which
# h5py shares, must hear H5dont_atexit() before its first call, or HDF5's exit handler closes
# again a file whose close failed (a full disk) and the interpreter dies at exit (lib/io/hdf5.cpp).
from ._core import Engine as _Engine, RunOptions as _RunOptions  # isort: skip

from lmscope_trace import Trace  # noqa: F401,E402  (the trace reader, re-exported)

from . import names as _names  # noqa: E402
from .interventions import Add, Intervention, Mean, Patch, Scale, Zero  # noqa: F401
from .attention_view import AttentionView, attention_view  # noqa: F401
from .activation_dataset import ActivationDataset  # noqa: F401
from .collection import collect  # noqa: F401
from .sweep import sweep_corpus, sweep_pairs  # noqa: F401
from .attribution import (Attribution, Decomposition, attribution_hooks, decompose,  # noqa: F401
                          head_results, logit_attribution)
from .attribution_patching import attribution_patching  # noqa: F401,E402
from .patching import PatchGrid, PatchSweep, patch_sweep  # noqa: F401,E402

__all__ = ["Model", "ActivationCache", "Generation", "Tokens", "Trace",
           "Intervention", "Zero", "Scale", "Mean", "Patch", "Add", "collect", "ActivationDataset",
           "sweep_pairs", "sweep_corpus",
           "attribution_hooks", "logit_attribution", "decompose", "head_results", "Attribution", "Decomposition",
           "attribution_patching", "patch_sweep", "PatchSweep", "PatchGrid"]

Prompt = Union[str, Sequence[int]]


@dataclass
class Tokens:
    ids: List[int]
    pieces: List[str]          # readable pieces ("ĠParis" shown as "␣Paris")
    encoding: dict             # words and their BPE merges, as `lmscope-bpe --json` prints them


@dataclass
class Generation:
    ids: List[List[int]]       # per row: the generated ids (prompt excluded)
    text: List[str]            # per row: the generated text (special tokens dropped)
    stop_reasons: List[str]    # per row: "eos", "stop_string" or "max_new_tokens"
    prompts: List[List[int]]   # per row: the prompt ids
    audit: Optional[Dict[int, Dict[str, np.ndarray]]] = None   # step -> sample.* arrays, when asked
    missing_hooks: List[str] = field(default_factory=list)


class ActivationCache(dict):
    """Hook tensors of one forward, keyed by lmscope's hook names (docs/hooks.md), numpy
    arrays in lmscope's layout. Also reachable by TransformerLens names
    (cache["blocks.3.attn.hook_q"], in TL's layout) and TL's short form (cache["q", 3]).
    run_info says which run it is (the model's config, each row's prompt length, the padding
    side), so that it can be a source of Patch / Mean / Add as a trace file is."""

    def __init__(self, tensors=(), run_info=None):
        super().__init__(tensors)
        self.run_info = run_info

    def __getitem__(self, key):
        if isinstance(key, str) and dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        ours, tl_layout = _names.resolve(key)
        if not dict.__contains__(self, ours):
            raise KeyError("%r (lmscope's %r) is not in this cache; it holds %d hooks" % (key, ours, len(self)))
        value = dict.__getitem__(self, ours)
        return np.ascontiguousarray(value.transpose(0, 2, 1, 3)) if tl_layout and value.ndim == 4 else value

    def __contains__(self, key):
        try:
            return dict.__contains__(self, _names.resolve(key)[0])
        except KeyError:
            return False

    def to_transformer_lens(self) -> Dict[str, np.ndarray]:
        """The hooks TransformerLens also has, under TL's names and layouts."""
        # self[tl], not self[name]: TL's name is what gives TL's layout (attn.hook_q and the
        # other per-head vectors are [B, T, H, hd] there, [B, H, T, hd] under lmscope's name).
        return {tl: self[tl] for name in self if (tl := _names.tl_name(name)) is not None}


class Model:
    """A model loaded as the tools load it: a Hugging Face directory or a .gguf file.

    backend: "cpu", "cuda" or "auto"; dtype: "f32" (or "bf16" on cuda); cpu_activations:
    "f32" (exact) or "q8" (llama.cpp's int8 activations). A missing path raises
    FileNotFoundError, a file lmscope cannot load ValueError, each with the tools' one line."""

    def __init__(self, path, backend: str = "cpu", dtype: str = "f32", cpu_activations: str = "f32",
                 pad_id: Optional[int] = None):
        self.path = os.fspath(path)
        self._engine = _Engine(self.path, backend, dtype, cpu_activations, -1 if pad_id is None else int(pad_id))
        self.info = self._engine.info()
        self.cfg = json.loads(self.info["config_json"])

    def __repr__(self) -> str:
        i = self.info
        return "lmscope.Model(%r: %d layers, D=%d, H=%d/%d, V=%d; %s %s)" % (
            self.path, i["num_layers"], i["hidden_size"], i["num_heads"], i["num_kv_heads"], i["vocab_size"],
            i["backend"], i["dtype"])

    # ---- text --------------------------------------------------------------------------------
    def tokenize(self, text: str, chat: bool = False) -> Tokens:
        """The ids, pieces and BPE merges of `text` (chat=True: as a user message in the
        chat template, with the generation prompt)."""
        if chat:
            text = self.apply_chat_template([{"role": "user", "content": text}])
        ids, encoding = self._engine.encode(text, not chat)
        return Tokens(list(ids), self._engine.pieces(ids), json.loads(encoding))

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        return self._engine.decode([int(i) for i in ids], skip_special)

    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = True,
                            format: str = "template") -> str:
        """The prompt text for [{"role": ..., "content": ...}, ...]: the tokenizer's own template
        (format "template"), or "chatml" / "deepseek-r1" / "gemma" (Gemma 3's template)."""
        return self._engine.chat([(m["role"], m["content"]) for m in messages], add_generation_prompt, format)

    # ---- weights -----------------------------------------------------------------------------
    def weight_names(self) -> List[str]:
        """Every weight by its Hugging Face name ("model.layers.3.self_attn.o_proj.weight", ...)."""
        return list(self._engine.weight_names())

    def weight(self, name: str, rows: Optional[Sequence[int]] = None) -> np.ndarray:
        """A weight as float32 in HF's layout ([out, in] for a projection), whatever its stored
        type (F16/BF16 widened, GGUF blocks dequantized): a copy. KeyError for an unknown name.
        E.g. direct logit attribution: cache["final_norm"] @ m.weight("lm_head.weight").T.
        rows: row indices of the first axis (negative ones from the end), m.weight(name)[rows]
        with only those rows read: m.weight("lm_head.weight", rows=[a, b]) is two unembedding
        rows without the whole matrix as float32. IndexError for a row outside the weight."""
        return self._engine.weight(name, rows)

    # ---- runs --------------------------------------------------------------------------------
    def run_with_cache(self, prompt, names=None, chat: bool = False, padding_side: str = "left",
                       hooks=()) -> "tuple[np.ndarray, ActivationCache]":
        """One forward of the prompt (or a batch of them): (logits [B, T, V], cache). `names`:
        hook names, globs or TransformerLens names to keep (default: every hook); `hooks` edit
        the forward as in run_with_hooks."""
        keep = _hook_globs(names)
        r = self._run(prompt, chat=chat, names=keep + ",logits", keep_steps=1, max_new_tokens=1,
                      padding_side=padding_side, hooks=hooks)
        step = dict(r["steps"].get(0, {}))
        logits = step["logits"]
        if not _wanted(keep, "logits"):
            del step["logits"]
        run_info = dict(config_json=self.info["config_json"], prompt_lengths=[len(p) for p in r["prompts"]],
                        padding_side=padding_side)
        return logits, ActivationCache(step, run_info)

    def run_with_hooks(self, prompt, hooks=(), chat: bool = False, padding_side: str = "left") -> np.ndarray:
        """One forward with `hooks` editing it: logits [B, T, V]. A hook is (site, fn) with
        fn(array, ctx) editing `array` in place or returning a new one (python/src/python_hooks.h),
        or an lmscope.Zero / Patch / Add / Scale / Mean, or a spec string."""
        r = self._run(prompt, chat=chat, names="logits", keep_steps=1, max_new_tokens=1,
                      padding_side=padding_side, hooks=hooks)
        return r["steps"][0]["logits"]

    def run_with_grads(self, prompt, metric: str, names=None, chat: bool = False, padding_side: str = "left",
                       use_cache: bool = True, hooks=()) -> "tuple[np.ndarray, ActivationCache, ActivationCache]":
        """One prefill of the prompt (or a batch) and the gradient of a scalar `metric` of its
        logits at the hooks `names` (as run_with_cache takes them: lmscope names, globs or
        TransformerLens names; default every hook): (logits [B, T, V], cache, grads). grads is
        keyed and laid out as cache is (grads["layers.3.resid_pre"], grads["resid_pre", 3]).
        metric, in lmscope-trace --grad's grammar (docs/gradients.md):
          "logit_diff:pos=-1: Paris, Rome"   logits[-1, " Paris"] - logits[-1, " Rome"]
          'logprob:pos=-1:" Paris"'          log_softmax(logits[-1])[" Paris"]
          "loss:3:"                           mean next-token loss over positions 3..T-2
        A batch's metric is the sum of its rows'. `hooks`: interventions (lmscope.Zero, Scale,
        Mean, Patch, Add or spec strings) applied in the forward that is differentiated; not
        Python functions. CPU and CUDA (dtype "f32") backends; ValueError for a token outside
        the vocabulary, a position outside a prompt or a NaN metric."""
        keep = _hook_globs(names)
        prompts = _prompts(prompt)
        if chat:
            prompts = [self.apply_chat_template([{"role": "user", "content": p}]) if isinstance(p, str) else p
                       for p in prompts]
        specs, fns = self._edits(hooks)
        if fns:
            raise ValueError("run_with_grads: a Python function hook cannot be differentiated; "
                             "use lmscope.Zero / Scale / Mean / Patch / Add")
        r = self._engine.run_grads(prompts, not chat, metric, keep, padding_side, use_cache, specs)
        run_info = dict(config_json=self.info["config_json"], prompt_lengths=[len(p) for p in r["prompts"]],
                        padding_side=padding_side, metric=metric, metric_value=r["metric"])
        return r["logits"], ActivationCache(r["activations"], run_info), ActivationCache(r["grads"], run_info)

    def generate(self, prompt, max_new_tokens: int = 16, do_sample: bool = False, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0, repetition_penalty: float = 1.0,
                 seed: int = 0, stop: Sequence[str] = (), eos_ids: Optional[Sequence[int]] = None,
                 use_cache: bool = True, padding_side: str = "left", chat: bool = False, hooks=(),
                 stream: Optional[Callable[[int, List[int]], None]] = None, audit: bool = False) -> Generation:
        """Hugging Face generate's semantics, as lmscope-trace runs it. stream(step, tokens) is
        called after each step; audit=True keeps the sampling audit (sample.* of every step)."""
        sampling = dict(do_sample=do_sample, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                        repetition_penalty=repetition_penalty, seed=seed)
        r = self._run(prompt, chat=chat, names="sample.*" if audit else "", keep_steps=1 << 30 if audit else 0,
                      max_new_tokens=max_new_tokens, use_cache=use_cache, sampling=sampling, eos_ids=eos_ids,
                      stop=stop, padding_side=padding_side, hooks=hooks, stream=stream)
        return self._generation(r, audit)

    def trace(self, prompt, out, hooks: str = "*", max_new_tokens: int = 16, compress: int = 0,
              edits=(), **generate_args) -> Generation:
        """generate(), traced to the file `out` exactly as lmscope-trace --out writes it (the same
        hooks globs; lmscope-report, -diff, -step and lmscope.Trace read it). `edits` are
        interventions and (site, fn) hooks, as generate(hooks=...) takes them."""
        sampling = {k: generate_args.pop(k) for k in ("do_sample", "temperature", "top_k", "top_p", "min_p",
                                                      "repetition_penalty", "seed") if k in generate_args}
        r = self._run(prompt, names=_hook_globs(hooks), keep_steps=0, max_new_tokens=max_new_tokens,
                      out=os.fspath(out), compress=compress, sampling=sampling, hooks=edits, **generate_args)
        return self._generation(r, False)

    # ---- the one call into the engine ----------------------------------------------------------
    def _run(self, prompt, chat=False, names="", keep_steps=0, max_new_tokens=1, use_cache=True, sampling=None,
             eos_ids=None, stop=(), padding_side="left", hooks=(), out="", stream=None, compress=0):
        prompts = _prompts(prompt)
        if chat:
            prompts = [self.apply_chat_template([{"role": "user", "content": p}]) if isinstance(p, str) else p
                       for p in prompts]
        o = _RunOptions()   # python/src/core_module.cpp's RunOptions, field by field
        o.prompts, o.add_special = prompts, not chat
        o.names, o.keep_steps = names, keep_steps
        o.padding_side, o.max_new_tokens, o.use_cache = padding_side, int(max_new_tokens), use_cache
        o.sampling = sampling or {}
        o.eos_ids = None if eos_ids is None else [int(i) for i in eos_ids]
        o.stop = list(stop)
        o.specs, o.hooks = self._edits(hooks)
        o.out, o.stream, o.compress = out, stream, int(compress)
        return self._engine.run(o)

    def _edits(self, hooks):
        """Spec strings for the engine's interventions, (lmscope name, fn) for Python hooks."""
        specs, fns = [], []
        for h in ([hooks] if isinstance(hooks, (str, Intervention)) else hooks):
            if isinstance(h, str):
                specs.append(h)
                continue
            if isinstance(h, Intervention):
                memory = h.memory()
                specs.append(str(h) if memory is None else (str(h), memory))
                continue
            if not (isinstance(h, (tuple, list)) and len(h) == 2 and isinstance(h[0], str)):
                raise ValueError("a hook is (site, fn), an lmscope.Zero/Scale/Mean/Patch/Add or a spec string; got %r" % (h,))
            site, fn = h
            if not callable(fn):
                raise ValueError("hook for %r: expected a function fn(array, ctx), got %r" % (site, fn))
            for name in self._expand(site):
                ours, tl_layout = _names.resolve(name)
                fns.append((ours, _tl_layout_hook(fn) if tl_layout else fn))
        return specs, fns

    def _expand(self, site: str) -> List[str]:
        """layers.*.resid_pre -> one name per layer."""
        if isinstance(site, str) and site.startswith("layers.*."):
            return ["layers.%d.%s" % (l, site[len("layers.*."):]) for l in range(self.info["num_layers"])]
        return [site]

    def _generation(self, r, audit) -> Generation:
        text = [self.decode(ids, skip_special=True) if self.info["has_tokenizer"] else "" for ids in r["new_tokens"]]
        return Generation(ids=[list(x) for x in r["new_tokens"]], text=text, stop_reasons=list(r["stop_reasons"]),
                          prompts=[list(p) for p in r["prompts"]], audit=dict(r["steps"]) if audit else None,
                          missing_hooks=list(r["missing_hooks"]))


def _prompts(prompt) -> list:
    """One prompt (text or ids) or a batch of them -> a list of str / list[int]."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, np.ndarray):
        prompt = prompt.tolist()
    items = list(prompt)
    if items and all(isinstance(x, (int, np.integer)) for x in items):
        return [[int(x) for x in items]]
    out = []
    for p in items:
        if isinstance(p, str):
            out.append(p)
        else:
            out.append([int(x) for x in (p.tolist() if isinstance(p, np.ndarray) else p)])
    return out


def _hook_globs(names) -> str:
    """None -> every hook ("*"); a string is lmscope-trace's --hooks; a list may mix lmscope
    names, globs, TransformerLens names and (short, layer) pairs."""
    if names is None:
        return "*"
    if isinstance(names, str):
        return names
    return ",".join(_names.resolve(n)[0] for n in names)


def _wanted(globs: str, name: str) -> bool:
    import fnmatch
    return any(fnmatch.fnmatchcase(name, g.strip()) for g in globs.split(",") if g.strip())


def _tl_layout_hook(fn):
    """A hook named by its TransformerLens name sees TL's layout: [B,T,H,hd] for q/k/v/rot."""
    def hook(array, ctx):
        view = array.transpose(0, 2, 1, 3)     # a view: in-place edits reach `array`
        r = fn(view, ctx)
        return None if r is None else np.asarray(r).transpose(0, 2, 1, 3)
    return hook


# Direct logit attribution as methods too (python/lmscope/attribution.py, docs/attribution.md):
# m.logit_attribution(cache, (" Paris", " Rome"), heads=True), m.decompose(cache), m.head_results(cache, 3).
Model.logit_attribution = logit_attribution
Model.decompose = decompose
Model.head_results = head_results
