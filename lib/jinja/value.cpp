#include "jinja/value.h"

#include <cmath>

#include "jinja/error.h"
#include "jinja/pystr.h"

namespace lmscope::jinja {

Value Value::get(const std::string& key) const {
  if (!is_mapping()) return Value();
  for (const auto& [k, v] : *d_)
    if (k == key) return v;
  return Value();
}

bool Value::has(const std::string& key) const {
  if (!is_mapping()) return false;
  for (const auto& kv : *d_)
    if (kv.first == key) return true;
  return false;
}

void Value::set(const std::string& key, Value v) {
  for (auto& kv : *d_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  d_->emplace_back(key, std::move(v));
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined: case Kind::None: return false;
    case Kind::Bool: case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_->empty();
    case Kind::List: return !l_->empty();
    case Kind::Dict: return !d_->empty();
    case Kind::Namespace: return true;
  }
  return false;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return *s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return py::float_repr(f_);
    case Kind::String: return py::str_repr(*s_);
    case Kind::List: {
      std::string s = "[";
      for (size_t i = 0; i < l_->size(); ++i) s += (i ? ", " : "") + (*l_)[i].repr();
      return s + "]";
    }
    case Kind::Dict: {
      std::string s = "{";
      for (size_t i = 0; i < d_->size(); ++i) s += (i ? ", " : "") + py::str_repr((*d_)[i].first) + ": " + (*d_)[i].second.repr();
      return s + "}";
    }
    case Kind::Namespace: return "<Namespace>";
  }
  return "";
}

namespace {
std::string json_too_long() {
  return "tojson makes a string over the limit of " + std::to_string(kMaxStringBytes >> 20) + " MiB";
}
}  // namespace

std::string Value::to_json(int indent, int depth) const {
  auto newline = [&](int d) { return indent < 0 ? std::string() : std::string("\n").append(size_t(indent * d), ' '); };
  std::string item_sep = indent < 0 ? ", " : ",";
  switch (kind_) {
    case Kind::Undefined: throw ValueError("tojson: the value is undefined");
    case Kind::None: return "null";
    case Kind::Bool: return i_ ? "true" : "false";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float:
      if (std::isnan(f_)) return "NaN";
      if (std::isinf(f_)) return f_ > 0 ? "Infinity" : "-Infinity";
      return py::float_repr(f_);
    case Kind::String: return py::json_string(*s_);
    case Kind::List: {
      if (l_->empty()) return "[]";
      std::string s = "[";
      for (size_t i = 0; i < l_->size(); ++i) {
        s += (i ? item_sep : "") + newline(depth + 1) + (*l_)[i].to_json(indent, depth + 1);
        if (s.size() > kMaxStringBytes) throw ValueError(json_too_long());
      }
      return s + newline(depth) + "]";
    }
    case Kind::Dict: case Kind::Namespace: {
      if (d_->empty()) return "{}";
      std::string s = "{";
      for (size_t i = 0; i < d_->size(); ++i) {
        s += (i ? item_sep : "") + newline(depth + 1) + py::json_string((*d_)[i].first) + ": " +
             (*d_)[i].second.to_json(indent, depth + 1);
        if (s.size() > kMaxStringBytes) throw ValueError(json_too_long());
      }
      return s + newline(depth) + "}";
    }
  }
  return "null";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  // Python: 1 == 1.0 == True
  auto numeric = [](const Value& v) { return v.is_number() || v.kind() == Value::Kind::Bool; };
  if (numeric(a) || numeric(b)) {
    if (!numeric(a) || !numeric(b)) return false;
    if (a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float) return a.i() == b.i();
    return a.f() == b.f();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined: case Value::Kind::None: return true;
    case Value::Kind::Bool: return a.b() == b.b();
    case Value::Kind::String: return a.s() == b.s();
    case Value::Kind::List: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i)
        if (!(a.list()[i] == b.list()[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [k, v] : a.dict())
        if (!b.has(k) || !(b.get(k) == v)) return false;
      return true;
    }
    case Value::Kind::Namespace: return &a.dict() == &b.dict();
    default: return false;
  }
}
}  // namespace lmscope::jinja
