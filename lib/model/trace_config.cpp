#include "model/trace_config.h"

#include <nlohmann/json.hpp>

namespace lmscope {

ModelConfig parse_trace_model_config(const std::string& json_text, const std::string& source) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return parse_model_config(json_text, source);   // its own one-line error
  j.erase("quantization_config");
  return parse_model_config(j.dump(), source);
}

}  // namespace lmscope
