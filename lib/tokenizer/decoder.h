// tokenizer.json "decoder": ids back to text as HF `Tokenizer::decode` does (TokenDecoder; the
// model's forward is model/decoder.h's Decoder), and an incremental decoder for streaming
// generation.
//
// ByteLevel decoding maps every token's characters back to bytes (a token with a character
// outside the byte alphabet, such as "<｜User｜>", keeps its UTF-8 as it is), concatenates,
// and turns the bytes into text with Rust's from_utf8_lossy: an id sequence that stops in
// the middle of a character decodes to U+FFFD there. Supported: ByteLevel and null (tokens
// joined by spaces, as HF does without a decoder); anything else is refused by name.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/json_field.h"

namespace lmscope::tok {

class TokenDecoder {
 public:
  static TokenDecoder from_json(const Field& f);   // f may be null
  bool byte_level() const { return byte_level_; }
  std::string describe() const { return byte_level_ ? "ByteLevel" : "none"; }

  // The bytes one token contributes (byte-level: unmapped; before the lossy UTF-8 step).
  std::string token_bytes(const std::string& token) const;
  // Tokens (vocabulary strings) -> text.
  std::string decode(const std::vector<const std::string*>& tokens) const;

 private:
  bool byte_level_ = false;
};

// Streams text out of ids one at a time and never emits half a UTF-8 character: bytes of
// an unfinished character wait for the next id. The concatenation of everything push()
// and finish() return equals decode() of all the ids (byte-level decoders).
class IncrementalDecoder {
 public:
  // `bytes_of(id, out)` appends the bytes of one id (or nothing, e.g. a skipped special).
  explicit IncrementalDecoder(std::function<void(int32_t, std::string&)> bytes_of) : bytes_of_(std::move(bytes_of)) {}
  // The text that became complete with this id (often empty mid-character).
  std::string push(int32_t id);
  // Whatever is left, with an unfinished character as U+FFFD (as decode() would end).
  std::string finish();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::function<void(int32_t, std::string&)> bytes_of_;
  std::string pending_;
};

}  // namespace lmscope::tok
