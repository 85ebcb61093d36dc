#!/usr/bin/env python3
"""Reference ids and chat prompts for lmscope's tokenizer tests, made by Hugging Face itself.

    venv/bin/python golden/make_tokenizer_refs.py           # rewrite golden/tokenizers/...
    venv/bin/python golden/make_tokenizer_refs.py --check   # regenerate in memory, compare

Writes (all committed; the C++ tests read them, CI never needs Python):
  golden/tokenizers/corpus.json            the test strings (built below, >= 300)
  golden/tokenizers/tiny-options-{a,b}/    two variants of the tiny-qwen2 tokenizer.json that
                                           switch on the component options the real
                                           vocabularies leave off (see OPTION_VARIANTS)
  golden/tokenizers/refs/<name>.json       per vocabulary: HF `tokenizers` ids of every corpus
                                           string (add_special_tokens True and False), HF
                                           decode where it differs from the input, and decode
                                           cases whose ids stop in the middle of a character
  golden/tokenizers/chat/refs.json         transformers apply_chat_template(tokenize=False) of
                                           chat/conversations.json for every template in
                                           chat/templates/, plus the ids of tokenize=True

Pinned versions: golden/requirements.txt (tokenizers 0.23.3, transformers 5.23.0).
"""
import argparse
import copy
import hashlib
import json
import os
import sys

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOK = os.path.join(ROOT, "golden", "tokenizers")

# name -> directory (relative to the repository root)
VOCABS = {
    "qwen-bpe": "golden/tokenizers/qwen-bpe",
    "deepseek-v3-bpe": "golden/tokenizers/deepseek-v3-bpe",
    "tiny-qwen2": "golden/models/tiny-qwen2",
    "tiny-options-a": "golden/tokenizers/tiny-options-a",
    "tiny-options-b": "golden/tokenizers/tiny-options-b",
}


# ---- the corpus --------------------------------------------------------------------------

