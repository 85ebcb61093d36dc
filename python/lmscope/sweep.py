"""Sweeps over a dataset on the collection's workers: `lmscope-patch --pairs` and
`lmscope-score --data` spread over local worker processes or Ray actors, on the same sharding
as lmscope.collect (docs/collect.md, "Sweeps on workers").

    lmscope.sweep_pairs("models/SmolLM2-135M-Instruct.Q4_1.gguf", "ioi.jsonl", sites="resid_pre", workers=2)
    lmscope.sweep_corpus("models/SmolLM2-135M-Instruct.Q4_1.gguf", "corpus.txt",
                         intervene=["layers.3.attn_out=zero"], ray="auto")

The work itself is the engine's, through its tools (one place for each computation); this
file only cuts the dataset into shards, hands them to the workers and merges what comes back:

  pairs   shard i is pairs [i*k, (i+1)*k) of the file (blank lines are no pairs). Its worker
          runs `lmscope-patch --pairs FILE --only-pairs A-B --json`, which reads and checks
          the whole file, then sweeps those pairs, each with exactly the forwards its single
          run would do. The merge takes every pair's cells in file order and computes what
          lmscope-patch computes over one file (lib/experiments/patching_pairs.cpp: the sum
          in file order over the count, the population standard deviation, min, max).
  corpus  shard i is documents [i*k, (i+1)*k) of the corpus (blank lines are no documents).
          Its worker writes their lines out as a corpus of their own, runs `lmscope-score
          --data` on it with --per-doc, and returns each document's sums; the merge adds them
          in corpus order, as lib/generate/score_corpus.cpp does.

A shard's result depends only on the shard (a corpus's documents are batched within their
shard), and the merge goes in shard order: 1 worker, N workers and Ray give the same bits.
"""
import argparse
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Sequence, Union

from . import corpus as _corpus
from ._core import interventions_line, write_file_atomic
from .collection_pool import WorkerDied, die_with_parent, run_local
from .sweep_directory import RESULT, SweepDirectory, shard_results

__all__ = ["sweep_pairs", "sweep_corpus", "main"]


# ---- the worker: one tool run per shard ----------------------------------------------------------
def tool_worker(kind: str, tool: str, argv: List[str]) -> "ToolWorker":
    """A ToolWorker in a worker process or a Ray actor (collection_pool.py, collection_ray.py)."""
    return ToolWorker(kind, tool, argv)


class ToolWorker:
    """Runs the engine's tool on one shard at a time, in a temporary folder of its own (so a
    worker on another machine needs only the model, the tool and, for pairs, the pairs file)."""

    def __init__(self, kind: str, tool: str, argv: List[str]):
        self.kind, self.tool, self.argv = kind, tool, list(argv)

    def run(self, index: int, payload):
        with tempfile.TemporaryDirectory(prefix="lmscope-sweep-") as tmp:
            if self.kind == "pairs":
                return self._pairs(index, payload, tmp), {"index": index}
            return self._corpus(index, payload, tmp), {"index": index}

    def _pairs(self, index, span, tmp) -> dict:
        """span = (first, end): the sweep of pairs [first, end) of the file."""
        out = os.path.join(tmp, "pairs.json")
        self._call(self.argv + ["--only-pairs", "%d-%d" % (span[0], span[1] - 1), "--json", out, "-q"])
        with open(out, encoding="utf-8") as f:
            return json.load(f)

    def _corpus(self, index, payload, tmp) -> dict:
        """payload = (the corpus's path, its kind, [(line index, line bytes)]): those documents
        scored as a corpus of their own; each document's numbers under its line in the corpus."""
        source, kind, lines = payload
        part = os.path.join(tmp, "shard-%05d.%s" % (index, kind))
        per_doc = os.path.join(tmp, "docs.jsonl")
        with open(part, "wb") as f:
            f.write(b"".join(raw + b"\n" for _, raw in lines))
        # The tool names a line of the part; the user's corpus is where it came from.
        where = lambda msg: re.sub(re.escape(part) + r":(\d+)",
                                   lambda m: "%s:%d" % (source, lines[int(m.group(1)) - 1][0] + 1), msg)
        try:
            summary = json.loads(self._call(self.argv + ["--data", part, "--format", kind, "--per-doc", per_doc,
                                                         "--json", "-q"], where))
        except ValueError as e:
            if str(e).endswith("no document has two tokens: nothing to predict"):
                return {"docs": [], "one_token_documents": len(lines), "interventions": None}
            raise
        with open(per_doc, encoding="utf-8") as f:
            docs = [json.loads(line) for line in f]
        for d in docs:
            d["doc"] = lines[d["doc"]][0]
        return {"docs": docs, "one_token_documents": summary["one_token_documents"],
                "interventions": summary.get("interventions")}

    def _call(self, argv, where=lambda msg: msg) -> str:
        """The tool's stdout; its error line (the last line of stderr) as a ValueError."""
        r = subprocess.run([self.tool] + argv, capture_output=True, text=True, preexec_fn=die_with_parent)
        if r.returncode != 0:
            lines = r.stderr.strip().splitlines()
            raise ValueError(where(lines[-1] if lines else "%s ended with status %d"
                                   % (os.path.basename(self.tool), r.returncode)))
        return r.stdout


