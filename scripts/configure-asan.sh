#!/usr/bin/env bash
# Configures build-asan/: every library, tool and test, and the libFuzzer targets of fuzz/,
# built once with clang and AddressSanitizer + UndefinedBehaviorSanitizer (CPU only).
# scripts/sanitize.sh runs the test suite from it, scripts/fuzz.sh the fuzz targets, so the
# instrumented libraries are compiled once for both. -fsanitize=fuzzer-no-link adds libFuzzer's
# coverage counters everywhere (the tests do not use them; they cost the tests little).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
command -v clang++ >/dev/null || { echo "configure-asan: clang++ is missing (apt-get install clang)"; exit 1; }
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMSCOPE_CUDA=OFF -DLMSCOPE_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags -fsanitize=fuzzer-no-link" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
