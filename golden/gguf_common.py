"""What the GGUF reference scripts share (make_gguf_refs.py, make_gguf_tokenizer_refs.py,
make_r1_refs.py; make_bpe_train_refs.py uses ROOT and write_or_check): the repository root, the
default model (SmolLM2's GGUF file, fetched by scripts/fetch-model.sh), the --model / --check
options, a missing model as a one-line exit, the file's sha256, and writing (or --check-ing) a
reference file.

Not named gguf.py: that would shadow the `gguf` package the scripts import.
"""
import argparse
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def arg_parser(check_help, description=None):
    """An ArgumentParser with --model (default: DEFAULT_MODEL) and --check."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--check", action="store_true", help=check_help)
    return ap


def require_model(path):
    """Exits with one line when the GGUF file is not there."""
    if not os.path.exists(path):
        sys.exit(f"{path} is missing: run scripts/fetch-model.sh first")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_or_check(path, text, check):
    """Writes `text` to `path`, or with `check` compares it with the file (prints "ok" or what
    differs) and exits 0 or 1."""
    if check:
        with open(path, encoding="utf-8") as f:
            same = f.read() == text
        print("ok" if same else f"{path} differs")
        sys.exit(0 if same else 1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}")
