#include "model/special_tokens.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/regular_file.h"

namespace lmscope {

namespace {
// eos_token_id may be an int, a list of ints, or null.
std::vector<int32_t> id_list(const nlohmann::json& j, const std::string& where) {
  std::vector<int32_t> out;
  if (j.is_null()) return out;
  if (j.is_number_integer()) return {j.get<int32_t>()};
  if (j.is_array()) {
    for (const auto& e : j) {
      if (!e.is_number_integer()) throw std::runtime_error(where + " must be an integer or a list of integers");
      out.push_back(e.get<int32_t>());
    }
    return out;
  }
  throw std::runtime_error(where + " must be an integer or a list of integers");
}
}  // namespace

SpecialTokens resolve_special_tokens(const ModelConfig& cfg, const std::string& model_dir) {
  SpecialTokens st;
  for (int e : cfg.eos_token_ids) st.eos_ids.push_back(e);
  int32_t pad = cfg.pad_token_id;
  const auto path = std::filesystem::path(model_dir) / "generation_config.json";
  if (std::filesystem::is_directory(model_dir) && std::filesystem::exists(path)) {
    require_regular_file(path.string());
    std::ifstream f(path);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path.string() + ": not valid JSON (" + e.what() + ")");
    }
    if (j.contains("eos_token_id") && !j["eos_token_id"].is_null())
      st.eos_ids = id_list(j["eos_token_id"], path.string() + ": field 'eos_token_id'");
    if (j.contains("pad_token_id") && !j["pad_token_id"].is_null()) {
      auto ids = id_list(j["pad_token_id"], path.string() + ": field 'pad_token_id'");
      if (!ids.empty()) pad = ids[0];
    }
  }
  st.pad_id = pad >= 0 ? pad : (st.eos_ids.empty() ? 0 : st.eos_ids[0]);
  return st;
}

}  // namespace lmscope
