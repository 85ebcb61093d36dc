// Filters, tests and the str/dict methods the chat templates call, with Python's results.
#include "tests/jinja/jinja_test_util.h"

using namespace jinja_test;

namespace {

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(render("{{ 'héllo'|length }} {{ 'ab'|upper }} {{ 'ÀB'|lower }} {{ 'hello world'|title }} {{ 'hELLO'|capitalize }}"),
            "5 AB àb Hello World Hello");
  EXPECT_EQ(render("[{{ '  x  '|trim }}] {{ 'a-b-c'|replace('-', '+') }} {{ 'a-b-c'|replace('-', '+', 1) }} {{ 'abc'|reverse }}"),
            "[x] a+b+c a+b-c cba");
  EXPECT_EQ(render("{{ 42|string ~ '!' }} {{ '12'|int + 1 }} {{ 'x'|int }} {{ '2.5'|float }} {{ (-3)|abs }} {{ 'a'|safe }}"),
            "42! 13 0 2.5 3 a");
}

TEST(JinjaFilters, Lists) {
  std::map<std::string, Value> vars{{"messages", two_messages()}};
  EXPECT_EQ(render("{{ messages|length }} {{ (messages|first).role }} {{ (messages|last).content }}", vars),
            "2 user Hello!");
  EXPECT_EQ(render("{{ messages|map(attribute='role')|join(',') }} {{ messages|join('/', attribute='role') }}", vars),
            "user,assistant user/assistant");
  EXPECT_EQ(render("{{ messages|selectattr('role', 'equalto', 'user')|list|length }} "
                   "{{ messages|rejectattr('role', 'equalto', 'user')|map(attribute='role')|first }}",
                   vars),
            "1 assistant");
  EXPECT_EQ(render("{{ [3, 1, 2]|reverse|list }} {{ 'ab'|list }} {{ {'a': 1}|items|list }} {{ [1, 2]|count }}"),
            "[2, 1, 3] ['a', 'b'] [['a', 1]] 2");
}

TEST(JinjaFilters, DefaultAndToJson) {
  EXPECT_EQ(render("{{ nothing|default('d') }} {{ ''|default('e', true) }} {{ ''|d('f') }}|"), "d e |");
  EXPECT_EQ(render("{{ {'b': 2, 'a': [1, 2.5, none, true, 'x\"y', 'é']}|tojson }}"),
            R"({"b": 2, "a": [1, 2.5, null, true, "x\"y", "é"]})");
  EXPECT_EQ(render("{{ {'a': [1], 'b': {}}|tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}");
}

TEST(JinjaFilters, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }}",
                   {{"x", Value(1)}}),
            "True True True True True");
  EXPECT_EQ(render("{{ 1 is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ false is false }} {{ true is true }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ {} is mapping }} {{ [] is sequence }} {{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 1 is equalto 1 }} {{ 1 is ne 2 }} {{ 2 is in [1, 2] }} {{ 'ab' is lower }} {{ 'a' is not upper }}"),
            "True True True True True");
}

TEST(JinjaFilters, StringAndDictMethods) {
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ '  x  y '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'x'.split('y') }}"),
            "['a', 'b', '', 'c'] ['x', 'y'] ['a', 'b c'] ['x']");
  EXPECT_EQ(render("[{{ '  x '.strip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ '\n x'.lstrip() }}] [{{ 'x\n'.rstrip() }}]"),
            "[x] [hi] [x] [x]");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'Ab'.upper() }} {{ 'Ab'.lower() }}"),
            "True True AB ab");
  EXPECT_EQ(render("{{ 'aXbX'.replace('X', '-') }} {{ 'héllo'.find('l') }} {{ 'banana'.count('an') }} {{ '-'.join(['a', 'b']) }}"),
            "a-b- 2 2 a-b");
  EXPECT_EQ(render("{{ 'hi there'.title() }} {{ 'hI'.capitalize() }}"), "Hi There Hi");
  EXPECT_EQ(render("{{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('z', 0) }} {{ d.get('z') }}",
                   {{"d", Value(Dict{{"a", Value(1)}})}}),
            "['a'] [1] 1 0 None");
}

}  // namespace
