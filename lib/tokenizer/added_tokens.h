// tokenizer.json "added_tokens": strings that are cut out of the text whole before BPE
// ever sees it (HF `AddedVocabulary::extract_and_normalize`). Tokens with normalized=false
// (all special tokens, by default) are found in the raw text; the rest in each normalized
// piece between them. Matching is leftmost-longest (HF's Aho-Corasick LeftmostLongest),
// then single_word / lstrip / rstrip are applied as HF's `find_matches` does.
//
//   "hi<|im_end|>\n"  ->  "hi" | <|im_end|> (id 151645) | "\n"
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_field.h"

namespace lmscope::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  std::string text;     // what the id decodes from: `content`, normalized when normalized=true
                        // (HF's id_to_token gives "fix" for a normalized "ﬁx" under NFKC)
  bool special = false;
  bool normalized = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
};

// A piece of text: either plain text for the next stage, or a found added token.
struct TextPiece {
  std::string_view text;
  int32_t token = -1;   // >= 0: this piece is that added token
};

// Exact leftmost-longest matching of a fixed set of strings (a byte trie; the first byte of
// every pattern is in a 256-entry table, so text without candidates is skipped fast).
class TokenMatcher {
 public:
  void add(std::string_view pattern, int32_t value);
  bool empty() const { return nodes_.size() <= 1; }
  // The longest pattern starting at text[pos]; returns its length (0 if none) and value.
  size_t longest_at(std::string_view text, size_t pos, int32_t& value) const;
  // Start of the next position >= pos whose byte can begin a pattern (npos if none).
  size_t next_candidate(std::string_view text, size_t pos) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;   // byte -> node
    int32_t value = -1;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
};

class AddedTokens {
 public:
  // `list` is tokenizer.json's "added_tokens" (may be null). `normalize` applies the
  // tokenizer's normalizer to a normalized=true token's content (HF matches those in the
  // normalized text, so their patterns are normalized too).
  template <class Normalize>
  static AddedTokens from_json(const Field& list, Normalize&& normalize);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* by_id(int32_t id) const;
  const AddedToken* by_content(std::string_view content) const;
  bool is_special(int32_t id) const;
  int32_t max_id() const { return max_id_; }

  // Splits `text` at added tokens: the raw pass (normalized=false tokens) or the normalized
  // pass. Empty text pieces are not emitted.
  void split(std::string_view text, bool normalized_pass, std::vector<TextPiece>& out) const;
  bool has_normalized() const { return !normalized_matcher_.empty(); }

 private:
  void add(AddedToken t, const std::string& pattern);
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  TokenMatcher raw_matcher_, normalized_matcher_;   // value = index in tokens_
  int32_t max_id_ = -1;
};

template <class Normalize>
AddedTokens AddedTokens::from_json(const Field& list, Normalize&& normalize) {
  AddedTokens a;
  if (list.is_null()) return a;
  list.expect_array();
  for (size_t i = 0; i < list.size(); ++i) {
    Field f = list.at(i);
    f.expect_object();
    AddedToken t;
    int64_t id = f.at("id").integer();
    if (id < 0 || id > INT32_MAX / 2) f.at("id").fail("token id " + std::to_string(id) + " out of range");
    t.id = int32_t(id);
    t.content = f.at("content").str();
    if (t.content.empty()) f.at("content").fail("an added token cannot be empty");
    t.special = f.bool_or("special", false);
    t.normalized = f.bool_or("normalized", !t.special);
    t.single_word = f.bool_or("single_word", false);
    t.lstrip = f.bool_or("lstrip", false);
    t.rstrip = f.bool_or("rstrip", false);
    t.text = t.normalized ? normalize(t.content) : t.content;
    std::string pattern = t.text;
    a.add(std::move(t), pattern);
  }
  return a;
}

}  // namespace lmscope::tok
