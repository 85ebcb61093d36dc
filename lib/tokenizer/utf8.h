// UTF-8 helpers for the tokenizer: strict validation with the byte offset of the first bad
// byte, code point decoding, and Rust's `String::from_utf8_lossy` (what HF decode returns
// for byte sequences that are not valid UTF-8).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmscope::utf8 {

inline constexpr size_t npos = std::string_view::npos;

// Byte offset where the first invalid sequence starts (Rust's `valid_up_to`; overlong
// forms, surrogates and code points above U+10FFFF are invalid, as in Rust's str), or
// npos when `s` is valid UTF-8.
size_t invalid_offset(std::string_view s);

// Throws std::runtime_error("<what> is not valid UTF-8: bad byte 0xC3 at byte offset 17")
// ("incomplete character starting with byte 0xE4 at byte offset 9" when the input ends
// in the middle of a character).
void check(std::string_view s, const std::string& what);

// Length of the UTF-8 sequence a lead byte announces (1..4), or 0 for a byte that cannot
// start one (a continuation byte, 0xC0/0xC1, 0xF5..0xFF).
inline int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
uint32_t next(std::string_view s, size_t& i);
void append(std::string& out, uint32_t cp);

// Rust `String::from_utf8_lossy`: every maximal invalid subsequence becomes one U+FFFD.
std::string lossy(std::string_view bytes);

// For streaming: the length of the longest prefix of `bytes` that can be emitted now.
// What is left is a trailing sequence that is incomplete but could still become valid
// (at most 3 bytes); invalid bytes are never held back.
size_t emittable_prefix(std::string_view bytes);

// "\xe4\xb8" -> "\\xE4\\xB8"; printable ASCII kept; used in error messages.
std::string escape_bytes(std::string_view bytes);

// Bytes shown readably: valid characters as they are, control characters as \n \t \r
// or \xNN, a backslash as \\, and bytes that are not (yet) a whole character as \xNN.
//   "中" -> "中"   " a\n" -> " a\\n"   "\xE4\xB8" (half of 中) -> "\\xE4\\xB8"
std::string readable(std::string_view bytes);

}  // namespace lmscope::utf8
