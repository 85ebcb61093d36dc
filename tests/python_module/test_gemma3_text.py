"""lmscope.Model on the real Gemma 3 270M file (docs/gemma3.md): its SentencePiece tokenizer read
from the GGUF gives HF's prompt ids (BOS first) and HF's greedy tokens (golden/gemma3/manifest.json,
made by golden/make_golden.py --gemma3), and format="gemma" HF's chat text
(golden/gemma3/chat.json, made by golden/make_gemma3_chat.py). Skipped, saying so, when the
file is absent (scripts/fetch-gemma3-model.sh)."""
import json
import os

import pytest

from conftest import ROOT

GEMMA3 = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
pytestmark = pytest.mark.skipif(not os.path.exists(GEMMA3),
                                reason=f"{GEMMA3} is absent: run scripts/fetch-gemma3-model.sh")


def golden(name):
    with open(os.path.join(ROOT, "golden", "gemma3", name), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def gemma3():
    import lmscope
    return lmscope.Model(GEMMA3)


def test_text_prompts_are_hfs_ids_and_greedy_tokens(gemma3):
    for t in golden("manifest.json")["traces"]:
        assert gemma3.tokenize(t["text"]).ids == t["prompt_ids"], t["text"]
        g = gemma3.generate(t["text"], max_new_tokens=8)
        assert g.ids[0] == t["generated_ids"], t["text"]
        assert g.text[0] == t["generated_text"]


def test_gemma_chat_format_is_hfs(gemma3):
    case = golden("chat.json")["cases"][1]   # a system prompt, merged into the first user turn
    assert case["messages"][0]["role"] == "system"
    text = gemma3.apply_chat_template(case["messages"], case["add_generation_prompt"], format="gemma")
    assert text == case["text"]
    # tokenize(text) adds BOS as HF's tokenizer(text) does: a second one after the template's
    # (apply_chat_template(tokenize=True), the golden's ids, adds none).
    assert gemma3.tokenize(text).ids == [2] + case["ids"]
