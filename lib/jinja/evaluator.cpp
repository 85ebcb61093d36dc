#include "jinja/evaluator.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "jinja/pystr.h"

namespace lmscope::jinja {

namespace {

int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + int64_t(n) : i; }   // Python's xs[-1]

// Integers are 64-bit: where Python would make a big int, the template fails naming the operation.
[[noreturn]] void int_overflow(Pos at, int64_t a, const std::string& op, int64_t b) {
  fail(at, "integer overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b) +
               " (integers are 64-bit)");
}

int64_t checked_pow(int64_t a, int64_t b, Pos at) {   // b >= 0; by squaring
  int64_t r = 1, base = a;
  for (int64_t e = b;;) {
    if (e & 1)
      if (__builtin_mul_overflow(r, base, &r)) int_overflow(at, a, "**", b);
    e >>= 1;
    if (!e) return r;
    // base^2 overflowing with exponent left means |result| >= base^2 > INT64_MAX.
    if (__builtin_mul_overflow(base, base, &base)) int_overflow(at, a, "**", b);
  }
}

void check_string_size(size_t n, Pos at) {
  if (n > kMaxStringBytes)
    fail(at, "string of " + std::to_string(n) + " bytes is over the limit of " + std::to_string(kMaxStringBytes >> 20) +
                 " MiB");
}

}  // namespace

Value Ctx::lookup(const std::string& name) const {
  for (size_t i = scopes.size(); i-- > 0;) {
    auto it = scopes[i].find(name);
    if (it != scopes[i].end()) return it->second;
  }
  return Value();
}

// ---- statements -------------------------------------------------------------------------

