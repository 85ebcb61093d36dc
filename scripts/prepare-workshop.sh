#!/usr/bin/env bash
# Builds every lesson's outputs ahead of a class: builds lmscope (scripts/build.sh), fetches
# SmolLM2 and the R1-Distill tokenizer (scripts/fetch-model.sh, fetch-r1-tokenizer.sh), then
# runs every lesson in walkthroughs/ exactly as the lesson runner does
# (tests/experiments/walkthrough_test.cpp, which checks each expect line),
# keeping each lesson's files — traces, reports, pictures, JSON — in OUT_DIR/<lesson>/.
# docs/workshop.md says which lesson needs which of them, and what this took when measured.
#
#   scripts/prepare-workshop.sh [OUT_DIR]     (default: <repo>/workshop)
#
# The runner runs every block with OMP_NUM_THREADS=1: the lessons' numbers are measured with
# one thread (lesson 14 says which of them move with two). Exit status: the test binary's
# (non-zero when a lesson fails its checks; its output names the block).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-workshop}")"
start=$(date +%s)
scripts/build.sh >/dev/null
scripts/fetch-model.sh >/dev/null
scripts/fetch-r1-tokenizer.sh >/dev/null   # lessons 01 and 03
status=0
LMSCOPE_LESSON_OUT="$out" build/test_experiments --gtest_filter='Lessons/Walkthrough.*' --gtest_brief=1 || status=$?
echo "prepare-workshop: the lessons' files are in $out/<lesson>/ ($(( $(date +%s) - start )) s in all)"
exit $status
