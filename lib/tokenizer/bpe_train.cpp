#include "tokenizer/bpe_train.h"

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>

#include "tokenizer/byte_level.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/json_field.h"
#include "tokenizer/utf8.h"

namespace lmscope::tok {

namespace {

uint64_t pair_key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
int32_t left_of(uint64_t p) { return int32_t(p >> 32); }
int32_t right_of(uint64_t p) { return int32_t(p & 0xFFFFFFFFu); }

// Byte -> id of its symbol: the 256 byte-level characters sorted by code point (HF's
// compute_alphabet sorts the initial alphabet that way before giving ids).
const std::array<int32_t, 256>& byte_ids() {
  static const std::array<int32_t, 256> ids = [] {
    std::array<int, 256> bytes{};
    for (int b = 0; b < 256; ++b) bytes[size_t(b)] = b;
    std::sort(bytes.begin(), bytes.end(),
              [](int x, int y) { return byte_level::char_of(uint8_t(x)) < byte_level::char_of(uint8_t(y)); });
    std::array<int32_t, 256> out{};
    for (int i = 0; i < 256; ++i) out[size_t(bytes[size_t(i)])] = i;
    return out;
  }();
  return ids;
}

// HF Word::merge: every occurrence of (a, b), left to right, becomes `merged`; `changed(pair,
// delta)` hears of each pair count that goes up or down around it (the merged pair itself is
// not reported: the trainer drops it).
template <class F>
void merge_word(std::vector<int32_t>& s, int32_t a, int32_t b, int32_t merged, F&& changed) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != a || s[i + 1] != b) continue;
    if (i > 0) {
      changed(pair_key(s[i - 1], a), -1);
      changed(pair_key(s[i - 1], merged), +1);
    }
    s[i] = merged;
    s.erase(s.begin() + std::ptrdiff_t(i) + 1);
    if (i + 1 < s.size()) {
      changed(pair_key(b, s[i + 1]), -1);
      changed(pair_key(merged, s[i + 1]), +1);
    }
  }
}

// Max-heap order: higher count first; on equal counts the smaller (left, right) first.
template <class C>
bool heap_less(const C& x, const C& y) {
  return x.count != y.count ? x.count < y.count : x.pair > y.pair;
}

}  // namespace

BpeTrainer::BpeTrainer(std::string_view corpus, const std::string& label) {
  utf8::check(corpus, label);
  const nlohmann::json qwen2 = gguf_pre_tokenizer("qwen2");
  normalizer_json_ = qwen2["normalizer"];
  pre_tokenizer_json_ = qwen2["pre_tokenizer"];
  normalizer_ = Normalizer::from_json(Field(normalizer_json_, "normalizer"));
  pre_tokenizer_ = PreTokenizer::from_json(Field(pre_tokenizer_json_, "pre_tokenizer"));

  for (int i = 0; i < 256; ++i) vocab_.emplace_back();
  for (int b = 0; b < 256; ++b) vocab_[size_t(byte_ids()[size_t(b)])] = byte_level::text_of(uint8_t(b));
  for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], int32_t(i));

  // Words, counted. Each line is one text (the line break itself is not part of it).
  std::unordered_map<std::string, uint32_t> index;
  std::vector<std::string_view> pieces;
  std::deque<std::string> arena;
  size_t start = 0, line_no = 0;
  while (start < corpus.size()) {
    ++line_no;
    size_t nl = corpus.find('\n', start);
    if (nl == std::string_view::npos) nl = corpus.size();
    const std::string_view line = corpus.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    ++lines_;
    if (line.size() > kMaxTrainLineBytes)
      throw std::runtime_error(label + ": line " + std::to_string(line_no) + " is " + std::to_string(line.size()) +
                               " bytes; --train reads lines of at most " + std::to_string(kMaxTrainLineBytes) +
                               " (each line is one text)");
    std::string storage;
    const std::string_view text = normalizer_.apply(line, storage);
    pieces.clear();
    arena.clear();
    pre_tokenizer_.split(text, pieces, arena);
    for (std::string_view w : pieces) {
      auto [it, fresh] = index.emplace(std::string(w), uint32_t(words_.size()));
      if (fresh) {
        Word word;
        for (unsigned char c : w) word.symbols.push_back(byte_ids()[c]);
        words_.push_back(std::move(word));
      }
      ++words_[it->second].count;
      ++total_words_;
    }
  }
  if (words_.empty()) throw std::runtime_error(label + ": no text to train on (the file is empty or only line breaks)");
  count_pairs();
}

