#!/usr/bin/env bash
# Mutation checks of the CUDA tests on the CPU emulator (docs/cuda.md): each mutation plants a
# bug a GPU run could hide (an off-by-one in attention's key loop, a missing __syncthreads, a
# wrong shuffle width, a swapped cuBLAS transpose), rebuilds test_cuda in build-cuda-emu/, and
# must make the named tests fail; the source is restored after each, also on Ctrl-C or error.
# Prints one line per mutation; exit 1 if any mutation survives.
#   scripts/cuda-mutations.sh        (after scripts/test.sh has built build-cuda-emu/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-cuda-emu
[ -d "$build" ] || { echo "cuda-mutations: $build/ is missing: run scripts/test.sh first" >&2; exit 2; }

saved=""
restore() { if [ -n "$saved" ]; then cp "$saved.orig" "$saved"; rm -f "$saved.orig"; saved=""; fi; }
trap restore EXIT INT TERM

# mutate FILE OLD NEW FILTER WHAT: replace the one occurrence of OLD, rebuild, expect FILTER to fail.
survivors=0
mutate() {
  local file=$1 old=$2 new=$3 filter=$4 what=$5
  cp "$file" "$file.orig"; saved=$file
  python3 - "$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"cuda-mutations: '{old}' occurs {s.count(old)} times in {path} (expected once)")
open(path, "w").write(s.replace(old, new))
PY
  cmake --build "$build" --target test_cuda -j2 >/dev/null
  local status=0
  (cd "$build" && OMP_NUM_THREADS=1 ./test_cuda --gtest_filter="$filter" >"$OLDPWD/$build/mutation.log" 2>&1) || status=$?
  # A filter that selects no test would pass every mutation: that is a broken check, not a catch.
  if grep -q '^\[==========\] 0 tests' "$build/mutation.log"; then
    echo "cuda-mutations: --gtest_filter='$filter' selects no test" >&2
    exit 2
  fi
  if [ "$status" -eq 0 ]; then
    echo "SURVIVED  $what ($file): $filter still passes"
    survivors=$((survivors + 1))
  else
    echo "caught    $what: $(grep -c '^\[  FAILED  \]' "$build/mutation.log" | tr -d ' ') failing lines in $filter"
  fi
  restore
}

mutate kernels/attention.cu 'const int64_t s_begin = split * per_split, s_end = min(a.S, s_begin + per_split);' \
  'const int64_t s_begin = split * per_split, s_end = min(a.S - 1, s_begin + per_split);' \
  '*CudaAttention.*' "off-by-one in the fused attention's key loop"
mutate kernels/elementwise.cu '  if (lane == 0) warp_sums[warp] = sum_sq;
  __syncthreads();' '  if (lane == 0) warp_sums[warp] = sum_sq;' \
  'CudaKernels.RmsNorm' "missing __syncthreads in rmsnorm"
mutate kernels/warp_reduce.cuh '__shfl_xor_sync(0xffffffffu, v, off)' '__shfl_xor_sync(0xffffffffu, v, off, 16)' \
  'CudaKernels.DecodeMatmul*:*CudaAttention.*' "wrong shuffle width in warp_sum"
mutate lib/backend/cuda/cuda_backend.cpp 'cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N,' 'cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N,' \
  'CudaKernels.LinearF32*' "swapped cuBLAS transpose"
cmake --build "$build" --target test_cuda -j2 >/dev/null   # back to the real sources
[ "$survivors" -eq 0 ]
