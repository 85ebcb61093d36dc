#!/usr/bin/env python3
"""Hugging Face reference ids and chat renders for the DeepSeek-R1-Distill-Qwen tokenizer of the
R1 header GGUF (scripts/fetch-r1-tokenizer.sh), made with HF `tokenizers` and `transformers`.

    /work/venv-hf-pinned/bin/python golden/make_r1_refs.py           # rewrite golden/tokenizers/r1/refs.json
    /work/venv-hf-pinned/bin/python golden/make_r1_refs.py --check   # regenerate in memory, compare

transformers' own GGUF conversion cannot be the reference for this file: it fails on the
truncated file, and on a metadata-only copy it appends 3 tokens, moves BOS to 152065, applies no
NFC and splits <｜User｜>. So the reference is built here from two sources:

  * from the GGUF (read with the `gguf` package): tokenizer.ggml.tokens (id = index),
    tokenizer.ggml.merges (rank = index), tokenizer.ggml.token_type, bos/eos/padding ids,
    add_bos_token, tokenizer.chat_template;
  * from the model's published tokenizer.json
    (huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B/blob/main/tokenizer.json; the 7B
    GGUF holds the same 22 added tokens with the same ids): the settings a GGUF does not store — the NFC normalizer, the pre-tokenizer
    Sequence[Split(Qwen2 regex, isolated), ByteLevel(add_prefix_space=false, use_regex=false)],
    the TemplateProcessing post-processor that puts <｜begin▁of▁sentence｜> before the sequence,
    the ByteLevel decoder, and the added tokens 151643..151664 with their "special" flags
    (SPECIAL_FALSE below are "special": false; all are normalized=false, no strip, not
    single_word).

The 399 GGUF tokens [PAD151665]..[PAD152063] (token_type 5, UNUSED: llama.cpp pads the vocabulary
to the embedding's 152064 rows) are not in tokenizer.json and are left out here; no merge makes
them, so no text encodes to them.

Writes golden/tokenizers/r1/refs.json: per text, the ids with add_special_tokens True and False;
per conversation of golden/tokenizers/chat/conversations.json and add_generation_prompt
False/True, the text of apply_chat_template(tokenize=False) with the GGUF's template and the ids
of tokenize=True.
"""
import hashlib
import json
import os
import sys

import tokenizers
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_common import ROOT, arg_parser, sha256_file, write_or_check  # noqa: E402

import gguf  # noqa: E402  (the package, pinned in golden/requirements.txt)

R1 = os.path.join(ROOT, "models", "DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf")
OUT = os.path.join(ROOT, "golden", "tokenizers", "r1", "refs.json")

