// What encode() did, word by word, for lmscope-bpe and the /tokenizer/row_B/ group of a
// trace file (docs/trace-format.md): the pre-tokenized words, each word's byte-level
// symbols, every merge in the order HF applies it, and the ids.
//
//   " world" -> symbols [Ġ w o r l d] -> (o,r) rank 10 -> (Ġ,w) rank 34 -> ... -> [Ġworld]
//
// A SentencePiece tokenizer (tokenizer/sentencepiece.h) has no words and no merge list: the
// text between special tokens is one "word" whose symbols are its characters, each merge is
// chosen by the score of the token it makes (by_score; rank is -1), and a character no token
// spells is written as its bytes ("<0xF0>" ...: byte_fallback).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmscope {

class TraceReader;
class TraceWriter;

namespace tok {
class Tokenizer;
}

struct MergeStep {
  int32_t left = 0;       // id of the left symbol
  int32_t right = 0;      // id of the right symbol
  int32_t merged = 0;     // id of left+right
  int32_t rank = 0;       // index of the merge in tokenizer.json (lower = applied first)
  int32_t position = 0;   // index of the left symbol in the word's symbols at that moment
  float score = 0.0f;     // SentencePiece: the merged token's score (higher = merged first)
};

struct WordTrace {
  enum class Kind {
    Bpe,     // a pre-tokenized word, merged by BPE
    Added,   // an added/special token found in the text (never merged)
    Post,    // a special token the post-processor added (BOS/EOS)
  };
  Kind kind = Kind::Bpe;
  std::string text;                // the word's text (normalized), or the added token's
  std::vector<int32_t> symbols;    // initial symbols: one per byte (byte-level) or char
  std::vector<MergeStep> merges;   // in the order applied
  std::vector<int32_t> ids;        // final ids of this word
  bool whole_word = false;         // ignore_merges: the word was in the vocab as it is
  // SentencePiece: the characters no token spells, in text order; each is written as its
  // bytes (one symbol per byte in `symbols`, one "<0xNN>" id per byte in `ids`).
  std::vector<std::string> byte_fallback;
};

struct EncodeTrace {
  std::string text;                // the input
  std::vector<WordTrace> words;    // in text order; their ids concatenated == ids
  std::vector<int32_t> ids;
  bool by_score = false;           // SentencePiece: merges chosen by score, not by rank

  void clear() { *this = EncodeTrace(); }
};

const char* kind_name(WordTrace::Kind k);   // "bpe", "added", "post"

// The trace as JSON text (lmscope-bpe --json): {"text", "ids", "tokens", "words": [{"text",
// "kind", "symbols", "merges": [{"left","right","merged","rank","position","left_id",...}],
// "ids", "tokens"}]}. Token strings are shown readably (byte_level_display). A SentencePiece
// trace adds "by_score": true, each merge's "score" and each word's "byte_fallback".
std::string trace_to_json(const tok::Tokenizer& t, const EncodeTrace& trace, int indent = -1);

// Writes /tokenizer/row_<row>/ (docs/trace-format.md, "Tokenizer").
void write_tokenizer_trace(TraceWriter& w, int row, const EncodeTrace& trace, const tok::Tokenizer& t);
// Reads it back (false: the trace has no such group). whole_word is not stored: a bpe word
// with more symbols than ids and no merges can only have been one whole vocabulary entry.
// Throws one line naming the dataset when the group's offsets disagree with its arrays.
bool read_tokenizer_trace(const TraceReader& r, int row, EncodeTrace& out);

}  // namespace lmscope
