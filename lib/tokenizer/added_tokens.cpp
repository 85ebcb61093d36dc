#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>

#include "tokenizer/utf8.h"

namespace lmscope::tok {

// ---- TokenMatcher -----------------------------------------------------------------------

void TokenMatcher::add(std::string_view pattern, int32_t value) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (unsigned char c : pattern) {
    auto& next = nodes_[size_t(node)].next;
    auto it = std::find_if(next.begin(), next.end(), [c](const auto& p) { return p.first == c; });
    if (it != next.end()) {
      node = it->second;
    } else {
      int32_t child = int32_t(nodes_.size());
      nodes_[size_t(node)].next.emplace_back(c, child);
      nodes_.push_back(Node{});
      node = child;
    }
  }
  // A later duplicate replaces the earlier one (same content, same token in HF).
  nodes_[size_t(node)].value = value;
  first_byte_[static_cast<unsigned char>(pattern[0])] = true;
}

size_t TokenMatcher::longest_at(std::string_view text, size_t pos, int32_t& value) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto& next = nodes_[size_t(node)].next;
    auto c = static_cast<unsigned char>(text[i]);
    auto it = std::find_if(next.begin(), next.end(), [c](const auto& p) { return p.first == c; });
    if (it == next.end()) break;
    node = it->second;
    if (nodes_[size_t(node)].value >= 0) {
      best = i + 1 - pos;
      value = nodes_[size_t(node)].value;
    }
  }
  return best;
}

size_t TokenMatcher::next_candidate(std::string_view text, size_t pos) const {
  for (size_t i = pos; i < text.size(); ++i)
    if (first_byte_[static_cast<unsigned char>(text[i])]) return i;
  return std::string_view::npos;
}

// ---- AddedTokens ------------------------------------------------------------------------

void AddedTokens::add(AddedToken t, const std::string& pattern) {
  size_t index;
  auto it = by_id_.find(t.id);
  if (it != by_id_.end()) {   // the same id twice: the later entry wins
    index = it->second;
    tokens_[index] = std::move(t);
  } else {
    index = tokens_.size();
    by_id_[t.id] = index;
    tokens_.push_back(std::move(t));
  }
  const AddedToken& tok = tokens_[index];
  max_id_ = std::max(max_id_, tok.id);
  (tok.normalized ? normalized_matcher_ : raw_matcher_).add(pattern, int32_t(index));
}

const AddedToken* AddedTokens::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::by_content(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content || t.text == content) return &t;
  return nullptr;
}

bool AddedTokens::is_special(int32_t id) const {
  const AddedToken* t = by_id(id);
  return t && t->special;
}

namespace {

// Rust `char::is_whitespace` (Unicode White_Space).
bool is_white_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Unicode `\w` as the Rust regex crate has it: letters, marks, decimal digits, connector
// punctuation, join controls (Alphabetic approximated by L and Nl).
bool is_word_char(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

uint32_t last_char(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i;
  if (i > 0) --i;
  return utf8::next(s, i);
}

uint32_t first_char(std::string_view s) {
  size_t i = 0;
  return utf8::next(s, i);
}

}  // namespace

void AddedTokens::split(std::string_view text, bool normalized_pass, std::vector<TextPiece>& out) const {
  const TokenMatcher& m = normalized_pass ? normalized_matcher_ : raw_matcher_;
  if (m.empty()) {
    if (!text.empty()) out.push_back({text, -1});
    return;
  }
  size_t start_offset = 0;   // end of the last emitted match
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = m.next_candidate(text, pos);
    if (at == std::string_view::npos) break;
    int32_t index = -1;
    size_t len = m.longest_at(text, at, index);
    if (len == 0) {
      pos = at + 1;
      continue;
    }
    pos = at + len;   // the matcher resumes after the match, whatever is kept
    const AddedToken& t = tokens_[size_t(index)];
    size_t start = at, stop = at + len;
    if (t.single_word) {
      bool start_space = start == 0 || !is_word_char(last_char(text.substr(0, start)));
      bool stop_space = stop == text.size() || !is_word_char(first_char(text.substr(stop)));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t i = s - 1;
        while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
        size_t j = i;
        if (!is_white_space(utf8::next(text, j))) break;
        s = i;
      }
      start = std::max(s, start_offset);
    }
    if (t.rstrip) {
      while (stop < text.size()) {
        size_t j = stop;
        if (!is_white_space(utf8::next(text, j))) break;
        stop = j;
      }
    }
    if (start_offset < start) out.push_back({text.substr(start_offset, start - start_offset), -1});
    out.push_back({text.substr(start, stop - start), t.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({text.substr(start_offset), -1});
}

}  // namespace lmscope::tok
