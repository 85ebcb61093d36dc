#!/usr/bin/env bash
# Builds llama.cpp's llama-bench (the peer of our benchmarks) from the llama-cpp-python sdist on
# PyPI, into $LMSCOPE_CACHE/llama.cpp (default ~/.cache/lmscope); nothing of it enters the repo.
# Prints the path of llama-bench. Idempotent: an existing build is reused.
set -euo pipefail
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
cache="${LMSCOPE_CACHE:-$HOME/.cache/lmscope}"
dir="$cache/llama-cpp-python-$version"
bench="$dir/build/bin/llama-bench"
if [ -x "$bench" ]; then echo "$bench"; exit 0; fi
mkdir -p "$cache/sdist"
if ! ls "$cache/sdist"/llama_cpp_python-"$version".tar.gz >/dev/null 2>&1; then
  echo "build-llamacpp: downloading llama-cpp-python==$version (sdist)" >&2
  # The sdist's URL from PyPI's simple index (pip download would try to build its metadata).
  python3 - "$version" "$cache/sdist" <<'PY' >&2
import os, re, sys, urllib.request
version, dest = sys.argv[1], sys.argv[2]
page = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/").read().decode()
name = f"llama_cpp_python-{version}.tar.gz"
url = [u for u in re.findall(r'href="([^"]+)"', page) if name in u][0].split("#")[0]
path = os.path.join(dest, name)
urllib.request.urlretrieve(url, path + ".part")
os.replace(path + ".part", path)
print("build-llamacpp: downloaded", url)
PY
fi
rm -rf "$dir.src" && mkdir -p "$dir.src"
tar -xzf "$cache/sdist"/llama_cpp_python-"$version".tar.gz -C "$dir.src"
src="$dir.src/llama_cpp_python-$version/vendor/llama.cpp"
echo "build-llamacpp: building llama-bench (CPU, -j2) from $src" >&2
cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF >&2
cmake --build "$dir/build" -j2 --target llama-bench >&2
echo "$bench"
