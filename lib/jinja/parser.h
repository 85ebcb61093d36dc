// Parsing: segments and tokens (lexer.h) -> the statement tree (ast.h). Expressions are
// parsed by precedence climbing, lowest first: `x if c else y`, or, and, not, comparisons
// and `in`, + -, ~, * / // %, **, unary - +, then postfix (.attr, [item], [a:b:c], calls)
// and filters/tests (|f, is t). Statements nest by their end tags ({% endif %}, ...).
#pragma once
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace lmscope::jinja {

// Throws JinjaError "<line>:<col>: <what>" for syntax errors and unsupported tags.
Body parse(const Source& src);

}  // namespace lmscope::jinja
