"""The model shape the synthetic-model scripts write by default: DeepSeek-R1-Distill-Qwen-1.5B's
(its config.json: 28 layers, hidden 1536, FFN 8960, 12 heads, 2 KV heads, vocabulary 151,936).
Shared by make_synthetic_gguf.py and make_synthetic_safetensors.py."""


def add_shape_args(ap):
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1536)
    ap.add_argument("--ffn", type=int, default=8960)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=151936)
