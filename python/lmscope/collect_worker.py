"""One shard's work for lmscope.collect: its documents -> token ids -> batched forwards -> the
chosen hooks' rows at the chosen positions -> one HDF5 shard (shards.py).

A ShardWorker holds one lmscope.Model, loaded once; the local worker processes and the Ray
actors each hold one. What a shard holds depends only on its documents and the options,
never on which worker ran it: the batches are formed inside the shard (its pieces sorted by
length, batch_size at a time) and the rows are put back in document order.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import shards
from ._core import hook_axes

LONG_POLICIES = ("refuse", "split", "truncate")


@dataclass
class Options:
    """Everything that decides what a collection holds (the manifest's "options")."""
    hooks: List[str]                 # lmscope hook names, expanded (no globs)
    positions: str = "all"           # "all", "last" or a slice "A:B" over a piece's positions
    chat: str = ""                   # "": plain; else each document as a user message in this chat
                                     # format: "template" (the tokenizer's own), "chatml", "deepseek-r1"
    long: str = "refuse"             # a piece longer than max_tokens: refuse, split or truncate
    max_tokens: int = 0              # the longest piece (the model's positions unless asked)
    docs_per_shard: int = 256
    batch_size: int = 8
    dtype: str = "f32"               # how hook values are stored: f32, f16, bf16
    backend: str = "cpu"
    cpu_activations: str = "f32"

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def positions_of(spec: str, n: int) -> np.ndarray:
    """The positions of an n-token piece that `spec` keeps: all, last, or a slice "A:B"
    (Python's, negatives counted from the end: "-4:" is the last four)."""
    if spec == "all":
        return np.arange(n)
    if spec == "last":
        return np.array([n - 1])
    start, stop = parse_slice(spec)
    return np.arange(n)[slice(start, stop)]


def parse_slice(spec: str) -> Tuple[Optional[int], Optional[int]]:
    parts = spec.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        return tuple(int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise ValueError("positions %r: give all, last, or a range A:B (e.g. 0:16, -4:)" % spec) from None


def hook_layout(name: str) -> str:
    """The hook's axes (docs/hooks.md), or ValueError when its values cannot be rows of a
    fixed width: a name that is no hook, one without a token axis, one whose width varies
    with the document (the key axis S of attn.scores / attn.probs / masks / kv)."""
    axes = hook_axes(name)
    if not axes:
        raise ValueError("unknown hook %r (docs/hooks.md lists them)" % name)
    parts = axes.split(",")
    if "T" not in parts or parts[0] != "B" or name.startswith("tokens."):
        raise ValueError("hook %r (axes %s) has no value per token to collect" % (name, axes))
    if "S" in parts:
        raise ValueError("hook %r (axes %s): its width varies with the document's length (S); "
                         "collect attn.z or a residual hook instead" % (name, axes))
    return axes


def as_rows(values: np.ndarray, axes: str) -> np.ndarray:
    """[B, ..., T, ...] -> [B, T, width]: the token axis second, the rest flattened."""
    t = axes.split(",").index("T")
    moved = np.moveaxis(values, t, 1)     # [B, T, ...]
    return moved.reshape(moved.shape[0], moved.shape[1], -1)


def shard_worker(model: str, options: dict) -> "ShardWorker":
    """A ShardWorker in a worker process or a Ray actor (collection_pool.py, collection_ray.py)."""
    return ShardWorker(model, Options(**options))


class ShardWorker:
    def __init__(self, model, options: Options):
        """model: a path (loaded here, as the options say) or an lmscope.Model already loaded."""
        from . import Model
        self.options = options
        self.model = model if isinstance(model, Model) else \
            Model(model, backend=options.backend, cpu_activations=options.cpu_activations)
        self.layouts = {name: hook_layout(name) for name in options.hooks}
        self.globs = ",".join(options.hooks)

    # ---- documents -> pieces of token ids ------------------------------------------------------
    def token_ids(self, content) -> List[int]:
        """A document's ids: token ids as given, or its text tokenized as the tools do (the
        tokenizer's BOS rule; with chat, the template's text without a second BOS)."""
        if not isinstance(content, str):
            return list(content)
        if self.options.chat:
            try:
                text = self.model.apply_chat_template([{"role": "user", "content": content}], format=self.options.chat)
            except RuntimeError as e:          # no template beside the model, an unknown format
                raise ValueError("chat: %s" % e) from None
            return list(self.model._engine.encode(text, False)[0])
        return list(self.model._engine.encode(content, True)[0])

    def pieces(self, doc: int, content) -> Tuple[List[Tuple[int, int, List[int]]], int]:
        """[(doc, chunk, ids)] of one document under the long-document policy, and how many of
        its tokens were dropped (truncate). ValueError (one line) under refuse."""
        ids, limit = self.token_ids(content), self.options.max_tokens
        if not ids:
            raise ValueError("document %d encodes to no tokens" % doc)
        if len(ids) <= limit:
            return [(doc, 0, ids)], 0
        if self.options.long == "truncate":
            return [(doc, 0, ids[:limit])], len(ids) - limit
        if self.options.long == "split":
            return [(doc, c, ids[s:s + limit]) for c, s in enumerate(range(0, len(ids), limit))], 0
        raise ValueError("document %d (corpus line %d) has %d tokens, more than %d: pass --split or --truncate"
                         % (doc, doc + 1, len(ids), limit))

    # ---- one shard ------------------------------------------------------------------------------
    def collect(self, index: int, docs, on_batch=None):
        """Runs the shard's documents [(doc, content)]: (the shard's bytes, its manifest entry
        with "documents" and "tokens" forwarded). The caller writes it (shards.write_shard),
        so that a worker on another machine needs no access to the output directory.
        on_batch(tokens) is called after each forward (the in-process progress bar)."""
        pieces = [p for doc, content in docs for p in self.pieces(doc, content)[0]]
        # Forwards of pieces of similar length (less padding); the rows go back in piece order.
        order = sorted(range(len(pieces)), key=lambda i: (len(pieces[i][2]), i))
        per_piece: Dict[int, Dict[str, np.ndarray]] = {}
        b = self.options.batch_size
        for start in range(0, len(order), b):
            batch = order[start:start + b]
            per_piece.update(self._forward([pieces[i] for i in batch], batch))
            if on_batch:
                on_batch(sum(len(pieces[i][2]) for i in batch))
        rows = {k: np.concatenate([per_piece[i][k] for i in range(len(pieces))]) for k in shards.ROW_FIELDS}
        hooks = {h: np.concatenate([per_piece[i][h] for i in range(len(pieces))]) for h in self.options.hooks}
        data, entry = shards.build_shard(index, rows, hooks, self.options.dtype)
        entry["documents"] = len(docs)
        entry["tokens"] = sum(len(p[2]) for p in pieces)
        return data, entry

    def run(self, index: int, docs):
        """The pools' name for a shard's work (collection_pool.py, collection_ray.py)."""
        return self.collect(index, docs)

    def _forward(self, batch, keys) -> Dict[int, Dict[str, np.ndarray]]:
        """One left-padded forward of the batch's pieces; per piece its rows: the fields and
        each hook's [rows, width] at the kept positions (padding is never a row)."""
        r = self.model._run([ids for _, _, ids in batch], names=self.globs, keep_steps=1, max_new_tokens=1,
                            padding_side="left")
        step = r["steps"][0]
        missing = [h for h in self.options.hooks if h not in step]
        if missing:
            raise ValueError("the model offers no %s in this run (docs/hooks.md)" % ", ".join(missing))
        flat = {h: as_rows(step[h], self.layouts[h]) for h in self.options.hooks}   # [B, T, width]
        T = max(len(ids) for _, _, ids in batch)
        out = {}
        for row, (key, (doc, chunk, ids)) in enumerate(zip(keys, batch)):
            n = len(ids)
            keep = positions_of(self.options.positions, n)     # positions within the piece
            at = T - n + keep                                  # where they sit after left padding
            piece = {"doc": np.full(len(keep), doc, np.int64), "chunk": np.full(len(keep), chunk, np.int32),
                     "position": keep.astype(np.int32), "token": np.asarray(ids, np.int32)[keep]}
            for h in self.options.hooks:
                piece[h] = np.ascontiguousarray(flat[h][row, at], dtype=np.float32)   # [rows, width]
            out[key] = piece
        return out
