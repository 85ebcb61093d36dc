"""Where a sweep's shard results are kept (sweep.py; docs/collect.md, "Resumable sweeps").

With an output directory (lmscope-sweep --out DIR, sweep_pairs(..., out=DIR)), each finished
shard's result is a file of its own, written by the project's one atomic writer, and the
manifest that lists it is rewritten the same way, as a collection's shards are:

  sweep.json        the manifest: format "lmscope-sweep", the kind (patch, score), the model
                    (path, sha256), the input (the pairs file or the corpus: path, sha256),
                    the options, num_shards, and per finished shard its index, file, bytes
                    and sha256; complete once the merge is written
  shard-00000.json  shard 0's result: what its worker returned (the tool's JSON, as read)
  result.json       the merged result (the object lmscope-sweep --json writes), at the end
  sweep.lock        held (flock) by the run writing the directory

The same command again skips the shards the manifest lists (their file present, its sha256 the
listed one) and runs the rest; the merge reads every shard back from its file, so a sweep
killed and resumed merges the very values an uninterrupted one does. A different model,
input or option is refused in one line (run_directory.py, shared with the collections).

Without a directory the results stay in memory (InMemory) and a killed sweep starts over.
"""
import contextlib
import hashlib
import json
import os

from . import shards
from ._core import write_file_atomic
from .run_directory import RunDirectory, model_sha256, remove_partials

MANIFEST = "sweep.json"
FORMAT = "lmscope-sweep"
RESULT = "result.json"
DIRECTORY = RunDirectory("sweep", MANIFEST, "sweep.lock")


def shard_file(index: int) -> str:
    return "shard-%05d.json" % index


class InMemory:
    """A sweep's shard results in this process only."""

    def __init__(self):
        self.results, self.retried = {}, 0

    def finished(self) -> set:
        return set()

    def record(self, result, entry) -> None:
        self.results[entry["index"]] = result

    def merged(self, text: str) -> None:
        pass


class SweepDirectory:
    """A sweep's shard results on disk, resumable (the module's docstring)."""

    def __init__(self, out: str, manifest: dict):
        self.out, self.manifest = out, manifest
        self.retried = manifest.get("shards_retried", 0)

    @property
    def results(self) -> dict:
        """{index: result} of every finished shard, read back from its file."""
        out = {}
        for e in self.manifest["shards"]:
            with open(os.path.join(self.out, e["file"]), "rb") as f:
                out[e["index"]] = json.loads(f.read().decode("utf-8"))
        return out

    def finished(self) -> set:
        return {e["index"] for e in self.manifest["shards"]}

    def record(self, result, entry) -> None:
        """The shard's file, then the manifest that lists it: a kill between the two leaves a
        whole shard the manifest does not list, which a rerun computes again."""
        data = json.dumps(result).encode()
        listed = {"index": entry["index"], "file": shard_file(entry["index"]), "bytes": len(data),
                  "sha256": hashlib.sha256(data).hexdigest()}
        write_file_atomic(os.path.join(self.out, listed["file"]), data)
        self.manifest["shards"] = sorted([e for e in self.manifest["shards"] if e["index"] != entry["index"]] + [listed],
                                         key=lambda e: e["index"])
        self._write_manifest()

    def merged(self, text: str) -> None:
        """The merged result beside the shards; then the manifest says the sweep is complete."""
        write_file_atomic(os.path.join(self.out, RESULT), text.encode())
        self.manifest["shards_retried"] = self.retried
        self.manifest["complete"] = True
        self._write_manifest()

    def _write_manifest(self) -> None:
        self.manifest["shards_retried"] = self.retried
        shards.write_manifest(os.path.join(self.out, MANIFEST), self.manifest)


@contextlib.contextmanager
def shard_results(out, kind: str, model: str, source: str, options: dict, num_shards: int):
    """The store of a sweep's shard results: InMemory without `out`; else the directory `out`
    (created, locked for the whole sweep, its manifest checked or started). `source`: the
    pairs file or the corpus; `options`: everything that decides the result."""
    if out is None:
        yield InMemory()
        return
    out = os.path.abspath(os.fspath(out))
    DIRECTORY.refuse_foreign(out)
    os.makedirs(out, exist_ok=True)
    with DIRECTORY.locked(out):
        DIRECTORY.refuse_foreign(out)      # again, now that no other sweep can be writing it
        identity = {"sweep": {"kind": kind}, "model": {"sha256": model_sha256(model)},
                    "input": {"sha256": shards.file_sha256(source)}, "options": options}
        path = os.path.join(out, MANIFEST)
        if os.path.exists(path):
            manifest = shards.read_manifest(path, FORMAT, "sweep")
            DIRECTORY.check_same(out, manifest, identity, "model, %s and options" % ("pairs" if kind == "patch" else "corpus"))
            remove_partials(out, ("shard-", MANIFEST, RESULT))
            manifest["shards"] = [e for e in manifest["shards"] if _intact(out, e)]
            manifest["complete"] = False                 # until this run's merge is written
        else:
            manifest = {"format": FORMAT, "version": 1, "complete": False, "sweep": identity["sweep"],
                        "model": dict(identity["model"], path=model), "input": dict(identity["input"], path=source),
                        "options": options, "num_shards": num_shards, "shards": [], "shards_retried": 0}
        store = SweepDirectory(out, manifest)
        store._write_manifest()
        yield store


def _intact(out: str, entry: dict) -> bool:
    """A listed shard whose file is there with the listed sha256 (else it is run again)."""
    try:
        return shards.file_sha256(os.path.join(out, entry["file"])) == entry["sha256"]
    except OSError:
        return False
