#!/usr/bin/env python3
"""llama.cpp's logits for given token ids, written to HDF5: an independent reference for
lmscope's CPU engine (golden/llamacpp/README.md, tests/llamacpp/).

Runs the llama.cpp that scripts/build-llamacpp.sh builds, through the llama-cpp-python sdist's
own ctypes bindings (<dir>/src/llama_cpp, loaded with LLAMA_CPP_LIB_PATH=<dir>/build/bin).
Token ids go in, not text, so no tokenizer difference can enter. One prefill of the prompt with
logits at every position (prompt_logits [T,V]), then K greedy steps one token at a time, the
decode path (N=1 matmuls): decode_ids [K] are llama.cpp's own argmax choices and
decode_logits [K,V] the logits after feeding each. Settings: KV cache float32 (llama.cpp's
default f16 cache would add a rounding of its own), flash attention off, one thread, the whole
prompt in one ubatch. Needs numpy and h5py (/usr/bin/python3 has them after scripts/setup.sh).

  /usr/bin/python3 scripts/llamacpp_logits.py --gguf M.gguf --ids 1,4093,198 --decode 8 --out ref.h5
  /usr/bin/python3 scripts/llamacpp_logits.py --where     # the llama.cpp build used, or why there is none

Any error: one line on stderr, exit 1.
"""
import argparse
import ctypes
import hashlib
import importlib
import os
import pathlib
import re
import sys
import types

try:
    import h5py
    import numpy as np
