#!/usr/bin/env bash
# Prepares a machine for a class (docs/workshop.md): builds what the lessons and notebooks use
# (the tools, the Python module and the lesson runner, not every test binary), fetches SmolLM2
# and the R1-Distill tokenizer, runs every lesson in walkthroughs/ as the lesson runner does
# (tests/experiments/walkthrough_test.cpp, which checks each expect line) and every notebook
# (tests/python_module/test_notebooks.py), and keeps each lesson's files — traces, reports,
# pictures, JSON — in OUT_DIR/<lesson>/. Its last line says whether the machine is ready.
#
#   scripts/prepare-workshop.sh [OUT_DIR]     (default: <repo>/workshop)
#
# The runner links build/, golden/, walkthroughs/ and models/ into each lesson's folder; they
# are made relative here, so OUT_DIR inside the checkout travels with it (rsync -a or cp -a of
# the checkout keeps them), and the last line gives OUT_DIR's size, links not followed.
# The lessons and notebooks run with OMP_NUM_THREADS=1: their numbers are measured with one
# thread (lesson 14 says which of them move with two). Exit status: 0 when everything passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
out="$(realpath -m "${1:-workshop}")"
start=$(date +%s)
log="$(mktemp -t prepare-workshop.XXXXXX)"
trap 'rm -f "$log"' EXIT

# One line per stage; a stage that fails prints its log's tail and the verdict, and stops.
stage() {
  local what="$1"; shift
  local t0=$(date +%s)
  if "$@" >"$log" 2>&1; then
    echo "prepare-workshop: $what ($(( $(date +%s) - t0 )) s)"
  else
    tail -n 30 "$log"
    echo "prepare-workshop: NOT READY: $what failed (above)"
    exit 1
  fi
}

build() {
  scripts/setup.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_TESTS=ON -DLMSCOPE_PYTHON_MODULE=ON \
        -DLMSCOPE_CUDA="${LMSCOPE_CUDA:-OFF}"
  local tools=()
  for f in tools/lmscope-*.cpp; do tools+=("$(basename "$f" .cpp)"); done
  cmake --build build -j2 --target "${tools[@]}" lmscope_python_core test_experiments
}

stage "built the tools, the Python module and the lesson runner" build
stage "fetched SmolLM2" scripts/fetch-model.sh
stage "fetched the R1-Distill tokenizer (lessons 01, 03)" scripts/fetch-r1-tokenizer.sh
lessons=(walkthroughs/[0-9][0-9]-*.md)
notebooks=(walkthroughs/notebooks/*.ipynb)
stage "ran the ${#lessons[@]} lessons, every expect line held" \
  env LMSCOPE_LESSON_OUT="$out" build/test_experiments --gtest_filter='Lessons/Walkthrough.*' --gtest_brief=1
stage "ran the ${#notebooks[@]} notebooks, every expect line held" \
  env LMSCOPE_BINARY_DIR="$root/build" OMP_NUM_THREADS=1 \
  "$(sed -n 's/^LMSCOPE_PYTHON:FILEPATH=//p' build/CMakeCache.txt)" -m pytest -q -p no:cacheprovider \
  tests/python_module/test_notebooks.py

# The runner's links are absolute (this checkout's paths): relative ones survive a copy.
while IFS= read -r link; do
  target="$(readlink "$link")"
  case "$target" in /*) ln -sfn "$(realpath -m -s --relative-to="$(dirname "$link")" "$target")" "$link" ;; esac
done < <(find "$out" -maxdepth 2 -type l)

echo "prepare-workshop: READY: ${#lessons[@]} lessons and ${#notebooks[@]} notebooks pass;" \
     "their files are in $out ($(du -sh "$out" | cut -f1), links relative)," \
     "$(( $(date +%s) - start )) s in all"
