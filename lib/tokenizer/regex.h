// A compiled PCRE2 pattern (UTF + UCP, JIT when available) run over UTF-8 text, as the
// pre-tokenizers use it: every non-overlapping match from left to right (HF `find_iter`).
// The pattern string is used exactly as tokenizer.json holds it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmscope::tok {

class Regex {
 public:
  // Throws std::runtime_error("regex '<pattern>' does not compile: <reason> at offset N").
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return pattern_; }

  // Appends the [start, end) byte ranges of every match in `text` (valid UTF-8). An empty
  // match is skipped and the search resumes one character later (Oniguruma's find_iter).
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
  bool jit_ = false;
};

}  // namespace lmscope::tok
