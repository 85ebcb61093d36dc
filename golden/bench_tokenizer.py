#!/usr/bin/env python3
"""Encode throughput, single thread: lmscope-bpe vs Hugging Face tokenizers, same run, same lines.

    venv/bin/python golden/bench_tokenizer.py --bin build/lmscope-bpe \\
        [--tokenizer golden/tokenizers/qwen-bpe ...] [--file big.txt ...] [--repeat 5] [--json]

Each input is split on "\\n" and every line is encoded on its own, without special tokens,
once to warm both word caches, then --repeat times timed; MB/s = bytes of the lines x
repeats / seconds. lmscope runs `lmscope-bpe --bench` (one process; loading is not timed);
HF runs `Tokenizer.encode(line, add_special_tokens=False)` in this process with
RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false. Both sides must produce the same
number of ids, or the script stops. Inputs: the test corpus (golden/tokenizers/corpus.json,
joined by newlines) always, plus every --file. See docs/benchmarks.md, "Tokenizer".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402  (after the environment is set)
from tokenizers import Tokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hf_bench(tok, text, repeat):
    lines = text.split("\n")
    nbytes = sum(len(l.encode("utf-8")) for l in lines)
    n_ids = sum(len(tok.encode(l, add_special_tokens=False).ids) for l in lines)   # warm-up
    encode = tok.encode
    t0 = time.perf_counter()
    for _ in range(repeat):
        for l in lines:
            encode(l, add_special_tokens=False)
    secs = time.perf_counter() - t0
    return {"bytes": nbytes, "lines": len(lines), "ids": n_ids, "seconds": secs, "mb_per_s": nbytes * repeat / secs / 1e6}


def ours_bench(binary, tok_dir, path, repeat):
    out = subprocess.run([binary, "--tokenizer", tok_dir, "--bench", "--repeat", str(repeat), "--file", path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "lmscope-bpe"))
    ap.add_argument("--tokenizer", action="append", help="tokenizer dir (repeatable); default qwen-bpe and deepseek-v3-bpe")
    ap.add_argument("--file", action="append", default=[], help="a large UTF-8 text file (repeatable)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    toks = args.tokenizer or [os.path.join(ROOT, "golden/tokenizers/qwen-bpe"),
                              os.path.join(ROOT, "golden/tokenizers/deepseek-v3-bpe")]

    with open(os.path.join(ROOT, "golden/tokenizers/corpus.json"), encoding="utf-8") as f:
        corpus_text = "\n".join(json.load(f))
    tmp = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False)
    tmp.write(corpus_text)
    tmp.close()
    inputs = [("corpus", tmp.name, corpus_text)]
    for p in args.file:
        with open(p, encoding="utf-8") as f:
            inputs.append((os.path.basename(p), p, f.read()))

    results = []
    try:
        for tok_dir in toks:
            hf = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
            for name, path, text in inputs:
                ours = ours_bench(args.bin, tok_dir, path, args.repeat)
                theirs = hf_bench(hf, text, args.repeat)
                if ours["ids"] != theirs["ids"] or ours["bytes"] != theirs["bytes"]:
                    sys.exit("%s on %s: lmscope made %d ids from %d bytes, HF %d ids from %d bytes"
                             % (tok_dir, name, ours["ids"], ours["bytes"], theirs["ids"], theirs["bytes"]))
                results.append({"tokenizer": os.path.basename(tok_dir.rstrip("/")), "input": name,
                                "bytes": ours["bytes"], "lines": ours["lines"], "ids": ours["ids"],
                                "lmscope_mb_per_s": ours["mb_per_s"], "hf_mb_per_s": theirs["mb_per_s"],
                                "ratio": ours["mb_per_s"] / theirs["mb_per_s"]})
    finally:
        os.unlink(tmp.name)

    if args.json:
        print(json.dumps({"tokenizers_version": tokenizers.__version__, "repeat": args.repeat, "results": results}, indent=1))
        return
    print("single thread, %d timed passes after a warm-up; HF tokenizers %s" % (args.repeat, tokenizers.__version__))
    print("%-16s %-14s %10s %9s %14s %10s %7s" % ("tokenizer", "input", "bytes", "ids", "lmscope MB/s", "HF MB/s", "ratio"))
    for r in results:
        print("%-16s %-14s %10d %9d %14.1f %10.1f %6.2fx" % (r["tokenizer"], r["input"][:14], r["bytes"], r["ids"],
                                                             r["lmscope_mb_per_s"], r["hf_mb_per_s"], r["ratio"]))


if __name__ == "__main__":
    main()
