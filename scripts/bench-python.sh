#!/usr/bin/env bash
# Hooks from Python, lmscope's module vs HF transformers + torch hooks, one after the other in
# this session (scripts/bench_python.py; docs/benchmarks.md "Hooks from Python"). Needs build/
# (scripts/build.sh) and a Python with torch, transformers and gguf: HF_PYTHON (default: the
# golden venv that golden/make_*.py use, $LMSCOPE_CACHE/golden-venv).
#   scripts/bench-python.sh [--tokens N] [--repeats R] [--threads T]
set -euo pipefail
cd "$(dirname "$0")/.."
hf_python=${HF_PYTHON:-${LMSCOPE_CACHE:-$HOME/.cache/lmscope}/golden-venv/bin/python}
[ -x "$hf_python" ] || { echo "bench-python: no Python with torch at '$hf_python' (set HF_PYTHON)" >&2; exit 2; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
PYTHONPATH=build/python /usr/bin/python3 scripts/bench_python.py --engine lmscope "$@" > build/bench-python-lmscope.json
"$hf_python" scripts/bench_python.py --engine hf "$@" > build/bench-python-hf.json
/usr/bin/python3 - build/bench-python-lmscope.json build/bench-python-hf.json <<'PY'
import json, sys
rows = [json.load(open(p)) for p in sys.argv[1:]]
print("%-8s %10s %12s %12s %14s %8s %9s" % ("engine", "plain s", "cache_all s", "py_hooks s", "per hook ms", "arrays", "MB kept"))
for r in rows:
    print("%-8s %10.4f %12.4f %12.4f %14.3f %8d %9.1f" % (r["engine"], r["plain"], r["cache_all"], r["py_hooks"],
                                                          1e3 * r["per_hook_call"], r["arrays"], r["megabytes"]))
print("tokens %d, threads %d, median of %d" % (rows[0]["tokens"], rows[0]["threads"], rows[0]["repeats"]))
PY
