#include "io/json_error.h"

#include <exception>

#include <nlohmann/json.hpp>

namespace lmscope {

std::string json_kind(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "float";
  return v.type_name();
}

std::string json_short(const nlohmann::json& v) {
  // error_handler_t::replace: a header holding invalid UTF-8 must not throw while we
  // are busy describing another error.
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string json_error_text(const std::exception& e) {
  std::string s = e.what();
  if (!s.empty() && s[0] == '[') {
    auto close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  return one_line(std::move(s));
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace lmscope