def find_tool(name: str, tools: Optional[str] = None) -> str:
    """The engine's tool `name`: in `tools` when given, else beside the module as built
    (build/python/lmscope -> build/), else on PATH."""
    package_build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for folder in ([tools] if tools else [package_build]):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = None if tools else shutil.which(name)
    if not found:
        raise ValueError("%s not found %s (build it: scripts/build.sh, or give its folder: --tools DIR)"
                         % (name, "in '%s'" % tools if tools else "beside the module or on PATH"))
    return os.path.abspath(found)


# ---- running the shards --------------------------------------------------------------------------
def _run(kind, tool, argv, tasks, num_shards, workers, threads, ray, progress, label, store):
    """Runs the shards of `tasks` that `store` (sweep_directory.py: in memory, or a directory
    of a sweep being resumed) has not finished, in this process (one worker, no Ray), on
    local worker processes, or on Ray actors; each result goes to the store as it comes.
    Afterwards store.results holds every shard's result and store.retried counts the shards
    that went to another Ray actor because theirs died."""
    done = store.finished()
    bar = _Progress(label, num_shards, progress, len(done))
    todo = ((index, payload) for index, payload in tasks if index not in done)

    def record(result, entry):
        store.record(result, entry)
        bar.shard_done()

    try:
        if len(done) == num_shards:
            pass                          # every shard is done: nothing to start
        elif ray is not None:
            from .collection_ray import run_on_ray
            store.retried += run_on_ray(ray, tool_worker, (kind, tool, argv), todo, workers, threads or 1, record)
        elif workers == 1:
            worker = ToolWorker(kind, tool, argv)
            for index, payload in todo:
                record(*worker.run(index, payload))
        else:
            run_local(tool_worker, (kind, tool, argv), todo, workers, threads, record)
    except WorkerDied as e:
        kept = "the finished shards are kept: run the same command again to resume" \
            if isinstance(store, SweepDirectory) else "nothing was merged: run the same command again"
        raise ValueError("%s; %s" % (e, kept)) from None


