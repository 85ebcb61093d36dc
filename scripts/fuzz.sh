#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (-fsanitize=fuzzer,address,undefined) into
# build-asan/ (scripts/configure-asan.sh, shared with scripts/sanitize.sh) and runs each for
# SECONDS (default 60) from its committed seed corpus (fuzz/corpus/<target>; fuzz/README.md).
# A crash, a sanitizer report, a hang (-timeout), a leak or an out-of-memory is kept in
# build-asan/findings/<target>/: its reproducer, and the sanitizers' report.<pid> written as it
# happened; the script fails when fuzz/triage.py says one of them is lmscope's (libhdf5's own
# are listed).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 fuzz_gguf
# New inputs the fuzzer finds go to build-asan/corpus/<target> (the committed corpus is read only).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_safetensors fuzz_gguf fuzz_tokenizer fuzz_trace)
scripts/configure-asan.sh
# Every library too, built and not run: what scripts/sanitize.sh (the release check) compiles
# must keep compiling under clang, which CI builds nothing else with.
libraries=(lmscope_backend_cpu lmscope_model lmscope_intervene lmscope_generate lmscope_compare lmscope_runs
           lmscope_stepper lmscope_experiments lmscope_quant lmscope_report)
cmake --build build-asan -j"${JOBS:-$(nproc)}" --target "${targets[@]}" "${libraries[@]}"
status=0
for t in "${targets[@]}"; do
  seeds="fuzz/corpus/${t#fuzz_}"   # fuzz_gguf reads fuzz/corpus/gguf
  [ -d "$seeds" ] || { echo "fuzz: no seed corpus $seeds"; exit 1; }
  findings="build-asan/findings/$t"
  rm -rf "$findings"
  mkdir -p "build-asan/corpus/$t" "$findings"
  echo "== $t: ${seconds}s"
  # allocator_may_return_null: a malloc larger than ASan's 1 TiB maximum returns NULL, as
  # glibc's would (libhdf5 asks for 2^50 bytes on some damaged headers and handles the NULL);
  # lmscope bounds its allocations before making them, and libFuzzer still reports a single
  # malloc over -rss_limit_mb. fuzz/lsan-libhdf5.supp names libhdf5's own leaks by function:
  # fuzz_trace records full allocation stacks (libhdf5 has no frame pointers) so they match.
  asan="detect_leaks=1:allocator_may_return_null=1"
  [ "$t" = fuzz_trace ] && asan="$asan:fast_unwind_on_malloc=0"
  # log_path: every fuzzing process writes what its sanitizers print to report.<pid>, so each
  # finding keeps the stack it had when it happened (fuzz/triage.py judges those, not re-runs).
  san="log_path=$PWD/$findings/report"
  export ASAN_OPTIONS="$asan:$san" UBSAN_OPTIONS="print_stacktrace=1:$san" \
         LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan-libhdf5.supp:print_suppressions=0"
  # -malloc_limit_mb: one allocation over half the RSS limit is reported as it is made, with
  # the stack that made it (symbolized while memory is still free). At the RSS limit only
  # libFuzzer's heap profile is left to judge by, after the fact (fuzz/triage.py).
  limits=(-timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=1048576)
  # Fork mode: a finding is saved and fuzzing goes on, so that libhdf5's own bugs (fuzz_trace)
  # do not end the run.
  "build-asan/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" \
      "${limits[@]}" -artifact_prefix="$findings/" "build-asan/corpus/$t" "$seeds" > "build-asan/$t.log" 2>&1 || true
  runs=$(grep -oE '^#[0-9]+' "build-asan/$t.log" | tail -1 | tr -d '#')
  shopt -s nullglob
  reproducers=("$findings"/crash-* "$findings"/leak-* "$findings"/timeout-* "$findings"/oom-*)
  reports=("$findings"/report.*)
  shopt -u nullglob
  echo "$t: ${runs:-0} inputs in ${seconds}s, ${#reproducers[@]} reproducers, ${#reports[@]} sanitizer reports (log: build-asan/$t.log)"
  if [ ${#reports[@]} -gt 0 ] && ! python3 fuzz/triage.py "${reports[@]}"; then
    echo "$t: FINDING in lmscope (reports and reproducers in $findings/)"
    status=1
  elif [ ${#reproducers[@]} -gt ${#reports[@]} ]; then
    # Each process that saved a reproducer ended by a report; fewer reports: one was lost.
    echo "$t: ${#reproducers[@]} reproducers but ${#reports[@]} sanitizer reports in $findings/"
    status=1
  fi
done
exit $status
