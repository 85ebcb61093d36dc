"""lmscope.collect / lmscope-collect and lmscope.ActivationDataset (docs/collect.md): the rows
read back equal the engine's own run_with_cache on the same prompts; resume, refusal,
determinism across worker counts, and bad input.

The corpora: walkthroughs/data/zh-en-corpus.txt (committed, made by make_corpus.py with a fixed
seed; its first 2,000 lines for SmolLM2), and for the tiny model token-id corpora drawn here from
numpy's generator with a fixed seed."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import lmscope
from conftest import BUILD, ROOT, SMOLLM2, TINY

TOOL = os.path.join(ROOT, "tools", "lmscope-collect")
ZH_EN = os.path.join(ROOT, "walkthroughs", "data", "zh-en-corpus.txt")


def cli(*args, wait=True):
    """tools/lmscope-collect with the module as built; (status, stdout, stderr) or the Popen."""
    env = dict(os.environ, LMSCOPE_PYTHON_BUILD=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    argv = [sys.executable, TOOL, *map(str, args)]
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def ids_corpus(path, docs, seed=0, low=3, high=40, vocab=1024):
    """`docs` lines of random token ids, lengths in [low, high)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(docs):
            f.write(" ".join(map(str, rng.integers(1, vocab, rng.integers(low, high)))) + "\n")
    return str(path)


def shard_hashes(out):
    m = json.load(open(os.path.join(out, "collection.json")))
    return [(e["file"], e["rows"], e["sha256"]) for e in m["shards"]]


