#!/usr/bin/env bash
# The test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (clang, CPU only;
# build-asan/, configured by scripts/configure-asan.sh) and run: any report fails the run
# (halt_on_error; UBSan aborts).
#   scripts/sanitize.sh              build everything, run every test
#   scripts/sanitize.sh --ci         what .ci/run runs: every test except the lessons and the
#                                    README's blocks (real-model runs of the same tools, ~5x
#                                    slower instrumented; the release suite runs them)
#   scripts/sanitize.sh -R Trace     other arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
if [ "${1:-}" = "--ci" ]; then args=(-E 'Walkthrough|Readme'); fi
scripts/configure-asan.sh
cmake --build build-asan -j"${JOBS:-$(nproc)}"
# detect_leaks: our leaks fail. fuzz/lsan-libhdf5.supp names libhdf5 1.10.8's own leaks (on
# damaged files only); OpenMP's runtime keeps thread state for the process's life, which
# LeakSanitizer does not report as a leak.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan-libhdf5.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
ctest --test-dir build-asan -j"${JOBS:-$(nproc)}" --output-on-failure "${args[@]}"
