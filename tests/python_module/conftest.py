"""pytest setup for tests/python_module: the Python module as built (build/python, or the
folder LMSCOPE_PYTHON_BUILD names) and the command-line tools beside it (LMSCOPE_BINARY_DIR),
which the tests hold the module to. Run through ctest (python_module), or by hand:
    LMSCOPE_BINARY_DIR=build python3 -m pytest -q tests/python_module"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("LMSCOPE_BINARY_DIR", os.path.join(ROOT, "build")))
sys.path.insert(0, os.path.join(BUILD, "python"))

TINY = os.path.join(ROOT, "golden", "models", "tiny-qwen2")
SMOLLM2 = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
# A prompt of the tiny model's golden traces (golden/traces/README), 11 ids.
TINY_IDS = [330, 749, 537, 264, 935, 314, 267, 681, 289, 295, 16]


def tool(name, *args):
    """Runs build/<name> with args; returns (status, stdout, stderr)."""
    r = subprocess.run([os.path.join(BUILD, name), *map(str, args)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture(scope="session")
def tiny():
    import lmscope
    return lmscope.Model(TINY)


@pytest.fixture(scope="session")
def smollm2():
    if not os.path.isfile(SMOLLM2):
        pytest.skip("%s is absent (scripts/fetch-model.sh fetches it)" % SMOLLM2)
    import lmscope
    return lmscope.Model(SMOLLM2)
