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
# utf8proc) cannot be installed there. The bundle's binaries need the glibc and libstdc++
# versions BUILD-INFO names (glibc 2.34 and GCC 11's libstdc++ for lmscope itself; the bundle
# leaves libstdc++ and libgcc_s to the machine, whose nvcc brings newer ones), the NVIDIA
# driver and cuBLAS 13 (libcublas.so.13: the CUDA toolkit or torch's nvidia wheels). Only
# lmscope's own commands see the bundle's libraries (python3 and cmake keep the machine's).
# Without a bundle, or if its binaries do not load, the script configures and builds there
# instead (cmake, sm_90, all cores), which works only where those libraries are installed.
#
# $OUT gets at most four files (the device tool brings back eight): report.md (the summary),
# run.log (everything printed), test_cuda.log, and details.tar.gz (the benchmark JSON, the
# per-op device times, the sanitizer and build logs). Exit 0 only when the build, every CUDA
# test (none skipped for want of a device), the benchmark and the sanitizers succeeded.
# Budget: one deadline, 470 s after the start (GPU_CHECK_BUDGET_S), from which every step's
# timeout takes what is left, so a hung step still leaves the report.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# What the binaries are built from: both halves hash the same files, so a stale bundle shows.
source_hash() {
  find CMakeLists.txt lib kernels tools tests -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \
      -o -name '*.cuh' -o -name CMakeLists.txt \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}

# What runs on the GPU machine: the CUDA tests and the commands they and this script call.
BINARIES="test_cuda lmscope-bench lmscope-trace lmscope-diff lmscope-patch"

