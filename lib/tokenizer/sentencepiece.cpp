#include "tokenizer/sentencepiece.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <optional>
#include <queue>
#include <stdexcept>

#include "io/gguf.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/gguf_vocab.h"

namespace lmscope::tok {

namespace {

// Bytes in the UTF-8 character that starts with `lead` (1 for a stray continuation byte, as
// llama.cpp's unicode_len_utf8).
size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// A piece of the text being merged: a run of bytes [start, start + n) of the escaped text,
// linked to its neighbours; n = 0 once merged into its left neighbour.
struct Symbol {
  size_t start, n;
  int prev, next;
};

// A candidate merge of two adjacent symbols into the token their joined text spells.
struct Bigram {
  int left, right;
  float score;
  size_t size;   // bytes of the joined text: a stale candidate's symbols have grown since
};

// Highest score first; on a tie the leftmost pair (llama.cpp's llm_bigram_spm::comparator).
struct ByScore {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// The trace of one fragment (encode_trace.h): the ids of its starting symbols and, for each
// merge, where its left symbol stands among the symbols of that moment. A character no token
// spells counts as one symbol per byte (its "<0xNN>" ids), as it will be written. The symbols
// before a merge are counted with a Fenwick tree over the starting symbols' widths (a merged
// symbol's right part becomes 0 wide), so a long text traces in O(n log n), not O(n^2).
struct FragmentTrace {
  const SpmVocab& v;
  WordTrace& word;
  std::vector<int64_t> tree;   // Fenwick tree: tree[i] sums a range of widths ending at symbol i - 1

  void add(size_t symbol, int64_t delta) {
    for (size_t i = symbol + 1; i < tree.size(); i += i & (~i + 1)) tree[i] += delta;
  }
  int64_t before(size_t symbol) const {   // the widths of symbols 0 .. symbol - 1
    int64_t sum = 0;
    for (size_t i = symbol; i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  }

  int id_of(const std::string& piece) const {
    const int id = v.id_of(piece);
    if (id < 0)
      throw std::runtime_error("sentencepiece: the merge trace needs every merged piece to be a token, and '" + piece +
                               "' is not (a character no token spells, merged into a longer token)");
    return id;
  }
  // Symbols the piece stands for in `word.symbols`: 1 for a token, else its bytes.
  size_t width(const std::string& piece) const { return v.id_of(piece) >= 0 ? 1 : piece.size(); }
};

// Merges one fragment of escaped text (no control or user-defined token inside) and appends its ids.
void encode_fragment(const SpmVocab& v, const std::string& text, std::vector<int>& out, WordTrace* word) {
  if (text.empty()) return;
  std::vector<Symbol> symbols;   // one per UTF-8 character to start with
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(utf8_len(static_cast<unsigned char>(text[at])), text.size() - at);
    const int i = int(symbols.size());
    symbols.push_back({at, n, i - 1, at + n == text.size() ? -1 : i + 1});
    at += n;
  }
  std::priority_queue<Bigram, std::vector<Bigram>, ByScore> queue;
  auto piece = [&](const Symbol& s) { return text.substr(s.start, s.n); };
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view joined = std::string_view(text).substr(symbols[left].start, symbols[left].n + symbols[right].n);
    const int id = v.id_of(joined);
    if (id < 0) return;
    queue.push({left, right, v.scores[size_t(id)], joined.size()});
  };
  for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);

  std::optional<FragmentTrace> tr;
  if (word) {
    tr.emplace(FragmentTrace{v, *word, std::vector<int64_t>(symbols.size() + 1, 0)});
    word->text = text;
    for (size_t i = 0; i < symbols.size(); ++i) {
      const std::string p = piece(symbols[i]);
      tr->add(i, int64_t(tr->width(p)));
      if (const int id = v.id_of(p); id >= 0) word->symbols.push_back(id);
      else
        for (unsigned char c : p) word->symbols.push_back(v.byte_ids[c]);
    }
  }

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;   // stale
    if (tr) {
      const std::string l = piece(left), r = piece(right);
      const int32_t position = int32_t(tr->before(size_t(b.left)));   // the symbols before the left one
      word->merges.push_back(MergeStep{tr->id_of(l), tr->id_of(r), tr->id_of(l + r), -1, position, b.score});
      // Both parts are tokens (id_of checked), 1 wide each; the merged symbol is 1 wide.
      tr->add(size_t(b.right), -1);
    }
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }

  // Every merged symbol is a token (only pairs that spell one merge); a single character that
  // no token spells is written as its bytes.
  const size_t first_id = out.size();
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string s = piece(symbols[i]);
    if (const int id = v.id_of(s); id >= 0) {
      out.push_back(id);
      continue;
    }
    if (word) word->byte_fallback.push_back(s);
    for (unsigned char c : s) {
      if (v.byte_ids[c] < 0)
        throw std::runtime_error("sentencepiece: byte fallback needs the token " + byte_token_name(c) +
                                 ", which the vocabulary lacks");
      out.push_back(v.byte_ids[c]);
    }
  }
  if (word) word->ids.assign(out.begin() + std::ptrdiff_t(first_id), out.end());
}

