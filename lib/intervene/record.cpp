#include "intervene/record.h"

#include <nlohmann/json.hpp>

namespace lmscope {

std::string interventions_line(const std::string& record_json) {
  const nlohmann::json j = nlohmann::json::parse(record_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty()) return "";
  std::string line = "intervened:";
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& s = j[i];
    line += (i ? "; " : " ") + (s.is_object() && s.contains("spec") && s["spec"].is_string() ? s["spec"].get<std::string>() : s.dump());
  }
  return line;
}

std::string interventions_line(const TraceReader& tr) {
  return tr.has_root_attr("interventions") ? interventions_line(tr.root_attr_string("interventions")) : "";
}

}  // namespace lmscope
