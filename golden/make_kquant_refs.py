#!/usr/bin/env python3
"""K-quant dequantization references for tests/gguf (kquant_refs_test.cpp), made with the `gguf`
package's dequantize (gguf-py, which transformers loads GGUF files with) on blocks a real
quantizer wrote; written to golden/gguf/.

  venv/bin/python golden/make_kquant_refs.py r1 [--check]
  venv/bin/python golden/make_kquant_refs.py quantize --ggml BUILD/bin/libggml-base.so [--check]

r1        r1_output_q6k.json: DeepSeek-R1-Distill-Qwen-7B's Q4_K_M GGUF, its first 99.6 MB
          (scripts/fetch-r1-tokenizer.sh: models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf),
          holds the start of the tensor data: output.weight (Q6_K, [152064, 3584], 2,940 bytes
          a row), of which 31,857 rows are complete. All of them are dequantized with gguf-py;
          the reference is a checksum of the float32 bit patterns (below), one per 1,024 rows
          too (a failure says where), and rows 0 and 31,856 in full. The file is too short for
          gguf's GGUFReader (it maps every tensor), so it is read through a sparse copy of the
          full length: only the rows inside the real part are used.
quantize  ggml_quantized_kquants.json: super-blocks written by llama.cpp's quantizer, the
          function llama-quantize calls for every tensor (llama-quant.cpp: ggml_quantize_chunk,
          no importance matrix), loaded from the libggml-base.so that scripts/build-llamacpp.sh
          builds, on seeded N(0, 0.02) rows of 512 weights (a weight matrix's values): for each
          of Q4_K, Q5_K and Q6_K, 12 super-blocks and gguf-py's float32 values for them (gguf
          cannot quantize K-quants itself).

Checksum (what a C++ test recomputes without a hash library): the float32 values' bit patterns
b_i as unsigned integers, i the element's index in the row-major [rows, 3584] block of rows:
  sum      = sum_i b_i            mod 2^64
  weighted = sum_i b_i * (i + 1)  mod 2^64
Any one changed value changes `weighted` (the change times i + 1 is below 2^64 and not 0), and
`sum` too; two changes that cancel in both would have to be made on purpose.

--check regenerates into memory and compares with the committed file.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import gguf
from gguf.quants import dequantize

from gguf_common import ROOT, sha256_file, write_or_check

OUT = os.path.join(ROOT, "golden", "gguf")
R1 = os.path.join(ROOT, "models", "DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf")
CHUNK_ROWS = 1024


def checksums(values, first_index):
    """(sum, weighted) of float32 values, their indexes starting at first_index (module doc)."""
    bits = np.ascontiguousarray(values, dtype="<f4").reshape(-1).view("<u4").astype(np.uint64)
    idx = np.arange(first_index + 1, first_index + 1 + bits.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int(bits.sum(dtype=np.uint64)), int((bits * idx).sum(dtype=np.uint64))


def hexf32(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes().hex()


def r1_refs():
    if not os.path.exists(R1):
        sys.exit(f"{R1} is missing: run scripts/fetch-r1-tokenizer.sh first")
    size = os.path.getsize(R1)
    with tempfile.TemporaryDirectory() as tmp:
        sparse = os.path.join(tmp, "r1.gguf")
        shutil.copyfile(R1, sparse)
        os.truncate(sparse, 5 * 10**9)   # past the last tensor's end (4,683,073,248 bytes)
        reader = gguf.GGUFReader(sparse)
        t = next(t for t in reader.tensors if t.name == "output.weight")
        assert t.tensor_type == gguf.GGMLQuantizationType.Q6_K, t.tensor_type
        cols = int(t.shape[0])
        block, type_size = gguf.GGML_QUANT_SIZES[t.tensor_type]
        row_bytes = cols // block * type_size
        rows = (size - int(t.data_offset)) // row_bytes
        raw = np.asarray(t.data).reshape(-1, row_bytes)[:rows]
        total = [0, 0]
        chunks = []
        first_row = last_row = None
        for r0 in range(0, rows, CHUNK_ROWS):
            y = dequantize(np.ascontiguousarray(raw[r0:r0 + CHUNK_ROWS]), t.tensor_type).astype(np.float32, copy=False)
            s, w = checksums(y, r0 * cols)
            total[0] = (total[0] + s) % 2**64
            total[1] = (total[1] + w) % 2**64
            chunks.append(f"{w:016x}")
            if r0 == 0:
                first_row = y[0]
            if r0 + CHUNK_ROWS >= rows:
                last_row = y[rows - 1 - r0]
        return {
            "source": "models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf (scripts/fetch-r1-tokenizer.sh)",
            "file_sha256": sha256_file(R1),
            "gguf_version": gguf_version(),
            "tensor": "output.weight", "type": t.tensor_type.name, "type_id": int(t.tensor_type),
            "cols": cols, "row_bytes": row_bytes, "rows": int(rows),
            "checksum": {"sum": f"{total[0]:016x}", "weighted": f"{total[1]:016x}"},
            "chunk_rows": CHUNK_ROWS, "chunk_weighted": chunks,
            "row_first": hexf32(first_row), "row_last": hexf32(last_row),
        }


def gguf_version():
    from importlib.metadata import version
    return version("gguf")


def quantize_refs(ggml_lib):
    import ctypes
    if not (ggml_lib and os.path.isfile(ggml_lib)):
        sys.exit("--ggml: give the libggml-base.so that scripts/build-llamacpp.sh builds (BUILD/bin/libggml-base.so)")
    lib = ctypes.CDLL(ggml_lib)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_void_p]
    rng = np.random.default_rng(7)
    rows, cols = 6, 512
    entries = []
    for qtype in (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q5_K, gguf.GGMLQuantizationType.Q6_K):
        x = np.ascontiguousarray(rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02))
        x[0, :256] = 0.0          # an all-zero super-block
        x[1, 256:] += 0.05        # one whose values are all positive (a min of 0 matters)
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        raw = np.zeros(rows * cols // block * size, dtype=np.uint8)
        written = lib.ggml_quantize_chunk(int(qtype), x.ctypes.data, raw.ctypes.data, 0, rows, cols, None)
        assert written == raw.size, (written, raw.size)
        raw = raw.reshape(1, -1)
        y = dequantize(raw, qtype).reshape(-1).astype(np.float32, copy=False)
        entries.append({"type": qtype.name, "type_id": int(qtype), "n_blocks": rows * cols // block,
                        "source": f"ggml_quantize_chunk of {rows} seeded N(0, 0.02) rows of {cols} (row 0's first "
                                  "super-block all zero, row 1's second shifted by +0.05)",
                        "block_bytes": raw.tobytes().hex(), "expected_f32": hexf32(y)})
    return {"gguf_version": gguf_version(),
            "quantizer": "llama.cpp's ggml_quantize_chunk (llama-cpp-python 0.3.36's vendor/llama.cpp, libggml-base.so)",
            "entries": entries}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["r1", "quantize"])
    ap.add_argument("--ggml", help="quantize: llama.cpp's libggml-base.so")
    ap.add_argument("--check", action="store_true", help="compare with the committed file")
    a = ap.parse_args()
    if a.what == "r1":
        path, data = os.path.join(OUT, "r1_output_q6k.json"), r1_refs()
    else:
        path, data = os.path.join(OUT, "ggml_quantized_kquants.json"), quantize_refs(a.ggml)
    write_or_check(path, json.dumps(data, indent=1) + "\n", a.check)


if __name__ == "__main__":
    main()
