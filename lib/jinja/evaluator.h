// Evaluation: walks the statement tree (ast.h), appending to the output. Statements and the
// expression core (names, operators, attributes, items, slices) are in evaluator.cpp; the
// built-ins (global functions, str/dict methods, filters, tests) in builtins.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jinja/ast.h"

namespace lmscope::jinja {

enum class Flow { Normal, Break, Continue };

// The output and the variables: scopes from the outermost (the render variables) to the
// innermost (a loop body); {% set %} writes the innermost.
struct Ctx {
  std::vector<std::map<std::string, Value>> scopes;
  std::string out;
  int64_t loop_iterations = 0;
  Value lookup(const std::string& name) const;
};

class Evaluator {
 public:
  explicit Evaluator(Ctx& ctx) : c_(ctx) {}

  Flow exec(const Body& body);
  Flow exec(const Node& n);
  Value eval(const Expr& e);

 private:
  // Positional and keyword arguments of a call, filter or test.
  struct Args {
    List pos;
    std::map<std::string, Value> kw;
    Value get(size_t i, const std::string& name, Value def = Value()) const {
      if (i < pos.size()) return pos[i];
      auto it = kw.find(name);
      return it == kw.end() ? def : it->second;
    }
  };

  // evaluator.cpp
  Flow exec_for(const Node& n);
  Value eval_here(const Expr& e);
  [[noreturn]] void undefined_error(Pos at, const std::string& what);
  Value attr(const Value& obj, const std::string& name, Pos at);
  Value item(const Value& obj, const Value& key, Pos at);
  Value slice(const Expr& e);
  bool contains(const Value& container, const Value& x, Pos at);
  int compare(const Value& a, const Value& b, const std::string& op, Pos at);
  Value binary(const Expr& e);

  // builtins.cpp
  Args args(const Expr& e, size_t skip);   // the arguments after `skip` leading kids
  Value call(const Expr& e);
  Value call_function(const Expr& e);
  Value call_method(const Expr& e);
  Value filter(const Expr& e);
  Value filter_by_name(const std::string& f, const Value& v, const Args& a, Pos at);
  bool test(const Expr& e);
  bool test_by_name(const std::string& t, const Value& v, const Args& a, Pos at);

  Ctx& c_;
};

}  // namespace lmscope::jinja
