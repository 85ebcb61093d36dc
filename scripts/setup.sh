#!/usr/bin/env bash
# Installs what lmscope needs, only what is missing (idempotent). Debian packages; the
# compiler and CMake come with the machine, these are the libraries.
#
#   scripts/setup.sh              everything: the tools, the tests, the hostile-input checks
#   scripts/setup.sh --main       only what building the tools needs (scripts/run.sh)
#   scripts/setup.sh --notebooks  the tools' libraries, the Python module and Jupyter's notebook
#                                 (scripts/notebooks.sh)
set -euo pipefail
main=(cmake ninja-build g++ pkg-config libhdf5-dev hdf5-tools nlohmann-json3-dev libcli11-dev
      libopenblas-dev libpcre2-dev libutf8proc-dev libssl-dev)
notebooks=(python3-dev pybind11-dev                   # the Python module lmscope._core (python/src)
           python3-h5py python3-numpy                 # /usr/bin/python3's, which the module is built for
           python3-ipykernel python3-matplotlib       # the notebooks' kernel; their plots
           jupyter-notebook)                          # the front end (Debian's Jupyter notebook 6)
tests=(libgtest-dev libpng-dev                        # the GoogleTest suites; tests/report reads PNGs
       python3-pytest                                 # tests/python (ctest python_reader), /usr/bin/python3
       python3-venv                                   # scripts/ray-venv.sh, scripts/build-wheel.sh, tests/install
       python3-nbclient python3-nbformat              # tests/python_module/test_notebooks.py executes the notebooks
       chromium                                       # renders lmscope-report's page and pictures in tests/report
       clang                                          # scripts/sanitize.sh and scripts/fuzz.sh (ASan, UBSan, libFuzzer)
       ccache)                                        # build/ and build-cuda-emu/ share every object but the CUDA backend
case "${1:-}" in
  "") packages=("${main[@]}" "${notebooks[@]}" "${tests[@]}") ;;
  --main) packages=("${main[@]}") ;;
  --notebooks) packages=("${main[@]}" "${notebooks[@]}") ;;
  *) echo "setup: unknown option '$1' (--main, --notebooks or none)" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
