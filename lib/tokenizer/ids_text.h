// Token ids as text, both ways: "1,2,3". The one format every tool prints and parses ids in.
#pragma once
#include <climits>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmscope {

inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

// "1,2, 3" -> {1,2,3}; errors name the option the text came from.
inline std::vector<int32_t> parse_ids(const std::string& text, const std::string& option) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t a = part.find_first_not_of(" \t"), b = part.find_last_not_of(" \t");
    if (a == std::string::npos) continue;
    part = part.substr(a, b - a + 1);
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || v < 0 || v > INT32_MAX)
      throw std::runtime_error(option + ": '" + part + "' is not a token id (expected e.g. 1,2,3)");
    ids.push_back(int32_t(v));
  }
  if (ids.empty()) throw std::runtime_error(option + ": no token ids in '" + text + "'");
  return ids;
}

}  // namespace lmscope
