#!/usr/bin/env bash
# Benchmarks of the CPU engine (docs/benchmarks.md): lmscope-bench on the tiny model's shapes
# and on SmolLM2-135M's shapes (synthetic weights), in three configurations (no trace, an
# empty trace, every hook to HDF5), with HF transformers on the same shapes as the peer when
# a Python with torch is available (LMSCOPE_PY, default: the golden venv).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
py=${LMSCOPE_PY:-$HOME/.cache/lmscope/golden-venv/bin/python}
for m in tiny smollm2; do
  case $m in tiny) p=64 ;; smollm2) p=128 ;; esac
  echo "== $m (prompt $p, 32 decode steps, $threads threads)"
  build/lmscope-bench --model synthetic:$m --prompt-len $p --decode 32 --repeats 3 --json build/bench-$m.json
  if "$py" -c "import torch, transformers" 2>/dev/null; then
    "$py" scripts/bench_hf.py --model $m --prompt-len $p --decode 32 --repeats 3 --threads "$threads" > build/bench-hf-$m.json
    python3 - "$m" <<'PY'
import json, sys
m = sys.argv[1]
ours = json.load(open(f"build/bench-{m}.json"))["none"]
hf = json.load(open(f"build/bench-hf-{m}.json"))
print(f"peer   prefill {hf['prefill_tok_s']:9.1f} tok/s   decode {hf['decode_tok_s']:8.1f} tok/s   ({hf['peer']})")
print(f"ratio lmscope/HF: prefill x{ours['prefill_tok_s']/hf['prefill_tok_s']:.2f}, decode x{ours['decode_tok_s']/hf['decode_tok_s']:.2f}")
PY
  else
    echo "(no torch at $py: HF peer skipped)"
  fi
done
