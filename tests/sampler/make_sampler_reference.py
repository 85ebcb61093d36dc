#!/usr/bin/env python3
"""Reference values for lmscope's sampler, produced by HF transformers' own logits processors.

Run with the golden venv (transformers + torch):

    /root/.cache/lmscope/golden-venv/bin/python tests/sampler/make_sampler_reference.py

It writes tests/sampler/hf_processors_reference.json next to this script (committed; the C++
test tests/sampler/sampler_test.cpp reads it and needs no Python).

For every case it applies, in the order of `GenerationMixin._get_logits_processor`:
    RepetitionPenaltyLogitsProcessor (if penalty != 1)                         -> "penalized"
    TemperatureLogitsWarper (if temperature != 1)                               -> "scaled"
    TopKLogitsWarper (if top_k != 0)
    TopPLogitsWarper (if top_p < 1)
    MinPLogitsWarper (if min_p > 0)                                             -> "survivors"
and also each filter on its own applied to "scaled" ("top_k_only", "top_p_only", "min_p_only"), the softmax of
the fully processed scores ("probs", 0 for filtered tokens) and the greedy choice
(torch.argmax of "penalized", which is what greedy decoding selects).

Floats are stored as Python floats (exact float32 values widened to double). -inf never
appears: filtered tokens are given by the survivor id lists.
"""
import json
import os

import numpy as np
import torch
import transformers
from transformers.generation.logits_process import (
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    MinPLogitsWarper,
)


def f32list(t):
    return [float(x) for x in t.reshape(-1).tolist()]


def survivors_of(t):
    return [int(i) for i in torch.nonzero(torch.isfinite(t.reshape(-1))).reshape(-1).tolist()]


def run_case(name, logits, context, penalty=1.0, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, note=""):
    scores = torch.tensor([logits], dtype=torch.float32)
    V = scores.shape[-1]
    ids = torch.tensor([context if context else []], dtype=torch.long).reshape(1, -1)

    penalized = scores.clone()
    if penalty != 1.0:
        penalized = RepetitionPenaltyLogitsProcessor(float(penalty))(ids, penalized)
    scaled = penalized.clone()
    if temperature != 1.0:
        scaled = TemperatureLogitsWarper(float(temperature))(ids, scaled)

    final = scaled.clone()
    top_k_only = None
    top_p_only = None
    if top_k != 0:
        top_k_only = survivors_of(TopKLogitsWarper(int(top_k))(ids, scaled.clone()))
        final = TopKLogitsWarper(int(top_k))(ids, final)
    if top_p < 1.0:
        top_p_only = survivors_of(TopPLogitsWarper(float(top_p))(ids, scaled.clone()))
        final = TopPLogitsWarper(float(top_p))(ids, final)
    min_p_only = None
    if min_p > 0.0:
        min_p_only = survivors_of(MinPLogitsWarper(float(min_p))(ids, scaled.clone()))
        final = MinPLogitsWarper(float(min_p))(ids, final)
    probs = torch.nn.functional.softmax(final, dim=-1)

    return {
        "name": name,
        "note": note,
        "vocab": V,
        "logits": f32list(scores),
        "context": [int(c) for c in (context or [])],
        "repetition_penalty": penalty,
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "min_p": min_p,
        "penalized": f32list(penalized),
        "scaled": f32list(scaled),
        "top_k_only": top_k_only,
        "top_p_only": top_p_only,
        "min_p_only": min_p_only,
        "survivors": survivors_of(final),
        "probs": f32list(probs),
        "greedy": int(torch.argmax(penalized, dim=-1).item()),
    }