# ---- pairs ---------------------------------------------------------------------------------------
def sweep_pairs(model: str, pairs: str, sites: str = "resid_pre,attn_out,ffn_out,attn.z", metric: Optional[str] = None,
                rows_per_forward: int = 32, chat: Union[bool, str] = False, pairs_per_shard: int = 4, workers: int = 1,
                threads: Optional[int] = None, ray: Optional[str] = None, json_out: Optional[str] = None,
                tools: Optional[str] = None, tool_args: Sequence[str] = (), progress: bool = True,
                out: Optional[str] = None) -> dict:
    """lmscope-patch --pairs over `workers` local processes or Ray actors (`ray`: "auto" or an
    address), `pairs_per_shard` pairs a shard. Returns (and with json_out writes, atomically)
    lmscope-patch --pairs --json's object over the whole file: per pair its cells
    ("normalized"), per site the mean, sd, min and max ([layer][column]). `out`: a directory
    that keeps each finished shard (sweep_directory.py), so that the same call again resumes.
    ValueError (one line) for bad input: the tool's own, naming the file and line."""
    _check_counts(pairs_per_shard=pairs_per_shard, workers=workers, rows_per_forward=rows_per_forward)
    pairs = os.path.abspath(pairs)
    count = _count_pairs(pairs)
    model = _abs_if_path(model)
    argv = ["--model", model, "--pairs", pairs, "--sites", sites, "--rows-per-forward",
            str(rows_per_forward)] + (["--metric", metric] if metric else []) + _chat_args(chat) + list(tool_args)
    tool = find_tool("lmscope-patch", tools)
    if json_out:
        _check_output(json_out)
    spans = [(s, min(s + pairs_per_shard, count)) for s in range(0, count, pairs_per_shard)]
    options = {"sites": sites, "metric": metric, "rows_per_forward": rows_per_forward, "chat": _chat_args(chat),
               "pairs_per_shard": pairs_per_shard, "tool_args": list(tool_args)}
    with shard_results(out, "patch", model, pairs, options, len(spans)) as store:
        _run("pairs", tool, argv, list(enumerate(spans)), len(spans), workers, threads, ray, progress, "patch", store)
        results = store.results
        merged = [p for i in range(len(spans)) for p in results[i]["pairs"]]
        columns = {site: {"columns": g["columns"], "column_index": g["column_index"]}
                   for site, g in results[0]["sites"].items()}
        result = {"pairs_file": pairs, "num_pairs": len(merged), "pairs": merged,
                  "sites": {site: dict(c, **pair_statistics([p["normalized"][site] for p in merged]))
                            for site, c in columns.items()},
                  "pairs_per_shard": pairs_per_shard, "num_shards": len(spans), "shards_retried": store.retried}
        _write_result(store, result, json_out)
    return result


def _write_result(store, result: dict, json_out) -> None:
    """The merged result: into the sweep's directory (then complete), and to json_out."""
    text = json.dumps(result, indent=1) + "\n"
    store.merged(text)
    if json_out:
        write_file_atomic(os.fspath(json_out), text.encode())


def pair_statistics(grids) -> dict:
    """Per cell over the pairs' grids ([layer][column] each, in file order): mean, sd, min,
    max, computed as lib/experiments/patching_pairs.cpp computes them (the sum in file order
    over the count; the population standard deviation), so that the doubles are the same."""
    n = float(len(grids))
    stats = {k: [] for k in ("mean", "sd", "min", "max")}
    for layer in range(len(grids[0])):
        row = {k: [] for k in stats}
        for column in range(len(grids[0][layer])):
            values = [_number(g[layer][column]) for g in grids]
            total = 0.0
            for v in values:
                total += v
            mean = total / n
            squares = 0.0
            for v in values:
                squares += (v - mean) * (v - mean)
            for k, v in (("mean", mean), ("sd", math.sqrt(squares / n)), ("min", min(values)), ("max", max(values))):
                row[k].append(_json_number(v))
        for k in stats:
            stats[k].append(row[k])
    return stats


def _count_pairs(path) -> int:
    """Pairs in the file: its lines but blank ones (spaces and tabs only: the tool's rule)."""
    try:
        with open(path, "rb") as f:
            count = sum(1 for line in f if line.rstrip(b"\r\n").strip(b" \t"))
    except OSError as e:
        raise ValueError("cannot read the pairs file '%s': %s" % (path, e.strerror or e)) from None
    if count == 0:
        raise ValueError("%s: no pairs (the file is empty or blank)" % path)
    return count


