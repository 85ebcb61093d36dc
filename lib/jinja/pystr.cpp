#include "jinja/pystr.h"

#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/error.h"

namespace lmscope::jinja::py {

std::u32string to_u32(const std::string& s) {
  std::u32string out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p + i, utf8proc_ssize_t(s.size() - i), &c);
    if (n <= 0) throw ValueError("text is not valid UTF-8 (byte offset " + std::to_string(i) + ")");
    out += char32_t(c);
    i += size_t(n);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_int32_t(c), buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::string from_u32(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

std::vector<std::string> chars(const std::string& s) {
  std::vector<std::string> out;
  for (char32_t c : to_u32(s)) {
    out.emplace_back();
    append_utf8(out.back(), c);
  }
  return out;
}

bool isspace(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);   // shortest round-trip, as Python's repr
  std::string s(buf, r.ptr);
  // Python switches to exponent notation outside 1e-4 <= |v| < 1e16.
  double a = std::fabs(v);
  if (a != 0 && (a < 1e-4 || a >= 1e16)) {
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    s.assign(buf, r.ptr);
    // to_chars writes "1e+16"; Python pads a one-digit exponent to two: "1e-05".
    size_t e = s.find('e');
    if (e != std::string::npos && s.size() - e == 3) s = s.substr(0, e + 2) + "0" + s.substr(e + 2);
    return s;
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
      out += buf;
    } else out += c;
  }
  out += q;
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

template <class Map>
std::string map_chars(const std::string& s, Map&& f) {
  std::u32string u = to_u32(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = char32_t(f(utf8proc_int32_t(u[i]), i));
  return from_u32(u);
}

bool is_letter(utf8proc_int32_t c) {
  return utf8proc_category(c) >= UTF8PROC_CATEGORY_LU && utf8proc_category(c) <= UTF8PROC_CATEGORY_LO;
}

}  // namespace

std::string upper(const std::string& s) {
  return map_chars(s, [](utf8proc_int32_t c, size_t) { return utf8proc_toupper(c); });
}

std::string lower(const std::string& s) {
  return map_chars(s, [](utf8proc_int32_t c, size_t) { return utf8proc_tolower(c); });
}

std::string capitalize(const std::string& s) {
  return map_chars(s, [](utf8proc_int32_t c, size_t i) { return i == 0 ? utf8proc_toupper(c) : utf8proc_tolower(c); });
}

std::string title(const std::string& s) {
  bool word_start = true;   // a letter after a non-letter starts a word
  return map_chars(s, [&](utf8proc_int32_t c, size_t) {
    utf8proc_int32_t out = word_start ? utf8proc_toupper(c) : utf8proc_tolower(c);
    word_start = !is_letter(c);
    return out;
  });
}

std::string strip(const std::string& s, bool whitespace, const std::string& chars, bool left, bool right) {
  std::u32string u = to_u32(s);
  std::u32string set = to_u32(chars);
  auto stripped = [&](char32_t c) { return whitespace ? isspace(c) : set.find(c) != std::u32string::npos; };
  size_t a = 0, b = u.size();
  if (left)
    while (a < b && stripped(u[a])) ++a;
  if (right)
    while (b > a && stripped(u[b - 1])) --b;
  return from_u32(u.substr(a, b - a));
}

std::vector<std::string> split(const std::string& s, bool whitespace, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (whitespace) {
    std::u32string u = to_u32(s);
    size_t i = 0;
    while (i < u.size()) {
      while (i < u.size() && isspace(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        // The rest is one piece, without its trailing whitespace.
        size_t e = u.size();
        while (e > i && isspace(u[e - 1])) --e;
        out.push_back(from_u32(u.substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < u.size() && !isspace(u[j])) ++j;
      out.push_back(from_u32(u.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  if (sep.empty()) throw ValueError("split: empty separator");
  size_t start = 0;
  for (;;) {
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) break;
    size_t at = s.find(sep, start);
    if (at == std::string::npos) break;
    out.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) throw ValueError("replace with an empty pattern is not supported");
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  for (size_t at; (count < 0 || done < count) && (at = s.find(from, start)) != std::string::npos; ++done) {
    out += s.substr(start, at - start) + to;
    if (out.size() > kMaxStringBytes)
      throw ValueError("replace() makes a string over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
    start = at + from.size();
  }
  return out + s.substr(start);
}

}  // namespace lmscope::jinja::py
