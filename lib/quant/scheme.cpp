#include "quant/scheme.h"

#include <stdexcept>

namespace lmscope::quant {

namespace {
const std::vector<SchemeSpec>& specs() {
  static const std::vector<SchemeSpec> k = {
      {"w8-channel", WeightScheme::Channel, ActScheme::Float, false},
      {"w8-tensor", WeightScheme::Tensor, ActScheme::Float, false},
      {"w8-std", WeightScheme::Std, ActScheme::Float, false},
      {"w4-group", WeightScheme::Group4, ActScheme::Float, false},
      {"a8-token", WeightScheme::Float, ActScheme::Token, false},
      {"a8-static", WeightScheme::Float, ActScheme::Static, false},
      {"w8a8", WeightScheme::Channel, ActScheme::Token, false},
      {"gguf-blocks", WeightScheme::Float, ActScheme::Float, true},
  };
  return k;
}
}  // namespace

const std::vector<std::string>& scheme_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const SchemeSpec& s : specs()) n.push_back(s.name);
    return n;
  }();
  return names;
}

SchemeSpec parse_scheme(const std::string& name) {
  for (const SchemeSpec& s : specs())
    if (s.name == name) return s;
  std::string known;
  for (const std::string& n : scheme_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::runtime_error("--scheme: unknown scheme '" + name + "' (known: " + known + ")");
}

}  // namespace lmscope::quant
