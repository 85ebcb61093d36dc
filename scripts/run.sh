#!/usr/bin/env bash
# The main job: build, then trace a prompt on the default model into trace.h5 and diff it
# against the Hugging Face golden made from the same prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
model=golden/models/tiny-qwen2
echo "note: SmolLM2-135M (GGUF) is not supported yet; using the committed tiny model $model"
# the prompt of golden (a): "The golden fish spoke to the old man." in the tiny vocabulary
ids=$(python3 -c "import json;t=[t for t in json.load(open('golden/traces/manifest.json'))['traces'] if t['name']=='tiny-qwen2-a'][0];print(','.join(map(str,t['prompt_ids'][0])))")
build/lmscope-trace --model "$model" --prompt-ids "$ids" --max-new-tokens 8 --out trace.h5
build/lmscope-diff trace.h5 golden/traces/tiny-qwen2-a.h5
