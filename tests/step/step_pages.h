// Reading the walk's output in the step tests: its page titles in order, one page's text.
#pragma once
#include <string>
#include <vector>

namespace lmscope::step_test {

// The titles of the "=== title ===" lines, in order (the closing "end of the walk" line too).
inline std::vector<std::string> page_titles(const std::string& out) {
  std::vector<std::string> titles;
  size_t at = 0;
  while ((at = out.find("\n=== ", at)) != std::string::npos) {
    const size_t start = at + 5, end = out.find(" ===\n", start);
    if (end == std::string::npos) break;
    titles.push_back(out.substr(start, end - start));
    at = end;
  }
  return titles;
}

// The text from the "=== title ===" line to the next page's (or the end).
inline std::string page_text(const std::string& out, const std::string& title) {
  const size_t at = out.find("\n=== " + title + " ===\n");
  if (at == std::string::npos) return "";
  const size_t next = out.find("\n=== ", at + 1);
  return out.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

// Everything from the first page to the closing line included: what a walk printed.
inline std::string walk(const std::string& out) {
  const size_t a = out.find("\n=== "), b = out.find("=== end of the walk");
  if (a == std::string::npos || b == std::string::npos) return "";
  return out.substr(a, out.find('\n', b) - a);
}

}  // namespace lmscope::step_test