def main():
    cases = []
    base = [1.5, -0.25, 3.0, 0.0, 2.75, -4.0, 0.5, 1.0, -1.5, 2.0, 0.25, -0.75]

    cases.append(run_case("identity", base, [], note="no processor active: scores pass through"))
    cases.append(run_case(
        "penalty_mixed_signs", base, [0, 1, 1, 5, 3, 0, 11, 2, 2, 2],
        penalty=1.3,
        note="positive scores divided, negative multiplied, zero unchanged; duplicates penalized once"))
    cases.append(run_case(
        "penalty_reward", base, [4, 5, 9, 9],
        penalty=0.8, note="penalty < 1 rewards repeated tokens"))
    cases.append(run_case(
        "penalty_out_of_vocab_ids", base, [2, 12, 15, 40],
        penalty=1.25, note="ids >= V are ignored (HF clamps them to V and drops that column)"))
    cases.append(run_case(
        "penalty_changes_greedy", [4.0, 3.9, 1.0, -2.0], [0],
        penalty=1.1, note="the penalty applies in greedy mode: argmax moves from 0 to 1"))
    cases.append(run_case(
        "temperature_0_7", base, [], temperature=0.7))
    cases.append(run_case(
        "temperature_1_9", base, [], temperature=1.9))
    cases.append(run_case(
        "top_k_ties_at_boundary", [5.0, 3.0, 1.0, 3.0, 3.0, -1.0, 0.0, 2.0], [],
        top_k=2, note="k-th largest is 3.0 and three tokens share it: all are kept (4 survivors)"))
    cases.append(run_case(
        "top_k_ties_inside", [5.0, 5.0, 5.0, 1.0, 0.5, 0.0], [],
        top_k=2, note="ties above the boundary: 3 survivors for k=2"))
    cases.append(run_case(
        "top_k_larger_than_vocab", [0.5, 1.5, -2.0, 0.0], [], top_k=50,
        note="top_k is clamped to V"))
    cases.append(run_case(
        "top_k_1", base, [], top_k=1))
    cases.append(run_case(
        "top_p_0_05", base, [], top_p=0.05, note="tiny top_p keeps only the best token"))
    cases.append(run_case(
        "top_p_0_5", base, [], top_p=0.5))
    cases.append(run_case(
        "top_p_0_9", base, [], top_p=0.9))
    cases.append(run_case(
        "top_p_0_99", base, [], top_p=0.99))
    cases.append(run_case(
        "top_p_tie_group_split", [0.0] * 8, [], top_p=0.5,
        note="8 equal tokens, cumulative probs exactly k/8: tokens at cum <= 0.5 are removed; which of "
             "the tied tokens go depends on the (stable, ascending) sort: the 4 lowest ids are removed"))
    cases.append(run_case(
        "top_p_float32_boundary", [0.0] * 10, [], top_p=0.3,
        note="cumulative 7 x 0.1f lands on 1 - top_p = 0.7f: removed only with torch's float32 "
             "rounding of the cumulative sum (a pure double computation would keep it)"))
    cases.append(run_case(
        "top_p_float32_boundary_0_35", [0.0] * 10, [], top_p=0.35))
    cases.append(run_case(
        "dominating_token", [0.0, 1.0, 25.0, -1.0, 0.5, 2.0, 0.0, -3.0], [], top_p=0.9,
        note="one token holds ~all of the mass: it is the only survivor"))
    cases.append(run_case(
        "dominating_token_top_p_0_99", [0.0, 1.0, 25.0, -1.0, 0.5, 2.0, 0.0, -3.0], [], top_p=0.99))
    cases.append(run_case(
        "full_chain", base, [2, 4, 4, 8, 0],
        penalty=1.2, temperature=0.6, top_k=6, top_p=0.8,
        note="penalty, temperature, top-k and top-p together, in HF's order"))
    cases.append(run_case(
        "full_chain_top_k_ties", [3.0, 3.0, 2.0, 2.0, 2.0, 1.0, -1.0, 0.0, 2.0, -2.0], [0, 9],
        penalty=1.5, temperature=0.5, top_k=3, top_p=0.95))

    cases.append(run_case(
        "top_p_0", base, [], top_p=0.0,
        note="HF accepts top_p = 0: every cumulative probability is <= 1, so only the best token stays"))
    cases.append(run_case("min_p_0_1", base, [], min_p=0.1,
                          note="tokens below 0.1 x the best token's probability are cut"))
    cases.append(run_case("min_p_0_5_temperature", base, [], temperature=0.5, min_p=0.5,
                          note="min-p runs after temperature (HF's order), so a low temperature cuts more"))
    cases.append(run_case("min_p_1", [1.0, 3.0, 3.0, 2.0, -1.0], [], min_p=1.0,
                          note="min_p = 1 keeps the tokens tied with the best"))
    cases.append(run_case("min_p_after_top_k", base, [1, 2], penalty=1.2, top_k=5, min_p=0.3,
                          note="min-p measures against the survivors of top-k (renormalized)"))
    cases.append(run_case("min_p_float32_boundary", [0.0, -0.6931471805599453, 0.0, -2.302585092994046], [],
                          min_p=0.5, note="p = max/2 exactly (up to float32): kept unless below the float32 threshold"))

    # a bigger, random vector (seeded); no exact ties are expected among float32 normals
    rng = np.random.default_rng(1234)
    big = (rng.standard_normal(600) * 3.0).astype(np.float32).tolist()
    ctx = rng.integers(0, 600, size=64).tolist()
    cases.append(run_case("random_600_full", big, ctx, penalty=1.3, temperature=0.7, top_k=50, top_p=0.9))
    cases.append(run_case("random_600_top_p_only", big, [], temperature=1.2, top_p=0.6))
    cases.append(run_case("random_600_top_k_only", big, ctx, penalty=1.05, top_k=40))
    cases.append(run_case("random_600_min_p", big, ctx, penalty=1.1, temperature=0.8, top_p=0.95, min_p=0.05))

    out = {
        "generator": "tests/sampler/make_sampler_reference.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_processors_reference.json")
    # one case per line: small, diffable
    with open(path, "w") as f:
        head = {k: v for k, v in out.items() if k != "cases"}
        f.write(json.dumps(head)[:-1] + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