// Spaces as "▁" (U+2581, SentencePiece's escaped whitespace).
std::string escape_whitespace(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == ' ') out += "\xE2\x96\x81";
    else out += c;
  }
  return out;
}

// The byte a "<0xNN>" token stands for (NN two hex digits), -1 for any other text.
int byte_of(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  if (!std::isxdigit(static_cast<unsigned char>(p[3])) || !std::isxdigit(static_cast<unsigned char>(p[4]))) return -1;
  return std::stoi(std::string(p.substr(3, 2)), nullptr, 16);
}

size_t text_hash(std::string_view text) { return std::hash<std::string_view>()(text); }

}  // namespace

std::string byte_token_name(unsigned char byte) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", byte);
  return name;
}

std::string byte_token_names(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    if (!out.empty()) out += ' ';
    out += byte_token_name(b);
  }
  return out;
}

PieceTable::PieceTable(std::initializer_list<std::string_view> pieces) {
  for (std::string_view p : pieces) push_back(p);
}

void PieceTable::push_back(std::string_view piece) {
  if (bytes_.size() + piece.size() > UINT32_MAX) throw std::length_error("sentencepiece: the vocabulary's text passes 4 GiB");
  bytes_.insert(bytes_.end(), piece.begin(), piece.end());
  ends_.push_back(uint32_t(bytes_.size()));
}

std::string_view PieceTable::at(size_t id) const {
  if (id >= size()) throw std::out_of_range("sentencepiece: token id " + std::to_string(id) + " is outside the " +
                                            std::to_string(size()) + " tokens");
  return (*this)[id];
}

int SpmVocab::id_of(std::string_view text) const {
  if (slots.empty()) return -1;
  const size_t mask = slots.size() - 1;
  for (size_t at = text_hash(text) & mask;; at = (at + 1) & mask) {   // linear probing; a slot is always free
    const int32_t id = slots[at];
    if (id < 0) return -1;
    if (pieces[size_t(id)] == text) return id;
  }
}

void SpmVocab::index() {
  size_t capacity = 16;
  while (capacity < 2 * pieces.size()) capacity *= 2;
  slots.assign(capacity, -1);
  std::fill(std::begin(byte_ids), std::end(byte_ids), -1);
  whole_tokens.clear();
  for (int i = 0; i < int(pieces.size()); ++i) {
    if (id_of(pieces[i]) < 0) {   // the first id of a repeated text wins
      size_t at = text_hash(pieces[i]) & (capacity - 1);
      while (slots[at] >= 0) at = (at + 1) & (capacity - 1);
      slots[at] = i;
    }
    if (const int b = byte_of(pieces[i]); b >= 0) byte_ids[b] = i;
    // llama.cpp's cache_special_tokens: control, user-defined and unknown tokens are matched whole.
    const bool whole = i < int(types.size()) && (types[i] == kControl || types[i] == kUserDefined || types[i] == kUnknown);
    if (whole && !pieces[i].empty()) whole_tokens.push_back(i);
  }
  std::stable_sort(whole_tokens.begin(), whole_tokens.end(),
                   [&](int a, int b) { return pieces[a].size() > pieces[b].size(); });
}

