#!/usr/bin/env bash
# Installs what lmscope needs to build and test, only what is missing (idempotent).
# Debian packages: compiler and CMake come with the machine; these are the libraries.
set -euo pipefail
packages=(cmake g++ pkg-config libhdf5-dev hdf5-tools nlohmann-json3-dev libcli11-dev libgtest-dev
          libopenblas-dev libpcre2-dev libutf8proc-dev libpng-dev libssl-dev
          python3-h5py python3-numpy python3-pytest    # tests/python (ctest python_reader), /usr/bin/python3
          chromium                                     # renders lmscope-report's page and pictures in tests/report
          clang)                                       # scripts/sanitize.sh and scripts/fuzz.sh (ASan, UBSan, libFuzzer)
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
