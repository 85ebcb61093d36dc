#include "intervene/record.h"

#include <nlohmann/json.hpp>

#include "tokenizer/utf8.h"

namespace lmscope {

// The record comes from a file: a crafted one may nest arrays 100,000 deep (printing that
// recursively overflows the stack) or hide terminal escape sequences in a spec. Only the
// specs' text is shown, control characters escaped (\x1B, \n).
std::string interventions_line(const std::string& record_json) {
  const nlohmann::json j = nlohmann::json::parse(record_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty()) return "";
  std::string line = "intervened:";
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& s = j[i];
    const bool spec = s.is_object() && s.contains("spec") && s["spec"].is_string();
    line += (i ? "; " : " ") + (spec ? utf8::readable(s["spec"].get<std::string>()) : std::string("(an entry without a spec)"));
  }
  return line;
}

std::string interventions_line(const TraceReader& tr) {
  return tr.has_root_attr("interventions") ? interventions_line(tr.root_attr_string("interventions")) : "";
}

}  // namespace lmscope