def tree(path):
    """Every file under path with its bytes' sha256: to show a directory was not touched (but
    for collection.lock, which holds the pid of the last run that took the lock)."""
    return {name: hashlib.sha256(open(os.path.join(path, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(path)) if name != "collection.lock"}


# ---- equal to run_with_cache ---------------------------------------------------------------------
def test_smollm2_cli_over_2000_documents_reads_back_as_run_with_cache(smollm2, tmp_path):
    corpus = tmp_path / "zh-en-2000.txt"
    with open(ZH_EN, encoding="utf-8") as f:
        lines = [f.readline().rstrip("\n") for _ in range(2000)]
    corpus.write_text("".join(l + "\n" for l in lines), encoding="utf-8")
    hooks = ["layers.10.resid_post", "layers.20.resid_post"]
    out = tmp_path / "acts"
    # Each document's first 8 tokens (--truncate): 15,456 tokens instead of 40,240, so that the
    # test takes a minute of one core, not three.
    status, stdout, stderr = cli("--model", SMOLLM2, "--corpus", corpus, "--out", out, "--hooks", ",".join(hooks),
                                 "--docs-per-shard", 500, "--truncate", "--max-tokens", 8)
    assert status == 0, stderr
    ds = lmscope.ActivationDataset(out)
    assert ds.manifest["corpus"]["documents"] == 2000 and len(ds.shard_entries) == 4
    assert ds.manifest["long_documents"]["longer"] == sum(len(smollm2.tokenize(l).ids) > 8 for l in lines)
    assert ds.widths == {h: smollm2.info["hidden_size"] for h in hooks}
    rows = {k: np.concatenate([b[k] for b in ds.batches(8192)]) for k in ["doc", "position", "token"] + hooks}
    assert len(rows["doc"]) == len(ds) == ds.manifest["tokens"]          # every real token, no padding
    # Every 40th document and the last: its rows equal a forward of that document alone. A batch
    # of padded rows is not summed in the order one row alone is, so the values are held to the
    # activation tolerance of docs/tolerances.md: max |a - b| <= 1e-4 * the tensor's largest |b|.
    for doc in list(range(0, 2000, 40)) + [1999]:
        ids = smollm2.tokenize(lines[doc]).ids[:8]
        _, cache = smollm2.run_with_cache(ids, names=hooks)
        at = rows["doc"] == doc
        np.testing.assert_array_equal(rows["position"][at], np.arange(len(ids)))
        assert rows["token"][at].tolist() == ids
        for h in hooks:
            np.testing.assert_allclose(rows[h][at], cache[h][0], rtol=0, atol=1e-4 * np.abs(cache[h]).max())


def test_rows_equal_run_with_cache_of_the_same_batch_bit_for_bit(tiny, tmp_path):
    """The stored rows are the engine's values as they are (no copy, cast or reorder error):
    the same batch through run_with_cache gives the very same bits."""
    corpus = ids_corpus(tmp_path / "c.ids", 8, seed=3)
    hooks = ["layers.1.resid_post", "layers.2.attn.z", "layers.0.ffn.act"]
    m = lmscope.collect(TINY, corpus, tmp_path / "acts", hooks, batch_size=8, progress=False)
    docs = [list(map(int, l.split())) for l in open(corpus)]
    order = sorted(range(8), key=lambda i: (len(docs[i]), i))          # the batch as the worker forms it
    _, cache = tiny.run_with_cache([docs[i] for i in order], names=hooks, padding_side="left")
    got = lmscope.ActivationDataset(tmp_path / "acts").shard(0)
    T = max(map(len, docs))
    for row, i in enumerate(order):
        at = got["doc"] == i
        n = len(docs[i])
        np.testing.assert_array_equal(got["layers.1.resid_post"][at], cache["layers.1.resid_post"][row, T - n:])
        z = cache["layers.2.attn.z"][row, T - n:]                        # [T, H, hd] -> [T, H*hd]
        np.testing.assert_array_equal(got["layers.2.attn.z"][at], z.reshape(n, -1))
        np.testing.assert_array_equal(got["layers.0.ffn.act"][at], cache["layers.0.ffn.act"][row, T - n:])
    assert m["hooks"]["layers.2.attn.z"]["width"] == tiny.info["num_heads"] * tiny.info["head_dim"]


def test_positions_last_and_a_range(tiny, tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 20, seed=4, low=6)
    docs = [list(map(int, l.split())) for l in open(corpus)]
    lmscope.collect(TINY, corpus, tmp_path / "last", "layers.2.resid_post", positions="last", progress=False)
    lmscope.collect(TINY, corpus, tmp_path / "tail", "layers.2.resid_post", positions="-3:", progress=False)
    last = lmscope.ActivationDataset(tmp_path / "last").shard(0)
    tail = lmscope.ActivationDataset(tmp_path / "tail").shard(0)
    assert last["doc"].tolist() == list(range(20))
    assert last["position"].tolist() == [len(d) - 1 for d in docs]
    assert last["token"].tolist() == [d[-1] for d in docs]
    assert tail["position"].tolist() == [p for d in docs for p in range(len(d) - 3, len(d))]
    np.testing.assert_array_equal(tail["layers.2.resid_post"][2::3], last["layers.2.resid_post"])


def test_f16_and_bf16_are_the_f32_values_rounded(tiny, tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 10, seed=5)
    hook = "layers.1.resid_post"
    got = {}
    for dtype in ("f32", "f16", "bf16"):
        lmscope.collect(TINY, corpus, tmp_path / dtype, hook, dtype=dtype, progress=False)
        got[dtype] = lmscope.ActivationDataset(tmp_path / dtype).shard(0)[hook]
    np.testing.assert_array_equal(got["f16"], got["f32"].astype(np.float16).astype(np.float32))
    # bfloat16 keeps 8 significant bits: rounded to nearest, within half a unit in the last place.
    np.testing.assert_allclose(got["bf16"], got["f32"], rtol=2.0 ** -8, atol=0)
    assert np.any(got["bf16"] != got["f32"])


# ---- shards, resume, refusal, determinism ---------------------------------------------------------
def test_two_workers_write_the_same_shards_as_one(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 120, seed=6)
    args = ["--model", TINY, "--corpus", corpus, "--hooks", "layers.1.resid_post,layers.2.attn.z",
            "--docs-per-shard", 20, "--batch-size", 4, "--quiet"]
    assert cli(*args, "--out", tmp_path / "one")[0] == 0
    status, _, stderr = cli(*args, "--out", tmp_path / "two", "--workers", 2, "--threads", 1)
    assert status == 0, stderr
    assert len(shard_hashes(tmp_path / "one")) == 6
    assert shard_hashes(tmp_path / "one") == shard_hashes(tmp_path / "two")


def test_a_killed_run_keeps_its_finished_shards_and_the_same_command_resumes(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 400, seed=7, low=60, high=120)
    args = ["--model", TINY, "--corpus", corpus, "--hooks", "layers.*.resid_post", "--docs-per-shard", 10,
            "--batch-size", 2, "--quiet"]
    out = tmp_path / "acts"
    p = cli(*args, "--out", out, wait=False)
    manifest = out / "collection.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        if manifest.exists() and len(json.loads(manifest.read_text())["shards"]) >= 2:
            break
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed: %s" % p.stderr.read()
    p.send_signal(signal.SIGKILL)
    p.wait()
    m = json.loads(manifest.read_text())
    assert not m["complete"] and 2 <= len(m["shards"]) < m["num_shards"] == 40
    # Every shard file there is whole: the listed ones match their sha256, none is half written.
    for e in m["shards"]:
        assert hashlib.sha256((out / e["file"]).read_bytes()).hexdigest() == e["sha256"]
    with pytest.raises(ValueError, match="unfinished collection"):
        lmscope.ActivationDataset(out)
    done_before = {e["file"]: e["sha256"] for e in m["shards"]}
    status, _, stderr = cli(*args, "--out", out)
    assert status == 0, stderr
    assert not [n for n in os.listdir(out) if ".partial." in n]
    after = {f: h for f, _, h in shard_hashes(out)}
    assert len(after) == 40 and all(after[f] == h for f, h in done_before.items())
    assert cli(*args, "--out", tmp_path / "whole")[0] == 0
    assert shard_hashes(out) == shard_hashes(tmp_path / "whole")
    assert len(lmscope.ActivationDataset(out)) == json.loads(manifest.read_text())["tokens"]


def test_a_changed_option_model_or_corpus_is_refused_in_one_line(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 30, seed=8)
    out = tmp_path / "acts"
    args = ["--model", TINY, "--corpus", corpus, "--out", out, "--hooks", "layers.1.resid_post", "--quiet"]
    assert cli(*args)[0] == 0
    before = tree(out)
    for extra, what in ((["--dtype", "f16"], "options.dtype"), (["--positions", "last"], "options.positions"),
                        (["--docs-per-shard", 7], "options.docs_per_shard")):
        status, _, stderr = cli(*args, *extra)
        assert status == 1 and stderr.count("\n") == 1 and what in stderr, stderr
    status, _, stderr = cli(*[a if a != "layers.1.resid_post" else "layers.2.resid_post" for a in args])
    assert status == 1 and "options.hooks" in stderr, stderr
    with open(corpus, "a") as f:
        f.write("5 6 7\n")
    status, _, stderr = cli(*args)
    assert status == 1 and "corpus.sha256" in stderr, stderr
    assert tree(out) == before
    # The same command on an unchanged corpus finds nothing to do.
    ids_corpus(corpus, 30, seed=8)
    assert cli(*args)[0] == 0 and tree(out) == before


def test_two_collections_into_one_directory_at_once_one_refuses(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 300, seed=9, low=60, high=120)
    out = tmp_path / "acts"
    args = ["--model", TINY, "--corpus", corpus, "--out", out, "--hooks", "layers.*.resid_post",
            "--docs-per-shard", 10, "--batch-size", 2, "--quiet"]
    first = cli(*args, wait=False)
    deadline = time.monotonic() + 120
    while not (out / "collection.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    status, _, stderr = cli(*args)
    assert status == 1 and "being written by another collection (pid %d)" % first.pid in stderr, stderr
    assert first.wait() == 0, first.stderr.read()
    assert json.loads((out / "collection.json").read_text())["complete"]


# ---- bad input ---------------------------------------------------------------------------------------
def test_blank_lines_are_skipped_counted_and_keep_line_numbers(tiny, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n\n   \nthe cat sat\n", encoding="utf-8")
    m = lmscope.collect(TINY, corpus, tmp_path / "acts", "layers.0.resid_post", positions="last", progress=False)
    assert m["corpus"]["documents"] == 2 and m["corpus"]["blank_lines"] == 2
    assert lmscope.ActivationDataset(tmp_path / "acts").shard(0)["doc"].tolist() == [0, 3]


@pytest.mark.parametrize("content, kind, message", [
    (b"\n  \n\n", "text", "no documents (3 lines, all blank)"),
    (b"good line\nbad \xff byte\n", "text", ":2: invalid UTF-8 at byte 4 of the line"),
    (b'{"text": "a"}\n{"body": "b"}\n', "jsonl", ":2: no field 'text' in this JSON line"),
    (b'{"text": "a"}\n{"text": 3}\n', "jsonl", ":2: the field 'text' holds a JSON integer, not a string"),
    (b'{"text": "a"}\nnot json\n', "jsonl", ":2: not JSON"),
    (b"1 2 3\n4 x 5\n", "ids", ":2: 'x' is not a token id"),
    (b"1 2 3\n4 5000 5\n", "ids", ":2: token id 5000 is outside the vocabulary (1024)"),
])
def test_bad_corpora_are_refused_in_one_line_before_anything_is_written(tmp_path, content, kind, message):
    corpus = tmp_path / ("c." + {"text": "txt", "jsonl": "jsonl", "ids": "ids"}[kind])
    corpus.write_bytes(content)
    status, _, stderr = cli("--model", TINY, "--corpus", corpus, "--out", tmp_path / "acts", "--hooks",
                            "layers.0.resid_post")
    assert status == 1 and stderr.count("\n") == 1 and message in stderr, stderr
    assert not (tmp_path / "acts").exists()


@pytest.mark.parametrize("hooks, message", [
    ("layers.1.nonsense", "unknown hook 'layers.1.nonsense'"),
    ("layers.7.resid_post", "layer 7 is outside 0..2"),
    ("layers.1.attn.probs", "its width varies with the document's length (S)"),
    ("tokens.input_ids", "has no value per token to collect"),
])
def test_a_hook_or_layer_that_cannot_be_collected_is_refused(tmp_path, hooks, message):
    corpus = ids_corpus(tmp_path / "c.ids", 3)
    status, _, stderr = cli("--model", TINY, "--corpus", corpus, "--out", tmp_path / "acts", "--hooks", hooks)
    assert status == 1 and stderr.count("\n") == 1 and message in stderr, stderr
    assert not (tmp_path / "acts").exists()


def test_a_directory_that_is_not_a_collection_is_refused_untouched(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 3)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my files\n")
    before = tree(out)
    status, _, stderr = cli("--model", TINY, "--corpus", corpus, "--out", out, "--hooks", "layers.0.resid_post")
    assert status == 1 and "not a collection" in stderr, stderr
    assert tree(out) == before


def test_long_documents_refused_unless_split_or_truncate_and_counted(tiny, tmp_path):
    corpus = tmp_path / "c.ids"
    corpus.write_text("1 2 3\n" + " ".join(["7"] * 300) + "\n")   # the tiny model: 128 positions, 127 for a piece
    with pytest.raises(ValueError, match="corpus line 2\\) has 300 tokens, more than 127: pass --split or --truncate"):
        lmscope.collect(TINY, corpus, tmp_path / "refused", "layers.0.resid_post", progress=False)
    assert not (tmp_path / "refused").exists()
    m = lmscope.collect(TINY, corpus, tmp_path / "split", "layers.0.resid_post", long="split", progress=False)
    assert m["long_documents"] == {"policy": "split", "longer": 1, "pieces_added_by_split": 2,
                                   "tokens_dropped_by_truncate": 0}
    got = lmscope.ActivationDataset(tmp_path / "split").shard(0)
    assert len(got["doc"]) == 303 and got["chunk"].tolist().count(2) == 300 - 2 * 127 and got["position"].max() == 126
    m = lmscope.collect(TINY, corpus, tmp_path / "cut", "layers.0.resid_post", long="truncate", max_tokens=50,
                        progress=False)
    assert m["long_documents"]["tokens_dropped_by_truncate"] == 250 and m["tokens"] == 53


def test_the_reader_refuses_a_changed_shard_and_shuffles_within_its_buffer(tmp_path):
    corpus = ids_corpus(tmp_path / "c.ids", 60, seed=10)
    out = tmp_path / "acts"
    lmscope.collect(TINY, corpus, out, "layers.2.resid_post", docs_per_shard=10, progress=False)
    ds = lmscope.ActivationDataset(out)
    plain = list(ds.batches(batch_size=64))
    mixed = list(ds.batches(batch_size=64, shuffle_buffer=200, seed=1))
    assert [len(b["doc"]) for b in plain][:-1] == [64] * (len(plain) - 1)
    key = lambda bs: sorted(zip(np.concatenate([b["doc"] for b in bs]).tolist(),
                                np.concatenate([b["position"] for b in bs]).tolist()))
    assert key(plain) == key(mixed) and len(key(plain)) == len(ds)
    assert np.concatenate([b["doc"] for b in mixed]).tolist() != np.concatenate([b["doc"] for b in plain]).tolist()
    shard = out / "shard-00003.h5"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="shard-00003.h5 does not match the manifest's sha256"):
        lmscope.ActivationDataset(out)


def test_a_full_disk_mid_run_is_one_line_keeps_finished_shards_and_resumes(tmp_path):
    """A file-size limit (ulimit -f) stands in for a full disk: the writer's error is one line,
    the shards before it stay whole, and the same command without the limit finishes the run."""
    import resource
    corpus = tmp_path / "c.ids"
    rng = np.random.default_rng(12)
    lines = [rng.integers(1, 1024, 5) for _ in range(40)] + [rng.integers(1, 1024, 100) for _ in range(10)]
    corpus.write_text("".join(" ".join(map(str, l)) + "\n" for l in lines))
    out = tmp_path / "acts"
    args = ["--model", TINY, "--corpus", corpus, "--out", out, "--hooks", "layers.1.resid_post",
            "--docs-per-shard", 10, "--quiet"]
    env = dict(os.environ, LMSCOPE_PYTHON_BUILD=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))   # shard 4: ~260 KB
    r = subprocess.run([sys.executable, TOOL, *map(str, args)], env=env, capture_output=True, text=True,
                       preexec_fn=limit)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "cannot write '%s'" % (out / "shard-00004.h5") in r.stderr and "File too large" in r.stderr, r.stderr
    m = json.loads((out / "collection.json").read_text())
    assert [e["file"] for e in m["shards"]] == ["shard-%05d.h5" % i for i in range(4)] and not m["complete"]
    assert not (out / "shard-00004.h5").exists() and not [n for n in os.listdir(out) if ".partial." in n]
    status, _, stderr = cli(*args)
    assert status == 0, stderr
    assert cli(*[a if a != out else tmp_path / "whole" for a in args])[0] == 0
    assert shard_hashes(out) == shard_hashes(tmp_path / "whole")


# In a mount namespace of its own (unshare -rm: no privilege needed where user namespaces are
# allowed), a tmpfs of SIZE is the output's disk: the collection is run, then the disk grown
# and the same command run again. What each run said and left is copied out before the
# namespace, and its disk, go.
FULL_DISK_SCRIPT = """
mnt=$1; keep=$2; size=$3; shift 3
mount -t tmpfs -o size=$size tmpfs "$mnt" || exit 99
"$@" --out "$mnt/acts" 2> "$keep/first.err"; echo $? > "$keep/first.rc"
ls "$mnt/acts" > "$keep/first.ls"; cp "$mnt/acts/collection.json" "$keep/first.json"
mount -o remount,size=20m "$mnt"
"$@" --out "$mnt/acts" 2> "$keep/second.err"; echo $? > "$keep/second.rc"
cp "$mnt/acts/collection.json" "$keep/second.json"
"""


def test_a_really_full_disk_mid_run_is_one_line_keeps_finished_shards_and_resumes(tmp_path):
    """As above with a disk that is full (ENOSPC), not a file-size limit: a tmpfs of 200 KB
    holds the first four shards and the manifest, not the fifth (~260 KB)."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rm is not allowed here (no user namespaces): the ulimit -f test stands in")
    corpus = tmp_path / "c.ids"
    rng = np.random.default_rng(12)
    lines = [rng.integers(1, 1024, 5) for _ in range(40)] + [rng.integers(1, 1024, 100) for _ in range(10)]
    corpus.write_text("".join(" ".join(map(str, l)) + "\n" for l in lines))
    (tmp_path / "disk").mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    args = ["--model", TINY, "--corpus", corpus, "--hooks", "layers.1.resid_post", "--docs-per-shard", 10, "--quiet"]
    env = dict(os.environ, LMSCOPE_PYTHON_BUILD=os.path.join(BUILD, "python"), OMP_NUM_THREADS="1")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", FULL_DISK_SCRIPT, "full-disk", str(tmp_path / "disk"), str(keep),
                        "200k", sys.executable, TOOL, *map(str, args)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first_err = (keep / "first.err").read_text()
    assert (keep / "first.rc").read_text().strip() == "1" and first_err.count("\n") == 1, first_err
    assert "cannot write '%s/acts/shard-00004.h5'" % (tmp_path / "disk") in first_err, first_err
    assert "No space left on device" in first_err, first_err
    first = json.loads((keep / "first.json").read_text())
    assert [e["file"] for e in first["shards"]] == ["shard-%05d.h5" % i for i in range(4)] and not first["complete"]
    listed = (keep / "first.ls").read_text().split()
    assert "shard-00004.h5" not in listed and not [n for n in listed if ".partial." in n], listed
    assert (keep / "second.rc").read_text().strip() == "0", (keep / "second.err").read_text()
    second = json.loads((keep / "second.json").read_text())
    assert cli(*args, "--out", tmp_path / "whole")[0] == 0
    assert second["complete"] and [(e["file"], e["rows"], e["sha256"]) for e in second["shards"]] == \
        shard_hashes(tmp_path / "whole")
    assert second["shards"][:4] == first["shards"]          # the finished shards, kept as they were


def test_chat_wraps_each_document_in_the_template(tiny, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\nthe cat sat\n", encoding="utf-8")
    lmscope.collect(TINY, corpus, tmp_path / "acts", "layers.0.resid_post", chat="chatml", progress=False)
    got = lmscope.ActivationDataset(tmp_path / "acts").shard(0)
    for doc, text in enumerate(["hello world", "the cat sat"]):
        prompt = tiny.apply_chat_template([{"role": "user", "content": text}], format="chatml")
        ids = got["token"][got["doc"] == doc].tolist()
        assert tiny.decode(ids) == prompt and len(ids) > len(tiny.tokenize(text).ids)
    # The tiny model's tokenizer has no template of its own: one line, nothing written.
    status, _, stderr = cli("--model", TINY, "--corpus", corpus, "--out", tmp_path / "own", "--hooks",
                            "layers.0.resid_post", "--chat")
    assert status == 1 and stderr.count("\n") == 1 and "chat: the tokenizer has no chat template" in stderr, stderr
    assert not (tmp_path / "own").exists()
    with pytest.raises(ValueError, match="a corpus of token ids has no text"):
        lmscope.collect(TINY, ids_corpus(tmp_path / "c.ids", 2), tmp_path / "ids", "layers.0.resid_post", chat=True)
