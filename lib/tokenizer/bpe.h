// The BPE model of tokenizer.json ("model": {"type": "BPE", "vocab", "merges", ...}) and the
// merge loop of HF tokenizers (`models/bpe/word.rs merge_all`), with an optional trace.
//
// A word starts as one symbol per byte (byte-level) or per character. Every adjacent pair
// that has a merge goes into a priority queue ordered by (rank, position): the lowest rank
// first, the leftmost on ties. Popping a pair merges it if it is still there, and pushes the
// two new neighbour pairs. This gives the same result as GPT-2's "merge the best-ranked pair
// everywhere, repeat" (minbpe `_encode_chunk`), one occurrence at a time:
//
//   "lower": l o w e r  -(o,w) r5->  l ow e r  -(e,r) r9->  l ow er  -(l,ow) r12->  low er
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/encode_trace.h"
#include "tokenizer/json_field.h"

namespace lmscope::tok {

// (left id, right id) -> (rank, merged id), open addressing: the merge loop's hot lookup.
class PairMap {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t merged = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);

  void reserve(size_t n);
  // Inserts or replaces (a later duplicate merge wins, as in HF's HashMap collect).
  void set(int32_t a, int32_t b, int32_t rank, int32_t merged);
  const Entry* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    uint64_t key = pack(a, b);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return count_; }

 private:
  static uint64_t pack(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return size_t(k);
  }
  std::vector<Entry> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class Bpe {
 public:
  // `model` is tokenizer.json's "model". Refuses byte_fallback, dropout, a continuing
  // subword prefix or end-of-word suffix, and merges naming tokens missing from the vocab.
  static Bpe from_json(const Field& model);

  // One past the largest id of the model vocabulary.
  int32_t vocab_size() const { return int32_t(tokens_.size()); }
  size_t merge_count() const { return merges_.size(); }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of an id ("Ġworld"), nullptr for an id it does not have.
  const std::string* id_to_token(int32_t id) const;
  bool ignore_merges() const { return ignore_merges_; }

  // Appends the ids of one pre-tokenized word (its raw bytes; byte_level: each byte is one
  // symbol, else each character). With a trace the word is merged afresh (no cache) and
  // every step recorded in `trace` (symbols, merges, ids; kind and text are the caller's).
  void encode_word(std::string_view word, bool byte_level, std::vector<int32_t>& out, WordTrace* trace = nullptr) const;

  void clear_cache() const;

  // The steps the calling thread's traced merges have taken, in all, to find the merges'
  // positions (MergeStep::position): O(log n) a merge, for the test that holds a long word's
  // trace to n log n.
  static uint64_t trace_position_steps();

 private:
  struct Cache;
  void initial_symbols(std::string_view word, bool byte_level, std::vector<int32_t>& syms) const;
  void merge(std::vector<int32_t>& syms, WordTrace* trace) const;

  StringIdMap vocab_;
  std::vector<std::string> tokens_;        // by id; "" where the vocab has no such id
  std::vector<uint8_t> has_token_;         // by id
  PairMap merges_;
  std::array<int32_t, 256> byte_ids_{};    // id of each byte's byte-level character, -1 if none
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::shared_ptr<Cache> cache_;
};

}  // namespace lmscope::tok
