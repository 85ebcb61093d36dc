// Lexing, in two steps as Jinja does it:
//  1. the template -> segments: text, {{ expression }} and {% statement %} bodies, with the
//     whitespace control transformers configures (trim_blocks, lstrip_blocks, no trailing
//     newline) applied to the text and {# comments #} dropped;
//  2. one body -> tokens: names, numbers, string literals, operators.
// Every segment and token knows its position in the template, for error messages.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jinja/error.h"

namespace lmscope::jinja {

// The template text as Jinja reads it ("\r\n" and "\r" -> "\n", one trailing newline dropped)
// and where its lines start, to turn a byte offset into line:col. Every token asks for its
// position, so pos() is O(log lines): columns come from a running count of UTF-8 characters
// (scanning from the line's start would make a one-line template quadratic to lex).
class Source {
 public:
  explicit Source(const std::string& text);
  const std::string& text() const { return text_; }
  Pos pos(size_t offset) const;

 private:
  std::string text_;
  std::vector<size_t> line_starts_;
  std::vector<uint32_t> chars_before_;   // [offset]: characters that start before byte offset
};

struct Segment {
  enum class Type { Text, Expr, Stmt } type;
  std::string text;   // Text: the text to output; Expr/Stmt: the body between the delimiters
  size_t offset;      // where `text` starts in the Source
};

std::vector<Segment> split_segments(const Source& src);

struct Tok {
  enum class T { Name, Int, Float, Str, Op, End } t = T::End;
  std::string s;      // Name, Str (unescaped), Op; "" for End
  int64_t i = 0;      // Int
  double f = 0;       // Float
  Pos at;
};

// The tokens of an Expr/Stmt segment's body, ending with an End token (at the body's end).
std::vector<Tok> tokenize(const Source& src, const Segment& seg);

}  // namespace lmscope::jinja