# tokenizer.json pre_tokenizer.pretokenizers[0].pattern.Regex (Qwen2's)
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# tokenizer.json added_tokens with "special": false (the others are "special": true)
SPECIAL_FALSE = {"<｜User｜>", "<｜Assistant｜>", "<|EOT|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
                 "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}
FIRST_ADDED, LAST_ADDED = 151643, 151664

TEXTS = [
    "中华人民共和国成立于 1949 年。",
    "中华人民共和国", "你好", "hello", "Hello", " hello", "你好，世界！", "Hello, world!",
    "1949", "1949年", "12345678901234567890", "3.14159 + 2.71828 = 5.85987", "-42, 1e10, 0x1F",
    "机器学习是人工智能的一个分支。", "繁體中文與簡體中文並存。", "春眠不觉晓，处处闻啼鸟。",
    "东京は日本の首都です。", "Привет, мир!", "مرحبا بالعالم", "नमस्ते दुनिया",
    "The quick brown fox jumps over the lazy dog.", "I'M HERE, you're there, they'LL come.",
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "<html><body class=\"x\">&amp;</body></html>", "   leading spaces", "trailing spaces   ",
    "tabs\tand\nnewlines\r\n\n\nend", "emoji 😀👍🏽🇨🇳 and ZWJ 👨‍👩‍👧", "🤖",
    "e\u0301 (e + combining acute: NFC makes é)", "Å vs A\u030a", "ﬁ ligature, ｶﾀｶﾅ half-width",
    "<｜User｜>Hello<｜Assistant｜>", "<｜begin▁of▁sentence｜>text", "<think>\nreasoning\n</think>\n\nanswer",
    "<|im_start|>user<|im_end|>", "<tool_call>{\"name\": \"f\"}</tool_call>", "", " ", "\n",
]


def gguf_fields(path):
    """The key/value metadata of a GGUF whose tensor data may be cut off: GGUFReader builds
    tensor views over the data and fails on a truncated file, so that step is skipped."""
    reader_cls = type("HeaderReader", (gguf.GGUFReader,), {"_build_tensors": lambda self, offs, fields: None})
    r = reader_cls(path)
    return {k: f.contents() for k, f in r.fields.items() if k.startswith("tokenizer.")}


def build(f):
    tokens, types, merges = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.token_type"], f["tokenizer.ggml.merges"]
    vocab = {tokens[i]: i for i in range(FIRST_ADDED)}
    pairs = [tuple(m.split(" ")) for m in merges]
    assert all(len(p) == 2 for p in pairs)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=pairs, dropout=None, unk_token=None, continuing_subword_prefix="",
                              end_of_word_suffix="", fuse_unk=False, byte_fallback=False, ignore_merges=False))
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    added = []
    for i in range(FIRST_ADDED, LAST_ADDED + 1):
        assert types[i] in (3, 4), (i, tokens[i], types[i])   # CONTROL or USER_DEFINED in the GGUF
        added.append(AddedToken(tokens[i], single_word=False, lstrip=False, rstrip=False, normalized=False,
                                special=tokens[i] not in SPECIAL_FALSE))
    for a in added:   # one at a time, so each gets the id that follows the vocabulary's
        tk.add_tokens([a]) if not a.special else tk.add_special_tokens([a])
    for i in range(FIRST_ADDED, LAST_ADDED + 1):
        assert tk.token_to_id(tokens[i]) == i, (tokens[i], tk.token_to_id(tokens[i]), i)
    bos_id = int(f["tokenizer.ggml.bos_token_id"])
    bos = tokens[bos_id]
    assert bool(f["tokenizer.ggml.add_bos_token"]) and not bool(f["tokenizer.ggml.add_eos_token"])
    tk.post_processor = processors.TemplateProcessing(single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
                                                      special_tokens=[(bos, bos_id)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=bos,
                                   eos_token=tokens[int(f["tokenizer.ggml.eos_token_id"])],
                                   pad_token=tokens[int(f["tokenizer.ggml.padding_token_id"])],
                                   chat_template=f["tokenizer.chat_template"])
    return tk, fast


def make(path):
    f = gguf_fields(path)
    tk, fast = build(f)
    texts = [{"text": t, "ids": tk.encode(t, add_special_tokens=False).ids,
              "ids_special": tk.encode(t, add_special_tokens=True).ids} for t in TEXTS]
    with open(os.path.join(ROOT, "golden", "tokenizers", "corpus.json"), encoding="utf-8") as fh:
        corpus = json.load(fh)
    with open(os.path.join(ROOT, "golden", "tokenizers", "chat", "conversations.json"), encoding="utf-8") as fh:
        convs = json.load(fh)
    renders = []
    for ci, conv in enumerate(convs):
        for gen in (False, True):
            text = fast.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen)
            ids = fast.apply_chat_template(conv, tokenize=True, add_generation_prompt=gen, return_dict=False)
            ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
            renders.append({"conversation": ci, "add_generation_prompt": gen, "text": text, "ids": ids})
    return {
        "made_by": f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__} "
                   "apply_chat_template; golden/make_r1_refs.py",
        "gguf": os.path.basename(path), "gguf_sha256": sha256_file(path),
        "texts": texts,
        "corpus": "golden/tokenizers/corpus.json",
        "corpus_ids": [tk.encode(t, add_special_tokens=False).ids for t in corpus],
        "conversations": "golden/tokenizers/chat/conversations.json",
        "renders": renders,
    }


def main():
    ap = arg_parser("regenerate in memory and compare with the committed file", __doc__.split("\n")[0])
    ap.set_defaults(model=R1)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        sys.exit(f"{args.model} is missing: run scripts/fetch-r1-tokenizer.sh first")
    write_or_check(OUT, json.dumps(make(args.model), ensure_ascii=False, indent=0) + "\n", args.check)

if __name__ == "__main__":
    main()
