#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j2
