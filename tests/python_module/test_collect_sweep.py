"""lmscope.sweep_pairs / lmscope.sweep_corpus and tools/lmscope-sweep (python/lmscope/sweep.py,
docs/collect.md "Sweeps on workers"): lmscope-patch --pairs and lmscope-score --data spread over
worker processes give, bit for bit, what one worker gives, and what the tool gives over the
whole file in one process (the pairs: always; a corpus: when its shards are whole batches, so
that every forward is the same). Bad input is the tool's one line, naming the user's file.

The pairs and corpora are token ids drawn here from numpy's generator with fixed seeds, for the
committed tiny model (golden/models/tiny-qwen2); the Ray runs are in test_collect_ray.py."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import lmscope
from conftest import BUILD, ROOT, TINY
from lmscope import sweep_directory
from test_collect import ids_corpus, tree

TOOL = os.path.join(ROOT, "tools", "lmscope-sweep")
PATCH = dict(sites="resid_pre,attn.z", rows_per_forward=7, pairs_per_shard=2)
SCORE = dict(batch=4, docs_per_shard=8, intervene=["layers.1.attn_out=zero"])


def cli(*args):
    """tools/lmscope-sweep with the module as built: (status, stdout, stderr)."""
    env = dict(os.environ, LMSCOPE_PYTHON_BUILD=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, TOOL, *map(str, args)], env=env, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def engine_tool(name, *args):
    """The engine's own tool over the whole file, in one process: its stdout."""
    r = subprocess.run([os.path.join(BUILD, name), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def pairs_file(path, pairs, seed=0, tokens=10):
    """`pairs` pairs of `tokens` ids, the corrupted one differing at one position; a blank
    line after the third (no pair: the line numbers go on)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for i in range(pairs):
            clean = rng.integers(1, 1024, tokens).tolist()
            corrupt = list(clean)
            corrupt[int(rng.integers(0, tokens))] = int(rng.integers(1, 1024))
            f.write(json.dumps({"clean_ids": clean, "corrupt_ids": corrupt, "metric": "logit-diff:#549,#434"}) + "\n")
            if i == 2:
                f.write("\n")
    return str(path)


def as_json(x):
    """What the result is once written as JSON and read back (the CLI's --json file)."""
    return json.loads(json.dumps(x))


# ---- pairs -------------------------------------------------------------------------------------
def test_pairs_on_two_workers_are_one_workers_bits_and_the_tools_own_statistics(tmp_path):
    pairs = pairs_file(tmp_path / "pairs.jsonl", 7)
    one = lmscope.sweep_pairs(TINY, pairs, progress=False, **PATCH)
    assert one["num_pairs"] == 7 and one["num_shards"] == 4 and one["shards_retried"] == 0
    status, _, stderr = cli("patch", "--model", TINY, "--pairs", pairs, "--sites", PATCH["sites"], "--rows-per-forward", 7,
                            "--pairs-per-shard", 2, "--workers", 2, "--threads", 1, "--json", tmp_path / "two.json")
    assert status == 0, stderr
    assert stderr.count("patch: ") == 4                      # a progress line per shard
    assert json.loads((tmp_path / "two.json").read_text()) == as_json(one)
    # lmscope-patch --pairs over the whole file in one process: the same pairs, the same cells,
    # and the same doubles for the mean, sd, min and max (the merge sums in file order, as it does).
    engine_tool("lmscope-patch", "--model", TINY, "--pairs", pairs, "--sites", PATCH["sites"], "--rows-per-forward", 7,
                "--json", tmp_path / "whole.json", "-q")
    whole = json.loads((tmp_path / "whole.json").read_text())
    assert [p["line"] for p in one["pairs"]] == [p["line"] for p in whole["pairs"]] == [1, 2, 3, 5, 6, 7, 8]
    assert as_json(one["pairs"]) == whole["pairs"]
    for site in ("resid_pre", "attn.z"):
        for stat in ("mean", "sd", "min", "max"):
            assert one["sites"][site][stat] == whole["sites"][site][stat], (site, stat)
        assert np.max(one["sites"][site]["sd"]) > 0.01       # the pairs disagree: the mean is not one pair's


def test_bad_pairs_are_the_tools_one_line_naming_the_users_file(tmp_path):
    pairs = pairs_file(tmp_path / "pairs.jsonl", 6)
    lines = open(pairs).read().splitlines()
    # A pair of another length in the last shard: refused, though its shard alone would not see it.
    lines[6] = json.dumps({"clean_ids": [1, 2, 3], "corrupt_ids": [1, 2, 4], "metric": "prob:#5"})
    (tmp_path / "long.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "bad.jsonl").write_text("\n".join(lines[:2] + ["{not json"] + lines[3:6]) + "\n")
    for name, needle in (("long.jsonl", "long.jsonl:7: this pair has 3 tokens, the first (line 1) 10"),
                         ("bad.jsonl", "bad.jsonl:3: not JSON")):
        status, _, stderr = cli("patch", "--model", TINY, "--pairs", tmp_path / name, "--sites", "resid_pre",
                                "--workers", 2, "--threads", 1, "--quiet")
        assert status == 1 and stderr.count("\n") == 1 and needle in stderr, stderr
    # The tool's part of a file: a pair beyond it is one line.
    r = subprocess.run([os.path.join(BUILD, "lmscope-patch"), "--model", TINY, "--pairs", pairs, "--only-pairs", "2,6"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "pairs.jsonl: --only-pairs 2,6: the file has 6 pairs (0..5)" in r.stderr, r.stderr
    (tmp_path / "blank.jsonl").write_text("\n \n")
    status, _, stderr = cli("patch", "--model", TINY, "--pairs", tmp_path / "blank.jsonl")
    assert status == 1 and "blank.jsonl: no pairs" in stderr and stderr.count("\n") == 1, stderr


# ---- a corpus ------------------------------------------------------------------------------------
def test_a_corpus_on_two_workers_is_one_workers_bits_and_the_tools_own_loss(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 50, seed=1, low=2, high=30)
    one = lmscope.sweep_corpus(TINY, corpus, per_doc=tmp_path / "one.jsonl", progress=False, **SCORE)
    assert one["documents"] == 50 and one["num_shards"] == 7
    status, _, stderr = cli("score", "--model", TINY, "--data", corpus, "--batch", 4, "--docs-per-shard", 8,
                            "--intervene", SCORE["intervene"][0], "--workers", 2, "--threads", 1,
                            "--json", tmp_path / "two.json", "--per-doc", tmp_path / "two.jsonl", "--quiet")
    assert status == 0, stderr
    assert json.loads((tmp_path / "two.json").read_text()) == as_json(one)
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    # Shards of 8 documents are two whole batches of 4: every forward is the one lmscope-score
    # --data makes over the whole corpus, so its loss and per-document numbers are these doubles.
    whole = json.loads(engine_tool("lmscope-score", "--model", TINY, "--data", corpus, "--batch", 4, "--intervene",
                                   SCORE["intervene"][0], "--json", "-q", "--per-doc", tmp_path / "whole.jsonl"))
    assert {k: one[k] for k in whole} == whole
    assert whole["difference"] != 0
    read = lambda p: [json.loads(l) for l in open(p)]
    assert read(tmp_path / "one.jsonl") == read(tmp_path / "whole.jsonl")


def test_a_corpus_keeps_its_line_numbers_blank_lines_and_one_token_documents(tmp_path):
    rng = np.random.default_rng(2)
    lines = [" ".join(map(str, rng.integers(1, 1024, n))) for n in (5, 1, 9, 1, 1, 1, 7, 4)]
    lines[4:4] = ["", "  "]                                   # blank: no documents
    corpus = tmp_path / "c.ids"
    corpus.write_text("\n".join(lines) + "\n")
    # Shards of 3 documents: the second holds one-token documents only (nothing to predict there).
    r = lmscope.sweep_corpus(TINY, corpus, batch=2, docs_per_shard=3, per_doc=tmp_path / "d.jsonl", progress=False)
    assert r["blank_lines"] == 2 and r["one_token_documents"] == 4 and r["num_shards"] == 3
    docs = [json.loads(l) for l in open(tmp_path / "d.jsonl")]
    assert [d["doc"] for d in docs] == [0, 2, 8, 9]           # the corpus's line indices
    whole = json.loads(engine_tool("lmscope-score", "--model", TINY, "--data", corpus, "--batch", 2, "--json", "-q"))
    assert {k: r[k] for k in ("documents", "blank_lines", "one_token_documents", "predicted")} == \
        {k: whole[k] for k in ("documents", "blank_lines", "one_token_documents", "predicted")}
    # Other batches than the whole corpus's (its one-token documents are skipped before batching):
    # the loss within the 1e-4 nats of docs/score.md's corpus check.
    assert abs(r["loss"] - whole["loss"]) <= 1e-4


@pytest.mark.parametrize("content, name, needle", [
    (b"1 2 3\n" * 9 + b" ".join([b"7"] * 200) + b"\n", "c.ids", "c.ids:10: 200 tokens, more than the model's 128 positions"),
    (b'{"text": "a b"}\n{"body": "c"}\n', "c.jsonl", "c.jsonl:2: no field 'text' in this JSON line"),
])
def test_a_bad_corpus_is_one_line_naming_the_users_file_and_line(tmp_path, content, name, needle):
    (tmp_path / name).write_bytes(content)
    status, _, stderr = cli("score", "--model", TINY, "--data", tmp_path / name, "--docs-per-shard", 4, "--workers", 2,
                            "--threads", 1, "--json", tmp_path / "out.json", "--quiet")
    assert status == 1 and stderr.count("\n") == 1 and needle in stderr, stderr
    assert not (tmp_path / "out.json").exists()


# ---- resumable: a directory of shard results --------------------------------------------------------
def test_a_killed_sweep_resumes_to_the_bytes_of_an_uninterrupted_one(tmp_path):
    """tools/lmscope-sweep patch --out DIR on 2 worker processes, killed (SIGKILL) once two of
    its 12 shards are in the manifest: the same command again runs the other shards only and
    writes the very bytes (DIR/result.json, --json) of a sweep that was never interrupted."""
    pairs = pairs_file(tmp_path / "pairs.jsonl", 12, seed=5)
    reference = lmscope.sweep_pairs(TINY, pairs, sites="resid_pre", rows_per_forward=7, pairs_per_shard=1,
                                    out=tmp_path / "ref", json_out=tmp_path / "ref.json", progress=False)
    assert reference["num_shards"] == 12
    out = tmp_path / "run"
    argv = [sys.executable, TOOL, "patch", "--model", TINY, "--pairs", pairs, "--sites", "resid_pre",
            "--rows-per-forward", 7, "--pairs-per-shard", 1, "--workers", 2, "--threads", 1, "--out", out,
            "--json", tmp_path / "run.json"]
    env = dict(os.environ, LMSCOPE_PYTHON_BUILD=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    p = subprocess.Popen(list(map(str, argv)), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_sweep_shards(out, 2, p)
    workers = children(p.pid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    # Its worker processes die with it (PR_SET_PDEATHSIG), and their tools with them.
    deadline = time.monotonic() + 10
    while [w for w in workers if alive(w)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert workers and not [w for w in workers if alive(w)], workers
    manifest = json.loads((out / "sweep.json").read_text())
    assert not manifest["complete"] and 2 <= len(manifest["shards"]) < 12
    kept = {e["file"]: e["sha256"] for e in manifest["shards"]}
    r = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("patch: ") <= 12 - len(kept)       # a progress line per shard run this time
    assert (out / "result.json").read_bytes() == (tmp_path / "ref" / "result.json").read_bytes()
    assert (tmp_path / "run.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["complete"] and [e["index"] for e in manifest["shards"]] == list(range(12))
    assert all({e["file"]: e["sha256"] for e in manifest["shards"]}[f] == h for f, h in kept.items())
    assert not [n for n in os.listdir(out) if ".partial." in n]


def test_a_sweep_directory_is_refused_when_it_is_not_this_sweep(tmp_path):
    pairs = pairs_file(tmp_path / "pairs.jsonl", 2)
    run = lambda out, **kw: lmscope.sweep_pairs(TINY, pairs, **dict(dict(sites="resid_pre", rows_per_forward=7,
                                                                          out=out, progress=False), **kw))
    run(tmp_path / "s")
    for kw, needle in ((dict(rows_per_forward=3), "options.rows_per_forward = 7; this one asks 3"),
                       (dict(sites="attn.z"), "options.sites = 'resid_pre'; this one asks 'attn.z'")):
        with pytest.raises(ValueError, match="'%s' holds a sweep made with %s" % (tmp_path / "s", re.escape(needle))):
            run(tmp_path / "s", **kw)
    corpus = ids_corpus(tmp_path / "c.ids", 4)
    with pytest.raises(ValueError, match=r"sweep.kind = 'patch'; this one asks 'score'"):
        lmscope.sweep_corpus(TINY, corpus, out=tmp_path / "s", progress=False)
    # Not a sweep: files but no sweep.json (a collection's directory too) are refused, untouched.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    lmscope.collect(TINY, corpus, tmp_path / "acts", "layers.0.resid_post", progress=False)
    for d in ("notes", "acts"):
        before = tree(tmp_path / d)
        with pytest.raises(ValueError, match="'%s' holds files and no sweep.json: not a sweep" % (tmp_path / d)):
            run(tmp_path / d)
        assert tree(tmp_path / d) == before
    # Two sweeps into one directory at once: the second is refused, naming the first's pid.
    with sweep_directory.DIRECTORY.locked(str(tmp_path / "s")):
        with pytest.raises(ValueError, match=r"is being written by another sweep \(pid %d\)" % os.getpid()):
            run(tmp_path / "s")


# ---- readable output: the single-process tools' text and pictures ------------------------------------
def test_the_sweeps_text_and_pictures_are_the_tools_own(tmp_path):
    """lmscope-sweep patch prints lmscope-patch --pairs's tables and --svg draws its pictures,
    byte for byte (lmscope-patch --from-json makes both from the merge); lmscope-sweep score
    prints lmscope-score --data's lines."""
    pairs = pairs_file(tmp_path / "pairs.jsonl", 5)
    status, out, stderr = cli("patch", "--model", TINY, "--pairs", pairs, "--sites", "resid_pre,attn.z",
                              "--rows-per-forward", 7, "--pairs-per-shard", 2, "--workers", 2, "--threads", 1,
                              "--svg", tmp_path / "sweep", "--quiet")
    assert status == 0, stderr
    whole = engine_tool("lmscope-patch", "--model", TINY, "--pairs", pairs, "--sites", "resid_pre,attn.z",
                        "--rows-per-forward", 7, "--svg", tmp_path / "whole", "-q")
    tables = whole.split("\n\n")[:-1]                        # up to the line of cells, forwards and seconds
    assert "resid_pre: layer x position, normalized, mean over 5 pairs" in whole
    assert out.startswith("\n\n".join(tables) + "\n")
    for site in ("resid_pre", "attn_z"):
        for kind in ("", ".sd"):
            name = "%s%s.svg" % (site, kind)
            assert (tmp_path / ("sweep." + name)).read_bytes() == (tmp_path / ("whole." + name)).read_bytes(), name
            assert "wrote %s" % (tmp_path / ("sweep." + name)) in out
    assert "3 shards of 2 pairs, 0 retried" in out

    corpus = ids_corpus(tmp_path / "c.ids", 16, seed=1, low=2, high=30)
    status, out, stderr = cli("score", "--model", TINY, "--data", corpus, "--batch", 4, "--docs-per-shard", 8,
                              "--intervene", SCORE["intervene"][0], "--workers", 2, "--threads", 1, "--quiet")
    assert status == 0, stderr
    whole = engine_tool("lmscope-score", "--model", TINY, "--data", corpus, "--batch", 4, "--intervene",
                        SCORE["intervene"][0], "-q")
    assert "intervened: layers.1.attn_out=zero" in whole
    assert out == whole + "2 shards of 8 documents, 0 retried\n"


def test_from_json_refuses_what_is_not_a_pairs_result_in_one_line(tmp_path):
    (tmp_path / "bad.json").write_text('{"num_pairs": 2}')
    r = subprocess.run([os.path.join(BUILD, "lmscope-patch"), "--from-json", tmp_path / "bad.json"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "%s: not the --json of lmscope-patch --pairs or lmscope-sweep patch" % (tmp_path / "bad.json") in r.stderr


def test_an_infinity_keeps_its_sign_through_the_statistics_and_the_tables(tmp_path):
    """A normalized cell is infinite where the clean and corrupted metrics are equal and the
    patched one is not: the tools write it "inf" or "-inf" (json_num), NaN as null. The sweep's
    statistics read both back and write the sign they compute; lmscope-patch --from-json
    prints it."""
    from lmscope.sweep import pair_statistics
    grids = as_json([[["-inf", 1.0, None]], [[2.0, "inf", None]]])         # two pairs, one layer, 3 columns
    stats = as_json(pair_statistics(grids))
    assert stats["mean"] == [["-inf", "inf", None]]
    assert stats["min"] == [["-inf", 1.0, None]]
    assert stats["max"] == [[2.0, "inf", None]]
    assert stats["sd"] == [[None, None, None]]                              # inf - inf: NaN
    result = {"pairs_file": "p.jsonl", "num_pairs": 2, "pairs": [{"clean_ids": [5, 6, 7]}],
              "sites": {"resid_pre": dict(columns="position", column_index=[0, 1, 2], **stats)}}
    (tmp_path / "r.json").write_text(json.dumps(result))
    out = engine_tool("lmscope-patch", "--from-json", tmp_path / "r.json")
    mean = out.split("normalized, mean over 2 pairs\n")[1].split("\n")[1]   # layer 0's row
    assert mean.split() == ["0", "-inf", "inf", "nan"], out


def wait_for_sweep_shards(out, n, proc, timeout=120):
    """Until the sweep's manifest lists n shards (or the run ends first: an error)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("the run ended first: %s" % proc.stderr.read())
        try:
            if len(json.loads((out / "sweep.json").read_text())["shards"]) >= n:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    raise AssertionError("no %d shards within %d s" % (n, timeout))


def children(pid):
    """The processes whose parent is `pid`."""
    out = []
    for q in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(open("/proc/%s/stat" % q).read().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(q))
        except (OSError, ValueError, IndexError):
            pass
    return out


def alive(pid):
    """Running (a zombie waiting for its parent's wait() has finished)."""
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
