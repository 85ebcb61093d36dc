"""lmscope.collect and lmscope-collect: hook activations over a corpus, into a directory of
HDF5 shards and a manifest (docs/collect.md).

    lmscope.collect("models/SmolLM2-135M-Instruct.Q4_1.gguf", "corpus.txt", "acts/",
                    hooks=["layers.15.resid_post"], workers=2)

The corpus is read once first (corpus.py: every line checked, every document tokenized, the
totals counted), so bad input is refused before anything is written. Shard i holds documents
[i * docs_per_shard, (i + 1) * docs_per_shard) whatever the number of workers; a worker
(collect_worker.ShardWorker, one Model) runs a shard and writes it atomically, then the
manifest is rewritten with it. The same command again skips the shards the manifest lists;
a different model, corpus or option is refused in one line. A lock file keeps a second
collection out of the directory while one runs.
"""
import argparse
import contextlib
import json
import os
import sys
import time
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from . import corpus as _corpus
from . import names as _names
from . import shards
from .run_directory import RunDirectory, model_sha256, remove_partials
from .collect_worker import LONG_POLICIES, Options, ShardWorker, hook_layout, parse_slice, shard_worker
from .collection_pool import WorkerDied, run_local

__all__ = ["collect", "main"]

LOCK = "collection.lock"
DIRECTORY = RunDirectory("collection", shards.MANIFEST, LOCK)


def collect(model: str, corpus: str, out: str, hooks: Union[str, Sequence[str]], positions: str = "all",
            format: str = "auto", field: str = "text", chat: Union[bool, str] = False, long: str = "refuse",
            max_tokens: Optional[int] = None, docs_per_shard: int = 256, batch_size: int = 8, dtype: str = "f32",
            workers: int = 1, threads: Optional[int] = None, backend: str = "cpu", cpu_activations: str = "f32",
            progress: bool = True, ray: Optional[str] = None) -> dict:
    """Collects `hooks` at `positions` over `corpus` into the directory `out`; returns the
    manifest. ValueError (one line) for bad input, a directory that is not this collection,
    or one that another collection is writing. `threads`: OpenMP threads of each worker
    process (default: the cores shared out among the workers; on Ray, 1). `ray`: "auto" or
    a cluster's address: the shards run on `workers` Ray actors (collection_ray.py) instead
    of local processes. `chat`: True (the tokenizer's own template), "chatml" or
    "deepseek-r1" puts each document in a user message of that chat format."""
    kind = _corpus.kind_of(corpus, format)
    if chat and kind == "ids":
        raise ValueError("chat: a corpus of token ids has no text to put in the chat template")
    _check_choices(positions, long, dtype, docs_per_shard, batch_size, workers)
    out = os.path.abspath(out)
    DIRECTORY.refuse_foreign(out)

    # The model once in this process: its identity, the hook names, the tokenizer for the scan.
    from . import Model
    lead = Model(model, backend=backend, cpu_activations=cpu_activations)
    # A run is a generate() of one token: the longest piece leaves that token a position.
    positions_left = int(lead.cfg.get("max_position_embeddings", 0) or 1 << 30) - 1
    limit = max_tokens or positions_left
    if not 1 <= limit <= positions_left:
        raise ValueError("max_tokens %d: give 1..%d (the model's positions, less the one a run generates)"
                         % (limit, positions_left))
    chat = "template" if chat is True else (chat or "")
    options = Options(hooks=_expand_hooks(hooks, lead.info["num_layers"]), positions=positions, chat=chat, long=long,
                      max_tokens=limit, docs_per_shard=docs_per_shard, batch_size=batch_size, dtype=dtype,
                      backend=backend, cpu_activations=cpu_activations)
    # On Ray the actors start now (a worker process each, its model loaded) while this process
    # scans the corpus, so that they are ready when the first shard is; not for a collection
    # already complete, which has nothing to run.
    from .collection_ray import RayPool
    start_pool = lambda: RayPool(ray, shard_worker, (model, options.as_dict()), workers, threads or 1)
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(start_pool()) if ray is not None and not _complete_before(out) else None
        summary = _corpus.scan(corpus, kind, field, lead.info["vocab_size"])
        in_process = ShardWorker(lead, options)        # tokenizes for the scan; runs the shards when alone
        counts = _count_pieces(in_process, _corpus.documents(corpus, kind, field))
        widths = _hook_widths(lead, options.hooks)
        identity = {
            "model": {"sha256": model_sha256(model), "num_layers": lead.info["num_layers"],
                      "hidden_size": lead.info["hidden_size"]},
            "corpus": {"sha256": summary.sha256, "kind": summary.kind, "field": summary.field},
            "options": options.as_dict(),
        }
        del lead
        if ray is not None or workers > 1:
            del in_process                # the workers load their own

        os.makedirs(out, exist_ok=True)
        with DIRECTORY.locked(out):
            DIRECTORY.refuse_foreign(out)     # again, now that no other collection can be writing it
            manifest = _start_or_resume(out, identity, model, summary, counts, widths)
            todo = [i for i in range(manifest["num_shards"]) if not _finished(out, manifest, i)]
            bar = _Progress(counts["tokens"], manifest["num_shards"], progress)
            bar.skip(sum(e["tokens"] for e in manifest["shards"]), len(manifest["shards"]))
            tasks = _shard_tasks(corpus, kind, field, docs_per_shard, set(todo))
            record = lambda data, entry: _record(out, manifest, data, entry, bar)
            try:
                if not todo:
                    pass                       # every shard is done: nothing to load
                elif ray is not None:
                    pool = pool or stack.enter_context(start_pool())
                    retried = pool.run(tasks, record)
                    manifest["shards_retried"] = manifest.get("shards_retried", 0) + retried   # on another worker
                elif workers == 1:
                    for index, docs in tasks:
                        _record(out, manifest, *in_process.collect(index, docs, on_batch=bar.advance), bar, batched=True)
                else:
                    run_local(shard_worker, (model, options.as_dict()), tasks, workers, threads, record)
            except WorkerDied as e:
                raise ValueError("%s; the finished shards are kept: run the same command again to resume" % e) from None
            manifest["complete"] = len(manifest["shards"]) == manifest["num_shards"]
            shards.write_manifest(os.path.join(out, shards.MANIFEST), manifest)
            bar.finish()
        return manifest


