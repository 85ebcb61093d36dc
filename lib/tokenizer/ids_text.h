// Token ids as text, both ways: "1,2,3". The one format every tool prints and parses ids in.
#pragma once
#include <climits>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmscope {

inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// "1,2, 3" -> {1,2,3}; errors name the option the text came from. Each id is decimal digits
// (spaces around it allowed): "", "1,,2", "1,", "+5", "-1", "0x10" are refused.
inline std::vector<int32_t> parse_ids(const std::string& text, const std::string& option) {
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw std::runtime_error(option + ": no token ids in '" + text + "'");
  std::vector<int32_t> ids;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t a = part.find_first_not_of(" \t"), b = part.find_last_not_of(" \t");
    part = a == std::string::npos ? std::string() : part.substr(a, b - a + 1);
    if (part.empty())
      throw std::runtime_error(option + ": an empty token id in '" + text + "' (expected e.g. 1,2,3)");
    long long v = -1;
    if (part.find_first_not_of("0123456789") == std::string::npos && part.size() <= 10) v = std::stoll(part);
    if (v < 0 || v > INT32_MAX)
      throw std::runtime_error(option + ": '" + part + "' is not a token id (expected e.g. 1,2,3)");
    ids.push_back(int32_t(v));
    if (comma == std::string::npos) return ids;
    start = comma + 1;
  }
}

// How a report shows one token ("␣Paris"); the tools make it from the tokenizer, or "#id".
using PieceFn = std::function<std::string(int32_t)>;

// "#id": a token shown without a tokenizer, or one whose id the tokenizer lacks.
inline std::string id_piece(int32_t id) {
  std::string s = "#";
  s += std::to_string(id);
  return s;
}

// A piece in quotes, padded to `width` display columns (UTF-8 continuation bytes take none).
inline std::string quoted_piece(const std::string& s, size_t width) {
  std::string q = "\"" + s + "\"";
  size_t cols = 0;
  for (unsigned char c : q) cols += (c & 0xC0) != 0x80;
  if (cols < width) q.append(width - cols, ' ');
  return q;
}

}  // namespace lmscope
