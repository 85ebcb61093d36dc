// tokenizer.json "pre_tokenizer": cuts normalized text into words before BPE (HF
// `do_pre_tokenize`). Supported: Split (Regex or String pattern, every behavior, invert),
// ByteLevel (add_prefix_space, use_regex with the GPT-2 pattern), Digits and Sequence of
// those; ByteLevel, when present, must come last (it only relabels bytes, which our BPE
// does directly). Anything else is refused by name.
//
//   Qwen2:  "Hello world 123" -> "Hello" " world" " " "1" "2" "3"
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_field.h"
#include "tokenizer/regex.h"

namespace lmscope::tok {

// HF SplitDelimiterBehavior: what happens to the matched delimiters.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizer {
 public:
  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // `f` is the "pre_tokenizer" member (may be null: the whole text is one word).
  static PreTokenizer from_json(const Field& f);

  // Appends the words of `text` (valid UTF-8, non-empty) to `words`, never an empty one.
  // Words are views into `text` or into strings added to `arena` (a prefix space).
  void split(std::string_view text, std::vector<std::string_view>& words, std::deque<std::string>& arena) const;

  // True when the last step is ByteLevel: each byte of a word is one BPE symbol.
  bool byte_level() const { return byte_level_; }
  std::string describe() const;

  struct Step;

 private:
  std::vector<std::unique_ptr<Step>> steps_;
  bool byte_level_ = false;
};

}  // namespace lmscope::tok