except ImportError as e:
    sys.exit(f"llamacpp_logits: {e} (it needs numpy and h5py; scripts/setup.sh installs them for /usr/bin/python3)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD_SCRIPT = ROOT / "scripts" / "build-llamacpp.sh"


GGML_LOG_LEVEL_ERROR = 4   # ggml.h's enum ggml_log_level


class Failure(Exception):
    pass


def pinned(name):
    """A pin of scripts/build-llamacpp.sh (version, sha256): one place for it."""
    m = re.search(rf"^{name}=(\S+)$", BUILD_SCRIPT.read_text(), re.M)
    if not m:
        raise Failure(f"{BUILD_SCRIPT}: no '{name}=' line")
    return m.group(1)


def llama_dir():
    cache = pathlib.Path(os.environ.get("LMSCOPE_CACHE", pathlib.Path.home() / ".cache" / "lmscope"))
    d = cache / f"llama-cpp-python-{pinned('version')}"
    if not (d / "build" / "bin" / "libllama.so").is_file() or not (d / "src" / "llama_cpp").is_dir():
        raise Failure(f"no llama.cpp build at {d} (run scripts/build-llamacpp.sh)")
    return d


def load_bindings(d):
    """The sdist's llama_cpp/llama_cpp.py (ctypes), without the package's __init__, which
    imports the high-level API and its dependencies (jinja2, diskcache) that the
    low-level bindings do not need. llama_cpp.py (0.3.36) loads libllama.so from
    LLAMA_CPP_LIB_PATH when it is set; libllama finds libggml*.so through its RUNPATH, the
    build's bin/ (CMake sets it). _ggml.py would ignore the variable; it is not imported."""
    os.environ["LLAMA_CPP_LIB_PATH"] = str(d / "build" / "bin")   # llama_cpp.py reads it on import
    try:
        import typing_extensions  # noqa: F401  (the bindings import TypeAlias from it)
    except ImportError:
        import typing
        sys.modules["typing_extensions"] = typing   # TypeAlias is in typing since 3.10
    pkg = types.ModuleType("llama_cpp")
    pkg.__path__ = [str(d / "src" / "llama_cpp")]
    sys.modules["llama_cpp"] = pkg
    try:
        return importlib.import_module("llama_cpp.llama_cpp")
    except (OSError, RuntimeError) as e:
        raise Failure(f"cannot load {d / 'build' / 'bin' / 'libllama.so'}: {e}")


def vendor_commit(d):
    """The llama.cpp commit the sdist vendors, as its CHANGELOG names it for this version (the
    sdist carries no .git; build-info says 'unknown')."""
    text = (d / "src" / "CHANGELOG.md").read_text()
    m = re.search(r"^## \[" + re.escape(pinned("version")) + r"\]\s*\n(.*?)^## ", text, re.M | re.S)
    c = re.search(r"ggml-org/llama\.cpp@([0-9a-f]{7,40})", m.group(1)) if m else None
    return c.group(1) if c else "unknown"


def ggml_version(d):
    text = (d / "src" / "vendor" / "llama.cpp" / "ggml" / "CMakeLists.txt").read_text()
    parts = [re.search(rf"set\(GGML_VERSION_{p} (\d+)\)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p.group(1) for p in parts) if all(parts) else "unknown"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# llama.cpp's per-layer tensors of the prefill -> lmscope's hooks (docs/hooks.md), for
# --layer-tensors: which step first differs, layer by layer.
LAYER_TENSORS = {"attn_norm": "attn_norm", "kqv_out": "attn.z", "ffn_inp": "resid_mid", "ffn_norm": "ffn_norm",
                 "ffn_gate": "ffn.gate", "ffn_up": "ffn.up", "ffn_swiglu": "ffn.act", "ffn_out": "ffn_out",
                 "l_out": "resid_post"}


class _TensorHead(ctypes.Structure):
    """The leading fields of ggml.h's struct ggml_tensor (type, buffer, ne)."""
    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4)]


class LayerTensors:
    """A ggml_backend_sched_eval_callback that copies the float32 tensors named in
    LAYER_TENSORS ("<name>-<layer>") out as they are computed: {"layers.L.<hook>": [T, D]} ([T, F]
    for ffn.gate, ffn.up and ffn.act)."""

    def __init__(self, ll, d):
        base = ctypes.CDLL(str(d / "build" / "bin" / "libggml-base.so"))
        base.ggml_get_name.restype = ctypes.c_char_p
        base.ggml_get_name.argtypes = [ctypes.c_void_p]
        base.ggml_nelements.restype = ctypes.c_int64
        base.ggml_nelements.argtypes = [ctypes.c_void_p]
        base.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        self.base, self.tensors, self.enabled = base, {}, False
        self.callback = ll.ggml_backend_sched_eval_callback(self._eval)

    def _hook(self, t):
        name = self.base.ggml_get_name(t).decode(errors="replace")
        stem, _, layer = name.rpartition("-")
        if stem not in LAYER_TENSORS or not layer.isdigit() or _TensorHead.from_address(t).type != 0:   # GGML_TYPE_F32
            return None
        return f"layers.{layer}.{LAYER_TENSORS[stem]}"

    def _eval(self, t, ask, _):
        hook = self._hook(t) if self.enabled else None
        if ask or hook is None:
            return hook is not None
        ne = _TensorHead.from_address(t).ne
        out = np.empty(self.base.ggml_nelements(t), dtype=np.float32)
        self.base.ggml_backend_tensor_get(t, out.ctypes.data, 0, out.nbytes)
        self.tensors[hook] = out.reshape(-1, ne[0])   # [T, D]: ggml's ne[0] is the row
        return True


class Llama:
    """One model and one context with the settings above; logs kept, printed only on failure."""

    def __init__(self, ll, gguf, n_ctx, n_batch, threads, layer_tensors=None):
        self.ll = ll
        self.log = []
        self._cb = ll.llama_log_callback(lambda level, text, _: self.log.append((level, text.decode(errors="replace"))))
        ll.llama_log_set(self._cb, ctypes.c_void_p(0))
        ll.llama_backend_init()
        mp = ll.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = ll.llama_model_load_from_file(str(gguf).encode(), mp)
        if not self.model:
            raise Failure(f"{gguf}: llama.cpp cannot load it: {self.first_error()}")
        cp = ll.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = cp.n_ubatch = n_batch   # the whole prompt in one ubatch: one prefill
        cp.n_seq_max = 1
        cp.n_threads = cp.n_threads_batch = threads
        cp.type_k = cp.type_v = ll.GGML_TYPE_F32
        cp.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.offload_kqv = False
        if layer_tensors is not None:   # measured: the callback leaves the logits bit-identical
            cp.cb_eval = layer_tensors.callback
        self.ctx = ll.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise Failure(f"{gguf}: llama.cpp cannot make a context: {self.first_error()}")
        self.n_vocab = ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(self.model))
        # n_ctx as the context has it (llama.cpp rounds it up to a multiple of 256)
        self.settings = dict(n_ctx=ll.llama_n_ctx(self.ctx), n_batch=n_batch, n_ubatch=n_batch, n_threads=threads,
                             type_k="f32", type_v="f32", flash_attn="disabled", n_gpu_layers=0)

    def first_error(self):
        """llama.cpp's first error message: the cause ('invalid magic characters'); the later
        ones only say that loading failed."""
        errors = [t.strip() for level, t in self.log if level == GGML_LOG_LEVEL_ERROR and t.strip()]
        return errors[0] if errors else "(llama.cpp logged no error)"

    def decode(self, ids, pos0, all_logits):
        """Feeds ids at positions pos0.. (sequence 0); returns their logits rows (all, or last)."""
        ll, n = self.ll, len(ids)
        batch = ll.llama_batch_init(n, 0, 1)
        try:
            batch.n_tokens = n
            for i, t in enumerate(ids):
                batch.token[i] = t
                batch.pos[i] = pos0 + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1 if (all_logits or i == n - 1) else 0
            rc = ll.llama_decode(self.ctx, batch)
            if rc != 0:
                raise Failure(f"llama_decode returned {rc}: {self.first_error()}")
            rows = range(n) if all_logits else [n - 1]
            out = np.empty((len(rows), self.n_vocab), dtype=np.float32)
            for r, i in enumerate(rows):
                p = ll.llama_get_logits_ith(self.ctx, i)
                out[r] = np.ctypeslib.as_array(p, shape=(self.n_vocab,))
            return out
        finally:
            ll.llama_batch_free(batch)

    def close(self):
        self.ll.llama_free(self.ctx)
        self.ll.llama_model_free(self.model)


