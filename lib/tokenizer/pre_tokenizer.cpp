#include "tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <utility>

#include "tokenizer/utf8.h"

namespace lmscope::tok {

namespace {

// HF tokenizers `pre_tokenizers/byte_level.rs`: the GPT-2 pattern ByteLevel splits with
// when use_regex is true.
const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

using Span = std::pair<size_t, size_t>;
struct Piece {
  Span span;
  bool match;
};

SplitBehavior parse_behavior(const Field& f) {
  std::string b = f.str();
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  f.fail("unknown split behavior '" + b + "' (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

// A literal string as a PCRE2 pattern: every ASCII punctuation character escaped.
std::string quote_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    bool plain = u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ';
    if (!plain) out += '\\';
    out += c;
  }
  return out;
}

// Rust `char::is_numeric`: general categories Nd, Nl, No.
bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// HF `NormalizedString::split`: turn (span, is_match) pieces covering the text into the
// kept spans according to the behavior. Empty spans are dropped by the caller.
void apply_behavior(std::vector<Piece>& pieces, SplitBehavior behavior, bool invert, std::vector<Span>& out) {
  if (invert)
    for (Piece& p : pieces) p.match = !p.match;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Piece& p : pieces) out.push_back(p.span);
      break;
    case SplitBehavior::Removed:
      for (const Piece& p : pieces)
        if (!p.match) out.push_back(p.span);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool prev_match = false;
      size_t first = out.size();
      for (const Piece& p : pieces) {
        if (p.match && !prev_match && out.size() > first) out.back().second = p.span.second;
        else out.push_back(p.span);
        prev_match = p.match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      // Walk backwards: a match is glued to the piece after it.
      std::vector<Span> rev;
      bool prev_match = false;
      for (size_t i = pieces.size(); i-- > 0;) {
        const Piece& p = pieces[i];
        if (p.match && !prev_match && !rev.empty()) rev.back().first = p.span.first;
        else rev.push_back(p.span);
        prev_match = p.match;
      }
      out.insert(out.end(), rev.rbegin(), rev.rend());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool prev_match = false;
      size_t first = out.size();
      for (const Piece& p : pieces) {
        if (p.match == prev_match && out.size() > first) out.back().second = p.span.second;
        else out.push_back(p.span);
        prev_match = p.match;
      }
      break;
    }
  }
}

// Matches -> (span, is_match) pieces covering [0, n) (HF `Pattern::find_matches`).
void cover(const std::vector<Span>& matches, size_t n, std::vector<Piece>& pieces) {
  size_t prev = 0;
  for (const Span& m : matches) {
    if (prev != m.first) pieces.push_back({{prev, m.first}, false});
    pieces.push_back({m, true});
    prev = m.second;
  }
  if (prev != n) pieces.push_back({{prev, n}, false});
}

}  // namespace

struct PreTokenizer::Step {
  enum class Kind { Split, ByteLevel, Digits } kind;
  std::unique_ptr<Regex> regex;   // Split; ByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  bool add_prefix_space = false;  // ByteLevel
  bool individual_digits = false; // Digits
  std::string describe;

