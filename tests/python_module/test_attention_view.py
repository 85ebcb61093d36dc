"""lmscope.attention_view (python/lmscope/attention_view.py): the report's attention view as a
notebook cell's HTML. Checked here without a browser: the fragment inlines the report's own
script (the one lmscope-report compiles in) and the probabilities as 16-bit levels within
1/131070 of the cache's; a trace file gives the same levels as the cache of the same prompt;
bad arguments are one clear error. In a browser: test_notebooks.py opens notebook 16's view."""
import base64
import json
import re

import numpy as np
import pytest

import lmscope
from conftest import TINY, TINY_IDS, tool

LEVELS = 65535


def view_data(view):
    """The JSON the fragment hands its drawing script, and the levels decoded as [head, T, S]."""
    html = view._repr_html_()
    blob = re.search(r"var d = (\{.*?\});\n", html).group(1).replace("<\\/", "</")
    d = json.loads(blob)
    levels = np.frombuffer(base64.b64decode(d["levels"]), dtype="<u2").reshape(len(d["heads"]), d["T"], d["S"])
    return html, d, levels


def test_the_cell_holds_the_reports_script_and_the_caches_probabilities(tiny):
    _, cache = tiny.run_with_cache(TINY_IDS, names="layers.*.attn.probs")
    p = cache["layers.1.attn.probs"][0]                       # [H, T, S]
    view = lmscope.attention_view(cache, 1, tokens=["t%d" % i for i in range(len(TINY_IDS))])
    html, d, levels = view_data(view)
    assert lmscope._core.attention_view_script() in html      # one script for the page and the cell
    assert "var lmscopeAttentionView" in html
    assert "<script src" not in html and "https:" not in html and "import(" not in html   # nothing loaded: offline
    assert d["heads"] == list(range(p.shape[0])) and d["T"] == d["S"] == len(TINY_IDS)
    assert np.abs(levels / LEVELS - p).max() <= 0.5 / LEVELS * (1 + 1e-9)
    assert d["cols"][3] == "t3" and d["rows"] == d["cols"]
    one = view_data(lmscope.attention_view(cache, 1, head=2))[2]
    np.testing.assert_array_equal(one[0], levels[2])


def test_a_trace_file_gives_what_the_cache_gives(tiny, tmp_path):
    trace = str(tmp_path / "t.h5")
    code, _, err = tool("lmscope-trace", "--model", TINY, "--prompt-ids", ",".join(map(str, TINY_IDS)),
                        "--max-new-tokens", "1", "-q", "--hooks", "tokens.*,layers.*.attn.probs", "--out", trace)
    assert code == 0, err
    _, cache = tiny.run_with_cache(TINY_IDS, names="layers.*.attn.probs")
    from_trace = view_data(lmscope.attention_view(trace, 2))
    from_cache = view_data(lmscope.attention_view(cache, 2))
    assert np.abs(from_trace[2].astype(int) - from_cache[2].astype(int)).max() <= 1   # float32 sums: one level
    with lmscope.Trace(trace) as tr:
        assert from_trace[1]["cols"] == tr.labels(0, 0)     # the trace's pieces label the columns
    assert from_trace[1]["cols"][1] == " golden"


def test_bad_arguments_are_one_clear_error(tiny):
    _, cache = tiny.run_with_cache(TINY_IDS, names="layers.0.attn.probs")
    with pytest.raises(KeyError, match="layers.1.attn.probs is not in this cache"):
        lmscope.attention_view(cache, 1)
    with pytest.raises(IndexError, match="head 99: layer 0 has"):
        lmscope.attention_view(cache, 0, head=99)
    with pytest.raises(ValueError, match="scale 'loud'"):
        lmscope.attention_view(cache, 0, scale="loud")
    with pytest.raises(ValueError, match="tokens: 2 labels for 11 key columns"):
        lmscope.attention_view(cache, 0, tokens=["a", "b"])
    with pytest.raises(IndexError, match="row 3"):
        lmscope.attention_view(cache, 0, row=3)
