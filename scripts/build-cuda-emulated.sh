#!/usr/bin/env bash
# Configures and builds build-cuda-emu/: the CUDA backend and kernels/*.cu compiled as C++ for
# the CPU emulator (-DLMSCOPE_CUDA=EMULATED, lib/cuda_emulator, docs/cuda.md), with the tools,
# test_cuda and the Python module (its backend="cuda" tests: ctest PythonModuleCuda). Needs nvcc's toolkit for NVIDIA's headers only. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# Ninja (scripts/setup.sh installs it) schedules the build by file rather than by library (with
# Makefiles, run.sh's build kept 1.64 of the 2 cores busy on average). A build directory
# that exists keeps its generator.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
scripts/setup.sh
cmake -S . -B build-cuda-emu -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_CUDA=EMULATED "$@" >/dev/null
cmake --build build-cuda-emu -j2 --target test_cuda lmscope_python_core
