// The parsed template: statements (Node) holding expressions (Expr). The parser builds it,
// the evaluator walks it; each node keeps its position for error messages.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/error.h"
#include "jinja/value.h"

namespace lmscope::jinja {

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum class K {
    Literal, Name, ListLit, TupleLit, DictLit, Attr, Item, Slice, Call, Filter, Test,
    Neg, Plus, Not, And, Or, Binary, Cond
  } k;
  Pos at;                        // the token that names it: the filter's name, the operator, ...
  Value lit;                     // Literal
  std::string name;              // Name, Attr, Call (callee name), Filter, Test, Binary op
  std::vector<ExprP> kids;       // operands; Call/Filter/Test: [object?] + positional + kwargs
  std::vector<std::string> kw;   // kwarg names (the last kw.size() of kids)
  bool negate = false;           // `is not`, `not in`
  bool has_object = false;       // Call: a method call (kids[0] is the object)
  int depth = 1;                 // 1 + the deepest kid's depth (bounded by kMaxExprDepth)
};

struct Node;
using NodeP = std::unique_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
  enum class K { Text, Output, If, For, Set, Break, Continue } k;
  Pos at;
  std::string text;                                  // Text
  ExprP expr;                                        // Output, Set value, For iterable
  std::vector<std::pair<ExprP, Body>> branches;      // If: (condition, or null for else; body)
  std::vector<std::string> targets;                  // For: the loop variable(s)
  ExprP filter;                                      // For: `for x in xs if cond`
  Body body, else_body;                              // For
  std::string set_name, set_attr;                    // Set: name, or namespace name + attribute
};

}  // namespace lmscope::jinja
