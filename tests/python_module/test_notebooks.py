"""The lessons as notebooks (walkthroughs/notebooks/*.ipynb), executed top to bottom and checked
as the Markdown lessons are (tests/experiments/md_blocks.h):

* a code cell may hold lines `# expect: TEXT`; TEXT must appear in what that cell printed (its
  stdout and the text of its result), a number written {~X}, {<X} or {A..B} within that
  tolerance (expect_text.py: the lessons' rule, for numbers that depend on summation order);
* a number in a markdown cell's prose (a decimal 0.82, 2,734, 4e-8, 99%; not inside inline code,
  an HTML comment or a link target) must be written in one of the notebook's expect lines, or
  listed on a markdown line `<!-- given: ... -->` (numbers the lesson sets, not measures) or
  `<!-- timing: ... -->`;
* a cell that draws (calls plt.) must leave a picture in its output;
* the committed notebook holds no outputs (the test executes it fresh).

The kernel is a fresh ipykernel of this interpreter, started in the repository root with
PYTHONPATH = the built module's folder (what conftest.py put on sys.path), OMP_NUM_THREADS=1 (the
lessons' numbers are measured with one thread) and matplotlib's inline backend, which draws with
Agg into PNGs: no display. Run by ctest (python_module) or by hand:
    LMSCOPE_BINARY_DIR=build python3 -m pytest -q tests/python_module/test_notebooks.py"""
import glob
import json
import os
import re
import sys
import tempfile
import time

import pytest

from conftest import BUILD, ROOT, SMOLLM2
from expect_text import expect_found

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "walkthroughs", "notebooks", "*.ipynb")))
IDS = [os.path.basename(p) for p in NOTEBOOKS]
EXPECT = re.compile(r"^\s*# expect: (.*?)\s*$", re.M)
GIVEN = re.compile(r"^<!-- (?:given|timing): (.*) -->\s*$")
# md_blocks.h's prose number: a decimal, one with thousands separators, scientific notation, a percentage.
NUMBER = re.compile(r"(?:^|[^\w.])((?:\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|\d+\.\d+(?:e[-+]?\d+)?%?|\d+e[-+]?\d+|\d+%))(?!\w)",
                    re.A)
HIDDEN = re.compile(r"<!--.*?-->|`[^`]*`|\]\([^)]*\)")   # comments, inline code, link targets


def _nb_modules():
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
        import ipykernel  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as e:   # not a skip: scripts/setup.sh installs them, so missing = a broken setup
        pytest.fail("%s (scripts/setup.sh installs python3-nbclient, python3-nbformat, python3-ipykernel, "
                    "python3-matplotlib)" % e)
    import nbformat
    return nbformat


def _name(path):
    return os.path.relpath(path, ROOT)


def cell_output(cell):
    """What a code cell printed: its stdout and the text of its results."""
    text = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            text.append(out["text"])
        elif out.get("output_type") in ("execute_result", "display_data"):
            text.append(out.get("data", {}).get("text/plain", ""))
    return "".join(text)


def expects(cell):
    return EXPECT.findall(cell["source"]) if cell["cell_type"] == "code" else []


def expect_failures(nb, name):
    """One line per expect line of an executed notebook that its cell's output lacks, and per
    drawing cell without a picture."""
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell["cell_type"] != "code":
            continue
        out = cell_output(cell)
        for e in expects(cell):
            if not expect_found(out, e):
                bad.append("%s, cell %d: expected %r in:\n%s" % (name, i, e, out))
        draws = re.search(r"^[^#\n]*\bplt\.", cell["source"], re.M)
        if draws and not any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            bad.append("%s, cell %d draws (plt.) but its output holds no picture" % (name, i))
    return bad


def prose_numbers_unchecked(nb):
    """The prose numbers of the markdown cells that no expect line holds and no given line
    lists, as "cell N: X" (md_blocks.h's rule)."""
    checked, prose = [], []
    for i, cell in enumerate(nb.cells):
        checked += expects(cell)
        if cell["cell_type"] != "markdown":
            continue
        fence = False
        for line in cell["source"].splitlines():
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            m = GIVEN.match(line)
            if m:
                checked += [x.group(1) for x in NUMBER.finditer(m.group(1))]
            else:
                prose.append((i, HIDDEN.sub(" ", line)))
    out = []
    for i, text in prose:
        for x in NUMBER.finditer(text):
            x = x.group(1)
            plain = x.replace(",", "")   # 2,734 is checked by an output that prints 2734
            if not any(x in c or plain in c for c in checked):
                out.append("cell %d: %s" % (i, x))
    return out