def corpus():
    s = []
    # the workshop sentence first
    s += ["中华人民共和国成立于 1949 年。"]
    # Chinese
    s += ["今天天气很好，我们去公园散步吧！", "机器学习是人工智能的一个分支。", "他说：“你好，世界。”",
          "《红楼梦》是中国古典四大名著之一。", "上海的人口超过两千四百万。", "这个模型有15亿个参数，训练用了3个月。",
          "繁體中文與簡體中文並存。", "龍、鳳、龜、麟被稱為四靈。", "一二三四五六七八九十百千万亿",
          "請問洗手間在哪裡？", "注意力机制（Attention）让模型关注重要的词。", "你好吗？我很好，谢谢！你呢？",
          "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "价格：￥1,299.00（含税）",
          "大语言模型把文本切分成词元，再把词元映射成编号。"]
    # Japanese
    s += ["日本語のテキストをトークン化します。", "東京は日本の首都です。", "ひらがなとカタカナと漢字が混ざっています。",
          "ｶﾀｶﾅの半角文字も含まれる。", "吾輩は猫である。名前はまだ無い。", "今日は2024年1月15日（月曜日）です。",
          "ありがとうございました！", "コンピューターサイエンス", "「こんにちは」と彼は言った。", "ー〜・、。",
          "すもももももももものうち", "寿司🍣とラーメン🍜が好きです。"]
    # Korean (the jamo one is decomposed: NFC composes it to 각)
    s += ["안녕하세요, 만나서 반갑습니다.", "한국어는 한글로 씁니다.", "서울특별시 강남구 테헤란로 123",
          "저는 학생입니다. 당신은요?", "대한민국의 수도는 서울이다.", "\u1100\u1161\u11a8 \u1112\u1161\u11ab",
          "ㅋㅋㅋㅋ ㅎㅎ", "인공지능 모델의 토크나이저", "갈비찜, 김치찌개, 된장국", "1988년 서울 올림픽"]
    # Arabic
    s += ["مرحبا بالعالم", "اللغة العربية جميلة جداً.", "ذَهَبْتُ إِلَى المَدْرَسَةِ صَبَاحاً.",
          "السلام عليكم ورحمة الله وبركاته", "الرقم ١٢٣٤٥٦٧٨٩٠ بالأرقام العربية",
          "هذا نص عربي مع English words مختلطة.", "كتاب، قلم؛ دفتر؟", "ﻻ ﷲ ﷺ"]
    # Hindi
    s += ["नमस्ते दुनिया", "भारत एक विशाल देश है।", "मैं हिंदी बोलता हूँ।", "क्षत्रिय, ज्ञान, श्री",
          "संख्या १२३४५ देवनागरी अंकों में", "यह एक परीक्षण वाक्य है जिसमें कई शब्द हैं।",
          "हिन्दी और English का मिश्रण", "ॐ शान्तिः"]
    # Thai
    s += ["สวัสดีครับ", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ", "กรุงเทพมหานคร", "๑๒๓๔๕ ตัวเลขไทย",
          "ฉันรักเมืองไทย", "น้ำ ผู้ใหญ่ ก็", "การประมวลผลภาษาธรรมชาติ", "ไม้ยมก ๆ และ ฯลฯ"]
    # other scripts
    s += ["Привет, мир! Как дела?", "Ελληνικά: Γειά σου Κόσμε", "שלום עולם", "Tiếng Việt có dấu",
          "ქართული ენა", "Հայերեն լեզու", "தமிழ் மொழி", "বাংলা ভাষা", "ሰላም ልዑል", "Україна — це Європа",
          "İstanbul ıi İI", "Straße ẞ STRASSE", "Zażółć gęślą jaźń", "¿Qué tal? ¡Muy bien!",
          "Þórður og Ægir", "ᠮᠣᠩᠭᠣᠯ\u180eᠪᠢᠴᠢᠭ", "བོད་ཡིག", "ភាសាខ្មែរ", "မြန်မာဘာသာ", "සිංහල", "ᏣᎳᎩ",
          "Hello世界مرحباשלוםПривет"]
    # English contractions, every case
    s += ["I'm you're we've they'll she'd it's don't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T",
          "I'M You'Re wE'vE ThEy'Ll sHe'D iT's DoN'T", "I’m you’re don’t (curly apostrophes)",
          "rock 'n' roll, 'tis the season, y'all", "The dog's bone, the dogs' bones.",
          "'''quoted''' and ''double''", "IT'ſ a long s", "'s'S'tT're'RE", "o'clock O'Neil"]
    for c in ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]:
        s += [c, c.upper(), "x" + c[0] + c[1:].title() + " y" + c.upper()]
    # code: tabs, CRLF, long space runs
    s += ["def f(x):\n\treturn x + 1\n", "if (a) {\r\n    b();\r\n}\r\n",
          "x = 1" + " " * 40 + "# comment", "    indented four\n        eight\n",
          "for i in range(10):\n    print(f\"{i:>4}\")\n",
          "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
          "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
          "<div class=\"x\"><p>Hello &amp; welcome</p></div>",
          "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
          "cat file.txt | grep -E '^[a-z]+$' | sort -u > out.txt",
          "all:\n\tgcc -O2 -o app main.c\n", "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n",
          "key: value\nlist:\n  - one\n  - two\n", "trailing spaces   \nand tabs\t\t\n",
          "C:\\Users\\name\\Documents\\file.txt", "https://example.com/path?q=1&lang=en#frag",
          "user.name+tag@example.co.uk", "0xDEADBEEF 0b1010 0o777",
          "SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0Lg==", "123e4567-e89b-12d3-a456-426614174000",
          "| a | b |\n|---|---|\n| 1 | 2 |", "$$\\int_0^\\infty e^{-x^2} dx = \\frac{\\sqrt{\\pi}}{2}$$",
          "x\t\ty\t\t\tz", "\t\t\t\t\t\t\t\tdeep", "lambda x: x**2 if x > 0 else -x"]
    # numbers of every length, and other numerals
    digits = "1234567890"
    for n in range(1, 41):
        s.append((digits * 5)[:n])
    s += ["007", "3.14159", "-42", "1e-10", "1,234,567", "١٢٣", "１２３", "½ ¾ ⅓", "x² y³", "Ⅻ ⅻ",
          "①②③", "0.000001", "$1,000.00", "+1 (555) 123-4567", "2024-01-15T12:30:45Z", "v1.2.3-rc.1",
          "192.168.0.1", "3/4", "50%", "abc123def", "4K 1080p 60fps", "98.6°F = 37°C", "10^9", "1_000_000"]
    # emoji: skin tones, ZWJ sequences, flags, keycaps
    s += ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵🇺🇸", "1️⃣", "❤️", "🧑🏿‍💻", "👩🏻‍❤️‍💋‍👨🏼", "🤷‍♀️",
          "I love 🍕 and 🍔!", "🔥🔥🔥", "©®™", "☺︎ vs ☺️", "🫠 🫶", "🪿", "🙂‍↔️", "👋🏻👋🏼👋🏽👋🏾👋🏿"]
    # combining marks: NFC and NFD input
    s += ["é", "e\u0301", "Ångström", "\u212bngstr\u00f6m", "\u2126 ohm", "n\u0303", "Tie\u0302\u0301ng Vie\u0323\u0302t",
          "a\u0308\u0304", "q\u0307\u0323", "\u1e0b\u0323", "\uf900\uf901", "ﬁ ligature", "x\u0301y\u0302",
          "\u0301abc", "Z̵̡̢a̷l̸g̶o̴", "\u0958\u0959", "\u2adc", "\u1f71 vs \u03ac", "caf\u00e9 vs cafe\u0301"]
    # full-width forms
    s += ["ＡＢＣ　ｄｅｆ　１２３！？", "（全角括弧）", "ｈｔｔｐｓ：／／ｅｘａｍｐｌｅ．ｃｏｍ", "～＠＃＄％＾＆＊",
          "Ｈｅｌｌｏ，　Ｗｏｒｌｄ．", "ﾊﾟﾋﾟﾌﾟ"]
    # zero-width and invisible characters
    s += ["zero\u200bwidth", "ZW\u200cNJ", "ZW\u200dJ", "\ufeffBOM at start", "word\u2060joiner",
          "soft\u00adhyphen", "\u200b\u200b\u200b", "a\u200e\u200fb", "\u2028line sep\u2029para",
          "variation\ufe0fselector"]
    # special tokens inside text (of one vocabulary or another)
    s += ["<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "text<|endoftext|>text",
          "<|endoftext|><|endoftext|>", "<|im_start", "<|im_end |>", "<think>reasoning</think>answer",
          "<tool_call>{}</tool_call>", "<|fim_prefix|>def<|fim_suffix|>x<|fim_middle|>",
          "<｜begin▁of▁sentence｜>Hi<｜User｜>hello<｜Assistant｜>", "<｜end▁of▁sentence｜>",
          "<｜place▁holder▁no▁5｜>", "<|im_start|><|im_start|>", " <|im_end|> ", "<<|im_end|>>", "<|IM_END|>",
          "<s></s>[INST] x [/INST]", "abc<|endoftext|>def", "<think>\n\n</think>\n\n", "<｜User｜><｜User｜>x",
          "a<｜Assistant｜>", "<|im_start|>system\nYou are helpful.<|im_end|>"]
    # whitespace
    s += [" ", "  ", " leading", "trailing ", "  both  ", "\t", "\n", "\n\n\n", "\r\n", "\r", " \n ", "a\n\nb",
          "a \n b", "\t\tindented", "tab\tseparated\tvalues", "x" + " " * 100 + "y", " " * 5000,
          "\u00a0nbsp\u00a0", "\u3000ideographic\u3000space", "\u2003em space", "\u180emongolian",
          "\u0085nel", "\u000bvt\u000cff", "line\u2028sep", "word  \n  word", "  \n\n  ", " \t \n \r\n "]
    # the empty string
    s += [""]
    # very long words
    s += ["a" * 1000, "supercalifragilisticexpialidocious" * 20, "pneumonoultramicroscopicsilicovolcanoconiosis",
          "中" * 2000, "abc" * 3000, "1" * 1000, "😀" * 300, "_" * 500, "-=" * 300,
          "".join("%08x" % (i * 2654435761 % (1 << 32)) for i in range(250)),
          "https://example.com/" + "very-long-path-segment/" * 40]
    # punctuation, symbols, odd characters
    s += ["!!!???...,,,;;;", "#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "“smart quotes” ‘single’ «guillemets» „German“",
          "…—–", "∑∫∂∇√∞≈≠≤≥", "x² + y² = z²", "┌─┐│└─┘", "→ ← ↑ ↓ ⇒", "€£¥₹₽₩", "§¶†‡•", "⠓⠑⠇⠇⠕", "𝄞",
          "𝐇𝐞𝐥𝐥𝐨", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\ue000\uf8ff", "\ufffe\uffff", "\ufffd", "\x01\x02\x7f", "a\x00b",
          "\x1b[31mred\x1b[0m", "𠀀𠀁", "\U00031350\U00031351", "\U000e0041\U000e007f", "\U0010ffff",
          "getElementById", "snake_case_name", "I.B.M. U.S.A.", "#AI @user", "e.g. i.e. etc.",
          "She said, \"Hi!\"", "Mr. O'Brien's 3rd-floor apt."]
    # real text
    s += ["The quick brown fox jumps over the lazy dog.",
          "Language models predict the next token from the tokens that came before it.",
          "Attention compares every query with every key, scales the scores, and applies a softmax.",
          "In 1905, Einstein published four papers that changed physics.",
          "Hello, world! How are you today?",
          "Dear Sir or Madam,\n\nI am writing to enquire about the position.\n\nYours faithfully,\nJ. Smith",
          "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer",
          "Once upon a time, in a small village by the sea, there lived an old fisherman."]
    # the tiny tokenizer's training text, line by line
    with open(os.path.join(ROOT, "golden", "tokenizer-corpus.txt"), encoding="utf-8") as f:
        s += [line.rstrip("\n") for line in f if line.strip()]
    return s


