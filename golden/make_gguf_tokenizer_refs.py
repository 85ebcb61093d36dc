#!/usr/bin/env python3
"""Reference ids and chat prompts for the tokenizer lmscope builds from a GGUF file
(tests/tokenizer/gguf_tokenizer_test.cpp), for SmolLM2-135M-Instruct.Q4_1.gguf.

  venv/bin/python golden/make_gguf_tokenizer_refs.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf] [--check]

Writes golden/tokenizers/refs/smollm2-gguf.json:
  cases          per corpus string (golden/tokenizers/corpus.json), then per EXTRA string
                 (those carry their "text"): the ids of SmolLM2's own
                 tokenizer (add_special_tokens=True; the file adds no BOS/EOS, so they are also
                 the ids without), its decode where that differs from the input, and -- where
                 it differs -- what transformers' GGUF tokenizer gives ("hf_gguf").
  chat           the file's chat template (tokenizer.chat_template) on
                 golden/tokenizers/chat/conversations.json, add_generation_prompt false/true:
                 transformers apply_chat_template(tokenize=False) text, and the ids of that
                 text (add_special_tokens=False, as tokenize=True does).
  meta           the special tokens, vocabulary size and merge count transformers reads.

Which tokenizer is "SmolLM2's own": the file says tokenizer.ggml.pre = "smollm". transformers
5.23.0 (integrations/gguf/gguf_tokenizer_mapping.py) has no entry for that name in
GGUF_PRE_TOKENIZER_SPLITS, so it keeps GPT2Tokenizer's default pre-tokenizer: ByteLevel with the
GPT-2 regex, which keeps a run of digits together (" ?\\p{N}+"). SmolLM2's tokenizer.json on the
hub is Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)]
(every digit its own word), and llama.cpp's "smollm" regexes ("\\p{N}" then the GPT-2 regex) do
the same thing. The vocabulary confirms it: of its 49,152 tokens none holds an ASCII digit
except the ten single digits, and no merge involves one -- the merges were learned on text whose
digits had been split apart. Where the two differ (a run of two or more spaces or newlines
before a digit: "x  1" is [x, ĠĠ, 1] for SmolLM2 and [x, Ġ, Ġ, 1] for transformers' GGUF
tokenizer; a space before a numeral that has merges, " ²"), we follow SmolLM2's tokenizer: the
reference is transformers' own GGUF tokenizer with its pre-tokenizer replaced by SmolLM2's.
Everything else (vocabulary, merges, the 17 control tokens as special added tokens, no
normalizer, ByteLevel decoder, no BOS) is transformers' as it built it.

Pinned versions: golden/requirements.txt (transformers 5.23.0, tokenizers 0.23.3, gguf 0.19.0).
"""
import hashlib
import json
import os
import sys

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

from gguf_common import ROOT, arg_parser, require_model, sha256_file

TOK = os.path.join(ROOT, "golden", "tokenizers")
OUT = os.path.join(TOK, "refs", "smollm2-gguf.json")

# Strings beyond the corpus: whitespace runs and numerals next to digits (where SmolLM2's
# pre-tokenizer and transformers' GGUF one part ways), and bytes the vocabulary lacks (0x04,
# 0x13, 0x1D, and 0xF1 which starts U+40000..U+7FFFF): BPE with no unk token drops them.
EXTRA = ["x  123", "a\n\n1", "Total:\t\t99", "  7 apples", "version 2.0\n\n3. Next", "I have  12  cats",
         "x\u00b2 + y\u00b2 = 25", "\u2160\u2161 \u2162", "ctrl\x04\x13\x1dend", "plane 4: \U00040000!"]

# SmolLM2's tokenizer.json pre-tokenizer (the hub file; llama.cpp "smollm")
SMOLLM_PRE = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    ],
}


