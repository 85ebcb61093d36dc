#!/usr/bin/env bash
# The main job: build, fetch SmolLM2-135M-Instruct, and trace a chat prompt on it into
# trace.h5 (every hook), printing the answer as it is generated. When the model cannot be
# fetched, the committed tiny model is traced instead (and diffed against its HF golden).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --main   # lmscope-trace: the answer waits for nothing else
# lmscope-step (and lmscope-diff for the tiny model), built once the answer has streamed.
build_rest() {
  echo "run: building $* (not needed for the answer above)"
  cmake --build build -j2 --target "$@"
}
prompt=${LMSCOPE_PROMPT:-"What is the capital of France?"}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if scripts/fetch-model.sh; then
  build/lmscope-trace --model "$model" --chat --prompt "$prompt" --max-new-tokens 24 --out trace.h5
  echo "trace: trace.h5 (its datasets: h5dump -H trace.h5)"
  # lmscope-step reads trace.h5 and shows its stored tensors page by page (the model is not
  # run again).
  build_rest lmscope-step
  echo "to walk it stage by stage in the terminal: build/lmscope-step trace.h5"
else
  tiny=golden/models/tiny-qwen2
  echo "note: SmolLM2 could not be fetched (see above); tracing the committed tiny model $tiny instead"
  # Every hook ('*'): the golden holds those the default set leaves out (resid_pre, final_norm, ...).
  build/lmscope-trace --model "$tiny" --prompt "The golden fish spoke to the old man." --max-new-tokens 8 \
      --hooks '*' --out trace.h5
  build_rest lmscope-diff lmscope-step
  build/lmscope-diff trace.h5 golden/traces/tiny-qwen2-a.h5
  echo "trace: trace.h5 (its datasets: h5dump -H trace.h5)"
  echo "to walk it stage by stage in the terminal: build/lmscope-step trace.h5"
fi
