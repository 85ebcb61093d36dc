// Errors of the Jinja interpreter and where in the template they point.
//
// Every error a template can cause is one line: "<name> <line>:<col>: <what>", e.g.
//   chat template 3:14: unsupported Jinja tag 'macro'
// The parser and the evaluator throw fail(pos, what) ("3:14: what"); Template adds its name.
// Value and the Python string helpers do not know where they are: they throw ValueError, and
// the evaluator turns it into a positioned error at the expression that called them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace lmscope::jinja {

// Limits on what one render may do (docs/jinja.md): past one, the render fails with a
// one-line error instead of exhausting memory or time.
constexpr int64_t kMaxRangeItems = 1'000'000;             // range() and list +
constexpr size_t kMaxStringBytes = size_t(64) << 20;      // any string (~, +, *, join, replace), and the output
constexpr int64_t kMaxLoopIterations = 1'000'000;         // all {% for %} iterations of a render (~1 s)
constexpr int64_t kMaxJsonIndent = 256;                     // tojson(indent=N)

// Limits on a template's shape, checked while parsing: the parser, the evaluator and the
// tree's destructor recurse once per level, so a template nested 10,000 deep (a GGUF's chat
// template is untrusted input) must end in one line, not a stack overflow. Real chat
// templates stay far below: a few levels of tags, expressions a dozen nodes deep.
constexpr int kMaxExprNesting = 64;     // brackets, parentheses, call arguments inside one another
constexpr int kMaxExprDepth = 256;      // an expression tree's depth (a ~ b ~ c ... is one level per ~)
constexpr int kMaxTagNesting = 64;      // {% if %} / {% for %} / {% generation %} inside one another

// What the template did wrong (or what it uses that we do not support).
struct JinjaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The template called raise_exception(message): the template's own verdict on its input (as
// transformers' TemplateError), not a problem with the template.
struct RaisedError : JinjaError {
  using JinjaError::JinjaError;
};

// A bad value in a lower layer that has no position; the evaluator adds one.
struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A place in the template: 1-based line and column (in characters, after "\r\n" -> "\n").
struct Pos {
  int line = 1;
  int col = 1;
  std::string str() const { return std::to_string(line) + ":" + std::to_string(col); }
};

[[noreturn]] inline void fail(Pos at, const std::string& what) { throw JinjaError(at.str() + ": " + what); }

}  // namespace lmscope::jinja
