// GPT-2's byte-level alphabet (`bytes_to_unicode`, HF tokenizers `BYTES_CHAR`): every byte
// 0..255 becomes one printable Unicode character, so a vocabulary of strings can hold any
// byte sequence. Printable bytes map to themselves: 0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF.
// The other 68 bytes, in increasing order (0x00..0x20, 0x7F..0xA0, 0xAD), map to U+0100,
// U+0101, ...: space 0x20 -> U+0120 'Ġ', '\n' 0x0A -> U+010A 'Ċ'.
//
//   "中" = E4 B8 AD  ->  "ä¸Ń"  (U+00E4, U+00B8, U+0143)
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmscope::byte_level {

// The code point byte b is shown as.
uint32_t char_of(uint8_t b);
// The UTF-8 text of char_of(b) (one or two bytes).
const std::string& text_of(uint8_t b);
// The byte a code point stands for, or -1 if it is not in the alphabet.
int byte_of(uint32_t cp);

// Raw bytes -> byte-level text ("a b" -> "aĠb").
std::string encode(std::string_view bytes);
// Byte-level text -> raw bytes. False (out untouched) if some character is not in the
// alphabet: HF's ByteLevel decoder then keeps that token's text as it is.
bool decode(std::string_view text, std::string& out);

}  // namespace lmscope::byte_level
