#include "jinja/parser.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace lmscope::jinja {

namespace {

ExprP make(Expr::K k, Pos at) {
  auto e = std::make_unique<Expr>();
  e->k = k;
  e->at = at;
  return e;
}

// A token as an error message shows it.
std::string shown(const Tok& t) {
  if (t.t == Tok::T::End) return "end of the tag";
  if (t.t == Tok::T::Str) return "string '" + t.s + "'";
  if (t.t == Tok::T::Int) return std::to_string(t.i);
  if (t.t == Tok::T::Float) return "a number";
  return "'" + t.s + "'";
}

// ---- expressions ------------------------------------------------------------------------

// Makes `kid` an operand of `parent`, keeping the tree within kMaxExprDepth (error.h).
void adopt(Expr& parent, ExprP kid) {
  if (kid && kid->depth + 1 > parent.depth) {
    parent.depth = kid->depth + 1;
    if (parent.depth > kMaxExprDepth)
      fail(parent.at, "expression nested more than " + std::to_string(kMaxExprDepth) + " levels deep");
  }
  parent.kids.push_back(std::move(kid));
}

class ExprParser {
 public:
  explicit ExprParser(std::vector<Tok> toks) : t_(std::move(toks)) {}

  // Every sub-expression (in brackets, parentheses, arguments) starts here: its nesting is
  // bounded (kMaxExprNesting) before the recursion can run out of stack.
  ExprP parse_expression() { return nested(&ExprParser::parse_cond); }
  // Runs a parse step one nesting level deeper; so do `else`, `not` and unary `-` / `+`,
  // which recurse without brackets.
  ExprP nested(ExprP (ExprParser::*parse)()) {
    if (nesting_ >= kMaxExprNesting)
      fail(peek().at, "expression nested more than " + std::to_string(kMaxExprNesting) + " levels deep");
    ++nesting_;
    ExprP e = (this->*parse)();
    --nesting_;
    return e;
  }
  bool at_end() const { return peek().t == Tok::T::End; }
  const Tok& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).t == Tok::T::Op && peek(k).s == op; }
  bool is_name(const char* nm, size_t k = 0) const { return peek(k).t == Tok::T::Name && peek(k).s == nm; }
  Tok next() { return t_[std::min(p_++, t_.size() - 1)]; }
  Pos prev() const { return t_[std::min(p_ - 1, t_.size() - 1)].at; }   // of the token next() returned last
  void expect_op(const char* op) {
    if (!is_op(op)) fail(peek().at, std::string("expected '") + op + "', got " + shown(peek()));
    ++p_;
  }
  std::string expect_name() {
    if (peek().t != Tok::T::Name) fail(peek().at, "expected a name, got " + shown(peek()));
    return next().s;
  }
  void expect_end() {
    if (!at_end()) fail(peek().at, "unexpected " + shown(peek()));
  }

  ExprP parse_cond() {
    ExprP e = parse_or();
    while (is_name("if")) {
      ++p_;
      auto c = make(Expr::K::Cond, prev());
      ExprP cond = parse_or();
      ExprP other;
      if (is_name("else")) {
        ++p_;
        other = nested(&ExprParser::parse_cond);
      }
      adopt(*c, std::move(e));
      adopt(*c, std::move(cond));
      if (other) adopt(*c, std::move(other));
      e = std::move(c);
    }
    return e;
  }
  ExprP parse_or() {
    ExprP e = parse_and();
    while (is_name("or")) {
      ++p_;
      auto o = make(Expr::K::Or, prev());
      adopt(*o, std::move(e));
      adopt(*o, parse_and());
      e = std::move(o);
    }
    return e;
  }
  ExprP parse_and() {
    ExprP e = parse_not();
    while (is_name("and")) {
      ++p_;
      auto o = make(Expr::K::And, prev());
      adopt(*o, std::move(e));
      adopt(*o, parse_not());
      e = std::move(o);
    }
    return e;
  }
  ExprP parse_not() {
    if (is_name("not")) {
      ++p_;
      auto o = make(Expr::K::Not, prev());
      adopt(*o, nested(&ExprParser::parse_not));
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
      auto b = make(Expr::K::Binary, prev());
      b->name = op;
      b->negate = neg;
      adopt(*b, std::move(e));
      adopt(*b, parse_math1());
      e = std::move(b);
    }
    return e;
  }
  ExprP binary(ExprP l, const Tok& op, ExprP r) {
    auto b = make(Expr::K::Binary, op.at);
    b->name = op.s;
    adopt(*b, std::move(l));
    adopt(*b, std::move(r));
    return b;
  }
  // One left-associative level: operand (op operand)*, for the operators in `ops`.
  ExprP binary_level(ExprP (ExprParser::*operand)(), std::initializer_list<const char*> ops) {
    ExprP e = (this->*operand)();
    for (;;) {
      const char* const* op = std::find_if(ops.begin(), ops.end(), [&](const char* o) { return is_op(o); });
      if (op == ops.end()) return e;
      Tok t = next();
      e = binary(std::move(e), t, (this->*operand)());
    }
  }
  ExprP parse_math1() { return binary_level(&ExprParser::parse_concat, {"+", "-"}); }
  ExprP parse_concat() { return binary_level(&ExprParser::parse_math2, {"~"}); }
  ExprP parse_math2() { return binary_level(&ExprParser::parse_pow, {"*", "/", "//", "%"}); }
  ExprP parse_pow() { return binary_level(&ExprParser::parse_unary, {"**"}); }
  ExprP parse_unary() {
    if (is_op("-") || is_op("+")) {
      bool neg = next().s == "-";
      auto u = make(neg ? Expr::K::Neg : Expr::K::Plus, prev());
      adopt(*u, nested(&ExprParser::parse_unary));
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
        if (!kws.empty()) fail(peek().at, "positional argument after keyword argument");
        pos.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      ++p_;
    }
    expect_op(")");
    for (auto& a : pos) adopt(call, std::move(a));
    for (auto& [k, v] : kws) {
      call.kw.push_back(k);
      adopt(call, std::move(v));
    }
  }

  ExprP parse_primary() {
    const Tok& t = peek();
    if (t.t == Tok::T::Str) {
      auto e = make(Expr::K::Literal, t.at);
      std::string s = next().s;
      while (peek().t == Tok::T::Str) s += next().s;   // adjacent literals concatenate
      e->lit = Value(s);
      return e;
    }
    if (t.t == Tok::T::Int || t.t == Tok::T::Float) {
      auto e = make(Expr::K::Literal, t.at);
      Tok n = next();
      e->lit = n.t == Tok::T::Int ? Value(n.i) : Value(n.f);
      return e;
    }
    if (t.t == Tok::T::Name) {
      std::string nm = next().s;
      auto e = make(Expr::K::Literal, t.at);
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
        auto e = make(Expr::K::TupleLit, t.at);
        return e;
      }
      ExprP first = parse_expression();
      if (is_op(",")) {
        auto tup = make(Expr::K::TupleLit, t.at);
        adopt(*tup, std::move(first));
        while (is_op(",")) {
          ++p_;
          if (is_op(")")) break;
          adopt(*tup, parse_expression());
        }
        expect_op(")");
        return tup;
      }
      expect_op(")");
      return first;
    }
    if (is_op("[")) {
      ++p_;
      auto e = make(Expr::K::ListLit, t.at);
      while (!is_op("]")) {
        adopt(*e, parse_expression());
        if (!is_op(",")) break;
        ++p_;
      }
      expect_op("]");
      return e;
    }
    if (is_op("{")) {
      ++p_;
      auto e = make(Expr::K::DictLit, t.at);
      while (!is_op("}")) {
        adopt(*e, parse_expression());
        expect_op(":");
        adopt(*e, parse_expression());
        if (!is_op(",")) break;
        ++p_;
      }
      expect_op("}");
      return e;
    }
    fail(t.at, "unexpected " + shown(t));
  }

  ExprP parse_postfix(ExprP e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        auto a = make(Expr::K::Attr, peek().at);
        if (peek().t == Tok::T::Int) a->name = std::to_string(next().i);
        else a->name = expect_name();
        adopt(*a, std::move(e));
        e = std::move(a);
      } else if (is_op("[")) {
        const Pos open = next().at;
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
        auto it = make(slice ? Expr::K::Slice : Expr::K::Item, open);
        adopt(*it, std::move(e));
        if (slice) {
          for (auto& p : parts) adopt(*it, std::move(p));   // may be null
        } else {
          if (!parts[0]) fail(open, "empty subscript");
          adopt(*it, std::move(parts[0]));
        }
        e = std::move(it);
      } else if (is_op("(")) {
        ++p_;
        auto c = make(Expr::K::Call, e->at);
        if (e->k == Expr::K::Name) {
          c->name = e->name;
        } else if (e->k == Expr::K::Attr) {
          c->name = e->name;
          c->has_object = true;
          adopt(*c, std::move(e->kids[0]));
        } else {
          fail(e->at, "only functions and methods can be called");
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
        auto f = make(Expr::K::Filter, peek().at);
        f->name = expect_name();
        adopt(*f, std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_args(*f);
        }
        e = std::move(f);
      } else if (is_name("is")) {
        ++p_;
        auto t = make(Expr::K::Test, peek().at);
        if (is_name("not")) {
          ++p_;
          t->negate = true;
        }
        t->at = peek().at;   // the test's name
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
        adopt(*t, std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_args(*t);
        } else if (peek().t == Tok::T::Str || peek().t == Tok::T::Int || peek().t == Tok::T::Float || is_op("[") ||
                   is_op("{") ||
                   (peek().t == Tok::T::Name && !is_name("and") && !is_name("or") && !is_name("else") &&
                    !is_name("if") && !is_name("is") && !is_name("in") && !is_name("not"))) {
          adopt(*t, parse_primary());   // `is divisibleby 3`, `is equalto 'x'`
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
  int nesting_ = 0;   // parse_expression / nested() levels now open
};


// ---- statements -------------------------------------------------------------------------

class StmtParser {
 public:
  explicit StmtParser(const Source& src) : src_(src), segs_(split_segments(src)) {}

  // Parses nodes until one of `ends` (a statement keyword) is met; returns that keyword
  // ("" at the end of the template) and leaves its parser in `end_parser`. `opener` is the
  // keyword of the statement whose body this is (null at the top level).
  std::string parse_body(Body& out, const std::vector<std::string>& ends, std::unique_ptr<ExprParser>& end_parser,
                         const Tok* opener = nullptr) {
    if (opener && tags_open_ >= kMaxTagNesting)
      fail(opener->at, "tags nested more than " + std::to_string(kMaxTagNesting) + " levels deep");
    struct Open {
      int& n;
      explicit Open(int& c) : n(++c) {}
      ~Open() { --n; }
    } open(tags_open_);
    while (i_ < segs_.size()) {
      const Segment& seg = segs_[i_++];
      if (seg.type == Segment::Type::Text) {
        auto n = std::make_unique<Node>();
        n->k = Node::K::Text;
        n->text = seg.text;
        n->at = src_.pos(seg.offset);
        out.push_back(std::move(n));
        continue;
      }
      auto p = std::make_unique<ExprParser>(tokenize(src_, seg));
      if (seg.type == Segment::Type::Expr) {
        auto n = std::make_unique<Node>();
        n->k = Node::K::Output;
        n->at = src_.pos(seg.offset);
        n->expr = p->parse_expression();
        p->expect_end();
        out.push_back(std::move(n));
        continue;
      }
      if (p->at_end()) fail(src_.pos(seg.offset), "empty {% %} tag");
      const Tok kw = p->peek();
      p->expect_name();
      if (std::find(ends.begin(), ends.end(), kw.s) != ends.end()) {
        end_parser = std::move(p);
        return kw.s;
      }
      out.push_back(parse_statement(kw, *p));
    }
    if (opener) fail(opener->at, "{% " + opener->s + " %} is never closed (no {% " + ends.back() + " %})");
    return "";
  }

 private:
  NodeP parse_statement(const Tok& keyword, ExprParser& p) {
    const std::string& kw = keyword.s;
    auto n = std::make_unique<Node>();
    n->at = keyword.at;
    std::unique_ptr<ExprParser> endp;
    if (kw == "if") {
      n->k = Node::K::If;
      ExprP cond = p.parse_expression();
      p.expect_end();
      for (;;) {
        Body body;
        std::string end = parse_body(body, {"elif", "else", "endif"}, endp, &keyword);
        n->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "endif") {
          endp->expect_end();
          break;
        }
        if (end == "else") {
          endp->expect_end();
          Body else_body;
          parse_body(else_body, {"endif"}, endp, &keyword);
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
      n->k = Node::K::For;
      n->targets.push_back(p.expect_name());
      while (p.is_op(",")) {
        p.next();
        n->targets.push_back(p.expect_name());
      }
      if (!p.is_name("in")) fail(p.peek().at, "expected 'in' in the for loop");
      p.next();
      n->expr = p.parse_or();   // not parse_cond: a trailing `if` filters the loop
      if (p.is_name("if")) {
        p.next();
        n->filter = p.parse_or();
      }
      if (p.is_name("recursive")) fail(p.peek().at, "unsupported Jinja feature: recursive loops");
      p.expect_end();
      ++loops_;
      std::string end = parse_body(n->body, {"else", "endfor"}, endp, &keyword);
      --loops_;
      endp->expect_end();
      if (end == "else") {
        parse_body(n->else_body, {"endfor"}, endp, &keyword);
        endp->expect_end();
      }
      return n;
    }
    if (kw == "set") {
      n->k = Node::K::Set;
      n->set_name = p.expect_name();
      if (p.is_op(".")) {
        p.next();
        n->set_attr = p.expect_name();
      }
      if (p.is_op(",")) fail(p.peek().at, "unsupported Jinja feature: tuple assignment in {% set %}");
      if (!p.is_op("=")) fail(p.peek().at, "unsupported Jinja feature: block {% set %} (use {% set x = ... %})");
      p.next();
      n->expr = p.parse_expression();
      p.expect_end();
      return n;
    }
    if (kw == "break" || kw == "continue") {
      if (loops_ == 0) fail(keyword.at, "{% " + kw + " %} outside a for loop");
      n->k = kw == "break" ? Node::K::Break : Node::K::Continue;
      p.expect_end();
      return n;
    }
    if (kw == "generation") {
      // transformers' AssistantTracker: renders its body unchanged.
      p.expect_end();
      n->k = Node::K::If;
      auto yes = make(Expr::K::Literal, keyword.at);
      yes->lit = Value(true);
      Body body;
      parse_body(body, {"endgeneration"}, endp, &keyword);
      endp->expect_end();
      n->branches.emplace_back(std::move(yes), std::move(body));
      return n;
    }
    fail(keyword.at, "unsupported Jinja tag '" + kw + "'");
  }

  const Source& src_;
  std::vector<Segment> segs_;
  int loops_ = 0;   // for-loop bodies we are in (break/continue need one)
  size_t i_ = 0;
  int tags_open_ = 0;   // bodies of tags now open (parse_body levels)
};

}  // namespace

Body parse(const Source& src) {
  StmtParser p(src);
  Body body;
  std::unique_ptr<ExprParser> endp;
  p.parse_body(body, {}, endp);
  return body;
}

}  // namespace lmscope::jinja
