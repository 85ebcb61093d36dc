"""The self-contained wheel (scripts/build-wheel.sh -> build-wheel/dist/) as a student gets it:
installed into a fresh venv, the README's Python snippet run from an empty folder with no build
tree on any path, and the installed module's shared libraries all inside the wheel or the C/C++
runtime (ldd; and zlib, below). ctest python_wheel; scripts/test.sh builds the wheel first and sets
LMSCOPE_REQUIRE_WHEEL=1, so a missing wheel fails there instead of skipping."""
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python_module"))
from expect_text import expect_found  # noqa: E402  (the lessons' expect rule)

SMOLLM2 = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
# The C/C++ runtime, which every Linux machine has and auditwheel leaves out of the wheel on purpose
# (manylinux's policy): glibc's libraries (libresolv, its DNS resolver, is one: libcurl calls it),
# the loader and the kernel's vDSO, GCC's C++ runtime.
RUNTIME = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
           "libdl.so.2", "librt.so.1", "libresolv.so.2", "libstdc++.so.6", "libgcc_s.so.1"}
# One more library stays outside: zlib, which the manylinux policy counts as part of every system
# (auditwheel's lib_whitelist for manylinux_2_34 lists libz.so.1) and so never copies in.
RUNTIME.add("libz.so.1")
# The libraries the engine links that a student's machine would lack (issue 43's list).
MUST_TRAVEL = ["libhdf5", "libopenblas", "libpcre2-8", "libutf8proc"]


def _wheel():
    wheels = sorted(glob.glob(os.path.join(ROOT, "build-wheel", "dist", "lmscope-*.whl")))
    if not wheels:
        why = "no wheel in build-wheel/dist (scripts/build-wheel.sh builds it)"
        if os.environ.get("LMSCOPE_REQUIRE_WHEEL") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return wheels[-1]


def _clean_env():
    """The environment of a student's shell: no PYTHONPATH, no LD_LIBRARY_PATH, no user site."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONHOME", "LMSCOPE_BINARY_DIR")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv (no system site packages) with the wheel installed: its python and site-packages."""
    wheel = _wheel()
    d = tmp_path_factory.mktemp("student")
    py = os.path.join(d, "venv", "bin", "python")
    subprocess.run([sys.executable, "-m", "venv", os.path.join(d, "venv")], check=True, env=_clean_env())
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel],
                       capture_output=True, text=True, cwd=d, env=_clean_env())
    assert r.returncode == 0, "pip install %s into a fresh venv failed:\n%s" % (wheel, r.stderr[-3000:])
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    return d, py, site


def _readme_snippet():
    """The README's Python heredoc (the block that imports lmscope) and the expect lines under it."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    m = re.search(r"```sh\n[^\n]*<<'EOF'\n(import lmscope\n.*?)\nEOF\n```\n((?:<!-- expect: .* -->\n)+)", readme, re.S)
    assert m, "README.md: the Python snippet (```sh ... <<'EOF' import lmscope ... EOF```) with expect lines is gone"
    return m.group(1), re.findall(r"<!-- expect: (.*) -->", m.group(2))


def test_readme_snippet_runs_from_the_wheel(venv):
    d, py, site = venv
    if not os.path.isfile(SMOLLM2):
        pytest.skip("%s is absent (scripts/fetch-model.sh fetches it)" % SMOLLM2)
    code, expects = _readme_snippet()
    work = d / "work"                       # an empty folder but for the model the snippet names
    (work / "models").mkdir(parents=True)
    os.symlink(SMOLLM2, work / "models" / os.path.basename(SMOLLM2))
    where = ("import lmscope, lmscope._core, lmscope_trace\n"
             "print('module:', lmscope._core.__file__, lmscope_trace.__file__)\n")
    r = subprocess.run([py, "-c", where + code], capture_output=True, text=True, cwd=work,
                       env=_clean_env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for module in r.stdout.splitlines()[0].split("module: ", 1)[1].split():   # the engine, the trace reader
        assert module.startswith(site + os.sep), "%s is not in the venv's %s" % (module, site)
    for e in expects:
        assert expect_found(r.stdout, e), "README expect line %r not in the wheel's output:\n%s" % (e, r.stdout)


def test_only_the_c_runtime_comes_from_outside_the_wheel(venv):
    d, py, site = venv
    cores = glob.glob(os.path.join(site, "lmscope", "_core*.so"))
    assert len(cores) == 1, "expected one lmscope/_core*.so in %s, found %s" % (site, cores)
    libs_dir = os.path.join(site, "lmscope.libs")
    out = subprocess.run(["ldd", cores[0]], capture_output=True, text=True, check=True,
                         env=_clean_env()).stdout
    inside, outside = [], []
    for line in out.splitlines():
        name, _, rest = line.strip().partition(" => ")
        name = name.split(" (")[0]
        path = os.path.normpath(rest.split(" (")[0].strip()) if rest else ""
        assert path != "not found", "ldd: %s not found for the installed module\n%s" % (name, out)
        if path.startswith(libs_dir + os.sep):
            inside.append(name)
        elif name not in RUNTIME and os.path.basename(name) not in RUNTIME:
            outside.append("%s => %s" % (name, path))
    assert not outside, "resolved outside the wheel and the C/C++ runtime:\n  " + "\n  ".join(outside)
    for lib in MUST_TRAVEL:
        assert any(n.startswith(lib) for n in inside), "%s is not among the wheel's libraries: %s" % (lib, inside)
