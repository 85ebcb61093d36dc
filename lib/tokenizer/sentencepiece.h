// SentencePiece BPE, the tokenizer of a GGUF file whose tokenizer.ggml.model is "llama" (Gemma 3,
// Llama 2): no regex pre-tokenizer; spaces become "▁" (U+2581); the text starts as one symbol per
// UTF-8 character and the adjacent pair whose joined text is a token of the highest score is
// merged first (ties: the leftmost), again and again; a character no token spells falls back to
// its bytes, the tokens "<0xNN>". Control and user-defined tokens (Gemma's <start_of_turn>, its
// runs of newlines and tabs) are cut out of the text first, longest first, as llama.cpp does with
// parse_special and HF does with its added tokens. The same algorithm as llama.cpp's
// llm_tokenizer_spm (src/llama-vocab.cpp). Tokenizer::from_gguf wraps it (tokenizer.h).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace lmscope {
class GgufFile;
struct EncodeTrace;
}

namespace lmscope::tok {

// Every token's text in one buffer, one after another, and where each ends: Gemma 3's 262,144
// pieces take 2.7 MiB here, where a std::string each (and a hash map of copies) took 28 MiB.
class PieceTable {
 public:
  PieceTable() = default;
  PieceTable(std::initializer_list<std::string_view> pieces);   // a hand-made vocabulary
  void push_back(std::string_view piece);
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t id) const {
    const uint32_t from = id == 0 ? 0 : ends_[id - 1];
    return {bytes_.data() + from, size_t(ends_[id] - from)};
  }
  std::string_view at(size_t id) const;   // throws std::out_of_range

 private:
  std::vector<char> bytes_;
  std::vector<uint32_t> ends_;   // piece i is bytes_[ends_[i - 1], ends_[i])
};

struct SpmVocab {
  PieceTable pieces;                 // id -> text ("▁the", "<0x0A>", "<bos>")
  std::vector<float> scores;         // id -> merge priority (higher merges first)
  std::vector<int> types;            // id -> llama.cpp token type (1 normal, 3 control, 4 user-defined, 6 byte)
  int byte_ids[256];                 // byte -> the id of "<0xNN>", -1 when absent
  int bos = -1;
  bool add_bos = true;
  bool add_space_prefix = false;     // tokenizer.ggml.add_space_prefix (Gemma: false)
  std::vector<int> whole_tokens;     // ids of type 3 and 4 (control, user-defined), longest text first
  int eos = -1, unk = -1, pad = -1;  // tokenizer.ggml.{eos,unknown,padding}_token_id; -1: none
  std::string chat_template;         // tokenizer.chat_template; "" when none

  // Builds the text -> id index, byte_ids and whole_tokens from pieces and types.
  void index();
  // The id whose text is `text` (the first, when texts repeat), -1 when no token spells it.
  int id_of(std::string_view text) const;
  bool is_control(int id) const { return id >= 0 && id < int(types.size()) && types[id] == 3; }
  // text -> id: open addressing over ids (-1 empty), hashed by the piece's text; half full at most.
  std::vector<int32_t> slots;

  // The bytes a token stands for: "▁" is a space, "<0xNN>" the byte NN, any other token its text.
  std::string token_bytes(int id) const;
};

// "<0xNN>": the token that stands for byte NN (byte fallback).
std::string byte_token_name(unsigned char byte);
// "<0xF0> <0x9F> <0x8D> <0x95>": the byte tokens of a character no token spells.
std::string byte_token_names(const std::string& bytes);

// Reads tokenizer.ggml.{tokens,scores,token_type,bos/eos/unknown/padding_token_id,add_bos_token,
// add_space_prefix} and tokenizer.chat_template. Throws std::runtime_error naming the file and key
// when one is missing or malformed, or when tokenizer.ggml.model is not "llama".
SpmVocab load_spm_vocab(const GgufFile& f);

// The ids of `text` (UTF-8), BOS first when add_bos and the vocabulary has one. `trace`, when
// given, receives what was done (encode_trace.h): BOS and each whole token as a word of its
// own, each stretch of text between them as one word with its characters, every merge in the
// order made with the score that chose it, and the characters spelled by bytes.
std::vector<int> spm_encode(const SpmVocab& v, const std::string& text, bool add_bos, EncodeTrace* trace = nullptr);

}  // namespace lmscope::tok
