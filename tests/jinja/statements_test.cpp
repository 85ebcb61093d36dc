// Statements: if/elif/else, for (loop variables, else, filter, unpacking, break/continue),
// set and namespace, {% generation %}, comments and whitespace control as transformers
// configures Jinja (trim_blocks, lstrip_blocks, no trailing newline).
#include "tests/jinja/jinja_test_util.h"

using namespace jinja_test;

namespace {

TEST(JinjaStatements, IfElifElse) {
  const std::string t = "{% if x > 1 %}big{% elif x == 1 %}one{% else %}small{% endif %}";
  EXPECT_EQ(render(t, {{"x", Value(2)}}), "big");
  EXPECT_EQ(render(t, {{"x", Value(1)}}), "one");
  EXPECT_EQ(render(t, {{"x", Value(0)}}), "small");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}"),
            "<1>2 1<2>3 2<3> ");
}

TEST(JinjaStatements, ForElseFilterUnpackingAndDicts) {
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }} {% endfor %}"), "2/2 4/2 ");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");   // a dict iterates its keys
  EXPECT_EQ(render("{% for x in undefined_list %}x{% endfor %}"), "");
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "012");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "024");
  EXPECT_EQ(render("{{ range(3) }} {{ range(1, 7, 2) }} {{ range(3, 0, -1) }}"), "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
}

TEST(JinjaStatements, SetScopesAndNamespaces) {
  // A set inside a loop stays in the loop (Jinja's scoping); a namespace carries state out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% set d = dict(a=1) %}{{ d.a }} {{ namespace({'b': 2}).b }}"), "1 2");
}

TEST(JinjaStatements, GenerationRendersItsBody) {
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(JinjaStatements, WhitespaceControl) {
  std::map<std::string, Value> x{{"x", Value(1)}};
  EXPECT_EQ(render("a\n  {% if x %}\n  b\n  {% endif %}\nc\n", x), "a\n  b\nc");   // lstrip + trim_blocks
  EXPECT_EQ(render("a  {%- if x -%}  b  {%- endif %}", x), "ab");
  EXPECT_EQ(render("  {{ x }}  \n", x), "  1  ");   // expressions are not stripped; the last newline goes
  EXPECT_EQ(render("a {%+ if x %}b{% endif +%}\nc", x), "a b\nc");
  EXPECT_EQ(render("{# c #}\nx{# d -#}   y", x), "xy");
  EXPECT_EQ(render("line1\r\nline2\r\n", x), "line1\nline2");
}

}  // namespace
