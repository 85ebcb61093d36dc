#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace lmscope::byte_level {

namespace {

struct Tables {
  std::array<uint32_t, 256> cp{};
  std::array<std::string, 256> text;
  std::array<int16_t, 0x144> byte{};   // every mapped code point is below U+0144

  Tables() {
    byte.fill(-1);
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      cp[size_t(b)] = printable ? uint32_t(b) : 0x100 + n++;
      utf8::append(text[size_t(b)], cp[size_t(b)]);
      byte[cp[size_t(b)]] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t char_of(uint8_t b) { return tables().cp[b]; }
const std::string& text_of(uint8_t b) { return tables().text[b]; }

int byte_of(uint32_t cp) {
  const Tables& t = tables();
  return cp < t.byte.size() ? t.byte[cp] : -1;
}

std::string encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += t.text[c];
  return out;
}

bool decode(std::string_view text, std::string& out) {
  // The text comes from a vocabulary loaded as JSON, hence valid UTF-8.
  std::string bytes;
  bytes.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    int b = byte_of(utf8::next(text, i));
    if (b < 0) return false;
    bytes += char(b);
  }
  out += bytes;
  return true;
}

}  // namespace lmscope::byte_level
