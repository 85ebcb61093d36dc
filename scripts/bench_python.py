#!/usr/bin/env python3
"""What hooks cost in Python, lmscope's module against HF transformers with torch hooks, on
the CPU, for the same SmolLM2 GGUF and prompt (docs/benchmarks.md, "Hooks from Python").

    scripts/bench-python.sh                      # both engines, one after the other, one table

Each engine (one process each: --engine lmscope under Debian's python3 with build/python on
the path; --engine hf under a Python with torch + transformers + gguf, golden/requirements.txt)
times, median of --repeats, one forward of --tokens tokens:
  plain      no hook (lmscope: run_with_hooks with none; HF: model(ids))
  cache_all  every activation kept as numpy (lmscope: run_with_cache(); HF: a forward hook on
             every module copying its output to numpy, and output_hidden_states)
  py_hooks   5 identity Python hooks per layer, 5 L calls a forward (lmscope: resid_pre,
             attn_out, resid_mid, ffn_out, resid_post; HF: register_forward_hook on each decoder
             layer, its self_attn, mlp and both norms); per call = (py_hooks - plain) / (5 L)
Prints one JSON object.
"""
import argparse
import json
import os
import statistics
import sys
import time


def timed(fn, repeats):
    fn()   # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_lmscope(args, ids):
    import lmscope
    m = lmscope.Model(args.model)
    L = m.info["num_layers"]
    plain = timed(lambda: m.run_with_hooks(ids), args.repeats)
    cache_all = timed(lambda: m.run_with_cache(ids), args.repeats)
    sites = ["layers.*.resid_pre", "layers.*.attn_out", "layers.*.resid_mid", "layers.*.ffn_out", "layers.*.resid_post"]
    py_hooks = timed(lambda: m.run_with_hooks(ids, hooks=[(s, lambda x, ctx: None) for s in sites]), args.repeats)
    _, cache = m.run_with_cache(ids)
    return dict(engine="lmscope", layers=L, plain=plain, cache_all=cache_all, py_hooks=py_hooks,
                per_hook_call=(py_hooks - plain) / (5 * L), arrays=len(cache),
                megabytes=sum(a.nbytes for a in cache.values()) / 1e6)


def bench_hf(args, ids):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(args.threads)
    d, name = os.path.split(os.path.abspath(args.model))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32).eval()
    x = torch.tensor([ids])
    layers = model.model.layers

    def plain():
        with torch.no_grad():
            model(x, use_cache=False)

    kept = []

    def keep(_module, _inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        if torch.is_tensor(out):
            kept.append(out.detach().numpy().copy())

    def cache_all():
        kept.clear()
        handles = [mod.register_forward_hook(keep) for mod in model.modules() if mod is not model]
        try:
            with torch.no_grad():
                model(x, use_cache=False, output_hidden_states=True, output_attentions=False)
        finally:
            for h in handles:
                h.remove()

    def py_hooks():
        modules = [m for layer in layers for m in (layer, layer.self_attn, layer.mlp, layer.input_layernorm,
                                                   layer.post_attention_layernorm)]
        handles = [mod.register_forward_hook(lambda m, i, o: None) for mod in modules]
        try:
            plain()
        finally:
            for h in handles:
                h.remove()

    t_plain = timed(plain, args.repeats)
    t_cache = timed(cache_all, args.repeats)
    t_hooks = timed(py_hooks, args.repeats)
    return dict(engine="hf", layers=len(layers), plain=t_plain, cache_all=t_cache, py_hooks=t_hooks,
                per_hook_call=(t_hooks - t_plain) / (5 * len(layers)), arrays=len(kept),
                megabytes=sum(a.nbytes for a in kept) / 1e6, torch=torch.__version__)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=["lmscope", "hf"], required=True)
    p.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    args = p.parse_args()
    ids = [(1000 + 37 * i) % 49152 for i in range(args.tokens)]   # the same ids for both engines
    r = (bench_lmscope if args.engine == "lmscope" else bench_hf)(args, ids)
    r.update(tokens=args.tokens, threads=args.threads, repeats=args.repeats)
    json.dump(r, sys.stdout)
    print()


if __name__ == "__main__":
    main()
