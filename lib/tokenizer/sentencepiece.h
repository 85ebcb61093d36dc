// SentencePiece BPE, the tokenizer of a GGUF file whose tokenizer.ggml.model is "llama" (Gemma 3,
// Llama 2): no regex pre-tokenizer; spaces become "▁" (U+2581); the text starts as one symbol per
// UTF-8 character and the adjacent pair whose joined text is a token of the highest score is
// merged first (ties: the leftmost), again and again; a character no token spells falls back to
// its bytes, the tokens "<0xNN>". User-defined tokens (Gemma's runs of newlines and tabs) are cut
// out of the text first, longest first, as llama.cpp and HF's added tokens do. The same
// algorithm as llama.cpp's llm_tokenizer_spm (src/llama-vocab.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace lmscope {
class GgufFile;
}

namespace lmscope::tok {

struct SpmVocab {
  std::vector<std::string> pieces;   // id -> text ("▁the", "<0x0A>", "<bos>")
  std::vector<float> scores;         // id -> merge priority (higher merges first)
  std::vector<int> types;            // id -> llama.cpp token type (1 normal, 3 control, 4 user-defined, 6 byte)
  std::unordered_map<std::string, int> ids;   // text -> id
  int byte_ids[256];                 // byte -> the id of "<0xNN>", -1 when absent
  int bos = -1;
  bool add_bos = true;
  bool add_space_prefix = false;     // tokenizer.ggml.add_space_prefix (Gemma: false)
  std::vector<int> user_defined;     // ids of type 4, longest text first

  // Builds ids, byte_ids and user_defined from pieces and types.
  void index();
};

// Reads tokenizer.ggml.{tokens,scores,token_type,bos_token_id,add_bos_token,add_space_prefix}.
// Throws std::runtime_error naming the file and key when one is missing or malformed, or when
// tokenizer.ggml.model is not "llama".
SpmVocab load_spm_vocab(const GgufFile& f);

// One merge, in the order made: the two pieces joined and the score that chose them.
struct SpmMerge {
  std::string left, right;
  float score;
};

// The ids of `text` (UTF-8), BOS first when add_bos and the vocabulary has one. `merges`, when
// given, receives every merge made, in order; `byte_fallbacks` every character spelled by bytes.
std::vector<int> spm_encode(const SpmVocab& v, const std::string& text, bool add_bos,
                            std::vector<SpmMerge>* merges = nullptr, std::vector<std::string>* byte_fallbacks = nullptr);

}  // namespace lmscope::tok
