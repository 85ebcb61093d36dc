#!/usr/bin/env bash
# The test command: installs what is missing, fetches SmolLM2 (its golden tests skip, saying
# why, when it cannot be fetched), builds, runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
scripts/fetch-model.sh || echo "test: SmolLM2 could not be fetched; its tests will skip"
scripts/fetch-r1-tokenizer.sh || echo "test: the DeepSeek-R1-Distill GGUF header could not be fetched; its tests will skip"
# ctest runs two tests at once on the two cores: one OpenMP thread each. Two-thread tests side
# by side spin against each other (measured: 182 s of tests instead of 28 s).
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} ctest --test-dir build --output-on-failure -j2
# The CUDA backend and kernels executed on the CPU emulator (docs/cuda.md): a build of their
# own (LMSCOPE_CUDA=EMULATED), where every test of tests/cuda runs without a GPU.
scripts/build-cuda-emulated.sh
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} ctest --test-dir build-cuda-emu --output-on-failure -j2 -R Cuda
