"""lmscope.ActivationDataset: a collection (lmscope.collect's directory) read back as numpy
batches (docs/collect.md, "Reading a collection").

    ds = lmscope.ActivationDataset("acts/")
    for batch in ds.batches(batch_size=4096, shuffle_buffer=65536, seed=0):
        x = batch["layers.15.resid_post"]     # float32 [n, 576]
        batch["doc"], batch["position"], batch["token"]

Opening checks every shard the manifest lists against its sha256 (a changed, truncated or
missing shard is refused in one line). Reading holds one shard, plus the shuffle buffer.
"""
import os
from typing import Dict, Iterator, List, Optional, Sequence

import h5py
import numpy as np

from . import shards


class ActivationDataset:
    def __init__(self, path: str, hooks: Optional[Sequence[str]] = None, allow_incomplete: bool = False):
        """hooks: the hooks to read (default: all the collection has). A collection whose run
        has not finished is refused unless allow_incomplete (then its finished shards are read)."""
        self.path = os.fspath(path)
        manifest_path = os.path.join(self.path, shards.MANIFEST)
        if not os.path.isfile(manifest_path):
            raise ValueError("'%s' is not a collection (no %s)" % (self.path, shards.MANIFEST))
        self.manifest = shards.read_manifest(manifest_path)
        if not self.manifest.get("complete") and not allow_incomplete:
            raise ValueError("'%s' is an unfinished collection (%d of %d shards): run the same lmscope-collect "
                             "again to finish it, or pass allow_incomplete=True" % (
                                 self.path, len(self.manifest["shards"]), self.manifest["num_shards"]))
        self.dtype = self.manifest["options"]["dtype"]
        self.hooks: List[str] = list(hooks) if hooks is not None else list(self.manifest["options"]["hooks"])
        for h in self.hooks:
            if h not in self.manifest["hooks"]:
                raise KeyError("%r is not in the collection '%s' (it holds %s)"
                               % (h, self.path, ", ".join(self.manifest["hooks"])))
        self.widths: Dict[str, int] = {h: self.manifest["hooks"][h]["width"] for h in self.hooks}
        self.shard_entries = list(self.manifest["shards"])
        for e in self.shard_entries:
            file = os.path.join(self.path, e["file"])
            if not os.path.isfile(file):
                raise ValueError("'%s': the shard %s the manifest lists is missing" % (self.path, e["file"]))
            if shards.file_sha256(file) != e["sha256"]:
                raise ValueError("'%s': the shard %s does not match the manifest's sha256 (changed or damaged)"
                                 % (self.path, e["file"]))

    def __len__(self) -> int:
        """Rows in all (one per stored token position)."""
        return sum(e["rows"] for e in self.shard_entries)

    def shard(self, i: int) -> Dict[str, np.ndarray]:
        """The i-th listed shard whole: doc, chunk, position, token and each hook (float32)."""
        e = self.shard_entries[i]
        with h5py.File(os.path.join(self.path, e["file"]), "r") as f:
            out = {k: f[k][()] for k in shards.ROW_FIELDS}
            for h in self.hooks:
                out[h] = shards.decode(f[h][()], self.dtype)
        return out

    def batches(self, batch_size: int = 1024, shuffle_buffer: int = 0, seed: int = 0) -> Iterator[Dict[str, np.ndarray]]:
        """Batches of batch_size rows (the last one shorter), in collection order; with
        shuffle_buffer > 0, rows are shuffled within a buffer of at least that many rows
        (whole shards are added until it is full), with numpy's generator seeded by `seed`."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1, got %d" % batch_size)
        rng = np.random.default_rng(seed)
        buffer: List[Dict[str, np.ndarray]] = []
        held = 0
        carry: Optional[Dict[str, np.ndarray]] = None
        for i in range(len(self.shard_entries)):
            buffer.append(self.shard(i))
            held += len(buffer[-1]["doc"])
            if held >= max(shuffle_buffer, 1):
                carry = yield from self._emit(buffer, carry, batch_size, rng if shuffle_buffer else None, False)
                buffer, held = [], 0
        yield from self._emit(buffer, carry, batch_size, rng if shuffle_buffer else None, True)

    def __iter__(self):
        return self.batches()

    @staticmethod
    def _emit(buffer, carry, batch_size, rng, last):
        parts = ([carry] if carry is not None else []) + buffer
        if not parts:
            return None
        rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        n = len(rows["doc"])
        if rng is not None:
            order = rng.permutation(n)
            rows = {k: v[order] for k, v in rows.items()}
        full = n if last else n - n % batch_size
        for s in range(0, full, batch_size):
            yield {k: v[s:s + batch_size] for k, v in rows.items()}
        return None if full == n else {k: v[full:] for k, v in rows.items()}
