"""lmscope.sweep_pairs / lmscope.sweep_corpus and tools/lmscope-sweep (python/lmscope/sweep.py,
docs/collect.md "Sweeps on workers"): lmscope-patch --pairs and lmscope-score --data spread over
worker processes give, bit for bit, what one worker gives, and what the tool gives over the
whole file in one process (the pairs: always; a corpus: when its shards are whole batches, so
that every forward is the same). Bad input is the tool's one line, naming the user's file.

The pairs and corpora are token ids drawn here from numpy's generator with fixed seeds, for the
committed tiny model (golden/models/tiny-qwen2); the Ray runs are in test_collect_ray.py."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lmscope
from conftest import BUILD, ROOT, TINY
from test_collect import ids_corpus

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