# ---- a corpus --------------------------------------------------------------------------------------
def sweep_corpus(model: str, corpus: str, format: str = "auto", field: str = "text", batch: int = 8,
                 intervene: Sequence[str] = (), chat: Union[bool, str] = False, docs_per_shard: int = 256,
                 workers: int = 1, threads: Optional[int] = None, ray: Optional[str] = None,
                 per_doc: Optional[str] = None, json_out: Optional[str] = None, tools: Optional[str] = None,
                 tool_args: Sequence[str] = (), progress: bool = True, out: Optional[str] = None) -> dict:
    """lmscope-score --data over `workers` local processes or Ray actors, `docs_per_shard`
    documents a shard (each shard's documents `batch` at a time). Returns (and with json_out
    writes) lmscope-score --data --json's object over the whole corpus; per_doc: each
    document's line, as --per-doc writes it. `out`: a directory that keeps each finished
    shard (sweep_directory.py), so that the same call again resumes. The corpus is read and
    checked first (one line naming FILE:LINE, nothing run)."""
    _check_counts(docs_per_shard=docs_per_shard, workers=workers, batch=batch)
    corpus = os.path.abspath(corpus)
    kind = _corpus.kind_of(corpus, format)
    summary = _corpus.scan(corpus, kind, field)
    model = _abs_if_path(model)
    argv = ["--model", model, "--field", field, "--batch", str(batch)] + \
        [a for spec in intervene for a in ("--intervene", spec)] + _chat_args(chat) + list(tool_args)
    tool = find_tool("lmscope-score", tools)
    for path in filter(None, (json_out, per_doc)):
        _check_output(path)
    num_shards = (summary.documents + docs_per_shard - 1) // docs_per_shard
    options = {"format": kind, "field": field, "batch": batch, "intervene": list(intervene), "chat": _chat_args(chat),
               "docs_per_shard": docs_per_shard, "tool_args": list(tool_args)}
    with shard_results(out, "score", model, corpus, options, num_shards) as store:
        _run("corpus", tool, argv, _corpus_shards(corpus, kind, field, docs_per_shard), num_shards, workers, threads,
             ray, progress, "score", store)
        result = _merge_corpus(store.results, num_shards, corpus, summary, intervene, docs_per_shard, store.retried,
                               per_doc)
        _write_result(store, result, json_out)
    return result


def _merge_corpus(results, num_shards, corpus, summary, intervene, docs_per_shard, retried, per_doc) -> dict:
    """lmscope-score --data --json's object from the shards' documents, summed in corpus order."""
    docs = [d for i in range(num_shards) for d in results[i]["docs"]]
    if not docs:
        raise ValueError("%s: no document has two tokens: nothing to predict" % corpus)
    # Summed in corpus order, in double: lib/generate/score_corpus.cpp's sum.
    nll = nll_edited = 0.0
    predicted = 0
    for d in docs:
        nll += d["nll_sum"]
        nll_edited += d.get("nll_sum_intervened", 0.0)
        predicted += d["predicted"]
    out = {"corpus": corpus, "documents": len(docs), "blank_lines": summary.blank_lines,
           "one_token_documents": sum(results[i]["one_token_documents"] for i in range(num_shards)),
           "predicted": predicted, "loss": nll / predicted, "perplexity": math.exp(nll / predicted)}
    if intervene:
        out["interventions"] = next(r["interventions"] for r in results.values() if r["interventions"] is not None)
        out["loss_intervened"] = nll_edited / predicted
        out["perplexity_intervened"] = math.exp(nll_edited / predicted)
        out["difference"] = out["loss_intervened"] - out["loss"]
    out.update(docs_per_shard=docs_per_shard, num_shards=num_shards, shards_retried=retried)
    if per_doc:
        write_file_atomic(os.fspath(per_doc), "".join(json.dumps(d) + "\n" for d in docs).encode())
    return out