# ---------------------------------------------------------------------------------------
if [ "${1:-}" = "bundle" ]; then
  set -e
  arch=${CUDA_ARCH:-90}
  build=${BUILD_DIR:-build-gpu}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target $BINARIES
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" .gpu
  for b in $BINARIES; do cp "$build/$b" "$stage/bin/"; done
  # every shared library the binaries load, except glibc's own, the driver's and CUDA's
  ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|ld-linux*) ;;
      libstdc++.so*|libgcc_s.so*) ;;   # the machine's (newer with its nvcc); Debian's needs glibc 2.36
      libcuda.so*|libcublas*|libcudart*|libnvidia*) ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
  {
    echo "commit $(git rev-parse HEAD 2>/dev/null) (+ working tree changes: $(git status --porcelain | wc -l) files)"
    echo "built $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "nvcc $(nvcc --version | tail -1), CMAKE_CUDA_ARCHITECTURES=$arch"
    echo "sources $(source_hash)"
    echo "needs: $(objdump -T "$stage"/bin/* "$stage"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*\|GLIBCXX_[0-9.]*' \
      | sort -t_ -k1,1 -k2V -u | awk -F_ '{last[$1]=$0} END {print last["GLIBC"], last["GLIBCXX"]}')"
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
WORK=/tmp/lmscope-gpu-check            # everything but the four files of $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
exec > >(tee -a "$OUT/run.log") 2>&1
tee_pid=$!
REPORT=$OUT/report.md
: > "$REPORT"
note() { echo "$*" | tee -a "$REPORT"; }
status=0
fail() { note "FAIL: $*"; status=1; }
t0=$(date +%s)
DEADLINE=$(( t0 + ${GPU_CHECK_BUDGET_S:-470} ))
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
# budget CAP: seconds for the next step, at most CAP and at most what is left before the deadline
budget() { local left=$(( DEADLINE - $(date +%s) )); (( left > $1 )) && left=$1; (( left < 1 )) && left=1; echo $left; }
time_left() { echo $(( DEADLINE - $(date +%s) )); }
finish() {   # pack the details, close the log
  tar -C "$WORK" -czf "$OUT/details.tar.gz" . 2>/dev/null
  exec 1>&- 2>&-
  wait $tee_pid 2>/dev/null
}
trap finish EXIT
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
extra=()
[ -n "$cublas_dir" ] && extra+=("$cublas_dir")
[ -d /usr/local/nvidia/lib64 ] && extra+=(/usr/local/nvidia/lib64)
note "- cuBLAS from: ${cublas_dir:-not found, relying on the loader paths}"

# Only lmscope's commands run with LM_LD (the bundle's libraries): python3 keeps the machine's.
join_path() { local IFS=:; echo "$*"; }
LM_LD=$(join_path "${extra[@]}" ${LD_LIBRARY_PATH:+"$LD_LIBRARY_PATH"})
lm() { LD_LIBRARY_PATH=$LM_LD "$@"; }

BIN=""
if [ -f .gpu/bundle.tar.xz ]; then
  rm -rf /tmp/lmscope-gpu && mkdir -p /tmp/lmscope-gpu
  python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/bundle.tar.xz /tmp/lmscope-gpu
  LM_LD=$(join_path /tmp/lmscope-gpu/lib "${extra[@]}" ${LD_LIBRARY_PATH:+"$LD_LIBRARY_PATH"})
  missing=$(lm ldd /tmp/lmscope-gpu/bin/* 2>&1 | grep -E "not found|version .* not found" | sort -u)
  if [ -z "$missing" ] && lm /tmp/lmscope-gpu/bin/lmscope-bench --help >/dev/null 2>&1; then
    BIN=/tmp/lmscope-gpu/bin
    note "- binaries: the carried bundle ($(head -1 /tmp/lmscope-gpu/BUILD-INFO); $(grep -E '^(nvcc|needs)' /tmp/lmscope-gpu/BUILD-INFO | tr '\n' ' '))"
    built_from=$(sed -n 's/^sources //p' /tmp/lmscope-gpu/BUILD-INFO)
    [ "$built_from" = "$(source_hash)" ] ||
      fail "the bundle was built from other sources ($built_from) than these ($(source_hash)): run 'scripts/gpu-check.sh bundle' again before the device run"
  else
    note "- the carried bundle does not load here: $(echo "$missing" | head -3 | tr '\n' ' '); building instead"
    LM_LD=$(join_path "${extra[@]}" ${LD_LIBRARY_PATH:+"$LD_LIBRARY_PATH"})
  fi
fi
if [ -z "$BIN" ]; then
  gen=""; command -v ninja >/dev/null && gen="-G Ninja"
  tb=$(date +%s)
  if timeout "$(budget 240)" cmake -S . -B /tmp/build-gpu $gen -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 > "$WORK/build.log" 2>&1 &&
     timeout "$(budget 240)" cmake --build /tmp/build-gpu -j"$JOBS" --target $BINARIES >> "$WORK/build.log" 2>&1; then
    BIN=/tmp/build-gpu
    note "- binaries: built here for sm_90 in $(( $(date +%s) - tb )) s"
  else
    fail "no binaries: no loadable bundle and the build here failed (tail of build.log below)"
    tail -15 "$WORK/build.log" | sed 's/^/    /' | tee -a "$REPORT"
    note "Hint: run 'scripts/gpu-check.sh bundle' on the development machine and carry .gpu"
    exit 1
  fi
fi

# ---- 2. the CUDA tests ----------------------------------------------------------------------
note ""
note "## CUDA tests ($(elapsed))"
LMSCOPE_SOURCE_DIR=$ROOT LMSCOPE_TOOLS_DIR=$BIN timeout "$(budget 200)" env LD_LIBRARY_PATH="$LM_LD" "$BIN/test_cuda" > "$OUT/test_cuda.log" 2>&1
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
# other skips, with their reasons (SmolLM2's model is not on that machine unless carried)
grep -B1 '^\[  SKIPPED \] .*(' "$OUT/test_cuda.log" | grep -v '^\[\|^--\|^no CUDA device\|Skipped$' | sort | uniq -c \
  | sed 's/^/    skipped: /' | tee -a "$REPORT"
grep '^\[  FAILED  \] .*(' "$OUT/test_cuda.log" | head -20 | sed 's/^/    /' | tee -a "$REPORT"
grep -E '^bf16 .*: |^smollm2/' "$OUT/test_cuda.log" | sed 's/^/    /' | tee -a "$REPORT"

# ---- 3. the benchmark -----------------------------------------------------------------------
note ""
note "## Benchmark: DeepSeek-R1-Distill-Qwen-1.5B shapes, random bf16 weights ($(elapsed))"
MODEL=/tmp/lmscope-ds15
rm -rf "$MODEL"
BENCH=(--prompt-len 512 --decode 64 --repeats 3)
if probe=$(python3 -c "import torch, transformers; assert torch.cuda.is_available(), 'no CUDA in torch'" 2>&1); then
  # HF builds the random model on the GPU, saves it for lmscope, and times itself (sdpa).
  timeout "$(budget 180)" python3 scripts/bench_hf.py --model deepseek-r1-1.5b --device cuda --dtype bfloat16 --attn sdpa \
      --batch 1,8 "${BENCH[@]}" --save "$MODEL" > "$WORK/bench_hf.json" ||
    fail "scripts/bench_hf.py failed"
else
  note "(python3 with torch+transformers and CUDA not usable: $(echo "$probe" | tail -1); lmscope alone, on host-made random weights)"
fi
src=$MODEL; [ -f "$MODEL/config.json" ] || src=synthetic:deepseek-r1-1.5b
for b in 1 8; do
  # --loop forward: forward + greedy argmax per step, the work bench_hf.py times
  timeout "$(budget 75)" env LD_LIBRARY_PATH="$LM_LD" "$BIN/lmscope-bench" --model "$src" --backend cuda --dtype bf16 \
      --batch $b "${BENCH[@]}" --loop forward --configs none,empty --roofline --json "$WORK/bench_b$b.json" ||
    fail "lmscope-bench batch $b failed"
done
# decode's matmuls through cuBLAS instead of kernels/gemv.cu; decode steps as CUDA graphs (off
# by default until this measures them); and where a step's device time goes
for variant in LMSCOPE_CUDA_GEMV=0:cublas LMSCOPE_CUDA_GRAPHS=1:graphs; do
  for b in 1 8; do
    [ "${variant#*:}" = cublas ] && [ $b = 8 ] && continue   # batch 8 is on cuBLAS anyway
    timeout "$(budget 60)" env LD_LIBRARY_PATH="$LM_LD" "${variant%:*}" "$BIN/lmscope-bench" --model "$src" --backend cuda \
        --dtype bf16 --batch $b "${BENCH[@]}" --loop forward --configs none --json "$WORK/bench_b${b}_${variant#*:}.json" \
        2> "$WORK/bench_b${b}_${variant#*:}.err" || fail "lmscope-bench batch $b with ${variant%:*} failed"
    cat "$WORK/bench_b${b}_${variant#*:}.err"
    grep -h '^lmscope cuda graphs' "$WORK/bench_b${b}_${variant#*:}.err" | sed "s/^/    batch $b: /" | tee -a "$REPORT"
  done
done
timeout "$(budget 60)" env LD_LIBRARY_PATH="$LM_LD" LMSCOPE_CUDA_OP_TIMES=1 "$BIN/lmscope-bench" --model "$src" --backend cuda \
    --dtype bf16 --batch 1 --prompt-len 512 --decode 64 --repeats 1 --loop forward --configs none \
    > "$WORK/op_times_b1.txt" 2>&1 || fail "lmscope-bench with LMSCOPE_CUDA_OP_TIMES failed"
# what hooks cost on the GPU: SmolLM2 shapes, float32, none / empty trace / every hook to HDF5
timeout "$(budget 45)" env LD_LIBRARY_PATH="$LM_LD" "$BIN/lmscope-bench" --model synthetic:smollm2 --backend cuda \
    --prompt-len 128 --decode 32 --repeats 3 --json "$WORK/bench_smollm2.json" || fail "lmscope-bench smollm2 (hooks) failed"

python3 - "$WORK" <<'PY' | tee -a "$REPORT"
import json, os, sys
work = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(work, name)))
    except Exception:
        return None
hf = load("bench_hf.json")
hf_by = {r["batch"]: r for r in (hf or {}).get("by_batch", [])}
print()
print("| engine | batch | prefill tok/s (512) | decode tok/s | decode / roofline |")
print("| --- | --- | --- | --- | --- |")
def row(name, b, r):
    roof = r.get("roofline", {})
    frac = roof.get("decode_fraction_of_roofline")
    print(f"| {name} | {b} | {r['none']['prefill_tok_s']:.0f} | {r['none']['decode_tok_s']:.1f} | "
          + (f"{100 * frac:.1f}% of {roof['roofline_tok_s']:.0f} tok/s" if frac else "-") + " |")
for b in (1, 8):
    r = load(f"bench_b{b}.json")
    if r:
        row("lmscope cuda bf16", b, r)
    if load(f"bench_b{b}_graphs.json"):
        row("lmscope, decode steps as CUDA graphs", b, load(f"bench_b{b}_graphs.json"))
    if load(f"bench_b{b}_cublas.json"):
        row("lmscope, decode matmuls by cuBLAS", b, load(f"bench_b{b}_cublas.json"))
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
try:
    lines = open(os.path.join(work, "op_times_b1.txt")).read().splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("CUDA device time per op"))
    print()
    print("Device time per op, batch 1, one prefill of 512 + 64 decode steps (LMSCOPE_CUDA_OP_TIMES=1):")
    print("```")
    print("\n".join(lines[at:at + 28]))
    print("```")
except Exception:
    pass
PY

# ---- 4. sanitizers on the kernel tests (last: the figures above are already safe) ----------
note ""
note "## compute-sanitizer ($(elapsed))"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
[ -n "$sanitizer" ] || sanitizer=$(find /usr/local /opt -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -1)
if [ -n "$sanitizer" ]; then
  for tool in memcheck racecheck; do
    filter='CudaKernels.*:Shapes/CudaAttention.*'
    [ "$tool" = racecheck ] && filter='Shapes/CudaAttention.*'   # the kernels with shared memory
    if [ "$(time_left)" -lt 30 ]; then note "$tool: not run, the time budget is spent"; continue; fi
    LMSCOPE_SOURCE_DIR=$ROOT timeout "$(budget 90)" env LD_LIBRARY_PATH="$LM_LD" "$sanitizer" --tool $tool \
        --error-exitcode 99 "$BIN/test_cuda" --gtest_filter="$filter" > "$WORK/sanitizer_$tool.log" 2>&1
    rc=$?
    case $rc in
      0) note "$tool ($filter): clean, $(grep -c '^\[       OK \]' "$WORK/sanitizer_$tool.log") tests" ;;
      124) note "$tool ($filter): stopped at its time limit (not a failure of the code)" ;;
      *) fail "$tool ($filter) exit $rc"; grep -m8 -E '^=+ (Invalid|Race|Error|ERROR)|^=+ +at ' "$WORK/sanitizer_$tool.log" \
           | sed 's/^/    /' | tee -a "$REPORT" ;;
    esac
  done
else
  fail "compute-sanitizer not found (PATH, /usr/local/cuda, /opt): not run"
fi

note ""
note "clocks at end: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null); total $(elapsed)"
[ "$status" -eq 0 ] && note "RESULT: PASS" || note "RESULT: FAIL"
exit $status