std::string SpmVocab::token_bytes(int id) const {
  const std::string_view p = pieces.at(size_t(id));
  if (const int b = byte_of(p); b >= 0 && byte_ids[b] == id) return std::string(1, char(b));
  if (is_control(id)) return std::string(p);
  std::string out;   // "▁" (E2 96 81) back to a space
  for (size_t at = 0; at < p.size();) {
    if (p.compare(at, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      at += 3;
    } else {
      out += p[at++];
    }
  }
  return out;
}

namespace {

// The id a tokenizer.ggml.*_token_id key names, -1 when the file has none.
int token_id_key(const GgufFile& f, const std::string& key, size_t n_tokens) {
  if (!f.has(key)) return -1;
  const int64_t id = f.get_int(key);
  if (id < 0 || id >= int64_t(n_tokens)) fail_key(f, key, "= " + std::to_string(id) + " is outside the vocabulary");
  return int(id);
}

}  // namespace

SpmVocab load_spm_vocab(const GgufFile& f) {
  const std::string model_key = "tokenizer.ggml.model";
  if (!f.has(model_key)) fail_key(f, model_key, "is missing: the file carries no tokenizer");
  if (f.get_string(model_key) != "llama")
    fail_key(f, model_key, "is '" + f.get_string(model_key) + "': not a SentencePiece ('llama') tokenizer");
  SpmVocab v;
  if (!f.has("tokenizer.ggml.tokens")) fail_key(f, "tokenizer.ggml.tokens", "is missing: a SentencePiece tokenizer needs its vocabulary");
  if (!f.has("tokenizer.ggml.scores")) fail_key(f, "tokenizer.ggml.scores", "is missing: SentencePiece merges by score");
  // Straight from the file's array into the table (no vector of strings on the way).
  const GgufValue& tokens = f.value("tokenizer.ggml.tokens");
  if (tokens.type() != GgufType::Array || tokens.as_array().elem_type != GgufType::String)
    fail_key(f, "tokenizer.ggml.tokens", "must be an array of string");
  tokens.as_array().for_each([&](const GgufValue& t) { v.pieces.push_back(t.as_string()); });
  if (v.pieces.empty()) fail_key(f, "tokenizer.ggml.tokens", "is empty");
  if (v.pieces.size() > size_t(INT32_MAX / 2))
    fail_key(f, "tokenizer.ggml.tokens", "has too many tokens (" + std::to_string(v.pieces.size()) + ")");
  const std::vector<double> scores = f.get_float_array("tokenizer.ggml.scores");
  if (scores.size() != v.pieces.size())
    fail_key(f, "tokenizer.ggml.scores", "has " + std::to_string(scores.size()) + " entries for " +
                                             std::to_string(v.pieces.size()) + " tokens");
  v.scores.assign(scores.begin(), scores.end());
  if (f.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != v.pieces.size())
      fail_key(f, "tokenizer.ggml.token_type", "has " + std::to_string(types.size()) + " entries for " +
                                                   std::to_string(v.pieces.size()) + " tokens");
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i] < kUndefined || types[i] > kByte)
        fail_key(f, "tokenizer.ggml.token_type", "[" + std::to_string(i) + "] is " + std::to_string(types[i]) +
                                                     " (token types are 0..6: undefined, normal, unknown, control, user-defined, unused, byte)");
    v.types.assign(types.begin(), types.end());
  }
  const size_t n = v.pieces.size();
  v.bos = token_id_key(f, "tokenizer.ggml.bos_token_id", n);
  v.eos = token_id_key(f, "tokenizer.ggml.eos_token_id", n);
  v.unk = token_id_key(f, "tokenizer.ggml.unknown_token_id", n);
  v.pad = token_id_key(f, "tokenizer.ggml.padding_token_id", n);
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", true);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);   // llama.cpp's default
  v.chat_template = f.get_string("tokenizer.chat_template", "");
  v.index();
  return v;
}

std::vector<int> spm_encode(const SpmVocab& v, const std::string& text, bool add_bos, EncodeTrace* trace) {
  // Cut the whole tokens out of the text, the longest first (llama.cpp's
  // tokenizer_st_partition): fragments are raw text, or a token id (text empty).
  struct Fragment {
    std::string text;
    int id = -1;
  };
  std::vector<Fragment> fragments = {{text, -1}};
  for (int id : v.whole_tokens) {
    const std::string_view t = v.pieces[size_t(id)];
    std::vector<Fragment> next;
    for (Fragment& fr : fragments) {
      if (fr.id >= 0 || fr.text.find(t) == std::string::npos) {
        next.push_back(std::move(fr));
        continue;
      }
      size_t from = 0;
      for (size_t at; (at = fr.text.find(t, from)) != std::string::npos; from = at + t.size()) {
        if (at > from) next.push_back({fr.text.substr(from, at - from), -1});
        next.push_back({"", id});
      }
      if (from < fr.text.size()) next.push_back({fr.text.substr(from), -1});
    }
    fragments = std::move(next);
  }

  std::vector<int> out;
  if (trace) {
    trace->clear();
    trace->text = text;
    trace->by_score = true;
  }
  auto whole = [&](int id, WordTrace::Kind kind) {
    out.push_back(id);
    if (trace) trace->words.push_back(WordTrace{kind, std::string(v.pieces[size_t(id)]), {}, {}, {id}, false, {}});
  };
  if (add_bos && v.bos >= 0) whole(v.bos, WordTrace::Kind::Post);
  bool after_token = true;   // a space prefix goes at the start and after a token
  for (const Fragment& fr : fragments) {
    if (fr.id >= 0) {
      whole(fr.id, WordTrace::Kind::Added);
      after_token = true;
      continue;
    }
    const std::string raw = (v.add_space_prefix && after_token ? " " : "") + fr.text;
    WordTrace* word = nullptr;
    if (trace) word = &trace->words.emplace_back();
    encode_fragment(v, escape_whitespace(raw), out, word);
    after_token = false;
  }
  if (trace) trace->ids.assign(out.begin(), out.end());
  return out;
}

}  // namespace lmscope::tok
