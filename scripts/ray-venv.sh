#!/usr/bin/env bash
# A venv for the collection's Ray tests (ray is an optional extra of the Python package:
# docs/collect.md): build/venv-ray over Debian's python3 (--system-site-packages: numpy, h5py,
# pytest from scripts/setup.sh), ray from PyPI. Idempotent. Prints the venv's python on stdout;
# on failure one line on stderr and exit status 1.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/venv-ray
py=/usr/bin/python3
if ! "$venv/bin/python" -c "import ray" >/dev/null 2>&1; then
  mkdir -p build
  "$py" -m venv --system-site-packages "$venv" >/dev/null 2>&1 || { echo "ray-venv: cannot create $venv ($py -m venv)" >&2; exit 1; }
  "$venv/bin/pip" install -q --disable-pip-version-check 'ray>=2.9' >/dev/null 2>&1 ||
    { echo "ray-venv: pip could not install ray into $venv" >&2; exit 1; }
fi
echo "$PWD/$venv/bin/python"
