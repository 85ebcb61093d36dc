#include "trace/select.h"

#include <algorithm>
#include <stdexcept>

namespace lmscope {

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative matcher with one backtrack point: linear in practice, no recursion.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool match_any(const std::vector<std::string>& globs, const std::string& text) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return glob_match(g, text); });
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    std::string item = csv.substr(start, end - start);
    size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
    start = end + 1;
  }
  return out;
}

std::vector<int> parse_ranges(const std::string& text) {
  auto num = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9)
      throw std::invalid_argument("bad range '" + text + "' (expected e.g. 0-3,7)");
    return std::stoi(s);
  };
  std::vector<int> out;
  for (const std::string& item : split_list(text)) {
    size_t dash = item.find('-');
    if (dash == std::string::npos) {
      out.push_back(num(item));
      continue;
    }
    int lo = num(item.substr(0, dash)), hi = num(item.substr(dash + 1));
    if (hi < lo) throw std::invalid_argument("bad range '" + item + "' (end before start)");
    if (hi - lo > 1000000) throw std::invalid_argument("range '" + item + "' is too large");
    for (int i = lo; i <= hi; ++i) out.push_back(i);
  }
  if (out.empty()) throw std::invalid_argument("empty range '" + text + "'");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace lmscope
