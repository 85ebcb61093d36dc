// Small helpers shared by the command-line tools.
#pragma once
#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmscope::cli {

// "1,2, 3" -> {1,2,3}; errors name the option.
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

inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

inline std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool quote = a.find_first_of(" \t'\"*?") != std::string::npos;
    s += (i ? " " : "") + (quote ? "'" + a + "'" : a);
  }
  return s;
}

// Runs a tool body; any exception becomes one line on stderr and exit code 1.
template <class F>
int run_tool(const char* tool, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "%s: error: %s\n", tool, msg.c_str());
    return 1;
  }
}

}  // namespace lmscope::cli
