"""The distillation KL term computed by torch, for lmscope-diff --kl-temperature's test:
teacher = golden/traces/tiny-qwen2-a.h5, student = golden/traces/tiny-llama-a.h5 (the same 11
tokens, the same vocabulary of 1024), step 0's logits [1, 11, 1024] as [11, 1024]. For each T:

    torch.nn.functional.kl_div(log_softmax(s / T), softmax(t / T), reduction="batchmean") * T**2

in float64 (the float32 logits widened exactly), i.e. the mean over the 11 positions of
KL(softmax(t/T) || softmax(s/T)) x T^2. Writes golden/distill/kl_refs.json.

    venv/bin/python golden/make_distill_refs.py
"""
import json
import os

import h5py
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPERATURES = [0.5, 1.0, 2.0, 4.0, 8.0]


def logits(name):
    with h5py.File(os.path.join(HERE, "traces", name), "r") as f:
        x = torch.from_numpy(f["step_0000/logits"][()]).to(torch.float64)
    return x.reshape(-1, x.shape[-1])


def main():
    t, s = logits("tiny-qwen2-a.h5"), logits("tiny-llama-a.h5")
    rows = []
    for T in TEMPERATURES:
        kl = F.kl_div(F.log_softmax(s / T, dim=-1), F.softmax(t / T, dim=-1), reduction="batchmean") * T**2
        pt = F.softmax(t / T, dim=-1)
        h = -(pt * F.log_softmax(t / T, dim=-1)).sum(-1).mean()
        rows.append({"T": T, "kl_t2": kl.item(), "teacher_entropy": h.item()})
    out = {"teacher": "golden/traces/tiny-qwen2-a.h5", "student": "golden/traces/tiny-llama-a.h5",
           "torch": torch.__version__, "temperatures": rows}
    os.makedirs(os.path.join(HERE, "distill"), exist_ok=True)
    with open(os.path.join(HERE, "distill", "kl_refs.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
