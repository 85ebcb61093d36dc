#!/usr/bin/env python3
"""The table of scripts/bench-peers.sh: reads its JSON files (one per engine, test, thread
count and round) and prints, per test and thread count, the median tokens/s over the rounds
of each engine (the range in brackets) and lmscope's ratios to llama.cpp, as Markdown.

    python3 scripts/bench_peers_table.py build/bench-peers
"""
import collections
import json
import pathlib
import re
import statistics
import sys

NAME = re.compile(r"^(lmscope-f32|lmscope-q8|llama|hf)-((?:pp|tg)\d+)-t(\d+)-r\d+\.json$")
ENGINES = ["lmscope-f32", "lmscope-q8", "llama", "hf"]
TITLES = {"lmscope-f32": "lmscope exact", "lmscope-q8": "lmscope q8", "llama": "llama.cpp", "hf": "HF float32"}


def tokens_per_s(engine, test, path):
    """The one figure a run measured for this test: prefill tok/s for ppN, decode tok/s for tgN."""
    data = json.loads(path.read_text())
    key = "prefill_tok_s" if test.startswith("pp") else "decode_tok_s"
    if engine.startswith("lmscope"):
        return data["none"][key]
    if engine == "hf":
        return data[key]
    # llama-bench -o json: a list of tests; ours asked for exactly one
    if len(data) != 1:
        raise SystemExit(f"bench_peers_table: {path}: {len(data)} llama-bench results, expected 1")
    return data[0]["avg_ts"]


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: bench_peers_table.py DIR")
    runs = collections.defaultdict(list)   # (test, threads, engine) -> tok/s per round
    for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
        m = NAME.match(path.name)
        if not m:
            continue
        engine, test, threads = m.group(1), m.group(2), int(m.group(3))
        runs[(test, threads, engine)].append(tokens_per_s(engine, test, path))
    if not runs:
        raise SystemExit(f"bench_peers_table: no results in {sys.argv[1]}")

    def cell(key):
        v = runs.get(key)
        if not v:
            return "", None
        med = statistics.median(v)
        return (f"{med:,.1f} ({min(v):,.1f}–{max(v):,.1f})" if len(v) > 1 else f"{med:,.1f}"), med

    order = sorted({(t, th) for t, th, _ in runs}, key=lambda k: (k[0][:2], int(k[0][2:]), k[1]))
    rounds = max(len(v) for v in runs.values())
    print(f"tokens/s, median of {rounds} rounds (range); ratios: lmscope / llama.cpp at the medians\n")
    print("| test | threads | " + " | ".join(TITLES[e] for e in ENGINES) + " | exact / llama.cpp | q8 / llama.cpp |")
    print("| --- | ---: | " + " | ".join("---:" for _ in ENGINES) + " | ---: | ---: |")
    for test, threads in order:
        cells = {e: cell((test, threads, e)) for e in ENGINES}
        llama = cells["llama"][1]
        ratio = lambda e: f"×{cells[e][1] / llama:.2f}" if llama and cells[e][1] else ""
        print(f"| {test} | {threads} | " + " | ".join(cells[e][0] for e in ENGINES) +
              f" | {ratio('lmscope-f32')} | {ratio('lmscope-q8')} |")


if __name__ == "__main__":
    main()
