// Expressions: literals, operators with Python's semantics, attribute/item access, slices,
// and values printed as Python's str() prints them.
#include "tests/jinja/jinja_test_util.h"

using namespace jinja_test;

namespace {

TEST(JinjaExpressions, ValuesPrintLikePython) {
  EXPECT_EQ(render("{{ none }} {{ true }} {{ False }} {{ 1.5 }} {{ 1.0 }} {{ 2.5e3 }} {{ 1e-5 }} {{ 1e16 }}"),
            "None True False 1.5 1.0 2500.0 1e-05 1e+16");
  EXPECT_EQ(render("{{ [1, 'a', none] }} {{ {'k': none, 'q': \"it's\"} }}"),
            "[1, 'a', None] {'k': None, 'q': \"it's\"}");
  EXPECT_EQ(render("{{ undefined_name }}|{{ {'a': 1}.b }}|"), "||");   // undefined prints as ""
  EXPECT_EQ(render("{{ {'a': {'b': 1}} }}"), "{'a': {'b': 1}}");   // "}}" inside brackets does not end the tag
}

TEST(JinjaExpressions, StringLiterals) {
  EXPECT_EQ(render(R"({{ 'a' "b" }} {{ 'tab\there' }} {{ '\u00e9\x41' }} {{ 'back\\slash' }})"),
            "ab tab\there éA back\\slash");
}

TEST(JinjaExpressions, ArithmeticAsInPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 1 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }}"),
            "3 -4 1 2 0.5 2.0 1024");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 1 + 2.5 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ -(3) }} {{ +3 }}"),
            "7 9 3.5 ababab [1, 2] -3 3");
  EXPECT_EQ(render("{{ 1 ~ 'a' ~ none }} {{ 'x' + 'y' }}"), "1aNone xy");
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ [1, 2] == [1, 2] }}"),
            "True False True True True True");
  // and/or return an operand, as in Python
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }}| {{ not 0 }} {{ not 'a' }}"), "x b | True False");
  EXPECT_EQ(render("{{ 'lo' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in ['a'] }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}]"), "y n []");
}

TEST(JinjaExpressions, AttributesItemsAndSlices) {
  std::map<std::string, Value> vars{{"messages", two_messages()}};
  EXPECT_EQ(render("{{ messages[0].role }} {{ messages[-1]['content'] }} {{ messages.1.role }}", vars),
            "user Hello! assistant");
  EXPECT_EQ(render("{{ messages[5] }}|{{ messages[0].missing }}|", vars), "||");   // undefined, not an error
  EXPECT_EQ(render("{{ 'abc'[::-1] }} {{ 'héllo'[1:3] }} {{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][::2] }} {{ 'abc'[-1] }}"),
            "cba él [2, 3, 4] [1, 3] c");
  EXPECT_EQ(render("{{ (messages|map(attribute='role')|list)[:1] }}", vars), "['user']");
}

}  // namespace
