#!/usr/bin/env bash
# Configures an AddressSanitizer + UndefinedBehaviorSanitizer build with clang:
#   scripts/configure-asan.sh                 build-asan/: every library, tool and test (CPU
#                                             only), and the libFuzzer targets of fuzz/
#   scripts/configure-asan.sh --cuda-emulated build-asan-cuda-emu/: the same with the CUDA
#                                             backend and kernels on the CPU emulator
#                                             (-DLMSCOPE_CUDA=EMULATED, docs/cuda.md), no fuzzers
# scripts/sanitize.sh runs the test suite from them, scripts/fuzz.sh the fuzz targets, so the
# instrumented libraries are compiled once for both. -fsanitize=fuzzer-no-link adds libFuzzer's
# coverage counters everywhere (the tests do not use them; they cost the tests little); both
# builds use the same flags, so ccache gives the second the libraries the first compiled.
# No Python module: an instrumented extension cannot load into an uninstrumented interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-asan
cuda=(-DLMSCOPE_CUDA=OFF -DLMSCOPE_FUZZ=ON -DLMSCOPE_PYTHON_MODULE=OFF)
if [ "${1:-}" = --cuda-emulated ]; then
  dir=build-asan-cuda-emu
  cuda=(-DLMSCOPE_CUDA=EMULATED -DLMSCOPE_FUZZ=OFF -DLMSCOPE_PYTHON_MODULE=OFF)
fi
scripts/setup.sh
command -v clang++ >/dev/null || { echo "configure-asan: clang++ is missing (apt-get install clang)"; exit 1; }
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda[@]}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags -fsanitize=fuzzer-no-link" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
