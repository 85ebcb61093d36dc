#include "tokenizer/jinja.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>

#include "tokenizer/utf8.h"

namespace lmscope::jinja {

namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw JinjaError("chat template line " + std::to_string(line) + ": " + what);
}

std::u32string to_u32(const std::string& s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) out += char32_t(utf8::next(s, i));
  return out;
}

std::string from_u32(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) utf8::append(out, uint32_t(c));
  return out;
}

// Python str.isspace() for the characters templates meet.
bool py_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  // Python switches to exponent notation outside 1e-4 <= |v| < 1e16.
  double a = std::fabs(v);
  if (a != 0 && (a < 1e-4 || a >= 1e16)) {
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    s.assign(buf, r.ptr);
    // "1e+16" style: to_chars gives "1e+16"; Python pads the exponent to two digits
    size_t e = s.find('e');
    if (e != std::string::npos && s.size() - e == 3) s.insert(e + 2, "0");
    return s;
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string py_str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
      out += buf;
    } else out += c;
  }
  out += q;
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

// ---- Value ------------------------------------------------------------------------------

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
    case Kind::Float: return py_float_repr(f_);
    case Kind::String: return py_str_repr(*s_);
    case Kind::List: {
      std::string s = "[";
      for (size_t i = 0; i < l_->size(); ++i) s += (i ? ", " : "") + (*l_)[i].repr();
      return s + "]";
    }
    case Kind::Dict: {
      std::string s = "{";
      for (size_t i = 0; i < d_->size(); ++i) s += (i ? ", " : "") + py_str_repr((*d_)[i].first) + ": " + (*d_)[i].second.repr();
      return s + "}";
    }
    case Kind::Namespace: return "<Namespace>";
  }
  return "";
}

