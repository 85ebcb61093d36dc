#!/usr/bin/env bash
# Opens the notebooks (walkthroughs/notebooks/) in Jupyter's notebook, in one command: installs
# what is missing (scripts/setup.sh --notebooks: Debian's jupyter-notebook among them), builds the Python
# module (build/python), fetches SmolLM2, then serves the folder and prints the address to open.
#
#   scripts/notebooks.sh                  opens the browser on this machine (localhost only)
#   scripts/notebooks.sh --no-browser     a server for a room: listens on every interface, opens
#                                         no browser; students open the printed address
#   options: --port N (default 8888), --ip ADDR (default: 127.0.0.1, 0.0.0.0 with --no-browser),
#            --no-build (build/python and the model are there: start the server at once)
#
# The kernels are Debian's python3 (the module is built for it), with PYTHONPATH=build/python and
# one OpenMP thread each (OMP_NUM_THREADS=1 unless set: a room's kernels share the cores, and the
# notebooks' numbers were measured with one thread). The address carries a token (a fresh one
# each start, or JUPYTER_TOKEN's); whoever has it can run code as this user on this machine.
# Ctrl-C stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
browser=1 port=8888 ip="" build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-browser) browser=0 ;;
    --port) port="${2:?notebooks: --port needs a number}"; shift ;;
    --ip) ip="${2:?notebooks: --ip needs an address}"; shift ;;
    --no-build) build=0 ;;
    *) echo "notebooks: unknown option '$1' (--no-browser, --port N, --ip ADDR, --no-build)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$ip" ] || { [ "$browser" = 1 ] && ip=127.0.0.1 || ip=0.0.0.0; }

if [ "$build" = 1 ]; then
  scripts/setup.sh --notebooks
  # An existing build/ keeps its configuration; the module is switched on in it (scripts/build.sh
  # --main configures it off).
  if [ -f build/CMakeCache.txt ]; then
    cmake -S . -B build -DLMSCOPE_PYTHON_MODULE=ON >/dev/null
  else
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMSCOPE_TESTS=OFF -DLMSCOPE_PYTHON_MODULE=ON \
          -DLMSCOPE_CUDA="${LMSCOPE_CUDA:-OFF}" >/dev/null
  fi
  cmake --build build -j"$(nproc)" --target lmscope_python_core
  scripts/fetch-model.sh
fi
[ -f build/python/lmscope/__init__.py ] || { echo "notebooks: build/python has no lmscope module (run without --no-build)" >&2; exit 1; }
python="$(sed -n 's/^LMSCOPE_PYTHON:FILEPATH=//p' build/CMakeCache.txt)"
"$python" -c "import notebook" 2>/dev/null ||
  { echo "notebooks: $python has no Jupyter notebook (scripts/setup.sh installs Debian's jupyter-notebook)" >&2; exit 1; }

export PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export JUPYTER_TOKEN="${JUPYTER_TOKEN:-$("$python" -c 'import secrets; print(secrets.token_hex(24))')}"
host="$ip"
case "$ip" in 0.0.0.0|"") host="$(hostname -I 2>/dev/null | cut -d' ' -f1)"; host="${host:-$(hostname)}" ;; esac
echo "notebooks: open http://$host:$port/tree?token=$JUPYTER_TOKEN"
flags=(--notebook-dir="$root/walkthroughs/notebooks" --ip="$ip" --port="$port" --port-retries=0)
[ "$browser" = 1 ] || flags+=(--no-browser)
[ "$(id -u)" -ne 0 ] || flags+=(--allow-root)     # a container or CI runs as root; Jupyter refuses it unless told
exec "$python" -m notebook "${flags[@]}"
