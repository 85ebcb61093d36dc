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
            permitting);
  ray       with --ray: the same two workers as Ray actors on a local cluster of two nodes of
            one CPU each (ray.cluster_utils.Cluster; needs ray). This process connects to the
            cluster once, before the rows, as a notebook would; each row still starts its
            actors and loads their models. After the table, where each Ray round's time went,
            from Ray's own task timeline (ray.timeline): the actors' start, their model load,
            their shards, and the time they waited between shards.
Each collect row times the whole call: model load and sha256, the corpus scan, the shards.
The rows run in turn, --repeat rounds, and each keeps its fastest round (the one the machine's
other work disturbed least), printed with the load average before and after it.
Besides wall-clock tokens/s, each local row gives tokens per CPU-second (this process's CPU
time, plus its finished worker processes'): on a machine others load, the wall clock measures
them too, the CPU time mostly not.
The corpus: the first --docs lines of walkthroughs/data/zh-en-corpus.txt.
"""
import argparse
import os
import resource
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
    p.add_argument("--ray", action="store_true", help="also time a local two-node Ray cluster")
    p.add_argument("--repeat", type=int, default=1, help="rounds of every row; each row keeps its fastest")
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

    rows = ["bare", (1, None), (2, None)]
    cluster = None
    if a.ray:
        from ray.cluster_utils import Cluster
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        cluster.add_node(num_cpus=1)
        rows.append((2, cluster.address))
        from lmscope.collection_ray import connect
        connect(cluster.address)          # once, as a notebook would
    timelines = []
    # Rows in turn, --repeat rounds; each row keeps its fastest round (the one others disturbed
    # least), with the load average around it.
    rates, cpu, loads = {}, {}, {}
    for round_ in range(a.repeat):
        for row in rows:
            before = load1()
            t0, c0 = time.perf_counter(), cpu_seconds()
            if row == "bare":
                for b in batches:
                    worker.model._run(b, names="", keep_steps=0, max_new_tokens=1, padding_side="left")
            else:
                workers, ray = row
                out = os.path.join(tmp, "acts-%d-%s-%d" % (workers, "ray" if ray else "local", round_))
                wall0 = time.time()
                m = lmscope.collect(a.model, corpus, out, a.hooks, docs_per_shard=a.docs_per_shard,
                                    batch_size=a.batch_size, workers=workers, threads=1, progress=False, ray=ray)
                assert m["tokens"] == tokens
                if ray:
                    timelines.append(ray_breakdown(wall0, time.time()))
            rate = tokens / (time.perf_counter() - t0)
            if rate > rates.get(row, 0):
                rates[row], cpu[row], loads[row] = rate, tokens / (cpu_seconds() - c0), (before, load1())
    if cluster:
        import ray
        ray.shutdown()
        cluster.shutdown()
    print("%d documents, %d tokens, hooks %s, batch %d, %d documents per shard, best of %d rounds"
          % (len(docs), tokens, a.hooks, a.batch_size, a.docs_per_shard, a.repeat))
    print("load average before: %s" % LOAD)
    print("| run | tokens/s (wall) | ratio | tokens per CPU-second | ratio | load average (1 min), start / end |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    span = lambda key: "%.2f / %.2f" % loads[key]
    bare, bare_cpu = rates["bare"], cpu["bare"]
    print("| bare forward, 1 thread | %.0f | 1.00 | %.0f | 1.00 | %s |" % (bare, bare_cpu, span("bare")))
    one, two = rates[1, None], rates[2, None]
    print("| collect, 1 worker | %.0f | %.2f of bare | %.0f | %.2f of bare | %s |"
          % (one, one / bare, cpu[1, None], cpu[1, None] / bare_cpu, span((1, None))))
    print("| collect, 2 workers x 1 thread | %.0f | %.2f x 1 worker | %.0f | %.2f of bare | %s |"
          % (two, two / one, cpu[2, None], cpu[2, None] / bare_cpu, span((2, None))))
    for row in rows[3:]:
        print("| collect on Ray, 2 nodes x 1 actor x 1 thread | %.0f | %.2f of 2 local workers | | | %s |"
              % (rates[row], rates[row] / two, span(row)))
    print("load average after: %s" % open("/proc/loadavg").read().strip())
    for i, line in enumerate(timelines):
        print("Ray round %d: %s" % (i + 1, line))


def ray_breakdown(start: float, end: float) -> str:
    """Where a Ray row's wall clock went, from Ray's task timeline: when the actors' __init__
    began (their worker processes started), how long it took (the model load), the shards'
    run time per actor, and each actor's wait between two shards (for this driver)."""
    import ray
    events = [e for e in ray.timeline() if e.get("ph") == "X" and e["ts"] >= start * 1e6]
    inits = [e for e in events if e["name"] == "__init__"]
    runs = sorted((e for e in events if e["name"] == "run"), key=lambda e: e["ts"])
    by_actor = {}
    for e in runs:
        by_actor.setdefault((e["pid"], e["tid"]), []).append(e)
    waits = [b["ts"] - (a["ts"] + a["dur"]) for rs in by_actor.values() for a, b in zip(rs, rs[1:])]
    return ("%.1f s; actors' __init__ began %s s after the call (their processes' start), took %s s (the model "
            "load); shards %s s per actor; waits between an actor's shards %s s in all; after the last shard %.1f s"
            % (end - start, "/".join("%.1f" % (e["ts"] / 1e6 - start) for e in inits),
               "/".join("%.1f" % (e["dur"] / 1e6) for e in inits),
               "/".join("%.1f" % (sum(e["dur"] for e in rs) / 1e6) for rs in by_actor.values()),
               "%.2f" % (sum(waits) / 1e6), end - max((e["ts"] + e["dur"]) / 1e6 for e in runs)))


LOAD = open("/proc/loadavg").read().strip()


def load1() -> float:
    """The 1-minute load average: how many others shared the cores while a row ran."""
    return float(open("/proc/loadavg").read().split()[0])


def cpu_seconds() -> float:
    """User + system time of this process and of its children that have ended."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    main()
