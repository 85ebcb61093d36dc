#!/usr/bin/env bash
# The numeric tests, the lessons and the notebooks again under each OpenBLAS sgemm kernel this
# processor runs. Debian's OpenBLAS is built for every x86 core (DYNAMIC_ARCH) and picks its
# kernels at load time: Haswell's on an AVX2 machine, SkylakeX's or Cooperlake's where AVX-512
# is present, unless OPENBLAS_CORETYPE forces one. Each kernel adds a matrix product's float32
# terms in its own order, so a user's machine computes other last bits than CI's; a lesson's
# number has to hold on all of them (docs/tolerances.md says which numbers are exact and which
# are checked with a tolerance, and the spread measured across these kernels).
#   scripts/test-blas-kernels.sh                  after scripts/test.sh (uses build/)
#   scripts/test-blas-kernels.sh Sandybridge      one core type (OPENBLAS_CORETYPE's names)
# Lanes by default: the autodetected kernel with OPENBLAS_CORETYPE unset (the environment may
# set it: this lane unsets it), Haswell where the CPU has AVX2 + FMA, SkylakeX where it has
# AVX-512 (F, BW, VL, DQ), Sandybridge where it has AVX (a 2011-2013 laptop's kernel: no FMA,
# so every product is rounded before it is added; on an AVX2-only machine the one other
# summation order it can run). Cooperlake cannot be forced by name in OpenBLAS 0.3.21: an
# AVX-512 BF16 processor (AMD Zen 4/5, Intel Cooper Lake and later) runs it in the autodetected
# lane. With no lanes named, the kernel of the calling environment is taken as tested (by
# scripts/test.sh, which .ci/run runs first); a lane whose kernel was tested is skipped, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lanes.sh
py=${PYTHON:-python3}
# The OpenBLAS the tools load, and the kernel it picks under an environment.
blas=$(ldd build/lmscope-trace | awk '/libopenblas/ { print $3; exit }')
[ -n "$blas" ] || { echo "test-blas-kernels: build/lmscope-trace does not load OpenBLAS (ldd)" >&2; exit 1; }
corename() {
  "$@" "$py" -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); l.openblas_get_corename.restype = ctypes.c_char_p
print(l.openblas_get_corename().decode())' "$blas" 2>/dev/null
}
lanes=("$@")
done_cores=" "
if [ ${#lanes[@]} -eq 0 ]; then
  lanes=(auto)
  has avx2 fma && lanes+=(Haswell)
  has avx512f avx512bw avx512vl avx512dq && lanes+=(SkylakeX)
  has avx && lanes+=(Sandybridge)
  done_cores+="$(corename env) "
  echo "test-blas-kernels: this environment's OpenBLAS kernel, tested by scripts/test.sh:$done_cores"
fi
# What may change with the sgemm kernel: the numeric tests, the lessons (Walkthrough), the
# README's blocks and the Python module's tests (its notebooks and parity with the tools).
tests="$numeric_tests|Walkthrough|Readme|python_module"
failed=()
for lane in "${lanes[@]}"; do
  if [ "$lane" = auto ]; then env=(env -u OPENBLAS_CORETYPE); else env=(env OPENBLAS_CORETYPE="$lane"); fi
  core=$(corename "${env[@]}")
  if [ "$lane" != auto ] && [ "$core" != "$lane" ]; then
    # OpenBLAS falls back to its autodetected kernel for a name it does not know.
    echo "test-blas-kernels: OPENBLAS_CORETYPE=$lane: this OpenBLAS runs $core instead; lane skipped"
    continue
  fi
  if [[ "$done_cores" == *" $core "* ]]; then
    echo "test-blas-kernels: $lane: the $core kernel is tested already; lane skipped"
    continue
  fi
  done_cores+="$core "
  echo "test-blas-kernels: $lane (OpenBLAS core $core)"
  "${env[@]}" OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} ctest --test-dir build --output-on-failure -j2 -R "$tests" ||
    failed+=("$lane ($core)")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-blas-kernels: FAILED under: ${failed[*]}" >&2
  exit 1
fi
