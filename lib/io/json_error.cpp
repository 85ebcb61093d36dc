#include "io/json_error.h"

#include <exception>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace lmscope {

std::string json_kind(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "float";
  return v.type_name();
}

namespace {

constexpr size_t kShortMax = 60;

// Compact JSON of `v`, stopping once `out` is past the cut: nlohmann's dump() recurses once
// per nesting level and would overflow the stack on a value nested 100,000 deep (a hostile
// config.json or safetensors header), while every level here adds a character, so the
// recursion ends within kShortMax levels.
void dump_short(const nlohmann::json& v, std::string& out) {
  if (out.size() > kShortMax) return;
  // error_handler_t::replace: a header holding invalid UTF-8 must not throw while we are
  // busy describing another error.
  auto scalar = [&](const nlohmann::json& x) {
    if (x.is_string() && x.get_ref<const std::string&>().size() > kShortMax)
      out += nlohmann::json(x.get_ref<const std::string&>().substr(0, kShortMax))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    else
      out += x.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size() && out.size() <= kShortMax; ++i) {
      if (i) out += ',';
      dump_short(v[i], out);
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= kShortMax; ++it) {
      if (!first) out += ',';
      first = false;
      scalar(nlohmann::json(it.key()));
      out += ':';
      dump_short(it.value(), out);
    }
    out += '}';
  } else {
    scalar(v);
  }
}

}  // namespace

std::string json_short(const nlohmann::json& v) {
  std::string s;
  dump_short(v, s);
  if (s.size() > kShortMax) s = s.substr(0, kShortMax - 3) + "...";
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

void fail_file(const std::string& path, const std::string& msg) {
  throw std::runtime_error(one_line(path + ": " + msg));
}

}  // namespace lmscope
