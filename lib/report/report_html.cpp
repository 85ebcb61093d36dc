#include "report/report_html.h"

#include <stdexcept>

namespace lmscope {

const std::string& report_template() {
  // report_template.inc: the HTML file as one raw string literal, made by CMake at configure
  // time (CMakeLists.txt, "report template").
  static const std::string t =
#include "report_template.inc"
      ;
  return t;
}

std::string report_html(const nlohmann::json& data) {
  static const std::string placeholder = "/*LMSCOPE_DATA*/";
  const std::string& t = report_template();
  const size_t at = t.find(placeholder);
  if (at == std::string::npos) throw std::logic_error("report template has no data placeholder");
  // Invalid UTF-8 in a text (a prompt cut inside a character) becomes U+FFFD, not an exception.
  std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Inside <script>, "</" could end the element early (a prompt containing "</script>"):
  // "<\/" is the same string in JSON.
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && (json[i + 1] == '/' || json[i + 1] == '!')) {
      safe += "\\u003c";
      continue;
    }
    safe += json[i];
  }
  return t.substr(0, at) + safe + t.substr(at + placeholder.size());
}

}  // namespace lmscope
