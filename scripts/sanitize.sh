#!/usr/bin/env bash
# The whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ (CPU only): any report fails the run (halt_on_error, and UBSan aborts).
#   scripts/sanitize.sh            configure, build everything, run ctest
#   scripts/sanitize.sh -R Trace   extra arguments go to ctest
# Takes a while: every library, tool and test is rebuilt with instrumentation.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc)}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMSCOPE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-asan -j"$jobs"
# detect_leaks: our leaks fail; suppress nothing. OpenMP's runtime keeps thread state for
# the process's life, which LeakSanitizer does not report as a leak.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
ctest --test-dir build-asan -j"$jobs" --output-on-failure "$@"