# ---- the directory ------------------------------------------------------------------------------
def _start_or_resume(out, identity, model, summary, counts, widths) -> dict:
    path = os.path.join(out, shards.MANIFEST)
    if os.path.exists(path):
        manifest = shards.read_manifest(path)
        DIRECTORY.check_same(out, manifest, identity, "model, corpus and options")
        remove_partials(out, ("shard-", shards.MANIFEST))
        return manifest
    num_shards = (summary.documents + identity["options"]["docs_per_shard"] - 1) // identity["options"]["docs_per_shard"]
    manifest = {
        "format": shards.FORMAT, "version": 1, "complete": False,
        "model": dict(identity["model"], path=os.path.abspath(model)),
        "corpus": dict(identity["corpus"], path=summary.path, lines=summary.lines, documents=summary.documents,
                       blank_lines=summary.blank_lines),
        "options": identity["options"],
        "hooks": {name: {"width": widths[name], "axes": hook_layout(name)} for name in identity["options"]["hooks"]},
        "long_documents": {"policy": identity["options"]["long"], "longer": counts["long"],
                           "pieces_added_by_split": counts["pieces"] - summary.documents,
                           "tokens_dropped_by_truncate": counts["dropped"]},
        "tokens": counts["tokens"], "num_shards": num_shards, "shards": [],
    }
    shards.write_manifest(path, manifest)
    return manifest


def _complete_before(out) -> bool:
    """A manifest in `out` that says the collection is complete (an unreadable one: no)."""
    try:
        with open(os.path.join(out, shards.MANIFEST), "rb") as f:
            return json.loads(f.read().decode("utf-8")).get("complete") is True
    except (OSError, ValueError, AttributeError):
        return False


def _finished(out, manifest, index) -> bool:
    """A shard the manifest lists whose file is there with the listed size (a resume checks
    sizes; lmscope.ActivationDataset checks every sha256 when it opens the collection)."""
    for e in manifest["shards"]:
        if e["index"] == index:
            path = os.path.join(out, e["file"])
            return os.path.isfile(path) and os.path.getsize(path) == e["bytes"]
    return False


