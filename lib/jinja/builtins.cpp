// The built-ins a template can call: global functions (raise_exception, namespace, range,
// dict), str and dict methods (Python's), Jinja's filters and tests. docs/jinja.md lists
// them; anything else is an error naming it.
#include <algorithm>
#include <cmath>

#include "jinja/evaluator.h"
#include "jinja/pystr.h"

namespace lmscope::jinja {

namespace {

List strings(std::vector<std::string> v) {
  List out;
  for (std::string& s : v) out.push_back(Value(std::move(s)));
  return out;
}

// str.strip/lstrip/rstrip(chars) and the trim filter: chars None (or absent) strips whitespace.
Value strip(const std::string& s, const Value& chars, bool left, bool right) {
  const bool whitespace = chars.is_none() || chars.is_undefined();
  if (!whitespace && !chars.is_string()) throw ValueError("strip arg must be None or str");
  return Value(py::strip(s, whitespace, whitespace ? "" : chars.s(), left, right));
}

// str.split(sep, maxsplit): sep None (or absent) splits on whitespace.
Value split(const std::string& s, const Value& sep, const Value& maxsplit) {
  const bool whitespace = sep.is_none() || sep.is_undefined();
  if (!whitespace && !sep.is_string()) throw ValueError("split: separator must be a string");
  return Value(strings(py::split(s, whitespace, whitespace ? "" : sep.s(), maxsplit.i())));
}

Value length(const std::string& s) { return Value(int64_t(py::to_u32(s).size())); }

}  // namespace

Evaluator::Args Evaluator::args(const Expr& e, size_t skip) {
  Args a;
  size_t n_kw = e.kw.size();
  size_t n_pos = e.kids.size() - skip - n_kw;
  for (size_t i = 0; i < n_pos; ++i) a.pos.push_back(eval(*e.kids[skip + i]));
  for (size_t i = 0; i < n_kw; ++i) a.kw[e.kw[i]] = eval(*e.kids[skip + n_pos + i]);
  return a;
}

Value Evaluator::call(const Expr& e) { return e.has_object ? call_method(e) : call_function(e); }

// ---- global functions -------------------------------------------------------------------

Value Evaluator::call_function(const Expr& e) {
  Args a = args(e, 0);
  if (e.name == "raise_exception") throw RaisedError(a.get(0, "message").str());
  if (e.name == "namespace") {
    Dict d;
    for (const Value& p : a.pos) {
      if (!p.is_mapping()) fail(e.at, "namespace() takes keyword arguments or a dict");
      for (const auto& kv : p.dict()) d.push_back(kv);
    }
    for (const auto& [k, v] : a.kw) {
      if (!k.empty() && k[0] == '_') fail(e.at, "namespace attributes cannot start with '_'");
      d.emplace_back(k, v);
    }
    return Value::make_namespace(std::move(d));
  }
  if (e.name == "range") {
    int64_t start = 0, stop = 0, step = 1;
    if (a.pos.size() == 1) stop = a.pos[0].i();
    else if (a.pos.size() >= 2) {
      start = a.pos[0].i();
      stop = a.pos[1].i();
      if (a.pos.size() > 2) step = a.pos[2].i();
    }
    if (step == 0) fail(e.at, "range() step must not be zero");
    const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
    const __int128 count = span <= 0 ? 0 : (span + (step > 0 ? step : -__int128(step)) - 1) / (step > 0 ? step : -__int128(step));
    if (count > kMaxRangeItems)
      fail(e.at, "range() of " + std::to_string(int64_t(count)) + " items is over the limit of " +
                     std::to_string(kMaxRangeItems));
    List l;
    l.reserve(size_t(count));
    // By index, in 128 bits: `i += step` past the last item would overflow int64 (range(-2**63,
    // 2**63-1, 2**62) has 4 items; the 5th addition wraps around).
    for (int64_t k = 0; k < int64_t(count); ++k) l.push_back(Value(int64_t(__int128(start) + __int128(k) * step)));
    return Value(std::move(l));
  }
  if (e.name == "dict") {
    Dict d;
    for (const auto& [k, v] : a.kw) d.emplace_back(k, v);
    return Value(std::move(d));
  }
  if (e.name == "strftime_now")
    fail(e.at, "strftime_now() is not supported (the prompt would depend on today's date)");
  Value f = c_.lookup(e.name);
  fail(e.at, f.is_undefined() ? "'" + e.name + "' is undefined" : "'" + e.name + "' is not callable");
}

// ---- methods ----------------------------------------------------------------------------

Value Evaluator::call_method(const Expr& e) {
  Value obj = eval(*e.kids[0]);
  Args a = args(e, 1);
  const std::string& m = e.name;
  if (obj.is_string()) {
    const std::string& s = obj.s();
    if (m == "startswith" || m == "endswith") {
      Value p = a.get(0, "prefix");
      List cands = p.is_list() ? p.list() : List{p};
      for (const Value& c : cands) {
        if (!c.is_string()) fail(e.at, m + " arg must be str or a tuple of str");
        const std::string& x = c.s();
        bool hit = m == "startswith" ? s.compare(0, x.size(), x) == 0 && s.size() >= x.size()
                                     : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
        if (hit) return Value(true);
      }
      return Value(false);
    }
    if (m == "strip") return strip(s, a.get(0, "chars", Value::none()), true, true);
    if (m == "lstrip") return strip(s, a.get(0, "chars", Value::none()), true, false);
    if (m == "rstrip") return strip(s, a.get(0, "chars", Value::none()), false, true);
    if (m == "split") return split(s, a.get(0, "sep", Value::none()), a.get(1, "maxsplit", Value(int64_t(-1))));
    if (m == "upper") return Value(py::upper(s));
    if (m == "lower") return Value(py::lower(s));
    if (m == "title") return Value(py::title(s));
    if (m == "capitalize") return Value(py::capitalize(s));
    if (m == "replace")
      return Value(py::replace(s, a.get(0, "old").str(), a.get(1, "new").str(), a.get(2, "count", Value(int64_t(-1))).i()));
    if (m == "find") {
      size_t at = s.find(a.get(0, "sub").str());
      return at == std::string::npos ? Value(int64_t(-1)) : length(s.substr(0, at));
    }
    if (m == "count") {
      std::string x = a.get(0, "sub").str();
      if (x.empty()) return Value(length(s).i() + 1);   // Python: "abc".count("") == 4
      int64_t n = 0;
      for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
      return Value(n);
    }
    if (m == "join") {
      Value l = a.get(0, "iterable");
      std::string out;
      if (l.is_list())
        for (size_t i = 0; i < l.list().size(); ++i) {
          out += (i ? s : "") + l.list()[i].str();
          if (out.size() > kMaxStringBytes)
            fail(e.at, "join() makes a string over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
        }
      return Value(out);
    }
    fail(e.at, "unsupported string method '" + m + "'");
  }
  if (obj.is_mapping()) {
    if (m == "items" || m == "keys" || m == "values") {
      List l;
      for (const auto& [k, v] : obj.dict()) {
        if (m == "items") l.push_back(Value(List{Value(k), v}));
        else if (m == "keys") l.push_back(Value(k));
        else l.push_back(v);
      }
      return Value(std::move(l));
    }
    if (m == "get") {
      Value k = a.get(0, "key");
      if (k.is_string() && obj.has(k.s())) return obj.get(k.s());
      return a.get(1, "default", Value::none());
    }
  }
  if (obj.is_undefined()) undefined_error(e.at, "value (method '" + m + "' of it)");
  fail(e.at, "unsupported method '" + m + "' on " + obj.type_name());
}

// ---- filters ----------------------------------------------------------------------------

Value Evaluator::filter(const Expr& e) {
  Value v = eval(*e.kids[0]);
  return filter_by_name(e.name, v, args(e, 1), e.at);
}

Value Evaluator::filter_by_name(const std::string& f, const Value& v, const Args& a, Pos at) {
  if (f == "length" || f == "count") {
    if (v.is_string()) return length(v.s());
    if (v.is_list()) return Value(int64_t(v.list().size()));
    if (v.is_mapping()) return Value(int64_t(v.dict().size()));
    if (v.is_undefined()) return Value(int64_t(0));
    fail(at, "object of type '" + v.type_name() + "' has no len()");
  }
  if (f == "tojson") {
    Value ind = a.get(0, "indent", Value::none());
    // Python takes any indent; a billion spaces per level is no template's intent.
    if (!ind.is_none() && (ind.i() < 0 || ind.i() > kMaxJsonIndent))
      fail(at, "tojson indent " + std::to_string(ind.i()) + " is not in 0.." + std::to_string(kMaxJsonIndent));
    return Value(v.to_json(ind.is_none() ? -1 : int(ind.i())));
  }
  if (f == "string") return Value(v.str());
  if (f == "safe") return v;   // no autoescaping: nothing to mark safe
  if (f == "trim") return strip(v.str(), a.get(0, "chars", Value::none()), true, true);
  if (f == "upper") return Value(py::upper(v.str()));
  if (f == "lower") return Value(py::lower(v.str()));
  if (f == "capitalize") return Value(py::capitalize(v.str()));
  if (f == "title") return Value(py::title(v.str()));
  if (f == "default" || f == "d") {
    bool boolean = a.get(1, "boolean", Value(false)).truthy();
    bool use_default = v.is_undefined() || (boolean && !v.truthy());
    return use_default ? a.get(0, "default_value", Value(std::string())) : v;
  }
  if (f == "first" || f == "last") {
    if (v.is_list()) {
      if (v.list().empty()) return Value();
      return f == "first" ? v.list().front() : v.list().back();
    }
    if (v.is_string()) {
      std::vector<std::string> cs = py::chars(v.s());
      if (cs.empty()) return Value();
      return Value(f == "first" ? cs.front() : cs.back());
    }
    fail(at, f + " of " + v.type_name());
  }
  if (f == "list") {
    if (v.is_list()) return v;
    List l;
    if (v.is_string()) l = strings(py::chars(v.s()));
    else if (v.is_mapping())
      for (const auto& kv : v.dict()) l.push_back(Value(kv.first));
    return Value(std::move(l));
  }
  if (f == "reverse") {
    if (v.is_list()) {
      List l(v.list().rbegin(), v.list().rend());
      return Value(std::move(l));
    }
    std::u32string u = py::to_u32(v.str());
    std::reverse(u.begin(), u.end());
    return Value(py::from_u32(u));
  }
  if (f == "join") {
    std::string sep = a.get(0, "d", Value(std::string())).str();
    Value attr_name = a.get(1, "attribute");
    std::string out;
    if (v.is_list())
      for (size_t i = 0; i < v.list().size(); ++i) {
        Value x = v.list()[i];
        if (attr_name.is_string()) x = x.get(attr_name.s());
        out += (i ? sep : "") + x.str();
        if (out.size() > kMaxStringBytes)
          fail(at, "join makes a string over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB");
      }
    return Value(out);
  }
  if (f == "int") {
    if (v.kind() == Value::Kind::Int) return v;
    if (v.is_number()) {
      if (!(std::fabs(v.f()) < 9.2233720368547758e18)) fail(at, "int of " + v.str() + " is out of range (integers are 64-bit)");
      return Value(int64_t(v.f()));
    }
    try {
      return Value(int64_t(std::stoll(v.str())));
    } catch (...) {
      return a.get(0, "default", Value(int64_t(0)));
    }
  }
  if (f == "float") {
    if (v.is_number()) return Value(v.f());
    try {
      return Value(std::stod(v.str()));
    } catch (...) {
      return a.get(0, "default", Value(0.0));
    }
  }
  if (f == "abs") return v.kind() == Value::Kind::Float ? Value(std::fabs(v.f())) : Value(v.i() < 0 ? -v.i() : v.i());
  if (f == "replace")
    return Value(py::replace(v.str(), a.get(0, "old").str(), a.get(1, "new").str(), a.get(2, "count", Value(int64_t(-1))).i()));
  if (f == "items") {
    List l;
    if (v.is_mapping())
      for (const auto& [k, x] : v.dict()) l.push_back(Value(List{Value(k), x}));
    return Value(std::move(l));
  }
  if (f == "selectattr" || f == "rejectattr") {
    std::string attr_name = a.get(0, "attr").str();
    List l;
    if (v.is_list())
      for (const Value& x : v.list()) {
        Value av = x.get(attr_name);
        bool ok;
        if (a.pos.size() < 2) {
          ok = av.truthy();
        } else {
          Args targs;
          targs.pos.assign(a.pos.begin() + 2, a.pos.end());
          ok = test_by_name(a.pos[1].str(), av, targs, at);
        }
        if (ok == (f == "selectattr")) l.push_back(x);
      }
    return Value(std::move(l));
  }
  if (f == "map") {
    Value attr_name = a.get(99, "attribute");   // keyword only
    if (!attr_name.is_string()) fail(at, "only map(attribute=...) is supported");
    List l;
    if (v.is_list())
      for (const Value& x : v.list()) l.push_back(x.get(attr_name.s()));
    return Value(std::move(l));
  }
  fail(at, "unsupported filter '" + f + "'");
}

// ---- tests ------------------------------------------------------------------------------

bool Evaluator::test(const Expr& e) {
  Value v = eval(*e.kids[0]);
  return test_by_name(e.name, v, args(e, 1), e.at);
}

bool Evaluator::test_by_name(const std::string& t, const Value& v, const Args& a, Pos at) {
  if (t == "defined") return !v.is_undefined();
  if (t == "undefined") return v.is_undefined();
  if (t == "none") return v.is_none();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_int();
  if (t == "float") return v.kind() == Value::Kind::Float;
  if (t == "boolean") return v.kind() == Value::Kind::Bool;
  if (t == "true") return v.kind() == Value::Kind::Bool && v.b();
  if (t == "false") return v.kind() == Value::Kind::Bool && !v.b();
  if (t == "mapping") return v.is_mapping();
  if (t == "sequence" || t == "iterable") return v.is_list() || v.is_string() || v.is_mapping();
  if (t == "even" || t == "odd") {
    if (!v.is_int()) fail(at, t + " needs an integer");
    return (v.i() % 2 == 0) == (t == "even");
  }
  if (t == "divisibleby") {
    const int64_t d = a.get(0, "num").i();
    if (d == 0) fail(at, "divisibleby 0: division by zero");
    return v.i() % d == 0;
  }
  if (t == "equalto" || t == "eq" || t == "==" || t == "sameas") return v == a.get(0, "other");
  if (t == "ne" || t == "!=") return !(v == a.get(0, "other"));
  if (t == "in") return contains(a.get(0, "seq"), v, at);
  if (t == "lower") return v.is_string() && py::lower(v.s()) == v.s();
  if (t == "upper") return v.is_string() && py::upper(v.s()) == v.s();
  fail(at, "unsupported test '" + t + "'");
}

}  // namespace lmscope::jinja
