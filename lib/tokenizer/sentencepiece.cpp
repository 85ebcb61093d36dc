#include "tokenizer/sentencepiece.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <queue>
#include <stdexcept>

#include "io/gguf.h"
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

// Merges one fragment of escaped text (no user-defined token inside) and appends its ids.
void encode_fragment(const SpmVocab& v, const std::string& text, std::vector<int>& out, std::vector<SpmMerge>* merges,
                     std::vector<std::string>* byte_fallbacks) {
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
    const std::string joined = text.substr(symbols[left].start, symbols[left].n + symbols[right].n);
    auto it = v.ids.find(joined);
    if (it == v.ids.end()) return;
    queue.push({left, right, v.scores[it->second], joined.size()});
  };
  for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;   // stale
    if (merges) merges->push_back({piece(left), piece(right), b.score});
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }

  // Every merged symbol is a token (only pairs that spell one merge); a single character that
  // no token spells is written as its bytes.
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string s = piece(symbols[i]);
    auto it = v.ids.find(s);
    if (it != v.ids.end()) {
      out.push_back(it->second);
      continue;
    }
    if (byte_fallbacks) byte_fallbacks->push_back(s);
    for (unsigned char c : s) {
      if (v.byte_ids[c] < 0) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", c);
        throw std::runtime_error(std::string("sentencepiece: byte fallback needs the token ") + name +
                                 ", which the vocabulary lacks");
      }
      out.push_back(v.byte_ids[c]);
    }
  }
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

}  // namespace

void SpmVocab::index() {
  ids.clear();
  ids.reserve(pieces.size());
  std::fill(std::begin(byte_ids), std::end(byte_ids), -1);
  user_defined.clear();
  for (int i = 0; i < int(pieces.size()); ++i) {
    ids.emplace(pieces[i], i);   // the first id of a repeated text wins
    const std::string& p = pieces[i];   // "<0xNN>", NN two upper-case hex digits
    if (p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>' && std::isxdigit(static_cast<unsigned char>(p[3])) &&
        std::isxdigit(static_cast<unsigned char>(p[4])))
      byte_ids[std::stoi(p.substr(3, 2), nullptr, 16)] = i;
    if (i < int(types.size()) && types[i] == kUserDefined && !pieces[i].empty()) user_defined.push_back(i);
  }
  std::stable_sort(user_defined.begin(), user_defined.end(),
                   [&](int a, int b) { return pieces[a].size() > pieces[b].size(); });
}

SpmVocab load_spm_vocab(const GgufFile& f) {
  const std::string model_key = "tokenizer.ggml.model";
  if (!f.has(model_key)) fail_key(f, model_key, "is missing: the file carries no tokenizer");
  if (f.get_string(model_key) != "llama")
    fail_key(f, model_key, "is '" + f.get_string(model_key) + "': not a SentencePiece ('llama') tokenizer");
  SpmVocab v;
  v.pieces = f.get_string_array("tokenizer.ggml.tokens");
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
    v.types.assign(types.begin(), types.end());
  }
  if (f.has("tokenizer.ggml.bos_token_id")) {
    const int64_t bos = f.get_int("tokenizer.ggml.bos_token_id");
    if (bos < 0 || bos >= int64_t(v.pieces.size()))
      fail_key(f, "tokenizer.ggml.bos_token_id", "= " + std::to_string(bos) + " is outside the vocabulary");
    v.bos = int(bos);
  }
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", true);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);   // llama.cpp's default
  v.index();
  return v;
}

std::vector<int> spm_encode(const SpmVocab& v, const std::string& text, bool add_bos, std::vector<SpmMerge>* merges,
                            std::vector<std::string>* byte_fallbacks) {
  // Cut the user-defined tokens out of the text, the longest first (llama.cpp's
  // tokenizer_st_partition): fragments are raw text, or a token id (text empty).
  struct Fragment {
    std::string text;
    int id = -1;
  };
  std::vector<Fragment> fragments = {{text, -1}};
  for (int id : v.user_defined) {
    const std::string& t = v.pieces[id];
    std::vector<Fragment> next;
    for (Fragment& fr : fragments) {
      if (fr.id >= 0) {
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
  if (add_bos && v.bos >= 0) out.push_back(v.bos);
  bool after_token = true;   // a space prefix goes at the start and after a token
  for (const Fragment& fr : fragments) {
    if (fr.id >= 0) {
      out.push_back(fr.id);
      after_token = true;
      continue;
    }
    const std::string raw = (v.add_space_prefix && after_token ? " " : "") + fr.text;
    encode_fragment(v, escape_whitespace(raw), out, merges, byte_fallbacks);
    after_token = false;
  }
  return out;
}

}  // namespace lmscope::tok
