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


def test_logit_attribution_of_text_answers(gemma3):
    """An answer given as text is its one token, without the BOS the tokenizer puts before a
    prompt; the components (the embedding and each layer's post-normed branches) add up to the
    logit difference the engine computed (the logits' tolerance of docs/tolerances.md)."""
    import lmscope
    import numpy as np
    logits, cache = gemma3.run_with_cache("The capital of France is", names=lmscope.attribution_hooks(gemma3))
    paris, london = (gemma3.tokenize(t).ids[-1] for t in (" Paris", " London"))
    attr = gemma3.logit_attribution(cache, (" Paris", " London"))
    assert attr.labels[1:3] == ["layers.0.attn_post_norm", "layers.0.ffn_post_norm"]
    np.testing.assert_array_equal(attr.values, gemma3.logit_attribution(cache, (paris, london)).values)
    diff = float(logits[0, -1, paris]) - float(logits[0, -1, london])
    assert abs(attr.total - diff) <= 1e-5 + 2e-4 * float(np.max(np.abs(logits[0, -1])))
    assert abs(attr.values.sum() - attr.total) <= 1e-4 * abs(attr.total)