def _record(out, manifest, data, entry, bar, batched=False) -> None:
    """The shard's file, then the manifest that lists it: a kill between the two leaves a
    whole shard the manifest does not list, which a rerun computes again."""
    shards.write_shard(out, data, entry)
    manifest["shards"] = sorted([e for e in manifest["shards"] if e["index"] != entry["index"]] + [entry],
                                key=lambda e: e["index"])
    shards.write_manifest(os.path.join(out, shards.MANIFEST), manifest)
    bar.shard_done(0 if batched else entry["tokens"])


# ---- the work -----------------------------------------------------------------------------------
def _shard_tasks(path, kind, field, docs_per_shard, wanted) -> Iterator[Tuple[int, List[Tuple[int, object]]]]:
    """(shard index, [(doc, content)]) for the wanted shards, streamed: one shard's documents
    in memory at a time."""
    group, index = [], 0
    for d in _corpus.documents(path, kind, field):
        group.append((d.doc, d.content))
        if len(group) == docs_per_shard:
            if index in wanted:
                yield index, group
            group, index = [], index + 1
    if group and index in wanted:
        yield index, group


def _count_pieces(worker: ShardWorker, docs) -> dict:
    """Tokens, pieces and long documents of the whole corpus under the policy (a refused long
    document raises here, before anything is written)."""
    counts = {"tokens": 0, "pieces": 0, "long": 0, "dropped": 0}
    for d in docs:
        pieces, dropped = worker.pieces(d.doc, d.content)
        counts["tokens"] += sum(len(ids) for _, _, ids in pieces)
        counts["pieces"] += len(pieces)
        counts["long"] += len(pieces) > 1 or dropped > 0
        counts["dropped"] += dropped
    return counts


# ---- checks -------------------------------------------------------------------------------------
def _check_choices(positions, long, dtype, docs_per_shard, batch_size, workers) -> None:
    if positions not in ("all", "last"):
        parse_slice(positions)
    if long not in LONG_POLICIES:
        raise ValueError("long documents: %r is not one of %s" % (long, ", ".join(LONG_POLICIES)))
    if dtype not in shards.DTYPES:
        raise ValueError("dtype %r is not one of %s" % (dtype, ", ".join(shards.DTYPES)))
    for name, v in (("docs_per_shard", docs_per_shard), ("batch_size", batch_size), ("workers", workers)):
        if int(v) < 1:
            raise ValueError("%s must be at least 1, got %s" % (name, v))


def _expand_hooks(hooks, num_layers) -> List[str]:
    """Hook names (lmscope's, TransformerLens's, or a layers.*.X glob) -> lmscope names, each
    checked to be a hook with a row per token on a layer the model has."""
    items = [h.strip() for h in hooks.split(",")] if isinstance(hooks, str) else list(hooks)
    out = []
    for item in filter(None, items):
        name = _names.resolve(item)[0] if isinstance(item, str) else _names.resolve(tuple(item))[0]
        expanded = ["layers.%d.%s" % (l, name[len("layers.*."):]) for l in range(num_layers)] \
            if name.startswith("layers.*.") else [name]
        for n in expanded:
            hook_layout(n)
            layer = _names.layer_of(n)
            if layer is not None and not 0 <= layer < num_layers:
                raise ValueError("hook %r: layer %d is outside 0..%d" % (n, layer, num_layers - 1))
            if n not in out:
                out.append(n)
    if not out:
        raise ValueError("no hooks to collect (e.g. --hooks layers.15.resid_post)")
    return out


def _hook_widths(model, hooks) -> dict:
    """Each hook's row width, from a one-token forward (which also shows the hook is offered)."""
    step = model._run([[0]], names=",".join(hooks), keep_steps=1, max_new_tokens=1)["steps"][0]
    from .collect_worker import as_rows
    missing = [h for h in hooks if h not in step]
    if missing:
        raise ValueError("the model offers no %s (docs/hooks.md)" % ", ".join(missing))
    return {h: int(as_rows(step[h], hook_layout(h)).shape[2]) for h in hooks}


