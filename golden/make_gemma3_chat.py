#!/usr/bin/env python3
"""golden/gemma3/chat.json: HF transformers' apply_chat_template with Gemma 3's chat template
(lib/tokenizer/chat_templates/gemma3.jinja, the chat_template of google/gemma-3-270m-it's
tokenizer_config.json) on the Gemma 3 270M GGUF's tokenizer, for lmscope's --chat-format gemma
(tests/tokenizer, GemmaChat.*; docs/gemma3.md). Each conversation: the prompt text
(tokenize=False) and its ids (tokenize=True, which adds no BOS of its own: the template writes it),
or the error the template raises.

  /work/venv-golden/bin/python golden/make_gemma3_chat.py models/gemma-3-270m-q4_k_m.gguf
"""
import argparse
import json
import os
import pathlib
import sys

import transformers
from transformers import AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "lib" / "tokenizer" / "chat_templates" / "gemma3.jinja"

S, U, A = "system", "user", "assistant"
CONVERSATIONS = [
    ([(U, "What is BPE?")], True),
    ([(S, "Answer in one sentence."), (U, "What is BPE?")], True),
    ([(S, "Be brief."), (U, "Hi!"), (A, "Hello. How can I help?"), (U, "  Name a prime.\n")], True),
    ([(U, "2 + 2?"), (A, "4")], False),
    ([(U, "日本語で答えて。")], False),
    ([(U, "one"), (U, "two")], True),        # roles must alternate: the template refuses
    ([(S, "only a system prompt")], True),   # no turn at all: BOS, then the generation prompt
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf", help="models/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--out", default=str(ROOT / "golden" / "gemma3" / "chat.json"))
    args = ap.parse_args()
    path = pathlib.Path(args.gguf)
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    template = TEMPLATE.read_text(encoding="utf-8")
    cases = []
    for turns, gen in CONVERSATIONS:
        messages = [{"role": r, "content": c} for r, c in turns]
        case = {"messages": messages, "add_generation_prompt": gen}
        try:
            case["text"] = tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                                   add_generation_prompt=gen)
            ids = tok.apply_chat_template(messages, chat_template=template, tokenize=True, add_generation_prompt=gen)
            case["ids"] = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        except Exception as e:   # the template's raise_exception (jinja2 TemplateError)
            case["error"] = str(e)
        cases.append(case)
        print(json.dumps(case, ensure_ascii=False))
    doc = {"about": f"transformers {transformers.__version__} apply_chat_template(chat_template="
                    "lib/tokenizer/chat_templates/gemma3.jinja) on AutoTokenizer(gguf_file=...); "
                    "made by golden/make_gemma3_chat.py",
           "model": "models/" + path.name, "cases": cases}
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
