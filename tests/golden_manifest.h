// The HF goldens listed in golden/traces/manifest.json (made by golden/make_golden.py), shared
// by the CPU golden tests and the CUDA ones.
#pragma once
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lmscope::golden {

// The repository root: the build's, unless LMSCOPE_SOURCE_DIR says otherwise (a test binary
// built on one machine and run from another checkout, as scripts/gpu-check.sh does).
inline const std::string& root() {
  static const std::string r =
      std::getenv("LMSCOPE_SOURCE_DIR") ? std::getenv("LMSCOPE_SOURCE_DIR") : LMSCOPE_SOURCE_DIR;
  return r;
}

inline nlohmann::json manifest() {
  std::ifstream f(root() + "/golden/traces/manifest.json");
  if (!f) return nlohmann::json();
  return nlohmann::json::parse(f);
}

// The trace names, for INSTANTIATE_TEST_SUITE_P ("(no manifest)" makes the test fail, saying so).
inline std::vector<std::string> names() {
  std::vector<std::string> out;
  const nlohmann::json m = manifest();
  if (m.is_null()) return {"(no manifest)"};
  for (const auto& t : m["traces"]) out.push_back(t["name"]);
  return out;
}

// One manifest entry by name; null when absent.
inline nlohmann::json entry(const std::string& name) {
  const nlohmann::json m = manifest();   // named: a range-for over a temporary's member dangles
  if (m.is_null()) return m;
  for (const auto& t : m["traces"])
    if (t["name"] == name) return t;
  return nlohmann::json();
}

}  // namespace lmscope::golden
