#!/usr/bin/env bash
# Configures and builds lmscope into build/ (Release, -j2), after scripts/setup.sh.
#
#   scripts/build.sh [CMAKE_ARGS]          everything: every tool and test, the Python module, and
#                                          the CUDA backend when nvcc is found (scripts/test.sh)
#   scripts/build.sh --main [CMAKE_ARGS]   only what scripts/run.sh's answer waits for:
#                                          lmscope-trace with its libraries (run.sh builds
#                                          lmscope-step, and lmscope-diff where it needs it,
#                                          after the answer)
#
# LMSCOPE_CUDA (AUTO, ON or OFF) chooses the CUDA backend (-DLMSCOPE_CUDA). Everything: AUTO
# unless set. --main: a build/ it configures first gets neither the tests nor the CUDA backend
# (LMSCOPE_TESTS=OFF, LMSCOPE_CUDA=OFF unless set: nvcc alone takes minutes); an existing
# build/ keeps its configuration. Without CUDA, --backend auto runs on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
# Ninja (scripts/setup.sh installs it) schedules the build by file rather than by library (with
# Makefiles, run.sh's build kept 1.64 of the 2 cores busy on average). A build directory
# that exists keeps its generator.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
if [ "${1:-}" = --main ]; then
  shift
  scripts/setup.sh --main
  if [ -f build/CMakeCache.txt ]; then
    config=(${LMSCOPE_CUDA:+-DLMSCOPE_CUDA=$LMSCOPE_CUDA})
  else
    config=(-DLMSCOPE_TESTS=OFF -DLMSCOPE_CUDA="${LMSCOPE_CUDA:-OFF}")
  fi
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${config[@]}" "$@" >/dev/null
  cmake --build build -j2 --target lmscope-trace
else
  scripts/setup.sh
  # The Python module explicitly too: its option defaults to LMSCOPE_TESTS only when build/ is
  # first configured, and a build/ that run.sh configured (tests off) would keep it off.
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_TESTS=ON -DLMSCOPE_PYTHON_MODULE=ON \
        -DLMSCOPE_CUDA="${LMSCOPE_CUDA:-AUTO}" "$@" >/dev/null
  cmake --build build -j2
fi