def _corpus_shards(path, kind, field, docs_per_shard):
    """(shard index, (path, kind, [(line index, line bytes)])), one shard's lines in memory at a time."""
    group, index = [], 0
    for line in _corpus.document_lines(path, kind, field):
        group.append(line)
        if len(group) == docs_per_shard:
            yield index, (path, kind, group)
            group, index = [], index + 1
    if group:
        yield index, (path, kind, group)


# ---- small things --------------------------------------------------------------------------------
def _chat_args(chat) -> List[str]:
    if not chat:
        return []
    return ["--chat"] + ([] if chat is True or chat == "template" else ["--chat-format", chat])


def _abs_if_path(model: str) -> str:
    return os.path.abspath(model) if os.path.exists(model) else model


def _check_counts(**values) -> None:
    for name, v in values.items():
        if int(v) < 1:
            raise ValueError("%s must be at least 1, got %s" % (name, v))


def _check_output(path) -> None:
    """An output in a folder that exists, before minutes of work (written atomically at the end)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError("cannot write '%s': no folder '%s'" % (path, folder))


def _number(v) -> float:
    """A JSON number of the tools (json_num, lib/runs/run.h: "inf" / "-inf" for an infinity,
    null for NaN)."""
    return float("nan") if v is None else float(v)


def _json_number(v: float):
    """A number as the tools' json_num writes it: "inf" / "-inf", None (null) for NaN."""
    if math.isnan(v):
        return None
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else v


class _Progress:
    """A line on stderr per finished shard: shards done, elapsed time and the time left (from
    this run's shards: those a resumed sweep found done cost it nothing)."""

    def __init__(self, label, total, enabled, skipped=0):
        self.label, self.total, self.enabled = label, total, enabled
        self.done = self.skipped = skipped
        self.start = time.monotonic()

    def shard_done(self):
        self.done += 1
        if self.enabled:
            elapsed = time.monotonic() - self.start
            left = elapsed / (self.done - self.skipped) * (self.total - self.done)
            sys.stderr.write("%s: %d/%d shards, %.0f s, ETA %.0f s\n" % (self.label, self.done, self.total, elapsed, left))
            sys.stderr.flush()


