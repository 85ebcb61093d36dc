"""pytest setup for tests/python: imports python/lmscope_trace.py from this checkout and
finds the committed goldens. Run: python3 -m pytest -q tests/python (ctest: python_reader)."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

GOLDEN_TRACES = ["golden/traces/tiny-llama-a.h5", "golden/traces/tiny-qwen2-a.h5",
                 "golden/traces/tiny-qwen2-b.h5", "golden/traces/tiny-qwen2-bf16-a.h5",
                 "golden/traces/tiny-qwen2-c.h5", "golden/traces/tiny-qwen2-r.h5",
                 "golden/smollm2/smollm2-chat-0.h5", "golden/smollm2/smollm2-chat-1.h5"]


def golden(rel):
    """Absolute path of a committed golden; a missing one fails (they are in the repository)."""
    path = os.path.join(ROOT, rel)
    if not os.path.isfile(path):
        pytest.fail("committed golden %s is missing from the checkout" % rel)
    return path