  // Appends the pieces of `text` (non-empty) to `out`.
  void run(std::string_view text, std::vector<std::string_view>& out, std::deque<std::string>& arena) const {
    // Scratch reused across calls (run never calls itself).
    thread_local std::vector<Span> spans, matches;
    thread_local std::vector<Piece> pieces;
    spans.clear();
    matches.clear();
    pieces.clear();
    switch (kind) {
      case Kind::Split: {
        regex->find_all(text, matches);
        if (behavior == SplitBehavior::Isolated && !invert) {
          cover(matches, text.size(), pieces);
          for (const Piece& p : pieces) out.push_back(text.substr(p.span.first, p.span.second - p.span.first));
          return;
        }
        cover(matches, text.size(), pieces);
        apply_behavior(pieces, behavior, invert, spans);
        break;
      }
      case Kind::ByteLevel: {
        if (add_prefix_space && text[0] != ' ') {
          text = arena.emplace_back(" ").append(text);
        }
        if (!regex) {
          out.push_back(text);
          return;
        }
        regex->find_all(text, matches);
        cover(matches, text.size(), pieces);
        apply_behavior(pieces, SplitBehavior::Isolated, false, spans);
        break;
      }
      case Kind::Digits: {
        // Each numeric character is a match (HF's char-predicate pattern).
        size_t i = 0, last = 0;
        while (i < text.size()) {
          size_t start = i;
          uint32_t cp = utf8::next(text, i);
          if (is_numeric(cp)) {
            if (last < start) pieces.push_back({{last, start}, false});
            pieces.push_back({{start, i}, true});
            last = i;
          }
        }
        if (last < text.size()) pieces.push_back({{last, text.size()}, false});
        apply_behavior(pieces, individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false, spans);
        break;
      }
    }
    for (const Span& s : spans)
      if (s.second > s.first) out.push_back(text.substr(s.first, s.second - s.first));
  }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

namespace {

void collect(const Field& f, std::vector<std::unique_ptr<PreTokenizer::Step>>& steps, int depth = 0);

std::unique_ptr<Regex> compile(const Field& where, const std::string& pattern) {
  try {
    return std::make_unique<Regex>(pattern);
  } catch (const std::exception& e) {
    where.fail(e.what());
  }
}

void collect(const Field& f, std::vector<std::unique_ptr<PreTokenizer::Step>>& steps, int depth) {
  f.expect_object();
  Field type_f = f.at("type");
  std::string type = type_f.str();
  auto step = std::make_unique<PreTokenizer::Step>();
  if (type == "Sequence") {
    check_sequence_depth(f, depth + 1);
    Field list = f.at("pretokenizers");
    list.expect_array();
    for (size_t i = 0; i < list.size(); ++i) collect(list.at(i), steps, depth + 1);
    return;
  }
  if (type == "Split") {
    step->kind = PreTokenizer::Step::Kind::Split;
    Field pat = f.at("pattern");
    pat.expect_object();
    if (auto re = pat.get("Regex")) {
      step->regex = compile(*re, re->str());
      step->describe = "Split(Regex " + re->str() + ")";
    } else if (auto lit = pat.get("String")) {
      step->regex = compile(*lit, quote_literal(lit->str()));
      step->describe = "Split(String \"" + lit->str() + "\")";
    } else {
      pat.fail("expected {\"Regex\": ...} or {\"String\": ...}");
    }
    step->behavior = parse_behavior(f.at("behavior"));
    step->invert = f.bool_or("invert", false);
  } else if (type == "ByteLevel") {
    step->kind = PreTokenizer::Step::Kind::ByteLevel;
    step->add_prefix_space = f.bool_or("add_prefix_space", true);
    if (f.bool_or("use_regex", true)) step->regex = compile(f, kGpt2Pattern);
    step->describe = std::string("ByteLevel(add_prefix_space=") + (step->add_prefix_space ? "true" : "false") +
                     ", use_regex=" + (step->regex ? "true" : "false") + ")";
  } else if (type == "Digits") {
    step->kind = PreTokenizer::Step::Kind::Digits;
    step->individual_digits = f.bool_or("individual_digits", false);
    step->describe = std::string("Digits(individual_digits=") + (step->individual_digits ? "true" : "false") + ")";
  } else {
    type_f.fail("unsupported pre-tokenizer '" + type + "' (supported: Split, ByteLevel, Digits, Sequence)");
  }
  steps.push_back(std::move(step));
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const Field& f) {
  PreTokenizer p;
  if (f.is_null()) return p;
  collect(f, p.steps_);
  for (size_t i = 0; i < p.steps_.size(); ++i) {
    if (p.steps_[i]->kind != Step::Kind::ByteLevel) continue;
    if (i + 1 != p.steps_.size())
      f.fail("a ByteLevel pre-tokenizer followed by other pre-tokenizers is not supported (ByteLevel must be last)");
    p.byte_level_ = true;
  }
  return p;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words,
                         std::deque<std::string>& arena) const {
  if (steps_.empty()) {
    words.push_back(text);
    return;
  }
  if (steps_.size() == 1) {
    steps_[0]->run(text, words, arena);
    return;
  }
  thread_local std::vector<std::string_view> cur, next;
  cur.assign(1, text);
  for (const auto& step : steps_) {
    next.clear();
    for (std::string_view piece : cur) step->run(piece, next, arena);
    std::swap(cur, next);
  }
  words.insert(words.end(), cur.begin(), cur.end());
}

std::string PreTokenizer::describe() const {
  if (steps_.empty()) return "none";
  std::string s;
  for (const auto& st : steps_) s += (s.empty() ? "" : ", ") + st->describe;
  return s;
}

}  // namespace lmscope::tok