# ---- option variants of the tiny tokenizer --------------------------------------------------

def option_variants():
    """Two tokenizer.json variants of tiny-qwen2 that turn on the options the shipped
    vocabularies do not use, so they are checked against HF too."""
    with open(os.path.join(ROOT, "golden", "models", "tiny-qwen2", "tokenizer.json"), encoding="utf-8") as f:
        base = json.load(f)
    n = len(base["model"]["vocab"])
    qwen_split = base["pre_tokenizer"]["pretokenizers"][0]

    def added(i, content, **kw):
        t = {"id": n + i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": False}
        t.update(kw)
        return t

    a = copy.deepcopy(base)
    a["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}]}
    a["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
    a["model"]["ignore_merges"] = True
    a["added_tokens"] += [
        added(0, "<sep>", special=True, lstrip=True, rstrip=True),
        added(1, "<sep>long", special=True),
        added(2, "word", single_word=True, normalized=True),
        added(3, "ﬁx", normalized=True),            # matched as NFKC("ﬁx") = "fix"
        added(4, "[MASK]", special=True, lstrip=True),
        added(5, "END", special=True, normalized=True, rstrip=True),
    ]
    a["post_processor"] = {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1], "tokens": ["<|im_start|>"]},
                                              "<|im_end|>": {"id": "<|im_end|>", "ids": [2], "tokens": ["<|im_end|>"]}}}

    b = copy.deepcopy(base)
    b["normalizer"] = {"type": "NFD"}
    b["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\p{P}+"}, "behavior": "Contiguous", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\d"}, "behavior": "MergedWithPrevious", "invert": False},
        {"type": "Split", "pattern": {"Regex": "[aeiou]"}, "behavior": "MergedWithPrevious", "invert": True},
        {"type": "Split", "pattern": {"Regex": "\\n"}, "behavior": "Removed", "invert": False},
        qwen_split,
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    b["model"]["merges"] = [" ".join(m) for m in b["model"]["merges"]]   # the legacy "a b" form
    b["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [0], "tokens": ["<|endoftext|>"]}}}]}
    return {"tiny-options-a": a, "tiny-options-b": b}


def option_configs():
    return {
        "tiny-options-a": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                           "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False},
        "tiny-options-b": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                           "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False},
    }


OPTIONS_README = """# tiny-options-a / tiny-options-b (generated test data)

Variants of `golden/models/tiny-qwen2/tokenizer.json` written by `golden/make_tokenizer_refs.py`
to check tokenizer options the shipped vocabularies leave off against Hugging Face `tokenizers`:

* a: NFKC (in a Sequence), Digits + ByteLevel(add_prefix_space, use_regex), ignore_merges,
  added tokens with lstrip/rstrip/single_word/normalized and overlapping contents, a
  TemplateProcessing post-processor (`<|im_start|> $A <|im_end|>`).
* b: NFD, Split with a String pattern and the MergedWithNext / Contiguous / MergedWithPrevious /
  Removed behaviors and invert, merges in the legacy "a b" form, Sequence[ByteLevel,
  TemplateProcessing(`<|endoftext|> $A`)].

Do not edit by hand: rerun the script.
"""


# ---- references ------------------------------------------------------------------------------

def dumps_cases(obj):
    """JSON with one case per line: small diffs, readable, compact."""
    head = {k: v for k, v in obj.items() if k not in ("cases", "decode_cases")}
    lines = ["{"]
    for k, v in head.items():
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(v, ensure_ascii=False)))
    for key in ("cases", "decode_cases"):
        lines.append('  "%s": [' % key)
        items = obj[key]
        for i, c in enumerate(items):
            lines.append("    " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + ("," if i + 1 < len(items) else ""))
        lines.append("  ]" + ("," if key == "cases" else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def vocab_refs(name, path, texts, corpus_sha):
    t = Tokenizer.from_file(os.path.join(ROOT, path, "tokenizer.json"))
    cases = []
    for text in texts:
        enc = t.encode(text, add_special_tokens=True)
        plain = t.encode(text, add_special_tokens=False).ids
        c = {"ids": enc.ids}
        if plain != enc.ids:
            c["plain"] = plain
        dec = t.decode(plain, skip_special_tokens=False)
        if dec != text:
            c["decoded"] = dec
        dec_skip = t.decode(plain, skip_special_tokens=True)
        if dec_skip != dec:
            c["decoded_skip"] = dec_skip
        cases.append(c)
    # Decode cases: prefixes of multi-byte strings' ids (ends cut mid-character, U+FFFD),
    # every id on its own, and ids with special tokens in between.
    decode_cases = []
    for text in ["中华人民共和国成立于 1949 年。", "👨‍👩‍👧‍👦 family", "ذَهَبْتُ إِلَى", "naïve café", "ｶﾀｶﾅ"]:
        ids = t.encode(text, add_special_tokens=False).ids
        for k in range(1, len(ids) + 1):
            decode_cases.append({"ids": ids[:k], "text": t.decode(ids[:k], skip_special_tokens=False)})
        for i in ids[:12]:
            decode_cases.append({"ids": [i], "text": t.decode([i], skip_special_tokens=False)})
    for text in ["<|im_start|>user\nhi<|im_end|>", "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>"]:
        ids = t.encode(text, add_special_tokens=False).ids
        for skip in (False, True):
            decode_cases.append({"ids": ids, "skip_special": skip, "text": t.decode(ids, skip_special_tokens=skip)})
    sample = "Hello world, 中华 1949!"
    enc = t.encode(sample, add_special_tokens=True)
    return {
        "tokenizer": path,
        "made_by": "tokenizers %s (Tokenizer.from_file, encode/decode)" % tokenizers.__version__,
        "corpus": "golden/tokenizers/corpus.json",
        "corpus_sha256": corpus_sha,
        "sample": {"text": sample, "ids": enc.ids, "tokens": enc.tokens},
        "cases": cases,
        "decode_cases": decode_cases,
    }


# ---- chat templates ----------------------------------------------------------------------

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke."}],
    [{"role": "user", "content": "Solve x+1=3."},
     {"role": "assistant", "content": "<think>\nSubtract 1 from both sides.\n</think>\n\nx = 2"},
     {"role": "user", "content": "And x+2=3?"}],
    [{"role": "user", "content": "中华人民共和国成立于 1949 年。翻译成英文。"},
     {"role": "assistant", "content": "The People's Republic of China was founded in 1949. 🇨🇳"}],
    [{"role": "user", "content": "  leading and trailing spaces  \n\n"}, {"role": "assistant", "content": "\nnoted\n"}],
    [{"role": "user", "content": "Write <|im_end|> and <｜User｜> literally, and {{ not_jinja }} too."}],
    [{"role": "user", "content": ""}],
    [{"role": "system", "content": "Rule one."}, {"role": "system", "content": "Rule two."},
     {"role": "user", "content": "Go."}],
    [{"role": "user", "content": "Last turn is the assistant's."},
     {"role": "assistant", "content": "<think>short</think>Done."}],
    [{"role": "system", "content": "Multi\nline\nsystem"}, {"role": "user", "content": "a"},
     {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"},
     {"role": "user", "content": "e"}],
]

# template file -> tokenizer dir whose special tokens (bos_token, ...) the template sees
TEMPLATES = {
    "qwen3.jinja": "golden/tokenizers/qwen-bpe",
    "deepseek-v3.jinja": "golden/tokenizers/deepseek-v3-bpe",
    "deepseek-r1.jinja": "golden/tokenizers/deepseek-v3-bpe",
    "chatml.jinja": "golden/models/tiny-qwen2",
    "chatml-default-system.jinja": "golden/models/tiny-qwen2",
    "features.jinja": "golden/tokenizers/deepseek-v3-bpe",
}


def derived_templates():
    """The templates that come from the shipped tokenizer_config.json files: qwen3.jinja and
    deepseek-v3.jinja as they are, and deepseek-r1.jinja = the DeepSeek-V3 template with the
    two changes DeepSeek-R1-Distill makes (an assistant turn keeps only what follows its last
    </think>; the generation prompt opens the reasoning with <think>\\n)."""
    def config_template(d):
        with open(os.path.join(ROOT, d, "tokenizer_config.json"), encoding="utf-8") as f:
            return json.load(f)["chat_template"]

    qwen3 = config_template("golden/tokenizers/qwen-bpe")
    v3 = config_template("golden/tokenizers/deepseek-v3-bpe")
    r1 = v3
    for old, new in [
        ("{{'<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}",
         "{% set content = message['content'] %}{% if '</think>' in content %}"
         "{% set content = content.split('</think>')[-1] %}{% endif %}"
         "{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}"),
        ("{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %}",
         "{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\\n'}}{% endif %}"),
    ]:
        assert r1.count(old) == 1, old
        r1 = r1.replace(old, new)
    return {"qwen3.jinja": qwen3, "deepseek-v3.jinja": v3, "deepseek-r1.jinja": r1}


def chat_refs(template_dir):
    out = {"made_by": "transformers %s apply_chat_template(tokenize=False); ids: tokenize=True" % transformers.__version__,
           "conversations": "golden/tokenizers/chat/conversations.json", "templates": {}}
    for name, tok_dir in TEMPLATES.items():
        with open(os.path.join(template_dir, name), encoding="utf-8") as f:
            template = f.read()
        tok = AutoTokenizer.from_pretrained(os.path.join(ROOT, tok_dir))
        renders = []
        for ci, conv in enumerate(CONVERSATIONS):
            for gen in (False, True):
                r = {"conversation": ci, "add_generation_prompt": gen}
                try:
                    r["text"] = tok.apply_chat_template(conv, chat_template=template, tokenize=False,
                                                        add_generation_prompt=gen)
                    ids = tok.apply_chat_template(conv, chat_template=template, tokenize=True,
                                                  add_generation_prompt=gen, return_dict=False)
                    r["ids"] = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
                except Exception as e:  # a template that raises for this conversation
                    r["error"] = str(e)
                renders.append(r)
        out["templates"][name] = {"tokenizer": tok_dir, "renders": renders}
    return out


# ---- main --------------------------------------------------------------------------------

def write(path, text, check, problems):
    if check:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                problems.append(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the committed files")
    args = ap.parse_args()
    problems = []

    texts = corpus()
    assert len(texts) >= 300, len(texts)
    corpus_text = json.dumps(texts, ensure_ascii=False, indent=0) + "\n"
    corpus_sha = hashlib.sha256(corpus_text.encode("utf-8")).hexdigest()
    write(os.path.join(TOK, "corpus.json"), corpus_text, args.check, problems)

    configs = option_configs()
    for name, tj in option_variants().items():
        d = os.path.join(TOK, name)
        write(os.path.join(d, "tokenizer.json"), json.dumps(tj, ensure_ascii=False, indent=1) + "\n", args.check, problems)
        write(os.path.join(d, "tokenizer_config.json"), json.dumps(configs[name], indent=2) + "\n", args.check, problems)
        write(os.path.join(d, "README.md"), OPTIONS_README, args.check, problems)

    for name, path in VOCABS.items():
        refs = vocab_refs(name, path, texts, corpus_sha)
        write(os.path.join(TOK, "refs", name + ".json"), dumps_cases(refs), args.check, problems)
        print("%-16s %d strings, %d ids" % (name, len(texts), sum(len(c["ids"]) for c in refs["cases"])))

    chat_dir = os.path.join(TOK, "chat")
    for name, text in derived_templates().items():
        write(os.path.join(chat_dir, "templates", name), text, args.check, problems)
    write(os.path.join(chat_dir, "conversations.json"), json.dumps(CONVERSATIONS, ensure_ascii=False, indent=1) + "\n",
          args.check, problems)
    refs = chat_refs(os.path.join(chat_dir, "templates"))
    write(os.path.join(chat_dir, "refs.json"), json.dumps(refs, ensure_ascii=False, indent=1) + "\n", args.check, problems)

    if problems:
        print("differs from the committed file:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print("ok" if args.check else "written")


if __name__ == "__main__":
    main()
