#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "tokenizer/utf8.h"

namespace lmscope::tok {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

namespace {

// Per-thread matching state: match data sized for any of our patterns, and a JIT stack
// big enough for long whitespace runs (`\s+(?!\S)` backtracks over the whole run).
struct MatchState {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    md = pcre2_match_data_create(16, nullptr);
    mctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
    if (mctx && stack) pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
  ~MatchState() {
    if (stack) pcre2_jit_stack_free(stack);
    if (mctx) pcre2_match_context_free(mctx);
    if (md) pcre2_match_data_free(md);
  }
};

MatchState& match_state() {
  thread_local MatchState st;
  return st;
}

// The match limit for a call with `rest` bytes of text left: PCRE2's default 10^7, or 4 steps
// a byte past that, at most 2^32 - 1.
uint32_t match_limit(size_t rest) {
  constexpr uint64_t kDefault = 10'000'000;
  return uint32_t(std::min<uint64_t>(std::max<uint64_t>(kDefault, 4 * uint64_t(rest)), UINT32_MAX));
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE erroff = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &erroff, nullptr);
  if (!impl_->code)
    throw std::runtime_error("regex '" + pattern + "' does not compile: " + pcre2_message(err) + " at offset " +
                             std::to_string(erroff));
  jit_ = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  MatchState& st = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t pos = 0;
  while (pos <= n) {
    // PCRE2's default match limit (10^7 backtracking steps a call) would refuse a long
    // whitespace run: `\s*[\r\n]+` steps back over the whole run before it fails, one step a
    // character, so the pre-tokenizer patterns need the run's length plus a few steps. The
    // limit grows with the text still unmatched (never below the default); these patterns'
    // work over a whole text stays linear (docs/tokenizer.md, "Long whitespace runs").
    pcre2_set_match_limit(st.mctx, match_limit(n - pos));
    // The text was validated once on entry: no per-call UTF check.
    int rc = jit_ ? pcre2_jit_match(impl_->code, subject, n, pos, 0, st.md, st.mctx)
                  : pcre2_match(impl_->code, subject, n, pos, PCRE2_NO_UTF_CHECK, st.md, st.mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("regex '" + pattern_ + "' failed: " + pcre2_message(rc));
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.md);
    size_t s = ov[0], e = ov[1];
    if (e > s) {
      out.emplace_back(s, e);
      pos = e;
    } else {   // empty match: step over one character
      if (s >= n) break;
      size_t i = s;
      utf8::next(text, i);
      pos = i;
    }
  }
}

}  // namespace lmscope::tok
