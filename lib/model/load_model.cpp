#include "model/load_model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "io/gguf.h"
#include "model/gguf_model.h"

namespace lmscope {

bool is_gguf_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".gguf") return true;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && is_gguf_file(path);
}

LoadedModel load_model(const std::string& path) {
  LoadedModel m;
  if (is_gguf_path(path)) {
    GgufModel g = load_gguf_model(path);
    m.cfg = std::move(g.cfg);
    m.weights = std::move(g.weights);
    m.source_kind = "gguf";
  } else {
    m.cfg = load_model_config(path);
    m.weights = load_weights(m.cfg, path);
    m.source_kind = "safetensors";
  }
  return m;
}

}  // namespace lmscope
