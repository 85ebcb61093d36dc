// tokenizer.json "normalizer": Unicode normalization (utf8proc) run on the text between
// added tokens, before pre-tokenization (HF `extract_and_normalize`). Supported: null,
// NFC, NFD, NFKC, NFKD and Sequence of those; anything else is refused by name.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_field.h"

namespace lmscope::tok {

class Normalizer {
 public:
  enum class Form { NFC, NFD, NFKC, NFKD };

  Normalizer() = default;
  explicit Normalizer(std::vector<Form> steps) : steps_(std::move(steps)) {}
  // `f` is the "normalizer" member (may be null).
  static Normalizer from_json(const Field& f);

  bool empty() const { return steps_.empty(); }
  // Applies every step in order. ASCII text is returned unchanged without calling
  // utf8proc (all four forms leave ASCII alone). `text` must be valid UTF-8.
  std::string apply(std::string_view text) const;
  // The same without a copy when nothing changes: returns `text` itself, or a view of
  // `storage` holding the normalized text.
  std::string_view apply(std::string_view text, std::string& storage) const;
  std::string describe() const;   // "NFC", "Sequence[]", "none"

 private:
  std::vector<Form> steps_;
};

}  // namespace lmscope::tok
