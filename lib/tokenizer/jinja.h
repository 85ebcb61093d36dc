// A small Jinja interpreter: enough of Jinja2 to render the chat templates of the models we
// support (ChatML as in Qwen2/Qwen2.5/Qwen3/SmolLM2, DeepSeek-V3/R1) byte for byte as
// transformers' apply_chat_template does (ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks, loop controls; tojson / raise_exception / namespace as transformers
// defines them; `keep_trailing_newline` off).
//
// Supported: {{ }}, {% if/elif/else %}, {% for x in xs %} (tuple targets, else, loop.*),
// {% set %} (incl. namespace attributes), {% break/continue %}, {% generation %}, comments,
// whitespace control (-, +), literals, lists, dicts, attribute/item access, slices,
// arithmetic, comparisons, and/or/not, in, `x if c else y`, ~, the common filters and
// tests, and Python str/dict methods (startswith, split, strip, items, get, ...).
// Anything else (macros, call blocks, includes, ...) is a JinjaError that names it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lmscope::jinja {

struct JinjaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

// A parsed template. Parsing errors name the line: "chat template line 3: unsupported
// Jinja tag 'macro'".
class Template {
 public:
  explicit Template(const std::string& source);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with these top-level variables. raise_exception(msg) in the template becomes
  // JinjaError("chat template raised an exception: <msg>").
  std::string render(const std::map<std::string, Value>& variables) const;

  struct Node;

 private:
  std::vector<std::unique_ptr<Node>> body_;
};

}  // namespace lmscope::jinja