def execute(nb, name, timeout=300):
    """Runs every cell of `nb` in a fresh kernel of this interpreter, in the repository root.
    Returns the executed notebook; a cell that raises fails the test, naming the notebook and
    the cell."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    env = {
        "PYTHONPATH": os.pathsep.join([os.path.join(BUILD, "python")] +
                                      [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",   # Agg into PNGs, no display
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    with tempfile.TemporaryDirectory() as jupyter:
        # A kernel spec for this very interpreter (the one the module was built for), found
        # through JUPYTER_PATH; the kernel inherits this process's environment.
        spec = os.path.join(jupyter, "kernels", "lmscope-test")
        os.makedirs(spec)
        with open(os.path.join(spec, "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                                "{connection_file}"], "display_name": "lmscope test", "language": "python"}, f)
        saved = {k: os.environ.get(k) for k in list(env) + ["JUPYTER_PATH"]}
        os.environ.update(env, JUPYTER_PATH=jupyter)
        try:
            client = NotebookClient(nb, timeout=timeout, kernel_name="lmscope-test",
                                    resources={"metadata": {"path": ROOT}})
            try:
                client.execute()
            except CellExecutionError as e:
                index = next((i for i, c in enumerate(nb.cells) if any(
                    o.get("output_type") == "error" for o in c.get("outputs", []))), "?")
                pytest.fail("%s, cell %s failed:\n%s" % (name, index, e), pytrace=False)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return nb


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_committed_without_outputs(path):
    nbformat = _nb_modules()
    nb = nbformat.read(path, as_version=4)
    kept = [i for i, c in enumerate(nb.cells) if c["cell_type"] == "code" and (c.get("outputs") or c.get(
        "execution_count") is not None)]
    assert not kept, "%s: cells %s hold outputs; strip them (the test executes the notebook fresh)" % (
        _name(path), kept)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_prose_numbers_are_checked(path):
    nbformat = _nb_modules()
    nb = nbformat.read(path, as_version=4)
    assert any(expects(c) for c in nb.cells), "%s has no expect line" % _name(path)
    unchecked = prose_numbers_unchecked(nb)
    if unchecked:
        pytest.fail("%s: numbers in the prose that no expect line checks and no given line lists:\n%s" % (
            _name(path), "\n".join(unchecked)), pytrace=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs_and_prints_what_it_says(path):
    nbformat = _nb_modules()
    if not os.path.isfile(SMOLLM2):
        pytest.skip("%s is absent (scripts/fetch-model.sh fetches it)" % _name(SMOLLM2))
    nb = nbformat.read(path, as_version=4)
    start = time.monotonic()
    execute(nb, _name(path))
    print("%s: executed in %.1f s" % (_name(path), time.monotonic() - start))
    bad = expect_failures(nb, _name(path)) + attention_view_failures(nb, _name(path))
    if bad:
        pytest.fail("\n".join(bad), pytrace=False)


# Appended to a page holding one cell's HTML output: measures the attention view as drawn and
# hovers a row, then writes what it saw into #measured (read back from Chromium's DOM).
_MEASURE = """<pre id="measured"></pre><script>
(function poll() {
  var svg = document.querySelector(".lav-svg"), hot = svg && svg.querySelector("rect[fill=transparent]");
  if (!hot) { setTimeout(poll, 100); return; }
  var id = svg.id.replace(/-svg$/, ""), cells = svg.getAttribute("data-cells").split("x").map(Number);
  var img = svg.querySelector("image").getBoundingClientRect(), hb = hot.getBoundingClientRect();
  var out = { rows: cells[0], cols: cells[1], cell_w: img.width / cells[1], cell_h: img.height / cells[0], hovers: [] };
  [25, 30].forEach(function (row) {
    var y = hb.top + (row + 0.5) * hb.height / cells[0];
    hot.dispatchEvent(new MouseEvent("mousemove", { clientX: img.left + 1, clientY: y, bubbles: true }));
    var mark = document.getElementById(id + "-rowmark").getBoundingClientRect();
    var box = document.getElementById(id + "-hover");
    out.hovers.push({ row: row, query: box.getAttribute("data-query"), top_key: box.getAttribute("data-top-key"),
                      mark_centre: (mark.top + mark.bottom) / 2, y: y });
  });
  document.getElementById("measured").textContent = JSON.stringify(out);
})();
</script>"""


def attention_view_failures(nb, name):
    """Each lmscope.attention_view output of an executed notebook, opened in headless Chromium
    (Debian's chromium, as the report's tests use it): it draws (a heatmap of the cell's shape,
    cells of at least 3 px) with no script error, and hovering two rows moves the frame and the
    top keys to each (the view of lib/report/attention_view.js, docs/report.md)."""
    import shutil
    import subprocess
    html = [o["data"]["text/html"] for c in nb.cells if c["cell_type"] == "code" for o in c.get("outputs", [])
            if "lmscope-attention-view" in "".join(o.get("data", {}).get("text/html", ""))]
    bad = []
    browser = os.environ.get("LMSCOPE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if html and not browser:
        return ["%s: no headless Chromium to open its attention view (scripts/setup.sh installs chromium)" % name]
    for i, fragment in enumerate(html):
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "view.html")
            with open(page, "w", encoding="utf-8") as f:
                f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>"
                        "<pre id=\"errors\"></pre><script>window.onerror = function (m) { "
                        "document.getElementById('errors').textContent += m; };</script>%s%s</body></html>"
                        % ("".join(fragment), _MEASURE))
            r = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=" + tmp,
                                "--virtual-time-budget=5000", "--window-size=1000,900", "--dump-dom", "file://" + page],
                               capture_output=True, text=True, timeout=120)
            errors = re.search(r'<pre id="errors">(.*?)</pre>', r.stdout, re.S)
            measured = re.search(r'<pre id="measured">(.*?)</pre>', r.stdout, re.S)
            if r.returncode or not measured or not measured.group(1) or (errors and errors.group(1)):
                bad.append("%s: attention view %d did not draw (rc %d, errors %r): %s" % (
                    name, i, r.returncode, errors and errors.group(1), r.stderr[-500:]))
                continue
            m = json.loads(measured.group(1).replace("&quot;", '"'))
            if m["cell_w"] < 3 or m["cell_h"] < 3:
                bad.append("%s: attention view %d has cells of %.1f x %.1f px" % (name, i, m["cell_w"], m["cell_h"]))
            for h in m["hovers"]:
                if h["query"] != str(h["row"]) or abs(h["mark_centre"] - h["y"]) > 2:
                    bad.append("%s: attention view %d, hovering row %d framed/named another: %r" % (name, i, h["row"], h))
            if name.endswith("16-induction-heads.ipynb"):
                # The induction stripe: a second-copy query's top key is 19 columns back.
                for h in m["hovers"]:
                    if h["top_key"] != str(h["row"] - 19):
                        bad.append("%s: hovering query %d names top key %s, not %d (the stripe)" % (
                            name, h["row"], h["top_key"], h["row"] - 19))
    return bad


def test_the_checks_can_fail():
    """The runner itself: a wrong expect line, a cell that raises and a prose number nobody
    checks are each reported, naming the notebook and the cell (no model needed)."""
    nbformat = _nb_modules()
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("The answer is 4.0, and 0.5 is nowhere.\n<!-- given: 0.25 -->\nA quarter: 0.25."),
        v4.new_code_cell("print('%.1f' % (2 + 2))\n# expect: 4.0\n# expect: 5.0\n# expect: {~4.1}\n# expect: {~4.2}"),
    ])
    assert prose_numbers_unchecked(nb) == ["cell 0: 0.5"]
    execute(nb, "synthetic.ipynb", timeout=60)
    assert cell_output(nb.cells[1]) == "4.0\n"
    bad = expect_failures(nb, "synthetic.ipynb")
    assert len(bad) == 2 and bad[0].startswith("synthetic.ipynb, cell 1: expected '5.0'"), bad   # {~4.1} holds
    assert bad[1].startswith("synthetic.ipynb, cell 1: expected '{~4.2}'"), bad
    nb = v4.new_notebook(cells=[v4.new_code_cell("x = 1"), v4.new_code_cell("raise ValueError('boom')")])
    with pytest.raises(pytest.fail.Exception, match=r"synthetic.ipynb, cell 1 failed:(.|\n)*boom"):
        execute(nb, "synthetic.ipynb", timeout=60)
