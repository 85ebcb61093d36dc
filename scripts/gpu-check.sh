#!/usr/bin/env bash
# The CUDA checks for a lent GPU machine (an H200: docs/cuda.md), prepared to run in one call:
# the CUDA tests, then the benchmark at DeepSeek-R1-Distill-Qwen-1.5B's shapes with HF
# transformers on the same GPU and the same bf16 weights, and a short report in $OUT.
#
#   scripts/gpu-check.sh bundle   HERE, on a machine with nvcc (no GPU needed): configure and
#                                 build for sm_90 into build-gpu/ (or $BUILD_DIR), pack the binaries and
#                                 the shared libraries they need (HDF5, OpenBLAS, ...) into
#                                 .gpu/bundle.tar.xz (git-ignored; carry it).
#   scripts/gpu-check.sh          THERE, on the GPU machine, from the repository root.
#
# Why a bundle: the GPU machine has nvcc, cmake, python3 with torch and transformers, but no
# network, so the Debian libraries lmscope links (HDF5, OpenBLAS, CLI11, GoogleTest, PCRE2,
# utf8proc) cannot be installed there. The bundle's binaries need glibc >= 2.34, the NVIDIA
# driver and cuBLAS 13 (libcublas.so.13, found on the machine: the CUDA toolkit or torch's
# nvidia wheels). Without a bundle, or if its binaries do not load, the script configures
# and builds there instead (cmake, sm_90, all cores), which works only where those
# libraries are installed.
#
# Everything it prints also goes to $OUT/run.log; $OUT/report.md is the summary. Exit 0 only
# when the build, every CUDA test (none skipped) and the benchmark succeeded. Budget: well
# under 8 minutes on an H200 (each step has its own timeout).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# ---------------------------------------------------------------------------------------
if [ "${1:-}" = "bundle" ]; then
  set -e
  arch=${CUDA_ARCH:-90}
  build=${BUILD_DIR:-build-gpu}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target test_cuda lmscope-bench lmscope-trace
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" .gpu
  cp "$build"/test_cuda "$build"/lmscope-bench "$build"/lmscope-trace "$stage/bin/"
  # every shared library the binaries load, except glibc's own, the driver's and CUDA's
  ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|ld-linux*) ;;
      libcuda.so*|libcublas*|libcudart*|libnvidia*) ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
  {
    echo "commit $(git rev-parse HEAD 2>/dev/null) (+ working tree changes: $(git status --porcelain | wc -l) files)"
    echo "built $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "nvcc $(nvcc --version | tail -1), CMAKE_CUDA_ARCHITECTURES=$arch"
  } > "$stage/BUILD-INFO"
  tar -C "$stage" -cJf .gpu/bundle.tar.xz BUILD-INFO bin lib
  rm -rf "$stage"
  echo "wrote .gpu/bundle.tar.xz ($(du -h .gpu/bundle.tar.xz | cut -f1)); run on the GPU machine:"
  echo "  scripts/gpu-check.sh   (carry .gpu)"
  exit 0
fi

# ---------------------------------------------------------------------------------------
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
tee_pid=$!
trap 'exec 1>&- 2>&-; wait $tee_pid 2>/dev/null' EXIT   # let run.log get every line
REPORT=$OUT/report.md
: > "$REPORT"
note() { echo "$*" | tee -a "$REPORT"; }
status=0
fail() { note "FAIL: $*"; status=1; }
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
JOBS=$(nproc)
export OMP_NUM_THREADS=$JOBS OPENBLAS_NUM_THREADS=1 PYTHONUNBUFFERED=1

note "# lmscope gpu-check"
note ""
note "- machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi failed')"
note "- nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo none); $(ldd --version 2>/dev/null | head -1)"
note "- clocks at start: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null)"

# ---- 1. binaries: the carried bundle, else a build here -----------------------------------
# cuBLAS 13: the toolkit's, or the one torch's wheels bring.
cublas_dir=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
  [ -e "$d/libcublasLt.so.13" ] && { cublas_dir=$d; break; }