void BpeTrainer::count_pairs() {
  for (uint32_t w = 0; w < words_.size(); ++w) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const Pair p = pair_key(word.symbols[i], word.symbols[i + 1]);
      pair_counts_[p] += word.count;
      std::vector<uint32_t>& where = where_[p];
      if (where.empty() || where.back() != w) where.push_back(w);
    }
  }
  for (const auto& [p, c] : pair_counts_) heap_.push_back({p, c});
  std::make_heap(heap_.begin(), heap_.end(), heap_less<Candidate>);
}

std::optional<LearnedMerge> BpeTrainer::step() {
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_less<Candidate>);
    Candidate top = heap_.back();
    heap_.pop_back();
    auto it = pair_counts_.find(top.pair);
    const int64_t now = it == pair_counts_.end() ? 0 : it->second;
    if (top.count != now) {   // counted before an earlier merge took some of its occurrences
      if (now > 0) {
        heap_.push_back({top.pair, now});
        std::push_heap(heap_.begin(), heap_.end(), heap_less<Candidate>);
      }
      continue;
    }
    LearnedMerge m;
    m.rank = int32_t(merges_.size());
    m.left = left_of(top.pair);
    m.right = right_of(top.pair);
    m.count = top.count;
    const std::string text = vocab_[size_t(m.left)] + vocab_[size_t(m.right)];
    auto [id, fresh] = ids_.emplace(text, int32_t(vocab_.size()));
    if (fresh) vocab_.push_back(text);
    m.merged = id->second;

    std::vector<uint32_t> where = std::move(where_[top.pair]);
    where_.erase(top.pair);
    pair_counts_.erase(top.pair);
    std::vector<Pair> grown;
    for (uint32_t w : where) {
      Word& word = words_[w];
      merge_word(word.symbols, m.left, m.right, m.merged, [&](Pair p, int delta) {
        pair_counts_[p] += delta * word.count;
        if (delta > 0) {
          grown.push_back(p);
          std::vector<uint32_t>& pw = where_[p];
          if (pw.empty() || pw.back() != w) pw.push_back(w);
        }
      });
    }
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (Pair p : grown) {
      const int64_t c = pair_counts_[p];
      if (c <= 0) continue;
      heap_.push_back({p, c});
      std::push_heap(heap_.begin(), heap_.end(), heap_less<Candidate>);
    }
    merges_.push_back(m);
    return m;
  }
  return std::nullopt;
}

std::vector<std::vector<int32_t>> BpeTrainer::initial_symbols(std::string_view text) const {
  utf8::check(text, "the watched text");
  std::vector<std::vector<int32_t>> out;
  if (text.empty()) return out;
  std::string storage;
  const std::string_view normalized = normalizer_.apply(text, storage);
  std::vector<std::string_view> pieces;
  std::deque<std::string> arena;
  pre_tokenizer_.split(normalized, pieces, arena);
  for (std::string_view w : pieces) {
    out.emplace_back();
    for (unsigned char c : w) out.back().push_back(byte_ids()[c]);
  }
  return out;
}

void BpeTrainer::apply(std::vector<int32_t>& symbols, const LearnedMerge& m) {
  merge_word(symbols, m.left, m.right, m.merged, [](Pair, int) {});
}

std::string BpeTrainer::token_bytes(int32_t id) const {
  std::string out;
  if (!byte_level::decode(token(id), out)) throw std::logic_error("trained token is not byte-level text");
  return out;
}

nlohmann::json BpeTrainer::tokenizer_json() const {
  using nlohmann::json;
  json vocab = json::object();
  for (size_t i = 0; i < vocab_.size(); ++i) vocab[vocab_[i]] = i;
  json merges = json::array();
  for (const LearnedMerge& m : merges_) merges.push_back({vocab_[size_t(m.left)], vocab_[size_t(m.right)]});
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", normalizer_json_},
          {"pre_tokenizer", pre_tokenizer_json_},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model", bpe_model_json(std::move(vocab), std::move(merges), false)}};
}

}  // namespace lmscope::tok
