#!/usr/bin/env python3
"""golden/gemma3/llamacpp_tokens.json: llama.cpp's own tokenizer (llama_tokenize) on the Gemma 3
270M GGUF, the reference for the file's SentencePiece tokenizer (tests/tokenizer,
SentencePiece.Gemma3MatchesLlamaCpp; docs/gemma3.md). HF's ids of the same texts (transformers'
GGUF loader, AutoTokenizer.from_pretrained(gguf_file=...)) are stored beside them when
transformers is importable, so that the file shows where the two references agree.

Runs the llama.cpp that scripts/build-llamacpp.sh builds, through the sdist's ctypes bindings
(scripts/llamacpp_logits.py loads them), with the vocabulary only (no weights):
llama_tokenize(add_special=True, parse_special=True): BOS as the file's add_bos_token says, and
control tokens (<start_of_turn>) in the text matched whole, as HF's added tokens are.

  /work/venv-golden/bin/python golden/make_gemma3_llamacpp_tokens.py models/gemma-3-270m-q4_k_m.gguf
"""
import argparse
import ctypes
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import llamacpp_logits as lc  # noqa: E402  (llama_dir, load_bindings, vendor_commit, pinned)

# English, Chinese and Japanese, code, runs of spaces, newlines and tabs (Gemma's user-defined
# tokens), characters no token spells (byte fallback), emoji, a chat turn (control tokens).
TEXTS = [
    "The capital of France is",
    "Hello, world! How are you today?",
    "中华人民共和国成立于1949年。",
    "日本語のテキストと English mixed",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)",
    "for (int i = 0; i < 10; ++i) { sum += a[i]; }",
    "  two  spaces,   three,\ttab\t\ttabs",
    "line one\n\nline three\n\n\n\nafter four newlines",
    "   leading and trailing   ",
    "emoji 🍕🎉🫠 and ☃ snow",
    "hieroglyph 𓀀 rune ᚠ cuneiform 𒀀 private \ue000",
    "naïve café déjà vu, Ångström, Straße",
    "<start_of_turn>user\nWhat is BPE?<end_of_turn>\n<start_of_turn>model\n",
    "3.14159 and 1,000,000 and 2026-12-05",
    "",
]


def llamacpp_ids(ll, model, texts):
    vocab = ll.llama_model_get_vocab(model)
    out = []
    for text in texts:
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (ll.llama_token * n_max)()
        n = ll.llama_tokenize(vocab, data, len(data), buf, n_max, True, True)
        if n < 0:
            raise lc.Failure(f"llama_tokenize needs {-n} tokens for {text!r}")
        out.append([int(buf[i]) for i in range(n)])
    return out


def hf_ids(gguf, texts):
    try:
        from transformers import AutoTokenizer
        import transformers
    except ImportError:
        return None, None
    path = pathlib.Path(gguf)
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return [tok(t)["input_ids"] for t in texts], f"transformers {transformers.__version__}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", help="models/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--out", default=str(ROOT / "golden" / "gemma3" / "llamacpp_tokens.json"))
    args = ap.parse_args()
    try:
        d = lc.llama_dir()
        ll = lc.load_bindings(d)
        ll.llama_backend_init()
        mp = ll.llama_model_default_params()
        mp.vocab_only = True
        model = ll.llama_model_load_from_file(args.gguf.encode(), mp)
        if not model:
            raise lc.Failure(f"{args.gguf}: llama.cpp cannot load it")
        ids = llamacpp_ids(ll, model, TEXTS)
        ll.llama_model_free(model)
    except lc.Failure as e:
        sys.exit(f"make_gemma3_llamacpp_tokens: {e}")
    hf, hf_version = hf_ids(args.gguf, TEXTS)
    cases = []
    for i, text in enumerate(TEXTS):
        c = {"text": text, "ids": ids[i]}
        if hf is not None:
            c["hf_ids"] = hf[i]
        cases.append(c)
    doc = {
        "about": f"llama.cpp {lc.vendor_commit(d)} (llama-cpp-python {lc.pinned('version')} sdist, "
                 "scripts/build-llamacpp.sh) llama_tokenize(add_special=True, parse_special=True) on the GGUF's "
                 "vocabulary; hf_ids: " + (hf_version or "not made") + " AutoTokenizer(gguf_file=...), "
                 "add_special_tokens; made by golden/make_gemma3_llamacpp_tokens.py",
        "model": "models/" + pathlib.Path(args.gguf).name,
        "gguf_sha256": lc.sha256(args.gguf),
        "cases": cases,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    for c in cases:
        same = "" if "hf_ids" not in c else ("  (HF: same)" if c["hf_ids"] == c["ids"] else f"  (HF: {c['hf_ids']})")
        print(repr(c["text"]), c["ids"], same)
    return 0


if __name__ == "__main__":
    sys.exit(main())
