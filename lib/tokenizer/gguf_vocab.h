// What the two GGUF tokenizer readers share (tokenizer/gguf_tokenizer.cpp, the BPE of
// "gpt2" files; tokenizer/sentencepiece.cpp, the SentencePiece of "llama" files): the token
// types llama.cpp writes and the one-line error naming a key of the file.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "io/gguf.h"

namespace lmscope::tok {

// llama.cpp's token types (gguf-py TokenType), tokenizer.ggml.token_type's values.
enum TokenType : int64_t { kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// "<file>: key '<key>' <what>"
[[noreturn]] inline void fail_key(const GgufFile& f, const std::string& key, const std::string& what) {
  throw std::runtime_error(f.path() + ": key '" + key + "' " + what);
}

}  // namespace lmscope::tok