done
if [ -z "$cublas_dir" ]; then
  found=$(find /usr /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
  [ -n "$found" ] && cublas_dir=$(dirname "$found")
fi
extra=${cublas_dir}
[ -d /usr/local/nvidia/lib64 ] && extra=$extra:/usr/local/nvidia/lib64
note "- cuBLAS from: ${cublas_dir:-not found, relying on the loader paths}"

BIN=""
if [ -f .gpu/bundle.tar.xz ]; then
  rm -rf /tmp/lmscope-gpu && mkdir -p /tmp/lmscope-gpu
  python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/bundle.tar.xz /tmp/lmscope-gpu
  export LD_LIBRARY_PATH=/tmp/lmscope-gpu/lib:$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  missing=$(ldd /tmp/lmscope-gpu/bin/* 2>&1 | grep -E "not found|version .* not found" | sort -u)
  if [ -z "$missing" ] && /tmp/lmscope-gpu/bin/lmscope-bench --help >/dev/null 2>&1; then
    BIN=/tmp/lmscope-gpu/bin
    note "- binaries: the carried bundle ($(head -1 /tmp/lmscope-gpu/BUILD-INFO); $(sed -n 3p /tmp/lmscope-gpu/BUILD-INFO))"
  else
    note "- the carried bundle does not load here: $(echo "$missing" | head -3 | tr '\n' ' '); building instead"
  fi
fi
if [ -z "$BIN" ]; then
  export LD_LIBRARY_PATH=$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  gen=""; command -v ninja >/dev/null && gen="-G Ninja"
  tb=$(date +%s)
  if timeout 300 cmake -S . -B /tmp/build-gpu $gen -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 &&
     timeout 300 cmake --build /tmp/build-gpu -j"$JOBS" --target test_cuda lmscope-bench lmscope-trace >> "$OUT/build.log" 2>&1; then
    BIN=/tmp/build-gpu
    note "- binaries: built here for sm_90 in $(( $(date +%s) - tb )) s"
  else
    fail "no binaries: no loadable bundle and the build here failed (tail of build.log below)"
    tail -15 "$OUT/build.log" | sed 's/^/    /' | tee -a "$REPORT"
    note "Hint: run 'scripts/gpu-check.sh bundle' on the development machine and carry .gpu"
    exit 1
  fi
fi

# ---- 2. the CUDA tests ----------------------------------------------------------------------
note ""
note "## CUDA tests ($(elapsed))"
LMSCOPE_SOURCE_DIR=$ROOT timeout 300 "$BIN/test_cuda" > "$OUT/test_cuda.log" 2>&1
rc=$?
passed=$(grep -c '^\[       OK \]' "$OUT/test_cuda.log")
failed=$(grep -c '^\[  FAILED  \] .*(' "$OUT/test_cuda.log")
skipped=$(grep -c '^\[  SKIPPED \] .*(' "$OUT/test_cuda.log")
nodev=$(grep -c '^no CUDA device' "$OUT/test_cuda.log")   # the CLI tests skip by design where a device is
note "test_cuda exit $rc: $passed passed, $failed failed, $skipped skipped ($nodev for want of a device)"
[ "$rc" -eq 0 ] || fail "test_cuda exited $rc"
if [ "$nodev" -gt 0 ]; then
  fail "tests skipped on the GPU machine for want of a device:"
  grep '^no CUDA device' "$OUT/test_cuda.log" | sort -u | head -3 | sed 's/^/    /' | tee -a "$REPORT"
fi
grep '^\[  FAILED  \] .*(' "$OUT/test_cuda.log" | head -20 | sed 's/^/    /' | tee -a "$REPORT"
grep -E '^bf16 .*: ' "$OUT/test_cuda.log" | sed 's/^/    /' | tee -a "$REPORT"

# ---- 3. the benchmark -----------------------------------------------------------------------
note ""
note "## Benchmark: DeepSeek-R1-Distill-Qwen-1.5B shapes, random bf16 weights ($(elapsed))"
MODEL=/tmp/lmscope-ds15
rm -rf "$MODEL"
BENCH=(--prompt-len 512 --decode 64 --repeats 3)
if python3 -c "import torch, transformers; assert torch.cuda.is_available()" 2>/dev/null; then
  # HF builds the random model on the GPU, saves it for lmscope, and times itself (sdpa).
  timeout 300 python3 scripts/bench_hf.py --model deepseek-r1-1.5b --device cuda --dtype bfloat16 --attn sdpa \
      --batch 1,8 "${BENCH[@]}" --save "$MODEL" > "$OUT/bench_hf.json" ||
    fail "scripts/bench_hf.py failed"
else
  note "(python3 with torch+transformers and CUDA not found: lmscope alone, on host-made random weights)"
fi
src=$MODEL; [ -f "$MODEL/config.json" ] || src=synthetic:deepseek-r1-1.5b
for b in 1 8; do
  # --loop forward: forward + greedy argmax per step, the work bench_hf.py times
  timeout 240 "$BIN/lmscope-bench" --model "$src" --backend cuda --dtype bf16 --batch $b "${BENCH[@]}" \
      --loop forward --configs none,empty --roofline --json "$OUT/bench_b$b.json" || fail "lmscope-bench batch $b failed"
done
# what hooks cost on the GPU: SmolLM2 shapes, float32, none / empty trace / every hook to HDF5
timeout 120 "$BIN/lmscope-bench" --model synthetic:smollm2 --backend cuda --prompt-len 128 --decode 32 \
    --repeats 3 --json "$OUT/bench_smollm2.json" || fail "lmscope-bench smollm2 (hooks) failed"

python3 - "$OUT" <<'PY' | tee -a "$REPORT"
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p))
    except Exception:
        return None
hf = load("bench_hf.json")
hf_by = {r["batch"]: r for r in (hf or {}).get("by_batch", [])}
print()
print("| engine | batch | prefill tok/s (512) | decode tok/s | decode / roofline |")
print("| --- | --- | --- | --- | --- |")
for b in (1, 8):
    r = load(f"bench_b{b}.json")
    if r:
        roof = r.get("roofline", {})
        frac = roof.get("decode_fraction_of_roofline")
        print(f"| lmscope cuda bf16 | {b} | {r['none']['prefill_tok_s']:.0f} | {r['none']['decode_tok_s']:.1f} | "
              + (f"{100 * frac:.1f}% of {roof['roofline_tok_s']:.0f} tok/s" if frac else "-") + " |")
    h = hf_by.get(b)
    if h:
        print(f"| HF {hf['attn']} bf16 | {b} | {h['prefill_tok_s']:.0f} | {h['decode_tok_s']:.1f} | |")
r1 = load("bench_b1.json")
if r1 and "roofline" in r1:
    roof = r1["roofline"]
    print()
    print(f"Roofline: {roof['bytes_per_step'] / 1e9:.3f} GB read per batch-1 decode step (weights "
          f"{roof['weight_bytes_per_step'] / 1e9:.3f} GB, KV {roof['kv_bytes_per_step'] / 1e6:.1f} MB) over the "
          f"measured copy bandwidth {roof.get('copy_bytes_per_s', 0) / 1e9:.0f} GB/s (read + write, "
          f"{roof.get('device', '?')}). Unused hooks: decode with an empty trace "
          f"{r1['empty']['decode_tok_s']:.1f} tok/s vs none {r1['none']['decode_tok_s']:.1f}.")
if hf:
    print(f"Peer: {hf['peer']} on {hf['device']}, attn {hf['attn']}, same weights (saved by the peer, loaded by lmscope).")
s = load("bench_smollm2.json")
if s:
    print()
    print("Hooks on the GPU (SmolLM2-135M shapes, f32, prompt 128, 32 decode steps):")
    for c in ("none", "empty", "all"):
        if c in s:
            print(f"- {c}: prefill {s[c]['prefill_tok_s']:.0f} tok/s, decode {s[c]['decode_tok_s']:.1f} tok/s")
PY

note ""
note "clocks at end: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null); total $(elapsed)"
[ "$status" -eq 0 ] && note "RESULT: PASS" || note "RESULT: FAIL"
exit $status