std::string Value::to_json(int indent, int depth) const {
  auto newline = [&](int d) { return indent < 0 ? std::string() : "\n" + std::string(size_t(indent * d), ' '); };
  std::string item_sep = indent < 0 ? ", " : ",";
  switch (kind_) {
    case Kind::Undefined: throw JinjaError("tojson: value is undefined");
    case Kind::None: return "null";
    case Kind::Bool: return i_ ? "true" : "false";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float:
      if (std::isnan(f_)) return "NaN";
      if (std::isinf(f_)) return f_ > 0 ? "Infinity" : "-Infinity";
      return py_float_repr(f_);
    case Kind::String: return json_string(*s_);
    case Kind::List: {
      if (l_->empty()) return "[]";
      std::string s = "[";
      for (size_t i = 0; i < l_->size(); ++i) s += (i ? item_sep : "") + newline(depth + 1) + (*l_)[i].to_json(indent, depth + 1);
      return s + newline(depth) + "]";
    }
    case Kind::Dict: case Kind::Namespace: {
      if (d_->empty()) return "{}";
      std::string s = "{";
      for (size_t i = 0; i < d_->size(); ++i)
        s += (i ? item_sep : "") + newline(depth + 1) + json_string((*d_)[i].first) + ": " +
             (*d_)[i].second.to_json(indent, depth + 1);
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

// ---- lexing the template into text, {{ }} and {% %} ------------------------------------

namespace {

struct Segment {
  enum class Type { Text, Expr, Stmt } type;
  std::string text;
  int line;
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Jinja's lexer with trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False.
std::vector<Segment> lex(std::string src) {
  // Newlines normalized to "\n" and one trailing newline dropped, as Jinja does.
  {
    std::string n;
    n.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        n += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        n += src[i];
      }
    }
    src = std::move(n);
    if (!src.empty() && src.back() == '\n') src.pop_back();
  }
  std::vector<Segment> out;
  size_t pos = 0;
  int line = 1;
  bool line_starting = true;
  auto count_lines = [](const std::string& s, size_t a, size_t b) {
    return int(std::count(s.begin() + long(a), s.begin() + long(b), '\n'));
  };
  while (pos <= src.size()) {
    size_t ts = std::string::npos;
    for (size_t i = src.find('{', pos); i != std::string::npos && i + 1 < src.size(); i = src.find('{', i + 1)) {
      char k = src[i + 1];
      if (k == '{' || k == '%' || k == '#') {
        ts = i;
        break;
      }
    }
    std::string text = src.substr(pos, ts == std::string::npos ? std::string::npos : ts - pos);
    int text_line = line;
    if (ts == std::string::npos) {
      if (!text.empty()) out.push_back({Segment::Type::Text, text, text_line});
      break;
    }
    line += count_lines(src, pos, ts);
    char kind = src[ts + 1];
    char sign = ts + 2 < src.size() && (src[ts + 2] == '-' || src[ts + 2] == '+') ? src[ts + 2] : 0;
    if (sign == '-') {
      size_t e = text.size();
      while (e > 0 && is_ws(text[e - 1])) --e;
      text.resize(e);
    } else if (sign != '+' && kind != '{') {
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if (l_pos > 0 || line_starting) {
        bool only_ws = l_pos < text.size();
        for (size_t i = l_pos; i < text.size(); ++i)
          if (!is_ws(text[i])) only_ws = false;
        if (only_ws) text.resize(l_pos);
      }
    }
    if (!text.empty()) out.push_back({Segment::Type::Text, text, text_line});

    // Find the closing delimiter (outside string literals for {{ and {%).
    size_t body_start = ts + 2 + (sign ? 1 : 0);
    std::string closing = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t ce = std::string::npos;
    if (kind == '#') {
      ce = src.find("#}", body_start);
    } else {
      char quote = 0;
      for (size_t i = body_start; i + 1 < src.size(); ++i) {
        char c = src[i];
        if (quote) {
          if (c == '\\') ++i;
          else if (c == quote) quote = 0;
          continue;
        }
        if (c == '\'' || c == '"') quote = c;
        else if (c == closing[0] && src[i + 1] == closing[1]) {
          ce = i;
          break;
        }
      }
    }
    if (ce == std::string::npos) fail(line, std::string("unclosed '{") + kind + "'");
    char end_sign = ce > body_start && (src[ce - 1] == '-' || src[ce - 1] == '+') ? src[ce - 1] : 0;
    std::string body = src.substr(body_start, ce - body_start - (end_sign ? 1 : 0));
    if (kind == '{') out.push_back({Segment::Type::Expr, body, line});
    else if (kind == '%') out.push_back({Segment::Type::Stmt, body, line});
    size_t after = ce + 2;
    if (end_sign == '-') {
      while (after < src.size() && is_ws(src[after])) ++after;
    } else if (end_sign != '+' && kind != '{' && after < src.size() && src[after] == '\n') {
      ++after;   // trim_blocks
    }
    line += count_lines(src, ts, after);
    line_starting = after > 0 && src[after - 1] == '\n';
    pos = after;
    if (pos == src.size()) break;
  }
  return out;
}

// ---- expression tokens ------------------------------------------------------------------

struct Tok {
  enum class T { Name, Int, Float, Str, Op, End } t = T::End;
  std::string s;
  int64_t i = 0;
  double f = 0;
};

std::vector<Tok> tokenize(const std::string& src, int line) {
  std::vector<Tok> out;
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    char c = src[i];
    if (is_ws(c)) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      out.push_back({Tok::T::Name, src.substr(i, j - i)});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < n && (std::isdigit(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      if (j + 1 < n && src[j] == '.' && std::isdigit(static_cast<unsigned char>(src[j + 1]))) {
        is_float = true;
        ++j;
        while (j < n && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
      }
      if (j < n && (src[j] == 'e' || src[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (src[k] == '+' || src[k] == '-')) ++k;
        if (k < n && std::isdigit(static_cast<unsigned char>(src[k]))) {
          is_float = true;
          j = k;
          while (j < n && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
        }
      }
      std::string num;
      for (size_t k = i; k < j; ++k)
        if (src[k] != '_') num += src[k];
      Tok t;
      if (is_float) {
        t.t = Tok::T::Float;
        t.f = std::stod(num);
      } else {
        t.t = Tok::T::Int;
        t.i = std::stoll(num);
      }
      out.push_back(t);
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string s;
      size_t j = i + 1;
      for (; j < n && src[j] != c; ++j) {
        if (src[j] != '\\' || j + 1 >= n) {
          s += src[j];
          continue;
        }
        char e = src[++j];
        switch (e) {
          case 'n': s += '\n'; break;
          case 't': s += '\t'; break;
          case 'r': s += '\r'; break;
          case '\\': s += '\\'; break;
          case '\'': s += '\''; break;
          case '"': s += '"'; break;
          case '0': s += '\0'; break;
          case 'a': s += '\a'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case 'v': s += '\v'; break;
          case '\n': break;   // line continuation
          case 'x': case 'u': case 'U': {
            int len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (j + size_t(len) >= n) fail(line, "bad escape in string literal");
            uint32_t cp = uint32_t(std::stoul(src.substr(j + 1, size_t(len)), nullptr, 16));
            utf8::append(s, cp);
            j += size_t(len);
            break;
          }
          default: s += '\\'; s += e;   // Python keeps unknown escapes
        }
      }
      if (j >= n) fail(line, "unterminated string literal");
      out.push_back({Tok::T::Str, s});
      i = j + 1;
      continue;
    }
    static const char* ops[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%", "~",
                                "|", ".", ",", ":", "(", ")", "[", "]", "{", "}", "="};
    bool matched = false;
    for (const char* op : ops) {
      size_t len = std::char_traits<char>::length(op);
      if (src.compare(i, len, op) == 0) {
        out.push_back({Tok::T::Op, op});
        i += len;
        matched = true;
        break;
      }
    }
    if (!matched) fail(line, std::string("unexpected character '") + c + "'");
  }
  out.push_back({Tok::T::End, ""});
  return out;
}

// ---- expressions ------------------------------------------------------------------------

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum class K {
    Literal, Name, ListLit, TupleLit, DictLit, Attr, Item, Slice, Call, Filter, Test,
    Neg, Pos, Not, And, Or, Binary, Cond
  } k;
  int line = 0;
  Value lit;
  std::string name;           // Name, Attr, Call (callee name), Filter, Test, Binary op
  std::vector<ExprP> kids;    // operands; Call/Filter/Test: [object?] + positional + kwargs
  std::vector<std::string> kw;   // kwarg names (the last kw.size() of kids)
  bool negate = false;        // `is not`, `not in`
  bool has_object = false;    // Call: a method call (kids[0] is the object)
};

ExprP make(Expr::K k, int line) {
  auto e = std::make_unique<Expr>();
  e->k = k;
  e->line = line;
  return e;
}

class ExprParser {
 public:
  ExprParser(std::vector<Tok> toks, int line) : t_(std::move(toks)), line_(line) {}

  ExprP parse_expression() { return parse_cond(); }
  bool at_end() const { return peek().t == Tok::T::End; }
  const Tok& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).t == Tok::T::Op && peek(k).s == op; }
  bool is_name(const char* nm, size_t k = 0) const { return peek(k).t == Tok::T::Name && peek(k).s == nm; }
  Tok next() { return t_[std::min(p_++, t_.size() - 1)]; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(line_, std::string("expected '") + op + "', got '" + peek().s + "'");
    ++p_;
  }
  std::string expect_name() {
    if (peek().t != Tok::T::Name) fail(line_, "expected a name, got '" + peek().s + "'");
    return next().s;
  }
  void expect_end() {
    if (!at_end()) fail(line_, "unexpected '" + peek().s + "'");
  }
  int line() const { return line_; }

  ExprP parse_cond() {
    ExprP e = parse_or();
    while (is_name("if")) {
      ++p_;
      auto c = make(Expr::K::Cond, line_);
      ExprP cond = parse_or();
      ExprP other;
      if (is_name("else")) {
        ++p_;
        other = parse_cond();
      }
      c->kids.push_back(std::move(e));
      c->kids.push_back(std::move(cond));
      if (other) c->kids.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }
  ExprP parse_or() {
    ExprP e = parse_and();
    while (is_name("or")) {
      ++p_;
      auto o = make(Expr::K::Or, line_);
      o->kids.push_back(std::move(e));
      o->kids.push_back(parse_and());
      e = std::move(o);
    }
    return e;
  }
  ExprP parse_and() {
    ExprP e = parse_not();
    while (is_name("and")) {
      ++p_;
      auto o = make(Expr::K::And, line_);
      o->kids.push_back(std::move(e));
      o->kids.push_back(parse_not());
      e = std::move(o);
    }
    return e;
  }
  ExprP parse_not() {
    if (is_name("not")) {
      ++p_;
      auto o = make(Expr::K::Not, line_);
      o->kids.push_back(parse_not());
      return o;
    }
    return parse_compare();
  }
  ExprP parse_compare() {
    ExprP e = parse_math1();
    for (;;) {
      std::string op;
      bool neg = false;
      if (peek().t == Tok::T::Op && (peek().s == "==" || peek().s == "!=" || peek().s == "<" || peek().s == ">" ||
                                     peek().s == "<=" || peek().s == ">=")) {
        op = next().s;
      } else if (is_name("in")) {
        ++p_;
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        p_ += 2;
        op = "in";
        neg = true;
      } else {
        break;
      }
      auto b = make(Expr::K::Binary, line_);
      b->name = op;
      b->negate = neg;
      b->kids.push_back(std::move(e));
      b->kids.push_back(parse_math1());
      e = std::move(b);
    }
    return e;
  }
  ExprP binary(ExprP l, const std::string& op, ExprP r) {
    auto b = make(Expr::K::Binary, line_);
    b->name = op;
    b->kids.push_back(std::move(l));
    b->kids.push_back(std::move(r));
    return b;
  }
  ExprP parse_math1() {
    ExprP e = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().s;
      e = binary(std::move(e), op, parse_concat());
    }
    return e;
  }
  ExprP parse_concat() {
    ExprP e = parse_math2();
    while (is_op("~")) {
      ++p_;
      e = binary(std::move(e), "~", parse_math2());
    }
    return e;
  }
  ExprP parse_math2() {
    ExprP e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().s;
      e = binary(std::move(e), op, parse_pow());
    }
    return e;
  }
  ExprP parse_pow() {
    ExprP e = parse_unary();
    while (is_op("**")) {
      ++p_;
      e = binary(std::move(e), "**", parse_unary());
    }
    return e;
  }
  ExprP parse_unary() {
    if (is_op("-") || is_op("+")) {
      bool neg = next().s == "-";
      auto u = make(neg ? Expr::K::Neg : Expr::K::Pos, line_);
      u->kids.push_back(parse_unary());
      return u;
    }
    ExprP e = parse_postfix(parse_primary());
    return parse_filters(std::move(e));
  }

  void parse_args(Expr& call) {
    // after '(' ; positional then keyword arguments
    std::vector<ExprP> pos;
    std::vector<std::pair<std::string, ExprP>> kws;
    while (!is_op(")")) {
      if (peek().t == Tok::T::Name && is_op("=", 1)) {
        std::string k = next().s;
        ++p_;
        kws.emplace_back(k, parse_expression());
      } else {
        if (!kws.empty()) fail(line_, "positional argument after keyword argument");
        pos.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      ++p_;
    }
    expect_op(")");
    for (auto& a : pos) call.kids.push_back(std::move(a));
    for (auto& [k, v] : kws) {
      call.kw.push_back(k);
      call.kids.push_back(std::move(v));
    }
  }

  ExprP parse_primary() {
    const Tok& t = peek();
    if (t.t == Tok::T::Str) {
      auto e = make(Expr::K::Literal, line_);
      std::string s = next().s;
      while (peek().t == Tok::T::Str) s += next().s;   // adjacent literals concatenate
      e->lit = Value(s);
      return e;
    }
    if (t.t == Tok::T::Int || t.t == Tok::T::Float) {
      auto e = make(Expr::K::Literal, line_);
      Tok n = next();
      e->lit = n.t == Tok::T::Int ? Value(n.i) : Value(n.f);
      return e;
    }
    if (t.t == Tok::T::Name) {
      std::string nm = next().s;
      auto e = make(Expr::K::Literal, line_);
      if (nm == "true" || nm == "True") e->lit = Value(true);
      else if (nm == "false" || nm == "False") e->lit = Value(false);
      else if (nm == "none" || nm == "None") e->lit = Value::none();
      else {
        e->k = Expr::K::Name;
        e->name = nm;
      }
      return e;
    }
    if (is_op("(")) {
      ++p_;
      if (is_op(")")) {
        ++p_;
        auto e = make(Expr::K::TupleLit, line_);
        return e;
      }
      ExprP first = parse_expression();
      if (is_op(",")) {
        auto tup = make(Expr::K::TupleLit, line_);
        tup->kids.push_back(std::move(first));
        while (is_op(",")) {
          ++p_;
          if (is_op(")")) break;
          tup->kids.push_back(parse_expression());
        }
        expect_op(")");
        return tup;
      }
      expect_op(")");
      return first;
    }
    if (is_op("[")) {
      ++p_;
      auto e = make(Expr::K::ListLit, line_);
      while (!is_op("]")) {
        e->kids.push_back(parse_expression());
        if (!is_op(",")) break;
        ++p_;
      }
      expect_op("]");
      return e;
    }
    if (is_op("{")) {
      ++p_;
      auto e = make(Expr::K::DictLit, line_);
      while (!is_op("}")) {
        e->kids.push_back(parse_expression());
        expect_op(":");
        e->kids.push_back(parse_expression());
        if (!is_op(",")) break;
        ++p_;
      }
      expect_op("}");
      return e;
    }
    fail(line_, t.t == Tok::T::End ? "unexpected end of expression" : "unexpected '" + t.s + "'");
  }

  ExprP parse_postfix(ExprP e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        auto a = make(Expr::K::Attr, line_);
        if (peek().t == Tok::T::Int) a->name = std::to_string(next().i);
        else a->name = expect_name();
        a->kids.push_back(std::move(e));
        e = std::move(a);
      } else if (is_op("[")) {
        ++p_;
        ExprP parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = parse_expression();
          if (k < 2 && is_op(":")) {
            ++p_;
            slice = true;
          } else {
            break;
          }
        }
        expect_op("]");
        auto it = make(slice ? Expr::K::Slice : Expr::K::Item, line_);
        it->kids.push_back(std::move(e));
        if (slice) {
          for (auto& p : parts) it->kids.push_back(std::move(p));   // may be null
        } else {
          if (!parts[0]) fail(line_, "empty subscript");
          it->kids.push_back(std::move(parts[0]));
        }
        e = std::move(it);
      } else if (is_op("(")) {
        ++p_;
        auto c = make(Expr::K::Call, line_);
        if (e->k == Expr::K::Name) {
          c->name = e->name;
        } else if (e->k == Expr::K::Attr) {
          c->name = e->name;
          c->has_object = true;
          c->kids.push_back(std::move(e->kids[0]));
        } else {
          fail(line_, "only functions and methods can be called");
        }
        parse_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprP parse_filters(ExprP e) {
    for (;;) {
      if (is_op("|")) {
        ++p_;
        auto f = make(Expr::K::Filter, line_);
        f->name = expect_name();
        f->kids.push_back(std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_args(*f);
        }
        e = std::move(f);
      } else if (is_name("is")) {
        ++p_;
        auto t = make(Expr::K::Test, line_);
        if (is_name("not")) {
          ++p_;
          t->negate = true;
        }
        if (is_name("none") || is_name("None")) {
          ++p_;
          t->name = "none";
        } else if (is_name("true") || is_name("True") || is_name("false") || is_name("False")) {
          t->name = next().s;
          for (char& ch : t->name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        } else if (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">=")) {
          t->name = next().s;
        } else {
          t->name = expect_name();
        }
        t->kids.push_back(std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_args(*t);
        } else if (peek().t == Tok::T::Str || peek().t == Tok::T::Int || peek().t == Tok::T::Float ||
                   (peek().t == Tok::T::Name && !is_name("and") && !is_name("or") && !is_name("else") &&
                    !is_name("if") && !is_name("is") && !is_name("in") && !is_name("not"))) {
          t->kids.push_back(parse_primary());   // `is divisibleby 3`, `is equalto 'x'`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

 private:
  std::vector<Tok> t_;
  size_t p_ = 0;
  int line_;
};

}  // namespace

// ---- statements -------------------------------------------------------------------------

struct Template::Node {
  enum class K { Text, Output, If, For, Set, Break, Continue } k;
  int line = 0;
  std::string text;                       // Text
  ExprP expr;                             // Output, Set value, For iterable
  // If: (condition or null for else, body) in order
  std::vector<std::pair<ExprP, std::vector<std::unique_ptr<Node>>>> branches;
  // For
  std::vector<std::string> targets;
  ExprP filter;
  std::vector<std::unique_ptr<Node>> body, else_body;
  // Set: name, or object name + attribute
  std::string set_name, set_attr;
};

namespace {

using NodeP = std::unique_ptr<Template::Node>;

class StmtParser {
 public:
  explicit StmtParser(std::vector<Segment> segs) : segs_(std::move(segs)) {}

  // Parses nodes until one of `ends` (a statement keyword) is met; returns that keyword
  // ("" at the end of the template) and leaves its parser in `end_parser`.
  std::string parse_body(std::vector<NodeP>& out, const std::vector<std::string>& ends,
                         std::unique_ptr<ExprParser>& end_parser) {
    while (i_ < segs_.size()) {
      const Segment& seg = segs_[i_++];
      if (seg.type == Segment::Type::Text) {
        auto n = std::make_unique<Template::Node>();
        n->k = Template::Node::K::Text;
        n->text = seg.text;
        n->line = seg.line;
        out.push_back(std::move(n));
        continue;
      }
      auto p = std::make_unique<ExprParser>(tokenize(seg.text, seg.line), seg.line);
      if (seg.type == Segment::Type::Expr) {
        auto n = std::make_unique<Template::Node>();
        n->k = Template::Node::K::Output;
        n->line = seg.line;
        n->expr = p->parse_expression();
        p->expect_end();
        out.push_back(std::move(n));
        continue;
      }
      if (p->at_end()) fail(seg.line, "empty {% %} tag");
      std::string kw = p->expect_name();
      if (std::find(ends.begin(), ends.end(), kw) != ends.end()) {
        end_parser = std::move(p);
        return kw;
      }
      out.push_back(parse_statement(kw, *p, seg.line));
    }
    if (!ends.empty()) fail(segs_.empty() ? 1 : segs_.back().line, "missing {% " + ends.back() + " %}");
    return "";
  }

 private:
  NodeP parse_statement(const std::string& kw, ExprParser& p, int line) {
    auto n = std::make_unique<Template::Node>();
    n->line = line;
    std::unique_ptr<ExprParser> endp;
    if (kw == "if") {
      n->k = Template::Node::K::If;
      ExprP cond = p.parse_expression();
      p.expect_end();
      for (;;) {
        std::vector<NodeP> body;
        std::string end = parse_body(body, {"elif", "else", "endif"}, endp);
        n->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "endif") {
          endp->expect_end();
          break;
        }
        if (end == "else") {
          endp->expect_end();
          std::vector<NodeP> else_body;
          parse_body(else_body, {"endif"}, endp);
          endp->expect_end();
          n->branches.emplace_back(nullptr, std::move(else_body));
          break;
        }
        cond = endp->parse_expression();   // elif
        endp->expect_end();
      }
      return n;
    }
    if (kw == "for") {
      n->k = Template::Node::K::For;
      n->targets.push_back(p.expect_name());
      while (p.is_op(",")) {
        p.next();
        n->targets.push_back(p.expect_name());
      }
      if (!p.is_name("in")) fail(line, "expected 'in' in for loop");
      p.next();
      n->expr = p.parse_or();   // not parse_cond: a trailing `if` filters the loop
      if (p.is_name("if")) {
        p.next();
        n->filter = p.parse_or();
      }
      if (p.is_name("recursive")) fail(line, "unsupported Jinja feature 'recursive' loops");
      p.expect_end();
      std::string end = parse_body(n->body, {"else", "endfor"}, endp);
      endp->expect_end();
      if (end == "else") {
        parse_body(n->else_body, {"endfor"}, endp);
        endp->expect_end();
      }
      return n;
    }
    if (kw == "set") {
      n->k = Template::Node::K::Set;
      n->set_name = p.expect_name();
      if (p.is_op(".")) {
        p.next();
        n->set_attr = p.expect_name();
      }
      if (p.is_op(",")) fail(line, "unsupported Jinja feature: tuple assignment in set");
      if (!p.is_op("=")) fail(line, "unsupported Jinja feature: block {% set %} (use {% set x = ... %})");
      p.next();
      n->expr = p.parse_expression();
      p.expect_end();
      return n;
    }
    if (kw == "break" || kw == "continue") {
      n->k = kw == "break" ? Template::Node::K::Break : Template::Node::K::Continue;
      p.expect_end();
      return n;
    }
    if (kw == "generation") {
      // transformers' AssistantTracker: renders its body unchanged.
      p.expect_end();
      n->k = Template::Node::K::If;
      auto yes = make(Expr::K::Literal, line);
      yes->lit = Value(true);
      std::vector<NodeP> body;
      parse_body(body, {"endgeneration"}, endp);
      endp->expect_end();
      n->branches.emplace_back(std::move(yes), std::move(body));
      return n;
    }
    fail(line, "unsupported Jinja tag '" + kw + "'");
  }

  std::vector<Segment> segs_;
  size_t i_ = 0;
};

// ---- evaluation -------------------------------------------------------------------------

enum class Flow { Normal, Break, Continue };

struct Ctx {
  std::vector<std::map<std::string, Value>> scopes;
  std::string out;

  Value lookup(const std::string& name) const {
    for (size_t i = scopes.size(); i-- > 0;) {
      auto it = scopes[i].find(name);
      if (it != scopes[i].end()) return it->second;
    }
    return Value();
  }
};

int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + int64_t(n) : i; }

std::string upper_lower(const std::string& s, bool upper) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    auto c = utf8proc_int32_t(utf8::next(s, i));
    utf8::append(out, uint32_t(upper ? utf8proc_toupper(c) : utf8proc_tolower(c)));
  }
  return out;
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::u32string u = to_u32(s);
  std::u32string set;
  bool ws = chars.is_none() || chars.is_undefined();
  if (!ws) {
    if (!chars.is_string()) throw JinjaError("strip arg must be None or str");
    set = to_u32(chars.s());
  }
  auto strip_it = [&](char32_t c) { return ws ? py_space(c) : set.find(c) != std::u32string::npos; };
  size_t a = 0, b = u.size();
  if (left)
    while (a < b && strip_it(u[a])) ++a;
  if (right)
    while (b > a && strip_it(u[b - 1])) --b;
  return from_u32(u.substr(a, b - a));
}

List py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (sep.is_none() || sep.is_undefined()) {
    std::u32string u = to_u32(s);
    size_t i = 0;
    while (i < u.size()) {
      while (i < u.size() && py_space(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        out.push_back(Value(from_u32(u.substr(i))));   // Python keeps the rest (rstrip not applied)
        size_t e = u.size();
        while (e > i && py_space(u[e - 1])) --e;
        out.back() = Value(from_u32(u.substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < u.size() && !py_space(u[j])) ++j;
      out.push_back(Value(from_u32(u.substr(i, j - i))));
      i = j;
    }
    return out;
  }
  if (!sep.is_string()) throw JinjaError("split: separator must be a string");
  const std::string& d = sep.s();
  if (d.empty()) throw JinjaError("split: empty separator");
  size_t start = 0;
  for (;;) {
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) break;
    size_t at = s.find(d, start);
    if (at == std::string::npos) break;
    out.push_back(Value(s.substr(start, at - start)));
    start = at + d.size();
  }
  out.push_back(Value(s.substr(start)));
  return out;
}

class Evaluator {
 public:
  explicit Evaluator(Ctx& ctx) : c_(ctx) {}

  Flow exec(const std::vector<NodeP>& body) {
    for (const NodeP& n : body) {
      Flow f = exec(*n);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Template::Node& n) {
    using K = Template::Node::K;
    switch (n.k) {
      case K::Text: c_.out += n.text; return Flow::Normal;
      case K::Output: c_.out += eval(*n.expr).str(); return Flow::Normal;
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
            fail(n.line, "cannot assign attribute on '" + n.set_name + "' (" + obj.type_name() + "), only on a namespace()");
          if (!n.set_attr.empty() && n.set_attr[0] == '_') fail(n.line, "namespace attributes cannot start with '_'");
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

  Flow exec_for(const Template::Node& n) {
    Value seq = eval(*n.expr);
    List items;
    if (seq.is_list()) items = seq.list();
    else if (seq.is_mapping()) for (const auto& kv : seq.dict()) items.push_back(Value(kv.first));
    else if (seq.is_string()) {
      size_t i = 0;
      while (i < seq.s().size()) {
        size_t st = i;
        utf8::next(seq.s(), i);
        items.push_back(Value(seq.s().substr(st, i - st)));
      }
    } else if (!seq.is_undefined() && !seq.is_none()) {
      fail(n.line, "'" + seq.type_name() + "' object is not iterable");
    } else if (seq.is_none()) {
      fail(n.line, "'NoneType' object is not iterable");
    }
    auto bind = [&](std::map<std::string, Value>& scope, const Value& item) {
      if (n.targets.size() == 1) {
        scope[n.targets[0]] = item;
        return;
      }
      if (!item.is_list() || item.list().size() != n.targets.size())
        fail(n.line, "cannot unpack " + item.type_name() + " into " + std::to_string(n.targets.size()) + " names");
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

  Value eval(const Expr& e) {
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
          if (!k.is_string()) fail(e.line, "only string keys are supported in dict literals");
          d.emplace_back(k.s(), eval(*e.kids[i + 1]));
        }
        return Value(std::move(d));
      }
      case K::Attr: return attr(eval(*e.kids[0]), e.name, e.line);
      case K::Item: return item(eval(*e.kids[0]), eval(*e.kids[1]), e.line);
      case K::Slice: return slice(e);
      case K::Call: return call(e);
      case K::Filter: return filter(e);
      case K::Test: {
        bool r = test(e);
        return Value(e.negate ? !r : r);
      }
      case K::Neg: case K::Pos: {
        Value v = eval(*e.kids[0]);
        if (!v.is_number() && v.kind() != Value::Kind::Bool) fail(e.line, "bad operand type for unary -: '" + v.type_name() + "'");
        if (e.k == K::Pos) return v;
        return v.kind() == Value::Kind::Float ? Value(-v.f()) : Value(-v.i());
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

 private:
  [[noreturn]] void undefined_error(int line, const std::string& what) { fail(line, what + " is undefined"); }

  Value attr(const Value& obj, const std::string& name, int line) {
    if (obj.is_undefined()) undefined_error(line, "value (attribute '" + name + "' of it)");
    if (obj.is_mapping()) return obj.get(name);
    if (obj.is_list() && !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
      return item(obj, Value(int64_t(std::stoll(name))), line);
    return Value();   // Jinja: missing attribute -> undefined
  }

  Value item(const Value& obj, const Value& key, int line) {
    if (obj.is_undefined()) undefined_error(line, "value (item of it)");
    if (obj.is_mapping()) {
      if (!key.is_string()) return Value();
      return obj.get(key.s());
    }
    if (obj.is_list() || obj.is_string()) {
      if (!key.is_int() && key.kind() != Value::Kind::Bool) fail(line, "indices must be integers, not " + key.type_name());
      if (obj.is_list()) {
        int64_t i = norm_index(key.i(), obj.list().size());
        if (i < 0 || i >= int64_t(obj.list().size())) return Value();   // Jinja: undefined
        return obj.list()[size_t(i)];
      }
      std::u32string u = to_u32(obj.s());
      int64_t i = norm_index(key.i(), u.size());
      if (i < 0 || i >= int64_t(u.size())) return Value();
      return Value(from_u32(u.substr(size_t(i), 1)));
    }
    return Value();
  }

  Value slice(const Expr& e) {
    Value obj = eval(*e.kids[0]);
    auto opt = [&](size_t k, int64_t def) -> int64_t {
      if (!e.kids[k]) return def;
      Value v = eval(*e.kids[k]);
      if (v.is_none()) return def;
      if (!v.is_int()) fail(e.line, "slice indices must be integers");
      return v.i();
    };
    int64_t step = opt(3, 1);
    if (step == 0) fail(e.line, "slice step cannot be zero");
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
      std::u32string u = to_u32(obj.s()), out;
      do_slice(int64_t(u.size()), [&](int64_t i) { out += u[size_t(i)]; });
      return Value(from_u32(out));
    }
    if (obj.is_undefined()) undefined_error(e.line, "value (sliced)");
    fail(e.line, "'" + obj.type_name() + "' object is not subscriptable");
  }

  // Positional and keyword arguments of a call/filter/test, after `skip` leading kids.
  struct Args {
    List pos;
    std::map<std::string, Value> kw;
    Value get(size_t i, const std::string& name, Value def = Value()) const {
      if (i < pos.size()) return pos[i];
      auto it = kw.find(name);
      return it == kw.end() ? def : it->second;
    }
  };
  Args args(const Expr& e, size_t skip) {
    Args a;
    size_t n_kw = e.kw.size();
    size_t n_pos = e.kids.size() - skip - n_kw;
    for (size_t i = 0; i < n_pos; ++i) a.pos.push_back(eval(*e.kids[skip + i]));
    for (size_t i = 0; i < n_kw; ++i) a.kw[e.kw[i]] = eval(*e.kids[skip + n_pos + i]);
    return a;
  }

  Value call(const Expr& e) {
    if (!e.has_object) {
      Args a = args(e, 0);
      if (e.name == "raise_exception")
        throw JinjaError("chat template raised an exception: " + a.get(0, "message").str());
      if (e.name == "namespace") {
        Dict d;
        for (const Value& p : a.pos) {
          if (!p.is_mapping()) fail(e.line, "namespace() takes keyword arguments or a dict");
          for (const auto& kv : p.dict()) d.push_back(kv);
        }
        for (const auto& [k, v] : a.kw) {
          if (!k.empty() && k[0] == '_') fail(e.line, "namespace attributes cannot start with '_'");
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
        if (step == 0) fail(e.line, "range() step must not be zero");
        List l;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) l.push_back(Value(i));
        return Value(std::move(l));
      }
      if (e.name == "dict") {
        Dict d;
        for (const auto& [k, v] : a.kw) d.emplace_back(k, v);
        return Value(std::move(d));
      }
      if (e.name == "strftime_now")
        fail(e.line, "strftime_now() is not supported (the prompt would depend on today's date)");
      Value f = c_.lookup(e.name);
      fail(e.line, f.is_undefined() ? "'" + e.name + "' is undefined" : "'" + e.name + "' is not callable");
    }
    Value obj = eval(*e.kids[0]);
    Args a = args(e, 1);
    const std::string& m = e.name;
    if (obj.is_string()) {
      const std::string& s = obj.s();
      if (m == "startswith" || m == "endswith") {
        Value p = a.get(0, "prefix");
        List cands = p.is_list() ? p.list() : List{p};
        for (const Value& c : cands) {
          if (!c.is_string()) fail(e.line, m + " arg must be str or a tuple of str");
          const std::string& x = c.s();
          bool hit = m == "startswith" ? s.compare(0, x.size(), x) == 0 && s.size() >= x.size()
                                       : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
          if (hit) return Value(true);
        }
        return Value(false);
      }
      if (m == "strip") return Value(py_strip(s, a.get(0, "chars", Value::none()), true, true));
      if (m == "lstrip") return Value(py_strip(s, a.get(0, "chars", Value::none()), true, false));
      if (m == "rstrip") return Value(py_strip(s, a.get(0, "chars", Value::none()), false, true));
      if (m == "split") {
        Value ms = a.get(1, "maxsplit", Value(int64_t(-1)));
        return Value(py_split(s, a.get(0, "sep", Value::none()), ms.i()));
      }
      if (m == "upper") return Value(upper_lower(s, true));
      if (m == "lower") return Value(upper_lower(s, false));
      if (m == "replace") {
        std::string from = a.get(0, "old").str(), to = a.get(1, "new").str();
        int64_t count = a.get(2, "count", Value(int64_t(-1))).i();
        if (from.empty()) fail(e.line, "replace() with an empty pattern is not supported");
        std::string out;
        size_t start = 0;
        int64_t done = 0;
        for (size_t at; (count < 0 || done < count) && (at = s.find(from, start)) != std::string::npos; ++done) {
          out += s.substr(start, at - start) + to;
          start = at + from.size();
        }
        return Value(out + s.substr(start));
      }
      if (m == "find" || m == "count") {
        std::string x = a.get(0, "sub").str();
        if (m == "find") {
          size_t at = s.find(x);
          if (at == std::string::npos) return Value(int64_t(-1));
          return Value(int64_t(to_u32(s.substr(0, at)).size()));
        }
        if (x.empty()) return Value(int64_t(to_u32(s).size() + 1));
        int64_t n = 0;
        for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
        return Value(n);
      }
      if (m == "join") {
        Value l = a.get(0, "iterable");
        std::string out;
        if (l.is_list())
          for (size_t i = 0; i < l.list().size(); ++i) out += (i ? s : "") + l.list()[i].str();
        return Value(out);
      }
      if (m == "title" || m == "capitalize") return filter_by_name(m, obj, Args{}, e.line);
      fail(e.line, "unsupported string method '" + m + "'");
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
    if (obj.is_undefined()) undefined_error(e.line, "value (method '" + m + "' of it)");
    fail(e.line, "unsupported method '" + m + "' on " + obj.type_name());
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.kids[0]);
    return filter_by_name(e.name, v, args(e, 1), e.line);
  }

  Value filter_by_name(const std::string& f, const Value& v, const Args& a, int line) {
    if (f == "length" || f == "count") {
      if (v.is_string()) return Value(int64_t(to_u32(v.s()).size()));
      if (v.is_list()) return Value(int64_t(v.list().size()));
      if (v.is_mapping()) return Value(int64_t(v.dict().size()));
      if (v.is_undefined()) return Value(int64_t(0));
      fail(line, "object of type '" + v.type_name() + "' has no len()");
    }
    if (f == "tojson") {
      Value ind = a.get(0, "indent", Value::none());
      return Value(v.to_json(ind.is_none() ? -1 : int(ind.i())));
    }
    if (f == "string") return Value(v.str());
    if (f == "safe" || f == "e" || f == "escape") {
      if (f != "safe") fail(line, "unsupported filter '" + f + "'");
      return v;
    }
    if (f == "trim") return Value(py_strip(v.str(), a.get(0, "chars", Value::none()), true, true));
    if (f == "upper") return Value(upper_lower(v.str(), true));
    if (f == "lower") return Value(upper_lower(v.str(), false));
    if (f == "capitalize" || f == "title") {
      std::u32string u = to_u32(v.str());
      bool start = true;
      for (size_t i = 0; i < u.size(); ++i) {
        auto c = utf8proc_int32_t(u[i]);
        bool alpha = utf8proc_category(c) >= UTF8PROC_CATEGORY_LU && utf8proc_category(c) <= UTF8PROC_CATEGORY_LO;
        if (f == "capitalize") u[i] = char32_t(i == 0 ? utf8proc_toupper(c) : utf8proc_tolower(c));
        else {
          u[i] = char32_t(start ? utf8proc_toupper(c) : utf8proc_tolower(c));
          start = !alpha;
        }
      }
      return Value(from_u32(u));
    }
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
        std::u32string u = to_u32(v.s());
        if (u.empty()) return Value();
        return Value(from_u32(std::u32string(1, f == "first" ? u.front() : u.back())));
      }
      fail(line, f + " of " + v.type_name());
    }
    if (f == "list") {
      if (v.is_list()) return v;
      List l;
      if (v.is_string()) {
        size_t i = 0;
        while (i < v.s().size()) {
          size_t st = i;
          utf8::next(v.s(), i);
          l.push_back(Value(v.s().substr(st, i - st)));
        }
      } else if (v.is_mapping()) {
        for (const auto& kv : v.dict()) l.push_back(Value(kv.first));
      }
      return Value(std::move(l));
    }
    if (f == "reverse") {
      if (v.is_list()) {
        List l(v.list().rbegin(), v.list().rend());
        return Value(std::move(l));
      }
      std::u32string u = to_u32(v.str());
      std::reverse(u.begin(), u.end());
      return Value(from_u32(u));
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
        }
      return Value(out);
    }
    if (f == "int") {
      if (v.is_number()) return Value(int64_t(v.f()));
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
    if (f == "replace") {
      Args b;
      b.pos = a.pos;
      b.kw = a.kw;
      std::string s = v.str(), from = a.get(0, "old").str(), to = a.get(1, "new").str();
      if (from.empty()) fail(line, "replace with an empty pattern is not supported");
      std::string out;
      size_t start = 0;
      for (size_t at; (at = s.find(from, start)) != std::string::npos; start = at + from.size())
        out += s.substr(start, at - start) + to;
      return Value(out + s.substr(start));
    }
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
            ok = test_by_name(a.pos[1].str(), av, targs, line);
          }
          if (ok == (f == "selectattr")) l.push_back(x);
        }
      return Value(std::move(l));
    }
    if (f == "map") {
      Value attr_name = a.get(99, "attribute");
      if (!attr_name.is_string()) fail(line, "only map(attribute=...) is supported");
      List l;
      if (v.is_list())
        for (const Value& x : v.list()) l.push_back(x.get(attr_name.s()));
      return Value(std::move(l));
    }
    fail(line, "unsupported filter '" + f + "'");
  }

  bool test(const Expr& e) {
    Value v = eval(*e.kids[0]);
    return test_by_name(e.name, v, args(e, 1), e.line);
  }

  bool test_by_name(const std::string& t, const Value& v, const Args& a, int line) {
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
      if (!v.is_int()) fail(line, t + " needs an integer");
      return (v.i() % 2 == 0) == (t == "even");
    }
    if (t == "divisibleby") return v.i() % a.get(0, "num").i() == 0;
    if (t == "equalto" || t == "eq" || t == "==" || t == "sameas") return v == a.get(0, "other");
    if (t == "ne" || t == "!=") return !(v == a.get(0, "other"));
    if (t == "in") {
      Value c = a.get(0, "seq");
      return contains(c, v, line);
    }
    if (t == "lower" || t == "upper") return v.is_string() && upper_lower(v.s(), t == "upper") == v.s();
    fail(line, "unsupported test '" + t + "'");
  }

  bool contains(const Value& container, const Value& x, int line) {
    if (container.is_string()) {
      if (!x.is_string()) fail(line, "'in <string>' requires string as left operand, not " + x.type_name());
      return container.s().find(x.s()) != std::string::npos;
    }
    if (container.is_list()) {
      for (const Value& v : container.list())
        if (v == x) return true;
      return false;
    }
    if (container.is_mapping()) return x.is_string() && container.has(x.s());
    if (container.is_undefined()) undefined_error(line, "value (right of 'in')");
    fail(line, "argument of type '" + container.type_name() + "' is not iterable");
  }

  int compare(const Value& a, const Value& b, const std::string& op, int line) {
    if ((a.is_number() || a.kind() == Value::Kind::Bool) && (b.is_number() || b.kind() == Value::Kind::Bool))
      return a.f() < b.f() ? -1 : a.f() > b.f() ? 1 : 0;
    if (a.is_string() && b.is_string()) return a.s() < b.s() ? -1 : a.s() > b.s() ? 1 : 0;
    fail(line, "'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    Value a = eval(*e.kids[0]);
    Value b = eval(*e.kids[1]);
    if (op == "==") return Value(a == b);
    if (op == "!=") return Value(!(a == b));
    if (op == "<") return Value(compare(a, b, op, e.line) < 0);
    if (op == ">") return Value(compare(a, b, op, e.line) > 0);
    if (op == "<=") return Value(compare(a, b, op, e.line) <= 0);
    if (op == ">=") return Value(compare(a, b, op, e.line) >= 0);
    if (op == "in") {
      bool r = contains(b, a, e.line);
      return Value(e.negate ? !r : r);
    }
    if (op == "~") return Value(a.str() + b.str());
    if (a.is_undefined() || b.is_undefined()) undefined_error(e.line, "an operand of '" + op + "'");
    auto type_error = [&]() -> Value {
      fail(e.line, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
    };
    bool na = a.is_number() || a.kind() == Value::Kind::Bool, nb = b.is_number() || b.kind() == Value::Kind::Bool;
    bool ints = na && nb && a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float;
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value(a.s() + b.s());
      if (a.is_list() && b.is_list()) {
        List l = a.list();
        l.insert(l.end(), b.list().begin(), b.list().end());
        return Value(std::move(l));
      }
      if (ints) return Value(a.i() + b.i());
      if (na && nb) return Value(a.f() + b.f());
      return type_error();
    }
    if (op == "-") {
      if (ints) return Value(a.i() - b.i());
      if (na && nb) return Value(a.f() - b.f());
      return type_error();
    }
    if (op == "*") {
      if (ints) return Value(a.i() * b.i());
      if (na && nb) return Value(a.f() * b.f());
      if (a.is_string() && b.is_int()) {
        std::string s;
        for (int64_t i = 0; i < b.i(); ++i) s += a.s();
        return Value(s);
      }
      return type_error();
    }
    if (op == "/") {
      if (!(na && nb)) return type_error();
      if (b.f() == 0) fail(e.line, "division by zero");
      return Value(a.f() / b.f());
    }
    if (op == "//" || op == "%") {
      if (!(na && nb)) {
        if (op == "%" && a.is_string()) fail(e.line, "string formatting with % is not supported");
        return type_error();
      }
      if (b.f() == 0) fail(e.line, "division by zero");
      if (ints) {
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
      if (ints && b.i() >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < b.i(); ++i) r *= a.i();
        return Value(r);
      }
      if (na && nb) return Value(std::pow(a.f(), b.f()));
      return type_error();
    }
    fail(e.line, "unsupported operator '" + op + "'");
  }

  Ctx& c_;
};

}  // namespace

// ---- Template ---------------------------------------------------------------------------

Template::Template(const std::string& source) {
  StmtParser p(lex(source));
  std::unique_ptr<ExprParser> endp;
  p.parse_body(body_, {}, endp);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const std::map<std::string, Value>& variables) const {
  Ctx ctx;
  ctx.scopes.push_back(variables);
  ctx.scopes.emplace_back();   // the template's own top-level sets
  Evaluator ev(ctx);
  Flow f = ev.exec(body_);
  if (f != Flow::Normal) throw JinjaError("chat template: break/continue outside a loop");
  return ctx.out;
}

}  // namespace lmscope::jinja
