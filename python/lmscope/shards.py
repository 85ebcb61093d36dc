"""A collection's files (docs/collect.md, "The format"): HDF5 shards and the manifest.

A shard is built in memory (h5py on a BytesIO) and handed whole to the project's one atomic
writer (io/text_file.h, as lmscope._core.write_file_atomic): the path holds the complete shard
or nothing, so a run killed mid-shard leaves the finished shards and no half one. The manifest
is rewritten the same way after every shard.

A shard holds, for N rows (one per stored token position):
  doc       int64 [N]   the document's line index in the corpus
  chunk     int32 [N]   which piece of a split document (0 otherwise)
  position  int32 [N]   the position in the forward (0 = the piece's first token)
  token     int32 [N]   the token id at that position
  <hook>    [N, width]  float32, float16, or bfloat16 stored as uint16 (attribute dtype = "bf16")
"""
import hashlib
import io
import json
import os
from typing import Dict

import h5py
import numpy as np

from ._core import write_file_atomic

MANIFEST = "collection.json"
FORMAT = "lmscope-collection"
SHARD_FORMAT = "lmscope-collection-shard"
DTYPES = ("f32", "f16", "bf16")
ROW_FIELDS = ("doc", "chunk", "position", "token")


def shard_name(index: int) -> str:
    return "shard-%05d.h5" % index


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values as stored: float32, float16, or bfloat16's bits (round to nearest even)."""
    if dtype == "f32":
        return values
    if dtype == "f16":
        return values.astype(np.float16)
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def decode(stored: np.ndarray, dtype: str) -> np.ndarray:
    """The stored values widened back to float32."""
    if dtype == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32)
    return stored.astype(np.float32, copy=False)


def build_shard(index: int, rows: Dict[str, np.ndarray], hooks: Dict[str, np.ndarray], dtype: str):
    """One shard's bytes and its manifest entry (index, file, rows, bytes, sha256). The bytes
    depend only on the values (no timestamps), so a shard's sha256 is the same whoever
    computed it."""
    buf = io.BytesIO()
    with h5py.File(buf, "w", track_order=False) as f:
        f.attrs["format"] = SHARD_FORMAT
        f.attrs["shard"] = index
        for name in ROW_FIELDS:
            f.create_dataset(name, data=rows[name], track_times=False)
        for name, values in hooks.items():
            ds = f.create_dataset(name, data=encode(values, dtype), track_times=False)
            ds.attrs["dtype"] = dtype
    data = buf.getvalue()
    return data, {"index": index, "file": shard_name(index), "rows": int(len(rows["doc"])), "bytes": len(data),
                  "sha256": hashlib.sha256(data).hexdigest()}


def write_shard(out_dir: str, data: bytes, entry: dict) -> None:
    """Through the one atomic writer: the file is whole or absent."""
    write_file_atomic(os.path.join(out_dir, entry["file"]), data)


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(path: str, manifest: dict) -> None:
    write_file_atomic(path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())


def read_manifest(path: str, format: str = FORMAT, what: str = "collection") -> dict:
    """The manifest (of a collection, or of a sweep: sweep.py), or ValueError in one line when
    it is not one."""
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError("'%s' is not a readable %s manifest (%s)" % (path, what, e)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != format:
        raise ValueError("'%s' is not a %s manifest (no format = %s)" % (path, what, format))
    return manifest
