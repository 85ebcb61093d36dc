#!/usr/bin/env bash
# lmscope against its peers on one GGUF file (docs/benchmarks.md, "Against llama.cpp"):
# lmscope-bench in exact mode (float32 activations) and in fast mode (--cpu-activations q8),
# llama.cpp's llama-bench (scripts/build-llamacpp.sh) and, on the default model when a Python
# with torch is there, HF transformers (float32, eager) — interleaved: every round runs every
# engine on every test before the next round starts, so a slow spell of a shared machine hits
# all of them alike. Reports the median over rounds and the ratios.
#
#   scripts/bench-peers.sh [--avx2] [--model FILE.gguf] [ROUNDS]   (default: SmolLM2-135M-Instruct Q4_1, 3 rounds)
#   THREADS="1 2" TESTS="pp128 pp512 pp2048 tg128" scripts/bench-peers.sh
#   BEFORE=../main/build scripts/bench-peers.sh      also another build's lmscope-bench, before/after
#
# BEFORE=DIR: a second build's DIR/lmscope-bench (another checkout's: the code before a change)
# runs in every round right after ours, on the same tests; its table (ratios to the same
# llama.cpp runs) follows ours. Configure it as build/ is (LMSCOPE_CUDA too: one code linked
# with and without CUDA decoded SmolLM2 5-7% apart, docs/benchmarks.md). NO_BUILD=1: build/lmscope-bench as it is, without
# scripts/build.sh (a build dir that holds only the targets one works on).
#
# --avx2: every engine on its AVX2 code, whatever the processor has: lmscope with
# LMSCOPE_CPU_KERNEL=avx2 (and OpenBLAS with OPENBLAS_CORETYPE=Haswell, PyTorch with
# ATEN_CPU_CAPABILITY=avx2), llama.cpp built for AVX2 + FMA + F16C without AVX-512
# (scripts/build-llamacpp.sh --avx2). The instructions of an AVX2-only processor, on this
# processor's cores and memory: the code paths compare, the machines do not.
#
# ppN: prefill of N prompt tokens (tokens/s); tg128: 128 tokens decoded one at a time after a
# 1-token prompt (llama-bench's tg128 starts from an empty context too). HF runs pp128 and
# tg128 only (its eager attention over 2048 tokens is not the point). Results:
# build/bench-peers/*.json, the table in build/bench-peers/table.md. Long: about 5 minutes
# per round on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
default_model=models/SmolLM2-135M-Instruct.Q4_1.gguf
model=$default_model
avx2=0
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --avx2) avx2=1; shift ;;
    --model) [ $# -ge 2 ] || { echo "bench-peers: --model needs a .gguf file" >&2; exit 2; }
             model=$2; shift 2 ;;
    *[!0-9]*|0|"") echo "bench-peers: '$1' is neither --avx2, --model FILE nor a number of rounds" >&2; exit 2 ;;
    *) rounds=$1; shift ;;
  esac
done
threads=${THREADS:-1 2}
tests=${TESTS:-pp128 pp512 pp2048 tg128}
py=${LMSCOPE_PY:-$HOME/.cache/lmscope/golden-venv/bin/python}
out=build/bench-peers
before=${BEFORE:-}

fail() { echo "bench-peers: $*" >&2; exit 1; }
if [ "${NO_BUILD:-0}" != 1 ]; then
  scripts/build.sh >/dev/null || fail "the build failed (run scripts/build.sh to see why)"
fi
[ -x build/lmscope-bench ] || fail "build/lmscope-bench is not built"
[ -z "$before" ] || [ -x "$before/lmscope-bench" ] || fail "BEFORE=$before: no lmscope-bench there"
if [ "$model" = "$default_model" ]; then
  scripts/fetch-model.sh >/dev/null || fail "cannot fetch $model (scripts/fetch-model.sh)"
fi
[ -f "$model" ] || fail "$model: no such file"
if [ $avx2 = 1 ]; then
  llama_dir=$(scripts/build-llamacpp.sh --avx2) || fail "cannot build llama.cpp (scripts/build-llamacpp.sh --avx2)"
  llama_bench="$llama_dir/build-avx2/bin/llama-bench"
  # lmscope's kernels, OpenBLAS's sgemm (exact prefill) and PyTorch's (HF) on their AVX2 code
  export LMSCOPE_CPU_KERNEL=avx2 OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2
else
  llama_dir=$(scripts/build-llamacpp.sh) || fail "cannot build llama.cpp (scripts/build-llamacpp.sh)"
  llama_bench="$llama_dir/build/bin/llama-bench"
fi
hf=0
if [ "$model" != "$default_model" ]; then echo "bench-peers: HF runs SmolLM2's shapes only: skipped for $model"
elif "$py" -c "import torch, transformers" 2>/dev/null; then hf=1; else echo "bench-peers: no torch at $py: HF skipped"; fi
rm -rf "$out" && mkdir -p "$out"
[ -z "$before" ] || mkdir -p "$out/before"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)
code="native code"
if [ $avx2 = 1 ]; then code="AVX2 code only (LMSCOPE_CPU_KERNEL=avx2, llama.cpp without AVX-512)"; fi
echo "bench-peers: $(date -u +%Y-%m-%d), $model, $cpu, $(nproc) cores, $code, $rounds rounds, threads: $threads, tests: $tests"

# prompt length and decode steps of a test, for lmscope-bench and bench_hf.py
shape() {
  case $1 in
    pp*) echo "${1#pp} 1" ;;
    tg*) echo "1 ${1#tg}" ;;
    *) fail "unknown test '$1' (ppN or tgN)" ;;
  esac
}

for r in $(seq 1 "$rounds"); do
  for t in $threads; do
    for test in $tests; do
      read -r plen ndec < <(shape "$test")
      echo "round $r/$rounds, $t thread(s), $test (load average $(cut -d' ' -f1 /proc/loadavg))"
      for mode in f32 q8; do
        OMP_NUM_THREADS=$t build/lmscope-bench --model "$model" --prompt-len "$plen" --decode "$ndec" --repeats 1 \
          --configs none --loop forward --cpu-activations $mode --json "$out/lmscope-$mode-$test-t$t-r$r.json" >/dev/null
        [ -z "$before" ] || OMP_NUM_THREADS=$t "$before/lmscope-bench" --model "$model" --prompt-len "$plen" \
          --decode "$ndec" --repeats 1 --configs none --loop forward --cpu-activations $mode \
          --json "$out/before/lmscope-$mode-$test-t$t-r$r.json" >/dev/null
      done
      case $test in
        pp*) llama_args=(-p "$plen" -n 0) ;;
        tg*) llama_args=(-p 0 -n "$ndec") ;;
      esac
      "$llama_bench" -m "$model" "${llama_args[@]}" -t "$t" -r 1 -o json >"$out/llama-$test-t$t-r$r.json" 2>/dev/null
      [ -z "$before" ] || cp "$out/llama-$test-t$t-r$r.json" "$out/before/"
      if [ $hf = 1 ] && { [ "$test" = pp128 ] || [ "$test" = tg128 ]; }; then
        "$py" scripts/bench_hf.py --model smollm2 --prompt-len "$plen" --decode "$ndec" --repeats 1 --threads "$t" \
          >"$out/hf-$test-t$t-r$r.json"
      fi
    done
  done
done

python3 scripts/bench_peers_table.py "$out" | tee "$out/table.md"
if [ -n "$before" ]; then
  echo; echo "before: $before/lmscope-bench, in the same rounds (the llama.cpp columns are the same runs)"
  python3 scripts/bench_peers_table.py "$out/before" | tee "$out/before/table.md"
fi