def dumps(obj):
    """JSON with one case / render per line."""
    lines = ["{"]
    keys = list(obj)
    for n, k in enumerate(keys):
        v = obj[k]
        comma = "," if n + 1 < len(keys) else ""
        if k in ("cases", "chat"):
            lines.append('  "%s": [' % k)
            for i, c in enumerate(v):
                lines.append("    " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + ("," if i + 1 < len(v) else ""))
            lines.append("  ]" + comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v, ensure_ascii=False), comma))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = arg_parser("regenerate in memory and compare with the committed file", description=__doc__.split("\n")[0])
    args = ap.parse_args()
    require_model(args.model)

    hf = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(args.model)),
                                       gguf_file=os.path.basename(args.model))
    hf_backend = hf.backend_tokenizer
    tj = json.loads(hf_backend.to_str())
    hf_pre = tj["pre_tokenizer"]
    tj["pre_tokenizer"] = SMOLLM_PRE
    smol = Tokenizer.from_str(json.dumps(tj))

    with open(os.path.join(TOK, "corpus.json"), encoding="utf-8") as f:
        corpus_text = f.read()
    texts = json.loads(corpus_text)
    corpus_sha = hashlib.sha256(corpus_text.encode("utf-8")).hexdigest()

    cases, n_hf_differs = [], 0
    for n, text in enumerate(texts + EXTRA):
        ids = smol.encode(text, add_special_tokens=True).ids
        assert ids == smol.encode(text, add_special_tokens=False).ids  # the file adds no BOS/EOS
        c = {"ids": ids} if n < len(texts) else {"text": text, "ids": ids}
        dec = smol.decode(ids, skip_special_tokens=False)
        if dec != text:
            c["decoded"] = dec
        hf_ids = hf(text, add_special_tokens=True)["input_ids"]
        if hf_ids != ids:
            c["hf_gguf"] = hf_ids
            n_hf_differs += 1
        cases.append(c)

    with open(os.path.join(TOK, "chat", "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    chat = []
    for ci, conv in enumerate(conversations):
        for gen in (False, True):
            text = hf.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen)
            ids = smol.encode(text, add_special_tokens=False).ids
            r = {"conversation": ci, "add_generation_prompt": gen, "text": text, "ids": ids}
            hf_ids = hf.apply_chat_template(conv, tokenize=True, add_generation_prompt=gen, return_dict=False)
            hf_ids = list(hf_ids["input_ids"] if hasattr(hf_ids, "keys") else hf_ids)
            if hf_ids != ids:
                r["hf_gguf"] = hf_ids
            chat.append(r)

    sample = "What is 12345?  Answer:  42"
    enc = smol.encode(sample, add_special_tokens=True)
    out = {
        "model": os.path.relpath(os.path.abspath(args.model), ROOT),
        "model_sha256": sha256_file(args.model),
        "made_by": "transformers %s AutoTokenizer.from_pretrained(dir, gguf_file=...), its pre-tokenizer replaced by "
                   "SmolLM2's (see golden/make_gguf_tokenizer_refs.py); tokenizers %s encode/decode"
                   % (transformers.__version__, tokenizers.__version__),
        "pre_tokenizer": SMOLLM_PRE,
        "hf_gguf_pre_tokenizer": hf_pre,
        "corpus": "golden/tokenizers/corpus.json",
        "corpus_sha256": corpus_sha,
        "conversations": "golden/tokenizers/chat/conversations.json",
        "meta": {
            "vocab_size": hf_backend.get_vocab_size(with_added_tokens=True),
            "merges": len(tj["model"]["merges"]),
            "bos_token": hf.bos_token, "eos_token": hf.eos_token, "unk_token": hf.unk_token, "pad_token": hf.pad_token,
            "bos_token_id": hf.bos_token_id, "eos_token_id": hf.eos_token_id, "pad_token_id": hf.pad_token_id,
            "special_ids": sorted(t["id"] for t in tj["added_tokens"] if t["special"]),
            "chat_template": hf.chat_template,
        },
        "hf_gguf_differs": n_hf_differs,
        "sample": {"text": sample, "ids": enc.ids, "tokens": enc.tokens},
        "cases": cases,
        "chat": chat,
    }
    text = dumps(out)
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print("differs from the committed file: " + OUT)
                sys.exit(1)
        print("ok")
        return
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print("%s: %d strings (%d ids), transformers' GGUF tokenizer differs on %d; %d chat renders (%d differ)"
          % (os.path.relpath(OUT, ROOT), len(cases), sum(len(c["ids"]) for c in cases), n_hf_differs, len(chat),
             sum("hf_gguf" in r for r in chat)))


if __name__ == "__main__":
    main()
