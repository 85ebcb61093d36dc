// A template value, as Jinja sees Python objects: undefined, None, bool, int, float, str,
// list (tuples too), dict and namespace(). Printing follows Python's str()/repr(); tojson
// follows json.dumps (transformers' tojson).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lmscope::jinja {

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;   // insertion order, as Python dicts

// A template value: undefined, none, bool, int, float, string, list, dict, namespace.
// Lists, dicts and namespaces are shared (like Python references).
class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };

  Value() = default;   // undefined
  static Value none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
  }
  Value(bool b) : kind_(Kind::Bool), i_(b) {}
  Value(int v) : kind_(Kind::Int), i_(v) {}
  Value(int64_t v) : kind_(Kind::Int), i_(v) {}
  Value(double v) : kind_(Kind::Float), f_(v) {}
  Value(const char* s) : kind_(Kind::String), s_(std::make_shared<std::string>(s)) {}
  Value(std::string s) : kind_(Kind::String), s_(std::make_shared<std::string>(std::move(s))) {}
  Value(List l) : kind_(Kind::List), l_(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : kind_(Kind::Dict), d_(std::make_shared<Dict>(std::move(d))) {}
  static Value make_namespace(Dict d) {
    Value v(std::move(d));
    v.kind_ = Kind::Namespace;
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }

  bool b() const { return i_ != 0; }
  int64_t i() const { return i_; }
  double f() const { return kind_ == Kind::Float ? f_ : double(i_); }
  const std::string& s() const { return *s_; }
  const List& list() const { return *l_; }
  const Dict& dict() const { return *d_; }
  // A member of a mapping (undefined when absent).
  Value get(const std::string& key) const;
  bool has(const std::string& key) const;
  void set(const std::string& key, Value v);   // mappings only

  bool truthy() const;
  std::string str() const;    // Python str(): None -> "None", True -> "True"; undefined -> ""
  std::string repr() const;   // Python repr()
  // json.dumps(value, ensure_ascii=False, indent=indent) (transformers' tojson).
  std::string to_json(int indent = -1, int depth = 0) const;
  std::string type_name() const;   // Python's type name, for error messages

 private:
  Kind kind_ = Kind::Undefined;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<List> l_;
  std::shared_ptr<Dict> d_;
};

bool operator==(const Value& a, const Value& b);

}  // namespace lmscope::jinja
