#!/usr/bin/env bash
# The test command: installs what is missing, fetches SmolLM2 (its golden tests skip, saying
# why, when it cannot be fetched), builds, runs every test (ctest), then the emulated CUDA
# suite. Both suites run whatever the other's result: a red main suite must not hide the CUDA
# one. The exit status is non-zero when either failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Ray for the collection's tests on a local cluster (ctest python_collect_ray): its own venv.
ray_python=$(scripts/ray-venv.sh) || echo "test: ray could not be installed; the Ray tests will not run"
scripts/build.sh -DLMSCOPE_RAY_PYTHON="${ray_python:-}"
scripts/fetch-model.sh || echo "test: SmolLM2 could not be fetched; its tests will skip"
scripts/fetch-r1-tokenizer.sh || echo "test: the DeepSeek-R1-Distill GGUF header could not be fetched; its tests will skip"
scripts/fetch-qwen2-model.sh || echo "test: Qwen2.5-Coder-0.5B-Instruct could not be fetched; its tests will skip"
# Gemma 3 270M (Google's Gemma terms apply to its weights: scripts/fetch-gemma3-model.sh says so).
scripts/fetch-gemma3-model.sh || echo "test: Gemma 3 270M could not be fetched; its tests will skip"
# The self-contained wheel, which ctest python_wheel installs into a fresh venv: built after
# build/, whose objects ccache hands it (docs/build.md, "How long it takes").
scripts/build-wheel.sh || echo "test: the wheel could not be built; python_wheel will fail"
export LMSCOPE_REQUIRE_WHEEL=1
# ctest runs two tests at once on the two cores: one OpenMP thread each. Two-thread tests side
# by side spin against each other (measured: 182 s of tests instead of 28 s).
failed=()
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} ctest --test-dir build --output-on-failure -j2 || failed+=("the main suite (build/)")
# The CUDA backend and kernels executed on the CPU emulator (docs/cuda.md): a build of their
# own (LMSCOPE_CUDA=EMULATED), where every test of tests/cuda runs without a GPU.
if scripts/build-cuda-emulated.sh; then
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} ctest --test-dir build-cuda-emu --output-on-failure -j2 -R Cuda ||
    failed+=("the emulated CUDA suite (build-cuda-emu/)")
else
  failed+=("the emulated CUDA build (build-cuda-emu/)")
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "test: FAILED: $(IFS=';'; echo "${failed[*]}" | sed 's/;/; /g')" >&2
  exit 1
fi
echo "test: all passed (build/ and build-cuda-emu/)"
