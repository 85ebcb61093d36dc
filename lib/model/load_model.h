// One entry point for "a model path": a Hugging Face directory (config.json + safetensors)
// or a .gguf file.
#pragma once
#include <string>

#include "model/config.h"
#include "model/weights.h"

namespace lmscope {

struct LoadedModel {
  ModelConfig cfg;
  Weights weights;
  std::string source_kind;  // "safetensors" or "gguf"
};

// A path ending in ".gguf" (any case), or any regular file starting with the GGUF magic, is
// loaded with load_gguf_model; anything else with load_model_config + load_weights. Errors
// are the loaders' one-line messages.
LoadedModel load_model(const std::string& path);

// Whether load_model would treat `path` as a GGUF file.
bool is_gguf_path(const std::string& path);

}  // namespace lmscope
