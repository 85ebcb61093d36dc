#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include "jinja/pystr.h"

namespace lmscope::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalize_newlines(const std::string& src) {
  std::string n;
  n.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      n += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      n += src[i];
    }
  }
  if (!n.empty() && n.back() == '\n') n.pop_back();   // keep_trailing_newline=False
  return n;
}

}  // namespace

Source::Source(const std::string& text) : text_(normalize_newlines(text)) {
  line_starts_.push_back(0);
  chars_before_.reserve(text_.size() + 1);
  uint32_t chars = 0;
  for (size_t i = 0; i < text_.size(); ++i) {
    chars_before_.push_back(chars);
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++chars;   // a byte that starts a character
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
  chars_before_.push_back(chars);
}

Pos Source::pos(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line = size_t(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin());
  const int col = 1 + int(chars_before_[offset] - chars_before_[line_starts_[line - 1]]);   // in characters
  return {int(line), col};
}

// Jinja's lexer with trim_blocks=True, lstrip_blocks=True.
std::vector<Segment> split_segments(const Source& source) {
  const std::string& src = source.text();
  std::vector<Segment> out;
  size_t pos = 0;
  bool line_starting = true;   // pos is at the start of a line (for lstrip_blocks)
  while (pos <= src.size()) {
    size_t ts = std::string::npos;   // where the next tag starts
    for (size_t i = src.find('{', pos); i != std::string::npos && i + 1 < src.size(); i = src.find('{', i + 1)) {
      char k = src[i + 1];
      if (k == '{' || k == '%' || k == '#') {
        ts = i;
        break;
      }
    }
    std::string text = src.substr(pos, ts == std::string::npos ? std::string::npos : ts - pos);
    if (ts == std::string::npos) {
      if (!text.empty()) out.push_back({Segment::Type::Text, text, pos});
      break;
    }
    char kind = src[ts + 1];
    char sign = ts + 2 < src.size() && (src[ts + 2] == '-' || src[ts + 2] == '+') ? src[ts + 2] : 0;
    if (sign == '-') {   // {%- strips all whitespace before the tag
      size_t e = text.size();
      while (e > 0 && is_ws(text[e - 1])) --e;
      text.resize(e);
    } else if (sign != '+' && kind != '{') {   // lstrip_blocks: the tag's own line's indentation
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if (l_pos > 0 || line_starting) {
        bool only_ws = l_pos < text.size();
        for (size_t i = l_pos; i < text.size(); ++i)
          if (!is_ws(text[i])) only_ws = false;
        if (only_ws) text.resize(l_pos);
      }
    }
    if (!text.empty()) out.push_back({Segment::Type::Text, text, pos});

    // Find the closing delimiter: for {{ and {%, outside string literals and brackets (as
    // Jinja balances them: "{{ {'a': {}} }}" ends at the last "}}"); with a bracket left open,
    // the first one, so that the parser names what is missing.
    size_t body_start = ts + 2 + (sign ? 1 : 0);
    std::string closing = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t ce = std::string::npos;
    bool bracket_left_open = false;
    if (kind == '#') {
      ce = src.find("#}", body_start);
    } else {
      char quote = 0;
      int depth = 0;
      size_t first = std::string::npos;   // the first closing delimiter outside strings
      for (size_t i = body_start; i + 1 < src.size(); ++i) {
        char c = src[i];
        if (quote) {
          if (c == '\\') ++i;
          else if (c == quote) quote = 0;
          continue;
        }
        if (c == '\'' || c == '"') {
          quote = c;
        } else if (c == closing[0] && src[i + 1] == closing[1]) {
          if (first == std::string::npos) first = i;
          if (depth <= 0) {
            ce = i;
            break;
          }
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        else if (c == ')' || c == ']' || c == '}') --depth;
      }
      if (ce == std::string::npos) {
        ce = first;
        bracket_left_open = true;
      }
    }
    if (ce == std::string::npos)
      fail(source.pos(ts), std::string("'{") + kind + "' is never closed (no '" + closing + "')");
    char end_sign = ce > body_start && (src[ce - 1] == '-' || src[ce - 1] == '+') ? src[ce - 1] : 0;
    std::string body = src.substr(body_start, ce - body_start - (end_sign ? 1 : 0));
    if (kind == '{') out.push_back({Segment::Type::Expr, body, body_start});
    else if (kind == '%') out.push_back({Segment::Type::Stmt, body, body_start});
    // A tag with a bracket left open cannot parse, so the parser stops at it: the rest is not
    // split (each such tag scans to the end of the template, quadratic if we went on).
    if (bracket_left_open) break;
    size_t after = ce + 2;
    if (end_sign == '-') {   // -%} strips all whitespace after the tag
      while (after < src.size() && is_ws(src[after])) ++after;
    } else if (end_sign != '+' && kind != '{' && after < src.size() && src[after] == '\n') {
      ++after;   // trim_blocks: the newline right after a block tag
    }
    line_starting = after > 0 && src[after - 1] == '\n';
    pos = after;
    if (pos == src.size()) break;
  }
  return out;
}

std::vector<Tok> tokenize(const Source& source, const Segment& seg) {
  const std::string& src = seg.text;
  auto at = [&](size_t i) { return source.pos(seg.offset + i); };
  std::vector<Tok> out;
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    char c = src[i];
    if (is_ws(c)) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      out.push_back({Tok::T::Name, src.substr(i, j - i), 0, 0, at(i)});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < n && (std::isdigit(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      if (j + 1 < n && src[j] == '.' && std::isdigit(static_cast<unsigned char>(src[j + 1]))) {
        is_float = true;
        ++j;
        while (j < n && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
      }
      if (j < n && (src[j] == 'e' || src[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (src[k] == '+' || src[k] == '-')) ++k;
        if (k < n && std::isdigit(static_cast<unsigned char>(src[k]))) {
          is_float = true;
          j = k;
          while (j < n && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
        }
      }
      std::string num;
      for (size_t k = i; k < j; ++k)
        if (src[k] != '_') num += src[k];
      Tok t;
      t.at = at(i);
      try {
        if (is_float) {
          t.t = Tok::T::Float;
          t.f = std::stod(num);
        } else {
          t.t = Tok::T::Int;
          t.i = std::stoll(num);
        }
      } catch (const std::out_of_range&) {
        fail(t.at, "number " + num + " is out of range");
      }
      out.push_back(t);
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string s;
      size_t j = i + 1;
      for (; j < n && src[j] != c; ++j) {
        if (src[j] != '\\' || j + 1 >= n) {
          s += src[j];
          continue;
        }
        char e = src[++j];
        switch (e) {
          case 'n': s += '\n'; break;
          case 't': s += '\t'; break;
          case 'r': s += '\r'; break;
          case '\\': s += '\\'; break;
          case '\'': s += '\''; break;
          case '"': s += '"'; break;
          case '0': s += '\0'; break;
          case 'a': s += '\a'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case 'v': s += '\v'; break;
          case '\n': break;   // line continuation
          case 'x': case 'u': case 'U': {
            size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            std::string hex = j + len < n ? src.substr(j + 1, len) : "";
            if (hex.empty() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
              fail(at(j - 1), std::string("bad escape '\\") + e + "' in a string literal");
            unsigned long cp = std::stoul(hex, nullptr, 16);
            if (cp > 0x10FFFF) fail(at(j - 1), "escape '\\" + std::string(1, e) + hex + "' is not a Unicode character");
            py::append_utf8(s, char32_t(cp));
            j += len;
            break;
          }
          default: s += '\\'; s += e;   // Python keeps unknown escapes
        }
      }
      if (j >= n) fail(at(i), "string literal is never closed");
      out.push_back({Tok::T::Str, s, 0, 0, at(i)});
      i = j + 1;
      continue;
    }
    static const char* ops[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%", "~",
                                "|", ".", ",", ":", "(", ")", "[", "]", "{", "}", "="};
    bool matched = false;
    for (const char* op : ops) {
      size_t len = std::char_traits<char>::length(op);
      if (src.compare(i, len, op) == 0) {
        out.push_back({Tok::T::Op, op, 0, 0, at(i)});
        i += len;
        matched = true;
        break;
      }
    }
    if (!matched) fail(at(i), std::string("unexpected character '") + c + "'");
  }
  out.push_back({Tok::T::End, "", 0, 0, at(n)});
  return out;
}

}  // namespace lmscope::jinja
