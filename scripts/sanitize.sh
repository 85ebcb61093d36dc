#!/usr/bin/env bash
# The test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (clang;
# build-asan/, configured by scripts/configure-asan.sh) and run: any report fails the run
# (halt_on_error; UBSan aborts).
#   scripts/sanitize.sh              build everything, run every test
#   scripts/sanitize.sh --ci         a shorter pass: every test except the lessons and the
#                                    README's blocks (real-model runs of the same tools, ~5x
#                                    slower instrumented; the release suite runs them)
#   scripts/sanitize.sh --cuda       the CUDA backend and kernels on the CPU emulator
#                                    (build-asan-cuda-emu/): every test of tests/cuda
#   scripts/sanitize.sh -R Trace     other arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
dir=build-asan
if [ "${1:-}" = "--ci" ]; then args=(-E 'Walkthrough|Readme'); fi
if [ "${1:-}" = "--cuda" ]; then
  dir=build-asan-cuda-emu
  args=(-R Cuda "${@:2}")
  scripts/configure-asan.sh --cuda-emulated
  cmake --build "$dir" -j"${JOBS:-$(nproc)}" --target test_cuda
else
  scripts/configure-asan.sh
  cmake --build "$dir" -j"${JOBS:-$(nproc)}"
fi
# detect_leaks: our leaks fail. fuzz/lsan-libhdf5.supp names libhdf5 1.10.8's own leaks (on
# damaged files only); OpenMP's runtime keeps thread state for the process's life, which
# LeakSanitizer does not report as a leak.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan-libhdf5.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
ctest --test-dir "$dir" -j"${JOBS:-$(nproc)}" --output-on-failure "${args[@]}"