# ---- the command line ------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="lmscope-sweep", description=(
        "lmscope-patch --pairs and lmscope-score --data on worker processes or Ray (docs/collect.md)."))
    sub = p.add_subparsers(dest="what", required=True)
    patch = sub.add_parser("patch", help="lmscope-patch --pairs FILE.jsonl, shards of pairs")
    patch.add_argument("--pairs", required=True, help="the JSONL file of pairs (docs/collect.md)")
    patch.add_argument("--sites", default="resid_pre,attn_out,ffn_out,attn.z")
    patch.add_argument("--metric", default=None, help="for the pairs without their own")
    patch.add_argument("--rows-per-forward", type=int, default=32)
    patch.add_argument("--pairs-per-shard", type=int, default=4)
    patch.add_argument("--svg", default=None, metavar="PREFIX",
                       help="draw the mean and the spread per site: PREFIX.<site>.svg, PREFIX.<site>.sd.svg")
    score = sub.add_parser("score", help="lmscope-score --data CORPUS, shards of documents")
    score.add_argument("--data", required=True, help="the corpus: text lines, JSONL or token ids")
    score.add_argument("--format", default="auto", choices=("auto",) + _corpus.KINDS)
    score.add_argument("--field", default="text")
    score.add_argument("--batch", type=int, default=8, help="documents per forward (within a shard)")
    score.add_argument("--intervene", action="append", default=[], metavar="SPEC", help="repeatable")
    score.add_argument("--docs-per-shard", type=int, default=256)
    score.add_argument("--per-doc", default=None, help="write each document's loss as JSONL")
    for s in (patch, score):
        s.add_argument("--model", required=True)
        s.add_argument("--chat", nargs="?", const="template", default="", metavar="FORMAT")
        s.add_argument("--workers", type=int, default=1, help="local worker processes (or Ray actors)")
        s.add_argument("--threads", type=int, default=None, help="OpenMP threads per worker")
        s.add_argument("--ray", default=None, metavar="auto|ADDRESS", help="the workers as Ray actors on that cluster")
        s.add_argument("--json", default=None, metavar="FILE", help="write the merged result as JSON")
        s.add_argument("--out", default=None, metavar="DIR",
                       help="keep each finished shard in DIR (and the merge, DIR/result.json): the same command resumes")
        s.add_argument("--tools", default=None, metavar="DIR", help="the folder of lmscope-patch / lmscope-score")
        s.add_argument("--quiet", action="store_true", help="no progress lines")
    a = p.parse_args(argv)
    common = dict(chat=a.chat, workers=a.workers, threads=a.threads, ray=a.ray, json_out=a.json, tools=a.tools,
                  progress=not a.quiet, out=a.out)
    try:
        if a.what == "patch":
            if a.svg:
                _check_output(a.svg + ".svg")
            r = sweep_pairs(a.model, a.pairs, sites=a.sites, metric=a.metric, rows_per_forward=a.rows_per_forward,
                            pairs_per_shard=a.pairs_per_shard, **common)
            with _result_file(r, a.json or (a.out and os.path.join(a.out, RESULT))) as path:
                sys.stdout.write(show_pairs(path, a.svg, a.tools))
            print("%d shards of %d pairs, %d retried" % (r["num_shards"], r["pairs_per_shard"], r["shards_retried"]))
        else:
            r = sweep_corpus(a.model, a.data, format=a.format, field=a.field, batch=a.batch, intervene=a.intervene,
                             docs_per_shard=a.docs_per_shard, per_doc=a.per_doc, **common)
            sys.stdout.write(corpus_text(r))
            if a.per_doc:
                print("wrote %s" % a.per_doc)
    except (ValueError, OSError) as e:
        sys.stderr.write("lmscope-sweep: %s\n" % e)
        return 1
    for path in filter(None, (a.json, a.out and os.path.join(a.out, RESULT))):
        print("wrote %s" % path)
    return 0


def show_pairs(result: str, svg: Optional[str] = None, tools: Optional[str] = None) -> str:
    """The tables of a sweep over pairs (its --json file `result`), and with `svg` its pictures
    (PREFIX.<site>.svg and .sd.svg), made by lmscope-patch --from-json: the very text and
    pictures of lmscope-patch --pairs, from one maker. Returns the tool's stdout."""
    return ToolWorker("pairs", find_tool("lmscope-patch", tools), [])._call(
        ["--from-json", os.fspath(result)] + (["--svg", svg] if svg else []))


def corpus_text(r: dict) -> str:
    """lmscope-score --data's lines for a sweep's result: the corpus's loss and perplexity, and
    with interventions the intervened ones and the difference, as the tool prints them."""
    lines = ["corpus %s: %d documents, %d predicted tokens (skipped: %d blank lines, %d one-token documents)"
             % (r["corpus"], r["documents"], r["predicted"], r["blank_lines"], r["one_token_documents"]),
             "loss %.4f, perplexity %.2f" % (r["loss"], r["perplexity"])]
    if "interventions" in r:
        lines.append(interventions_line(json.dumps(r["interventions"])))
        lines.append("intervened: loss %.4f, perplexity %.2f, difference %s"
                     % (r["loss_intervened"], r["perplexity_intervened"], _signed4(r["difference"])))
    lines.append("%d shards of %d documents, %d retried" % (r["num_shards"], r["docs_per_shard"], r["shards_retried"]))
    return "".join(line + "\n" for line in lines)


@contextlib.contextmanager
def _result_file(result: dict, path: Optional[str]):
    """The path of the result as a JSON file: `path` (written already), else a temporary."""
    if path:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="lmscope-sweep-") as tmp:
        path = os.path.join(tmp, "result.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f)
        yield path


def _signed4(v: float) -> str:
    """"%+.4f" as the tools print it (io/format_number.h): never -0.0000."""
    text = "%+.4f" % v
    return "0.0000" if text == "-0.0000" else text
