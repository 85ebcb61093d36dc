// Byte-level BPE training: how a vocabulary like Qwen2's is built (lmscope-bpe --train,
// docs/tokenizer.md "Training"). The algorithm and its tie-breaking are HF tokenizers'
// BpeTrainer (bpe/trainer.rs), so the merges learned here equal HF's on the same corpus:
//
//   1. each line of the corpus is normalized (NFC) and cut into words by the Qwen2
//      pre-tokenizer (a run of Chinese characters is one word, " the" is one word); equal words
//      are kept once, with how often they occur;
//   2. every word starts as one symbol per byte. The 256 byte symbols get ids 0..255 in the
//      order of the characters that show them (byte_level.h: '!' = 0x21 first, 'Ġ' = U+0120
//      for a space later), as HF sorts its initial alphabet;
//   3. count each adjacent pair of symbols over all words (a word's pairs times its count);
//   4. merge the most frequent pair in every word (left to right, without overlap) into a new
//      symbol with the next id; on equal counts the pair with the smaller (left id, right id)
//      wins. A merge whose text is already a token reuses that token's id (HF does the same);
//   5. repeat from 3 (only the counts that the merge changed are updated).
//
//   BpeTrainer t(corpus_text, "corpus.txt");
//   while (auto m = t.step()) ... m->left, m->right, m->merged, m->count
//   t.tokenizer_json()   // a tokenizer.json HF loads and Tokenizer::from_json encodes with
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace lmscope::tok {

struct LearnedMerge {
  int32_t rank = 0;     // 0 = the first merge learned; also its index in tokenizer.json merges
  int32_t left = 0;     // ids of the pair in the trained vocabulary
  int32_t right = 0;
  int32_t merged = 0;   // id of left+right (new, or the existing token with that text)
  int64_t count = 0;    // occurrences of the pair in the corpus when it was merged
};

class BpeTrainer {
 public:
  // Counts the words of `corpus` (raw bytes). Errors, one line starting with `label`:
  //   "corpus.txt is not valid UTF-8: bad byte 0xFF at byte offset 1234"
  //   "corpus.txt: no text to train on (the file is empty or only line breaks)"
  // A line over kMaxTrainLineBytes is refused: one 200 MB line took 11 minutes and 7.4 GB (its
  // words' symbols, pair counts and positions) before failing in a bare bad_alloc.
  static constexpr size_t kMaxTrainLineBytes = size_t(1) << 20;
  BpeTrainer(std::string_view corpus, const std::string& label);

  // Learns the next merge; nullopt when no pair is left (every word is a single symbol).
  std::optional<LearnedMerge> step();

  // `text` cut into words the same way, each word as its initial byte symbols.
  std::vector<std::vector<int32_t>> initial_symbols(std::string_view text) const;
  // Applies one merge to a word's symbols, left to right without overlap (as training does).
  static void apply(std::vector<int32_t>& symbols, const LearnedMerge& m);

  // The vocabulary string of an id ("Ġthe", "ä¸Ń"), and the bytes it stands for.
  const std::string& token(int32_t id) const { return vocab_[size_t(id)]; }
  std::string token_bytes(int32_t id) const;

  const std::vector<LearnedMerge>& merges() const { return merges_; }
  size_t vocab_size() const { return vocab_.size(); }
  size_t distinct_words() const { return words_.size(); }
  int64_t total_words() const { return total_words_; }
  size_t lines() const { return lines_; }

  // tokenizer.json for the vocabulary so far: BPE model (vocab, merges), the NFC normalizer,
  // the Qwen2 pre-tokenizer, ByteLevel decoder, no added tokens, no post-processor.
  nlohmann::json tokenizer_json() const;

 private:
  struct Word {
    std::vector<int32_t> symbols;
    int64_t count = 0;
  };
  using Pair = uint64_t;   // left << 32 | right
  void count_pairs();

  nlohmann::json normalizer_json_, pre_tokenizer_json_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::vector<std::string> vocab_;                   // id -> byte-level string
  std::unordered_map<std::string, int32_t> ids_;     // byte-level string -> id
  std::vector<Word> words_;
  int64_t total_words_ = 0;
  size_t lines_ = 0;
  std::unordered_map<Pair, int64_t> pair_counts_;
  std::unordered_map<Pair, std::vector<uint32_t>> where_;   // pair -> words that had it when counted
  struct Candidate {
    Pair pair;
    int64_t count;
  };
  std::vector<Candidate> heap_;
  std::vector<LearnedMerge> merges_;
};

}  // namespace lmscope::tok
