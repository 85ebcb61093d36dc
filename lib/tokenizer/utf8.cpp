#include "tokenizer/utf8.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace lmscope::utf8 {

namespace {

// How many bytes starting at s[i] form a valid sequence (1..4), or, when they do not, the
// negated length of the maximal invalid prefix (-1..-3): the bytes Rust replaces by one
// U+FFFD. `complete` is false when the sequence is valid so far but runs off the end.
int classify(std::string_view s, size_t i, bool& complete) {
  complete = true;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  unsigned char b0 = p[i];
  int len = sequence_length(b0);
  if (len == 1) return 1;
  if (len == 0) return -1;
  // Allowed range of the second byte (Unicode Table 3-7): excludes overlongs, surrogates
  // and code points above U+10FFFF.
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 == 0xE0) lo = 0xA0;
  else if (b0 == 0xED) hi = 0x9F;
  else if (b0 == 0xF0) lo = 0x90;
  else if (b0 == 0xF4) hi = 0x8F;
  for (int k = 1; k < len; ++k) {
    if (i + k >= n) {
      complete = false;
      return -k;
    }
    unsigned char b = p[i + k];
    bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -k;
  }
  return len;
}

}  // namespace

size_t invalid_offset(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path: 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    bool complete;
    int r = classify(s, i, complete);
    if (r < 0) return i;   // where the bad sequence starts (Rust's valid_up_to)
    i += size_t(r);
  }
  return npos;
}

void check(std::string_view s, const std::string& what) {
  size_t at = invalid_offset(s);
  if (at == npos) return;
  bool complete;
  classify(s, at, complete);
  char buf[128];
  std::snprintf(buf, sizeof buf, ": %s 0x%02X at byte offset %zu",
                complete ? "bad byte" : "incomplete character starting with byte",
                unsigned(static_cast<unsigned char>(s[at])), at);
  throw std::runtime_error(what + " is not valid UTF-8" + buf);
}

uint32_t next(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  unsigned char b0 = p[i];
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    uint32_t cp = (uint32_t(b0 & 0x1F) << 6) | (p[i + 1] & 0x3F);
    i += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    uint32_t cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
    i += 3;
    return cp;
  }
  uint32_t cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(p[i + 1] & 0x3F) << 12) |
                (uint32_t(p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F);
  i += 4;
  return cp;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    bool complete;
    int r = classify(bytes, i, complete);
    if (r > 0) {
      out.append(bytes.data() + i, size_t(r));
      i += size_t(r);
    } else {
      out += "\xEF\xBF\xBD";   // U+FFFD
      i += size_t(-r);
    }
  }
  return out;
}

size_t emittable_prefix(std::string_view bytes) {
  // Only the last (up to) 3 bytes can be the start of an unfinished sequence.
  size_t start = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t i = start; i < bytes.size(); ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    if (sequence_length(b) <= 1) continue;   // ASCII, continuation or invalid lead
    bool complete;
    int r = classify(bytes, i, complete);
    if (r < 0 && !complete) return i;   // valid so far, cut by the end: hold it back
  }
  return bytes.size();
}

std::string escape_bytes(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
      out += buf;
    }
  }
  return out;
}

std::string readable(std::string_view bytes) {
  std::string out;
  size_t i = 0;
  auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
    out += buf;
  };
  while (i < bytes.size()) {
    bool complete;
    int r = classify(bytes, i, complete);
    if (r < 0) {
      for (int k = 0; k < -r; ++k) hex(static_cast<unsigned char>(bytes[i + size_t(k)]));
      i += size_t(-r);
      continue;
    }
    size_t j = i;
    uint32_t cp = next(bytes, j);
    if (cp == '\n') out += "\\n";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\\') out += "\\\\";
    else if (cp < 0x20 || cp == 0x7F) hex(static_cast<unsigned char>(cp));
    else out.append(bytes.data() + i, j - i);
    i = j;
  }
  return out;
}

}  // namespace lmscope::utf8