def parse_ids(text):
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise Failure(f"--ids: '{text}' is not a comma-separated list of integers")
    if not ids:
        raise Failure("--ids: empty")
    return ids


def run(args):
    d = llama_dir()
    if args.where:
        print(d)
        return
    gguf = pathlib.Path(args.gguf)
    if not gguf.is_file():
        raise Failure(f"{gguf}: no such file")
    ids = parse_ids(args.ids)
    ll = load_bindings(d)
    n_ctx = len(ids) + args.decode
    grab = LayerTensors(ll, d) if args.layer_tensors else None
    m = Llama(ll, gguf, n_ctx=n_ctx, n_batch=max(len(ids), 1), threads=args.threads, layer_tensors=grab)
    try:
        bad = [t for t in ids if not 0 <= t < m.n_vocab]
        if bad:
            raise Failure(f"--ids: {bad[0]} is outside the vocabulary of {gguf} (size {m.n_vocab})")
        if grab:
            grab.enabled = True   # the prefill's tensors only
        prompt = m.decode(ids, 0, all_logits=True)
        if grab:
            grab.enabled = False
        dec_ids, dec_rows, nxt = [], [], int(np.argmax(prompt[-1]))
        for k in range(args.decode):
            dec_ids.append(nxt)
            row = m.decode([nxt], len(ids) + k, all_logits=False)[0]
            dec_rows.append(row)
            nxt = int(np.argmax(row))
        settings = m.settings
        system_info = ll.llama_print_system_info().decode(errors="replace")
    finally:
        m.close()
    tmp = pathlib.Path(args.out + ".partial")
    try:
        write(tmp, ids, prompt, dec_ids, dec_rows, settings, system_info, gguf, d, args.decode,
              grab.tensors if grab else {})
        os.replace(tmp, args.out)
    finally:
        tmp.unlink(missing_ok=True)


def write(tmp, ids, prompt, dec_ids, dec_rows, settings, system_info, gguf, d, decode_steps, layer_tensors):
    V = prompt.shape[1]
    gz = dict(compression="gzip", compression_opts=9, shuffle=True)
    with h5py.File(tmp, "w") as f:
        f.create_dataset("input_ids", data=np.asarray(ids, np.int32))
        f.create_dataset("prompt_logits", data=prompt, chunks=(1, V), **gz)
        f.create_dataset("decode_ids", data=np.asarray(dec_ids, np.int32))
        f.create_dataset("decode_logits", data=np.asarray(dec_rows, np.float32).reshape(len(dec_rows), V),
                         chunks=(1, V) if dec_rows else None, **(gz if dec_rows else {}))
        for hook, x in sorted(layer_tensors.items()):
            f.create_dataset("prefill/" + hook, data=x, **gz)
        a = f.attrs
        a["producer"] = "scripts/llamacpp_logits.py"
        a["llama_cpp_python"] = pinned("version")
        a["llama_cpp_python_sdist_sha256"] = pinned("sha256")
        a["llama_cpp_commit"] = vendor_commit(d)
        a["ggml_version"] = ggml_version(d)
        a["system_info"] = system_info
        a["gguf"] = gguf.name
        a["gguf_sha256"] = sha256(gguf)
        for k, v in settings.items():
            a["llama_" + k] = v
        a["decode_steps"] = decode_steps
        a["decode_rule"] = "greedy (argmax of llama.cpp's own logits), one token per llama_decode"


class Parser(argparse.ArgumentParser):
    def error(self, message):   # one line and exit 1, as every other failure (argparse: usage + 2)
        print(f"llamacpp_logits: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", help="the model")
    p.add_argument("--ids", help="prompt token ids, comma-separated")
    p.add_argument("--decode", type=int, default=0, help="greedy steps after the prompt, one token each (default 0)")
    p.add_argument("--threads", type=int, default=1, choices=(1, 2))
    p.add_argument("--out", help="HDF5 file to write")
    p.add_argument("--layer-tensors", action="store_true",
                   help="also store the prefill's per-layer tensors as prefill/layers.L.<hook> [T,D] "
                        "(attn_norm, attn.z, resid_mid, ffn_norm, ffn.gate, ffn.up, ffn.act, ffn_out, resid_post: "
                        "lmscope's hook names)")
    p.add_argument("--where", action="store_true", help="print the llama.cpp build directory and exit")
    args = p.parse_args()
    if not args.where and not (args.gguf and args.ids and args.out):
        p.error("--gguf, --ids and --out are required (or --where)")
    if args.decode < 0:
        p.error("--decode must be >= 0")
    try:
        run(args)
    except Failure as e:
        print(f"llamacpp_logits: {e}", file=sys.stderr)
        sys.exit(1)
    except (OSError, ImportError) as e:
        print(f"llamacpp_logits: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
