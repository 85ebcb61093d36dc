#!/usr/bin/env bash
# Builds llama.cpp, the peer of our CPU benchmarks and the reference of `--cpu-activations q8`,
# from the llama-cpp-python sdist on PyPI (its vendor/llama.cpp), into
# $LMSCOPE_CACHE/llama-cpp-python-VERSION (default cache ~/.cache/lmscope); nothing of it
# enters the repository. The sdist comes through `pip download` (the user's pip configuration
# applies: index, proxy, certificates) and its sha256 is checked. Builds llama-bench, llama-quantize
# (the K-quant files of the tests and benchmarks) and the shared libllama that the sdist's own Python package (llama_cpp/, ctypes) loads through
# LLAMA_CPP_LIB_PATH (scripts/llamacpp_logits.py). Idempotent: an existing build is reused.
# Prints the directory (sources in src/, the build in build/) on stdout; progress goes to
# stderr; a failure is one line.
#
#   scripts/build-llamacpp.sh           the native build (-DGGML_NATIVE=ON), in build/
#   scripts/build-llamacpp.sh --avx2    also llama-bench for AVX2 + FMA + F16C only, no AVX-512,
#                                       in build-avx2/: the peer of LMSCOPE_CPU_KERNEL=avx2 on a
#                                       processor that has AVX-512 (scripts/bench-peers.sh --avx2)
set -uo pipefail
avx2=0
case "${1:-}" in
  "") ;;
  --avx2) avx2=1 ;;
  *) echo "build-llamacpp: unknown argument '$1' (none, or --avx2)" >&2; exit 2 ;;
esac
version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
cache="${LMSCOPE_CACHE:-$HOME/.cache/lmscope}"
dir="$cache/llama-cpp-python-$version"
sdist="$cache/sdist/llama_cpp_python-$version.tar.gz"
fail() { echo "build-llamacpp: $*" >&2; exit 1; }

# What both builds are: shared libraries, the tools, nothing else.
common=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF)

# The AVX2-only llama-bench, from the sources the native build unpacked.
build_avx2() {
  [ -x "$dir/build-avx2/bin/llama-bench" ] && return 0
  echo "build-llamacpp: building llama-bench for AVX2 only (no AVX-512, -j2) in $dir/build-avx2" >&2
  cmake -S "$dir/src/vendor/llama.cpp" -B "$dir/build-avx2" "${common[@]}" -DGGML_NATIVE=OFF -DGGML_AVX=ON \
        -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF \
        >"$dir/cmake-avx2.log" 2>&1 || fail "cmake configure (AVX2) failed ($dir/cmake-avx2.log)"
  cmake --build "$dir/build-avx2" -j2 --target llama-bench >"$dir/build-avx2.log" 2>&1 ||
    fail "AVX2 build failed ($dir/build-avx2.log)"
}

if [ -x "$dir/build/bin/llama-bench" ] && [ -x "$dir/build/bin/llama-quantize" ] && [ -d "$dir/src/llama_cpp" ]; then
  if [ $avx2 = 1 ]; then build_avx2; fi
  echo "$dir"; exit 0
fi
command -v cmake >/dev/null || fail "cmake is not installed (scripts/setup.sh installs it)"
if [ ! -f "$sdist" ]; then
  echo "build-llamacpp: pip download llama-cpp-python==$version (sdist, about 77 MB)" >&2
  mkdir -p "$cache/sdist"
  # Only llama-cpp-python itself comes as source (--no-binary llama-cpp-python, not :all:,
  # which would also build each of its build dependencies from source). pip still prepares
  # the sdist's metadata in an isolated build environment, installing scikit-build-core's
  # wheels there; nothing is compiled. About 25 s here.
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -d "$cache/sdist" >&2 ||
    fail "pip download llama-cpp-python==$version failed (see pip's message above)"
fi
got=$(sha256sum "$sdist" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || fail "$sdist: sha256 $got, expected $sha256 (delete it to download again)"
rm -rf "$dir/src.tmp" && mkdir -p "$dir/src.tmp"
tar -xzf "$sdist" -C "$dir/src.tmp" || fail "cannot unpack $sdist"
rm -rf "$dir/src" && mv "$dir/src.tmp/llama_cpp_python-$version" "$dir/src" && rm -rf "$dir/src.tmp"
echo "build-llamacpp: building llama-bench, llama-quantize and libllama (CPU, native, -j2) in $dir/build" >&2
cmake -S "$dir/src/vendor/llama.cpp" -B "$dir/build" "${common[@]}" -DGGML_NATIVE=ON \
      >"$dir/cmake.log" 2>&1 || fail "cmake configure failed ($dir/cmake.log)"
cmake --build "$dir/build" -j2 --target llama-bench llama llama-quantize >"$dir/build.log" 2>&1 || fail "build failed ($dir/build.log)"
if [ $avx2 = 1 ]; then build_avx2; fi
echo "$dir"