# ---- progress -----------------------------------------------------------------------------------
class _Progress:
    """One line on stderr: shards, tokens, tokens/s and the time left. Rewritten in place on
    a terminal; otherwise a line per finished shard."""

    def __init__(self, total_tokens, total_shards, enabled):
        self.total, self.shards_total, self.enabled = total_tokens, total_shards, enabled
        self.tty = enabled and sys.stderr.isatty()
        self.tokens = self.shards = self.skipped = 0
        self.start = time.monotonic()
        self.last = 0.0

    def skip(self, tokens, shards_done):
        self.tokens = self.skipped = tokens
        self.shards = shards_done

    def advance(self, tokens):
        self.tokens += tokens
        if self.tty and time.monotonic() - self.last > 0.2:
            self._show("\r")

    def shard_done(self, tokens):
        self.tokens += tokens
        self.shards += 1
        self._show("\r" if self.tty else "")

    def finish(self):
        """The final line: in place on a terminal; elsewhere each shard has had its line, so
        only a run that found every shard done says so."""
        if self.tty:
            self._show("\r")
            sys.stderr.write("\n")
        elif self.enabled and self.tokens == self.skipped:
            self._show("")

    def _show(self, lead):
        if not self.enabled:
            return
        self.last = time.monotonic()
        elapsed = max(self.last - self.start, 1e-9)
        rate = (self.tokens - self.skipped) / elapsed
        left = (self.total - self.tokens) / rate if rate > 0 else float("inf")
        eta = "?" if left == float("inf") else "%dm%02ds" % divmod(int(left + 0.5), 60)
        line = "collect: %d/%d shards  %s/%s tokens  %s tok/s  ETA %s" % (
            self.shards, self.shards_total, format(self.tokens, ","), format(self.total, ","),
            format(int(rate), ","), eta)
        sys.stderr.write(lead + line + ("" if self.tty else "\n"))
        sys.stderr.flush()


# ---- the command line -----------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="lmscope-collect", description=(
        "Hook activations over a corpus into HDF5 shards and a manifest (docs/collect.md)."))
    p.add_argument("--model", required=True, help="a .gguf file or a Hugging Face directory")
    p.add_argument("--corpus", required=True, help="text lines, JSONL, or token ids (one document per line)")
    p.add_argument("--out", required=True, help="the collection's directory (new, empty, or this collection's)")
    p.add_argument("--hooks", required=True, help="hook names, comma-separated (layers.*.X expands)")
    p.add_argument("--positions", default="all", help="all (default), last, or a range A:B of each piece")
    p.add_argument("--format", default="auto", choices=("auto",) + _corpus.KINDS)
    p.add_argument("--field", default="text", help="the JSONL field holding the text (default text)")
    p.add_argument("--chat", nargs="?", const="template", default="", metavar="FORMAT",
                   help="each document as a user message in the model's chat template (or FORMAT: chatml, deepseek-r1)")
    long = p.add_mutually_exclusive_group()
    long.add_argument("--split", action="store_true", help="split a document longer than --max-tokens")
    long.add_argument("--truncate", action="store_true", help="keep the first --max-tokens of a longer one")
    p.add_argument("--max-tokens", type=int, default=None, help="longest piece (default: the model's positions)")
    p.add_argument("--docs-per-shard", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--dtype", default="f32", choices=shards.DTYPES, help="how values are stored")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (each one model)")
    p.add_argument("--threads", type=int, default=None, help="OpenMP threads per worker process")
    p.add_argument("--ray", default=None, metavar="auto|ADDRESS",
                   help="run the workers as Ray actors on that cluster (auto: RAY_ADDRESS or the local one)")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--cpu-activations", default="f32", choices=("f32", "q8"))
    p.add_argument("--quiet", action="store_true", help="no progress line")
    a = p.parse_args(argv)
    try:
        m = collect(a.model, a.corpus, a.out, a.hooks, positions=a.positions, format=a.format, field=a.field,
                    chat=a.chat, long="split" if a.split else "truncate" if a.truncate else "refuse",
                    max_tokens=a.max_tokens, docs_per_shard=a.docs_per_shard, batch_size=a.batch_size,
                    dtype=a.dtype, workers=a.workers, threads=a.threads, backend=a.backend,
                    cpu_activations=a.cpu_activations, progress=not a.quiet, ray=a.ray)
    except (ValueError, OSError, KeyError) as e:
        sys.stderr.write("lmscope-collect: %s\n" % (e.args[0] if isinstance(e, KeyError) and e.args else e))
        return 1
    print("%s: %d shards, %s rows of %s" % (a.out, len(m["shards"]), format(sum(e["rows"] for e in m["shards"]), ","),
                                             ", ".join(m["options"]["hooks"])))
    return 0