Flow Evaluator::exec(const Body& body) {
  for (const NodeP& n : body) {
    Flow f = exec(*n);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow Evaluator::exec(const Node& n) {
  using K = Node::K;
  switch (n.k) {
    case K::Text:
      if (c_.out.size() + n.text.size() > kMaxStringBytes)
        fail(n.at, "output over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
      c_.out += n.text;
      return Flow::Normal;
    case K::Output: {
      std::string v = eval(*n.expr).str();
      if (c_.out.size() + v.size() > kMaxStringBytes)
        fail(n.at, "output over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
      c_.out += v;
      return Flow::Normal;
    }
    case K::If:
      for (const auto& [cond, body] : n.branches)
        if (!cond || eval(*cond).truthy()) return exec(body);
      return Flow::Normal;
    case K::Set: {
      Value v = eval(*n.expr);
      if (n.set_attr.empty()) {
        c_.scopes.back()[n.set_name] = v;
      } else {
        Value obj = c_.lookup(n.set_name);
        if (obj.kind() != Value::Kind::Namespace)
          fail(n.at, "cannot assign attribute on '" + n.set_name + "' (" + obj.type_name() + "), only on a namespace()");
        if (!n.set_attr.empty() && n.set_attr[0] == '_') fail(n.at, "namespace attributes cannot start with '_'");
        obj.set(n.set_attr, v);
      }
      return Flow::Normal;
    }
    case K::Break: return Flow::Break;
    case K::Continue: return Flow::Continue;
    case K::For: return exec_for(n);
  }
  return Flow::Normal;
}

Flow Evaluator::exec_for(const Node& n) {
  Value seq = eval(*n.expr);
  List items;
  if (seq.is_list()) items = seq.list();
  else if (seq.is_mapping()) for (const auto& kv : seq.dict()) items.push_back(Value(kv.first));
  else if (seq.is_string()) for (std::string& c : py::chars(seq.s())) items.push_back(Value(std::move(c)));
  else if (!seq.is_undefined() && !seq.is_none()) {
    fail(n.at, "'" + seq.type_name() + "' object is not iterable");
  } else if (seq.is_none()) {
    fail(n.at, "'NoneType' object is not iterable");
  }
  auto bind = [&](std::map<std::string, Value>& scope, const Value& item) {
    if (n.targets.size() == 1) {
      scope[n.targets[0]] = item;
      return;
    }
    if (!item.is_list() || item.list().size() != n.targets.size())
      fail(n.at, "cannot unpack " + item.type_name() + " into " + std::to_string(n.targets.size()) + " names");
    for (size_t k = 0; k < n.targets.size(); ++k) scope[n.targets[k]] = item.list()[k];
  };
  if (n.filter) {
    List kept;
    for (const Value& item : items) {
      c_.scopes.emplace_back();
      bind(c_.scopes.back(), item);
      bool keep = eval(*n.filter).truthy();
      c_.scopes.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    c_.scopes.emplace_back();
    exec(n.else_body);
    c_.scopes.pop_back();
    return Flow::Normal;
  }
  const int64_t len = int64_t(items.size());
  for (int64_t i = 0; i < len; ++i) {
    if (++c_.loop_iterations > kMaxLoopIterations)
      fail(n.at, "more than " + std::to_string(kMaxLoopIterations) + " loop iterations in one render");
    c_.scopes.emplace_back();
    auto& scope = c_.scopes.back();
    bind(scope, items[size_t(i)]);
    Dict loop{{"index0", Value(i)},
              {"index", Value(i + 1)},
              {"revindex0", Value(len - i - 1)},
              {"revindex", Value(len - i)},
              {"first", Value(i == 0)},
              {"last", Value(i == len - 1)},
              {"length", Value(len)},
              {"previtem", i > 0 ? items[size_t(i - 1)] : Value()},
              {"nextitem", i + 1 < len ? items[size_t(i + 1)] : Value()}};
    scope["loop"] = Value(std::move(loop));
    Flow f = exec(n.body);
    c_.scopes.pop_back();
    if (f == Flow::Break) break;
  }
  return Flow::Normal;
}

// ---- expressions ------------------------------------------------------------------------

// The value of e. A ValueError from Value or the string helpers becomes an error at e's
// position (the innermost expression that raised it: enclosing ones see a JinjaError).
Value Evaluator::eval(const Expr& e) {
  try {
    return eval_here(e);
  } catch (const ValueError& err) {
    fail(e.at, err.what());
  }
}

Value Evaluator::eval_here(const Expr& e) {
  using K = Expr::K;
  switch (e.k) {
    case K::Literal: return e.lit;
    case K::Name: return c_.lookup(e.name);
    case K::ListLit: case K::TupleLit: {
      List l;
      for (const auto& k : e.kids) l.push_back(eval(*k));
      return Value(std::move(l));
    }
    case K::DictLit: {
      Dict d;
      for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
        Value k = eval(*e.kids[i]);
        if (!k.is_string()) fail(e.at, "only string keys are supported in dict literals");
        d.emplace_back(k.s(), eval(*e.kids[i + 1]));
      }
      return Value(std::move(d));
    }
    case K::Attr: return attr(eval(*e.kids[0]), e.name, e.at);
    case K::Item: return item(eval(*e.kids[0]), eval(*e.kids[1]), e.at);
    case K::Slice: return slice(e);
    case K::Call: return call(e);
    case K::Filter: return filter(e);
    case K::Test: {
      bool r = test(e);
      return Value(e.negate ? !r : r);
    }
    case K::Neg: case K::Plus: {
      Value v = eval(*e.kids[0]);
      if (!v.is_number() && v.kind() != Value::Kind::Bool)
        fail(e.at, std::string("bad operand type for unary ") + (e.k == K::Neg ? "-" : "+") + ": '" + v.type_name() + "'");
      if (e.k == K::Plus) return v;
      if (v.kind() == Value::Kind::Float) return Value(-v.f());
      if (v.i() == INT64_MIN) fail(e.at, "integer overflow in -(" + std::to_string(v.i()) + ") (integers are 64-bit)");
      return Value(-v.i());
    }
    case K::Not: return Value(!eval(*e.kids[0]).truthy());
    case K::And: {
      Value a = eval(*e.kids[0]);
      return a.truthy() ? eval(*e.kids[1]) : a;
    }
    case K::Or: {
      Value a = eval(*e.kids[0]);
      return a.truthy() ? a : eval(*e.kids[1]);
    }
    case K::Cond: {
      if (eval(*e.kids[1]).truthy()) return eval(*e.kids[0]);
      return e.kids.size() > 2 ? eval(*e.kids[2]) : Value();
    }
    case K::Binary: return binary(e);
  }
  return Value();
}


Value Evaluator::attr(const Value& obj, const std::string& name, Pos at) {
  if (obj.is_undefined()) undefined_error(at, "value (attribute '" + name + "' of it)");
  if (obj.is_mapping()) return obj.get(name);
  if (obj.is_list() && !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
    try {
      return item(obj, Value(int64_t(std::stoll(name))), at);
    } catch (const std::out_of_range&) {
      fail(at, "index " + name + " is out of range");
    }
  return Value();   // Jinja: missing attribute -> undefined
}

Value Evaluator::item(const Value& obj, const Value& key, Pos at) {
  if (obj.is_undefined()) undefined_error(at, "value (item of it)");
  if (obj.is_mapping()) {
    if (!key.is_string()) return Value();
    return obj.get(key.s());
  }
  if (obj.is_list() || obj.is_string()) {
    if (!key.is_int() && key.kind() != Value::Kind::Bool) fail(at, "indices must be integers, not " + key.type_name());
    if (obj.is_list()) {
      int64_t i = norm_index(key.i(), obj.list().size());
      if (i < 0 || i >= int64_t(obj.list().size())) return Value();   // Jinja: undefined
      return obj.list()[size_t(i)];
    }
    std::u32string u = py::to_u32(obj.s());
    int64_t i = norm_index(key.i(), u.size());
    if (i < 0 || i >= int64_t(u.size())) return Value();
    return Value(py::from_u32(u.substr(size_t(i), 1)));
  }
  return Value();
}

Value Evaluator::slice(const Expr& e) {
  Value obj = eval(*e.kids[0]);
  auto opt = [&](size_t k, int64_t def) -> int64_t {
    if (!e.kids[k]) return def;
    Value v = eval(*e.kids[k]);
    if (v.is_none()) return def;
    if (!v.is_int()) fail(e.at, "slice indices must be integers");
    return v.i();
  };
  int64_t step = opt(3, 1);
  if (step == 0) fail(e.at, "slice step cannot be zero");
  auto do_slice = [&](int64_t n, auto&& take) {
    int64_t start, stop;
    if (step > 0) {
      start = opt(1, 0);
      stop = opt(2, n);
      if (start < 0) start = std::max<int64_t>(0, start + n);
      if (stop < 0) stop = std::max<int64_t>(0, stop + n);
      start = std::min(start, n);
      stop = std::min(stop, n);
      for (int64_t i = start; i < stop; i += step) take(i);
    } else {
      start = opt(1, n - 1);
      stop = e.kids[2] ? opt(2, -1 - n) : -1 - n;
      if (start < 0) start += n;
      if (stop < 0) stop += n;
      start = std::min(start, n - 1);
      for (int64_t i = start; i > stop && i >= 0; i += step) take(i);
    }
  };
  if (obj.is_list()) {
    List out;
    do_slice(int64_t(obj.list().size()), [&](int64_t i) { out.push_back(obj.list()[size_t(i)]); });
    return Value(std::move(out));
  }
  if (obj.is_string()) {
    std::u32string u = py::to_u32(obj.s()), out;
    do_slice(int64_t(u.size()), [&](int64_t i) { out += u[size_t(i)]; });
    return Value(py::from_u32(out));
  }
  if (obj.is_undefined()) undefined_error(e.at, "value (sliced)");
  fail(e.at, std::string("'") + obj.type_name() + "' object is not subscriptable");
}
void Evaluator::undefined_error(Pos at, const std::string& what) { fail(at, what + " is undefined"); }

bool Evaluator::contains(const Value& container, const Value& x, Pos at) {
  if (container.is_string()) {
    if (!x.is_string()) fail(at, "'in <string>' requires string as left operand, not " + x.type_name());
    return container.s().find(x.s()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.list())
      if (v == x) return true;
    return false;
  }
  if (container.is_mapping()) return x.is_string() && container.has(x.s());
  if (container.is_undefined()) undefined_error(at, "value (right of 'in')");
  fail(at, "argument of type '" + container.type_name() + "' is not iterable");
}

int Evaluator::compare(const Value& a, const Value& b, const std::string& op, Pos at) {
  if ((a.is_number() || a.kind() == Value::Kind::Bool) && (b.is_number() || b.kind() == Value::Kind::Bool))
    return a.f() < b.f() ? -1 : a.f() > b.f() ? 1 : 0;
  if (a.is_string() && b.is_string()) return a.s() < b.s() ? -1 : a.s() > b.s() ? 1 : 0;
  fail(at, "'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value Evaluator::binary(const Expr& e) {
  const std::string& op = e.name;
  Value a = eval(*e.kids[0]);
  Value b = eval(*e.kids[1]);
  if (op == "==") return Value(a == b);
  if (op == "!=") return Value(!(a == b));
  if (op == "<") return Value(compare(a, b, op, e.at) < 0);
  if (op == ">") return Value(compare(a, b, op, e.at) > 0);
  if (op == "<=") return Value(compare(a, b, op, e.at) <= 0);
  if (op == ">=") return Value(compare(a, b, op, e.at) >= 0);
  if (op == "in") {
    bool r = contains(b, a, e.at);
    return Value(e.negate ? !r : r);
  }
  if (op == "~") {
    std::string x = a.str(), y = b.str();
    check_string_size(x.size() + y.size(), e.at);
    return Value(x + y);
  }
  if (a.is_undefined() || b.is_undefined()) undefined_error(e.at, "an operand of '" + op + "'");
  auto type_error = [&]() -> Value {
    fail(e.at, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
  };
  bool na = a.is_number() || a.kind() == Value::Kind::Bool, nb = b.is_number() || b.kind() == Value::Kind::Bool;
  bool ints = na && nb && a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float;
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_string_size(a.s().size() + b.s().size(), e.at);
      return Value(a.s() + b.s());
    }
    if (a.is_list() && b.is_list()) {
      if (a.list().size() + b.list().size() > size_t(kMaxRangeItems))
        fail(e.at, "list of " + std::to_string(a.list().size() + b.list().size()) + " items is over the limit of " +
                       std::to_string(kMaxRangeItems));
      List l = a.list();
      l.insert(l.end(), b.list().begin(), b.list().end());
      return Value(std::move(l));
    }
    int64_t r;
    if (ints) {
      if (__builtin_add_overflow(a.i(), b.i(), &r)) int_overflow(e.at, a.i(), "+", b.i());
      return Value(r);
    }
    if (na && nb) return Value(a.f() + b.f());
    return type_error();
  }
  if (op == "-") {
    int64_t r;
    if (ints) {
      if (__builtin_sub_overflow(a.i(), b.i(), &r)) int_overflow(e.at, a.i(), "-", b.i());
      return Value(r);
    }
    if (na && nb) return Value(a.f() - b.f());
    return type_error();
  }
  if (op == "*") {
    int64_t r;
    if (ints) {
      if (__builtin_mul_overflow(a.i(), b.i(), &r)) int_overflow(e.at, a.i(), "*", b.i());
      return Value(r);
    }
    if (na && nb) return Value(a.f() * b.f());
    if (a.is_string() && b.is_int()) {
      std::string s;
      if (b.i() > 0 && !a.s().empty()) {
        if (uint64_t(b.i()) > kMaxStringBytes / a.s().size())
          fail(e.at, "string repetition of " + std::to_string(a.s().size()) + " bytes * " + std::to_string(b.i()) +
                         " is over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
        s.reserve(a.s().size() * size_t(b.i()));
      }
      for (int64_t i = 0; i < b.i(); ++i) s += a.s();
      return Value(s);
    }
    return type_error();
  }
  if (op == "/") {
    if (!(na && nb)) return type_error();
    if (b.f() == 0) fail(e.at, "division by zero");
    return Value(a.f() / b.f());
  }
  if (op == "//" || op == "%") {
    if (!(na && nb)) {
      if (op == "%" && a.is_string()) fail(e.at, "string formatting with % is not supported");
      return type_error();
    }
    if (b.f() == 0) fail(e.at, "division by zero");
    if (ints) {
      if (a.i() == INT64_MIN && b.i() == -1) {
        if (op == "%") return Value(int64_t(0));
        int_overflow(e.at, a.i(), op, b.i());
      }
      int64_t q = a.i() / b.i(), r = a.i() % b.i();
      if (r != 0 && ((r < 0) != (b.i() < 0))) {
        --q;
        r += b.i();
      }
      return op == "//" ? Value(q) : Value(r);
    }
    double q = std::floor(a.f() / b.f());
    return op == "//" ? Value(q) : Value(a.f() - q * b.f());
  }
  if (op == "**") {
    if (ints && b.i() >= 0) return Value(checked_pow(a.i(), b.i(), e.at));
    if (na && nb) return Value(std::pow(a.f(), b.f()));
    return type_error();
  }
  fail(e.at, "unsupported operator '" + op + "'");
}

}  // namespace lmscope::jinja
