// Helpers for the Jinja tests: render a template string, and catch its error message.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "jinja/jinja.h"

namespace jinja_test {

using lmscope::jinja::Dict;
using lmscope::jinja::List;
using lmscope::jinja::Value;

inline std::string render(const std::string& src, const std::map<std::string, Value>& vars = {},
                          const std::string& name = "template") {
  return lmscope::jinja::Template(src, name).render(vars);
}

// The message of the JinjaError that parsing or rendering `src` throws ("" when none).
inline std::string error_of(const std::string& src, const std::map<std::string, Value>& vars = {},
                            const std::string& name = "template") {
  try {
    render(src, vars, name);
  } catch (const lmscope::jinja::JinjaError& e) {
    return e.what();
  }
  return "";
}

// Two messages, as transformers passes them.
inline Value two_messages() {
  return Value(List{Value(Dict{{"role", Value("user")}, {"content", Value("Hi there")}}),
                    Value(Dict{{"role", Value("assistant")}, {"content", Value("Hello!")}})});
}

}  // namespace jinja_test
