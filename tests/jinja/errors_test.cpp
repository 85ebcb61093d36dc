// Errors: one line naming the template, the position (line:col, in characters) and the
// construct; unsupported Jinja is named as such. raise_exception is the template's own error.
#include "tests/jinja/jinja_test_util.h"

using namespace jinja_test;

namespace {

TEST(JinjaErrors, UnsupportedConstructsAreNamedWithTheirPosition) {
  const std::map<std::string, std::string> cases = {
      {"{% include 'x' %}", "template 1:4: unsupported Jinja tag 'include'"},
      {"ab\n  {% macro f() %}{% endmacro %}", "template 2:6: unsupported Jinja tag 'macro'"},
      {"{% raw %}x{% endraw %}", "template 1:4: unsupported Jinja tag 'raw'"},
      {"{%- call f() %}", "template 1:5: unsupported Jinja tag 'call'"},
      {"{% for x in xs recursive %}{% endfor %}", "template 1:16: unsupported Jinja feature: recursive loops"},
      {"{% set a, b = 1, 2 %}", "template 1:9: unsupported Jinja feature: tuple assignment in {% set %}"},
      {"{% set x %}y{% endset %}", "template 1:10: unsupported Jinja feature: block {% set %} (use {% set x = ... %})"},
      {"{{ x|wordcount }}", "template 1:6: unsupported filter 'wordcount'"},
      {"{{ x is callable }}", "template 1:9: unsupported test 'callable'"},
      {"{{ 'a'.zfill(3) }}", "template 1:8: unsupported string method 'zfill'"},
      {"{{ 'a %s' % 1 }}", "template 1:11: string formatting with % is not supported"},
      {"{{ x|map('upper') }}", "template 1:6: only map(attribute=...) is supported"},
      {"{{ strftime_now('%Y') }}", "template 1:4: strftime_now() is not supported (the prompt would depend on today's date)"},
  };
  for (const auto& [src, want] : cases) EXPECT_EQ(error_of(src, {{"x", Value(1)}, {"xs", Value(List{})}}), want) << src;
}

TEST(JinjaErrors, SyntaxErrorsPointAtTheirPlace) {
  EXPECT_EQ(error_of("{% if x %}a"), "template 1:4: {% if %} is never closed (no {% endif %})");
  EXPECT_EQ(error_of("a {{ x"), "template 1:3: '{{' is never closed (no '}}')");
  EXPECT_EQ(error_of("{{ 'abc }}"), "template 1:1: '{{' is never closed (no '}}')");
  EXPECT_EQ(error_of("{{ (1 + }}"), "template 1:9: unexpected end of the tag");
  EXPECT_EQ(error_of("{{ 1 2 }}"), "template 1:6: unexpected 2");
  EXPECT_EQ(error_of("{{ x ? 1 }}"), "template 1:6: unexpected character '?'");
  EXPECT_EQ(error_of("{% %}"), "template 1:3: empty {% %} tag");
  EXPECT_EQ(error_of("{% break %}"), "template 1:4: {% break %} outside a for loop");
  EXPECT_EQ(error_of("{% for x of y %}{% endfor %}"), "template 1:10: expected 'in' in the for loop");
  EXPECT_EQ(error_of("{{ f(a=1, 2) }}"), "template 1:11: positional argument after keyword argument");
  EXPECT_EQ(error_of("{{ 99999999999999999999 }}"), "template 1:4: number 99999999999999999999 is out of range");
}

TEST(JinjaErrors, ColumnsCountCharactersAndLinesFollowNewlines) {
  EXPECT_EQ(error_of("é€ {% macro %}"), "template 1:7: unsupported Jinja tag 'macro'");
  EXPECT_EQ(error_of("a\r\nb\r\n{{ x|nope }}"), "template 3:6: unsupported filter 'nope'");
}

TEST(JinjaErrors, RuntimeErrorsPointAtTheExpression) {
  EXPECT_EQ(error_of("{{ undefined_thing() }}"), "template 1:4: 'undefined_thing' is undefined");
  EXPECT_EQ(error_of("{{ x.a.b }}"), "template 1:6: value (attribute 'a' of it) is undefined");
  EXPECT_EQ(error_of("\n  {{ 1 / 0 }}"), "template 2:8: division by zero");
  EXPECT_EQ(error_of("{{ 1 < 'a' }}"), "template 1:6: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(error_of("{% for a, b in [1] %}{% endfor %}"), "template 1:4: cannot unpack int into 2 names");
  EXPECT_EQ(error_of("{{ 3 is divisibleby 0 }}"), "template 1:9: divisibleby 0: division by zero");
  // Errors of the Python helpers get the position of the expression that called them.
  EXPECT_EQ(error_of("{{ x|tojson }}"), "template 1:6: tojson: the value is undefined");
  EXPECT_EQ(error_of("{{ 'a'.split('') }}"), "template 1:8: split: empty separator");
}

TEST(JinjaErrors, TheTemplatesNameStartsTheMessage) {
  EXPECT_EQ(error_of("{% macro m() %}{% endmacro %}", {}, "chat template"), "chat template 1:4: unsupported Jinja tag 'macro'");
  EXPECT_EQ(error_of("{{ x|nope }}", {}, "chat template"), "chat template 1:6: unsupported filter 'nope'");
}

TEST(JinjaErrors, RaiseExceptionIsTheTemplatesOwnError) {
  try {
    render("{% if x %}{{ raise_exception('System first!') }}{% endif %}", {{"x", Value(true)}});
    FAIL() << "no error";
  } catch (const lmscope::jinja::RaisedError& e) {
    EXPECT_EQ(std::string(e.what()), "template raised an exception: System first!");
  }
}

}  // namespace
