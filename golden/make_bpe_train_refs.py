#!/usr/bin/env python3
"""HF tokenizers' BpeTrainer on the lesson corpus: the reference for lmscope-bpe --train.

    /work/venv-hf-pinned/bin/python golden/make_bpe_train_refs.py           # rewrite golden/tokenizers/bpe-train/
    /work/venv-hf-pinned/bin/python golden/make_bpe_train_refs.py --check   # regenerate in memory, compare

Trains byte-level BPE with HF `tokenizers` exactly as lib/tokenizer/bpe_train.h describes: each
non-empty line of walkthroughs/data/zh-en-corpus.txt is one text (train_from_iterator), NFC
normalizer, the Qwen2 pre-tokenizer (Split on Qwen2's regex, isolated, then ByteLevel without a
regex of its own), BpeTrainer(vocab_size = 256 + MERGES, initial_alphabet = the 256 byte-level
characters, no special tokens, min_frequency 0, no alphabet limit).

Writes golden/tokenizers/bpe-train/refs.json: the learned merges in order (as the vocabulary
strings of the pair), the vocabulary (string -> id) and HF's ids for TEXTS with the trained
tokenizer. When build/lmscope-bpe exists it also checks that the tokenizer.json our --save writes
loads in HF tokenizers and encodes TEXTS to the same ids (the file is not committed).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_common import ROOT, write_or_check  # noqa: E402
CORPUS = "walkthroughs/data/zh-en-corpus.txt"
OUT = os.path.join(ROOT, "golden", "tokenizers", "bpe-train", "refs.json")
MERGES = 500
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
TEXTS = ["中华人民共和国成立于 1949 年。", "The People's Republic of China was founded in 1949.", "你好", "hello",
         "Tokenizers turn text into numbers.", "北京的大学很重要。", "def f(x):\n    return x", "🤖 emoji"]


def train():
    with open(os.path.join(ROOT, CORPUS), encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line]
    tk = Tokenizer(models.BPE())
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256 + MERGES, min_frequency=0, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(lines, trainer=trainer)
    return tk


def check_our_file(tk):
    tool = os.path.join(ROOT, "build", "lmscope-bpe")
    if not os.path.exists(tool):
        print("build/lmscope-bpe not built: skipping the check that HF loads its --save output")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tokenizer.json")
        subprocess.run([tool, "--train", os.path.join(ROOT, CORPUS), "--merges", str(MERGES), "--save", path],
                       check=True, stdout=subprocess.DEVNULL)
        ours = Tokenizer.from_file(path)
    for t in TEXTS:
        assert ours.encode(t).ids == tk.encode(t).ids, t
    assert ours.get_vocab() == tk.get_vocab()
    print("HF tokenizers loads lmscope-bpe --save's tokenizer.json: same vocabulary, same ids")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    tk = train()
    model = json.loads(tk.to_str())["model"]
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    out = {"made_by": f"tokenizers {tokenizers.__version__} BpeTrainer; golden/make_bpe_train_refs.py",
           "corpus": CORPUS, "merges_asked": MERGES, "vocab_size": len(model["vocab"]),
           "merges": merges, "vocab": model["vocab"],
           "texts": [{"text": t, "ids": tk.encode(t).ids} for t in TEXTS]}
    check_our_file(tk)
    write_or_check(OUT, json.dumps(out, ensure_ascii=False, indent=0) + "\n", args.check)

if __name__ == "__main__":
    main()
