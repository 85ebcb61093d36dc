#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (-fsanitize=fuzzer,address,undefined) into
# build-fuzz/ and runs each for SECONDS (default 60) from its committed seed corpus
# (fuzz/corpus/<target>; fuzz/README.md). A crash, a sanitizer report, a hang (-timeout) or a
# leak stops that target and fails the script; its reproducer is left in build-fuzz/findings/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 fuzz_gguf
# New inputs the fuzzer finds go to build-fuzz/corpus/<target> (the committed corpus is read only).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_safetensors fuzz_gguf fuzz_tokenizer fuzz_trace)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMSCOPE_CUDA=OFF -DLMSCOPE_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$san -fsanitize=fuzzer-no-link" >/dev/null
cmake --build build-fuzz -j"${JOBS:-$(nproc)}" --target "${targets[@]}"
mkdir -p build-fuzz/findings
status=0
for t in "${targets[@]}"; do
  seeds="fuzz/corpus/${t#fuzz_}"   # fuzz_gguf reads fuzz/corpus/gguf
  [ -d "$seeds" ] || { echo "fuzz: no seed corpus $seeds"; exit 1; }
  mkdir -p "build-fuzz/corpus/$t"
  echo "== $t: ${seconds}s"
  if ! ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
       "build-fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=1048576 \
       -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1 \
       "build-fuzz/corpus/$t" "$seeds" 2>&1 | tee "build-fuzz/$t.log" | grep -E "^(#[0-9]+ +DONE|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units)"; then
    :
  fi
  if grep -qE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: " "build-fuzz/$t.log"; then
    echo "$t: FINDING (build-fuzz/$t.log, reproducer in build-fuzz/findings/)"
    status=1
  fi
done
exit $status
