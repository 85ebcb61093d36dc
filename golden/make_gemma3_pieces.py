#!/usr/bin/env python3
"""Reference values for pieces of Gemma 3's forward, from the code HF transformers runs:

  geglu           gelu_pytorch_tanh(gate) * up (Gemma3MLP's act_fn: transformers' ACT2FN
                  ["gelu_pytorch_tanh"], torch.nn.functional.gelu(approximate="tanh")), float32
  sliding masks   the additive [B,T,S] mask of a sliding-attention layer: transformers'
                  masking_utils.eager_mask with sliding_window_causal_mask_function(window) and a
                  2-D padding mask, as create_sliding_window_causal_mask builds it for eager
                  attention; 1 where visible, 0 where masked

  venv/bin/python golden/make_gemma3_pieces.py            writes golden/gemma3/pieces.json
  venv/bin/python golden/make_gemma3_pieces.py --check    regenerates and compares

Needs the pinned packages of golden/requirements.txt. tests/engine/gemma3_pieces_test.cpp holds
lmscope's ops to this file.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "gemma3", "pieces.json")
SEED = 20250301


def geglu_case():
    import torch
    gen = torch.Generator().manual_seed(SEED)
    # gate: the range a pre-activation takes, the tails where tanh saturates, and exact values
    gate = torch.cat([torch.linspace(-8, 8, 65), torch.randn(127, generator=gen) * 3,
                      torch.tensor([0.0, -0.0, 1e-6, -1e-6, 20.0, -20.0, 0.5, -0.5])]).float()
    up = (torch.randn(gate.numel(), generator=gen) * 2).float()
    act = torch.nn.functional.gelu(gate, approximate="tanh") * up
    return {"gate": gate.tolist(), "up": up.tolist(), "out": act.tolist()}


def sliding_mask_case(attention_mask, T, window):
    """One step: T queries at the last T of S = len(row) columns, as HF decodes with a cache."""
    import torch
    from transformers import masking_utils as mu
    am = torch.tensor(attention_mask, dtype=torch.bool)
    B, S = am.shape
    m = mu.eager_mask(batch_size=B, q_length=T, kv_length=S, q_offset=S - T, kv_offset=0,
                      mask_function=mu.sliding_window_causal_mask_function(window), attention_mask=am,
                      dtype=torch.float32)
    visible = (m[:, 0] == 0).to(torch.int32)    # [B,T,S]
    return {"attention_mask": attention_mask, "T": T, "window": window, "visible": visible.tolist()}


def make():
    import torch
    import transformers
    torch.manual_seed(SEED)
    rows = [[0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1] * 12]   # left-padded, S = 12
    return {
        "about": "made by golden/make_gemma3_pieces.py with transformers %s, torch %s" %
                 (transformers.__version__, torch.__version__.split("+")[0]),
        "geglu": geglu_case(),
        "sliding_masks": [sliding_mask_case(rows, 12, 4),        # prefill past the window
                          sliding_mask_case(rows, 1, 4),         # one decode step
                          sliding_mask_case(rows, 3, 5),         # a 3-token chunk after 9
                          sliding_mask_case(rows, 12, 512)],     # a window longer than S: causal
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate and compare with the committed file")
    args = ap.parse_args()
    text = json.dumps(make(), separators=(",", ":")) + "\n"
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            same = f.read() == text
        print(f"{OUT}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
