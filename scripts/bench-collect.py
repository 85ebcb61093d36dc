#!/usr/bin/env python3
"""Throughput of lmscope.collect against the bare forward (docs/collect.md, "Throughput").

    OMP_NUM_THREADS=1 PYTHONPATH=build/python python3 scripts/bench-collect.py \
        --model models/SmolLM2-135M-Instruct.Q4_1.gguf --docs 2000

Prints tokens/s of:
  bare      the same batches (the collector's: each shard's documents sorted by length,
            --batch-size at a time, left padded) through the forward with no hook kept, in
            this process, one thread;
  collect   lmscope.collect of two D-wide hooks (layers.10/20.resid_post), one worker;
  workers=2 the same with two worker processes of one thread each (the machine's cores
            permitting).
The corpus: the first --docs lines of walkthroughs/data/zh-en-corpus.txt.
"""
import argparse
import os
import sys
import tempfile
import time

import lmscope
from lmscope.collect_worker import Options, ShardWorker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--docs-per-shard", type=int, default=250)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--hooks", default="layers.10.resid_post,layers.20.resid_post")
    a = p.parse_args()
    if os.environ.get("OMP_NUM_THREADS") != "1":
        sys.exit("run with OMP_NUM_THREADS=1 (one thread per worker is what is compared)")
    tmp = tempfile.mkdtemp(prefix="bench-collect-")
    corpus = os.path.join(tmp, "corpus.txt")
    with open(os.path.join(ROOT, "walkthroughs", "data", "zh-en-corpus.txt"), encoding="utf-8") as f:
        lines = f.readlines()[:a.docs]
    with open(corpus, "w", encoding="utf-8") as f:
        f.writelines(lines)

    # The bare forward over the collector's own batches.
    worker = ShardWorker(a.model, Options(hooks=a.hooks.split(","), max_tokens=1 << 30))
    docs = [(i, l.rstrip("\n")) for i, l in enumerate(lines)]
    batches = []
    for s in range(0, len(docs), a.docs_per_shard):
        pieces = [worker.token_ids(c) for _, c in docs[s:s + a.docs_per_shard]]
        pieces.sort(key=len)
        batches += [pieces[b:b + a.batch_size] for b in range(0, len(pieces), a.batch_size)]
    tokens = sum(len(x) for b in batches for x in b)
    t0 = time.perf_counter()
    for b in batches:
        worker.model._run(b, names="", keep_steps=0, max_new_tokens=1, padding_side="left")
    bare = tokens / (time.perf_counter() - t0)
    del worker

    rates = {}
    for workers in (1, 2):
        out = os.path.join(tmp, "acts-%d" % workers)
        t0 = time.perf_counter()
        m = lmscope.collect(a.model, corpus, out, a.hooks, docs_per_shard=a.docs_per_shard, batch_size=a.batch_size,
                            workers=workers, threads=1, progress=False)
        rates[workers] = m["tokens"] / (time.perf_counter() - t0)
        assert m["tokens"] == tokens
    print("%d documents, %d tokens, hooks %s, batch %d, %d documents per shard"
          % (len(docs), tokens, a.hooks, a.batch_size, a.docs_per_shard))
    print("| run | tokens/s | ratio |")
    print("| --- | ---: | ---: |")
    print("| bare forward, 1 thread | %.0f | 1.00 |" % bare)
    print("| collect, 1 worker | %.0f | %.2f of bare |" % (rates[1], rates[1] / bare))
    print("| collect, 2 workers x 1 thread | %.0f | %.2f x 1 worker |" % (rates[2], rates[2] / rates[1]))


if __name__ == "__main__":
    main()
