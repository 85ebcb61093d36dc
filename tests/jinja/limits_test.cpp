// Hostile templates: integer arithmetic is checked (64-bit; overflow is an error naming the
// operation, where Python would make a big int) and a render has limits on range(), string
// size, output size and loop iterations (docs/jinja.md). Each ends in a one-line JinjaError,
// never a signal, a silent wrong number or a hang.
#include <chrono>

#include "tests/jinja/jinja_test_util.h"

using namespace jinja_test;

namespace {

const std::string kMin = "(-9223372036854775807 - 1)";

TEST(JinjaLimits, IntegerOverflowIsAnErrorNamingTheOperation) {
  // Were SIGFPE (INT64_MIN // -1, % -1) or silent wraparound.
  EXPECT_EQ(error_of("{{ " + kMin + " // -1 }}"),
            "template 1:31: integer overflow in -9223372036854775808 // -1 (integers are 64-bit)");
  EXPECT_EQ(render("{{ " + kMin + " % -1 }}"), "0");   // Python: 0
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"),
            "template 1:24: integer overflow in 9223372036854775807 + 1 (integers are 64-bit)");
  EXPECT_NE(error_of("{{ " + kMin + " - 1 }}").find("integer overflow in -9223372036854775808 - 1"), std::string::npos);
  EXPECT_NE(error_of("{{ 4294967296 * 4294967296 }}").find("integer overflow in 4294967296 * 4294967296"),
            std::string::npos);
  EXPECT_NE(error_of("{{ -" + kMin + " }}").find("integer overflow in -(-9223372036854775808)"), std::string::npos);
  // ** is left-associative, as in Jinja: (10 ** 10) ** 10, checked (int64 overflow is an error).
  EXPECT_NE(error_of("{{ 10 ** 10 ** 10 }}").find("integer overflow in 10000000000 ** 10"), std::string::npos);
  EXPECT_NE(error_of("{{ 2 ** 63 }}").find("integer overflow in 2 ** 63"), std::string::npos);
  EXPECT_NE(error_of("{{ xs.99999999999999999999 }}", {{"xs", Value(List{})}}).find("number 99999999999999999999 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1e30|int }}").find("int of 1e+30 is out of range"), std::string::npos);
  EXPECT_EQ(error_of("{{ 99999999999999999999 }}"), "template 1:4: number 99999999999999999999 is out of range");
}

TEST(JinjaLimits, ArithmeticAtTheEdgesStillWorks) {
  EXPECT_EQ(render("{{ 9223372036854775806 + 1 }}"), "9223372036854775807");
  EXPECT_EQ(render("{{ " + kMin + " }}"), "-9223372036854775808");
  EXPECT_EQ(render("{{ (-2) ** 63 }}"), "-9223372036854775808");
  EXPECT_EQ(render("{{ 2 ** 62 }}"), "4611686018427387904");
  EXPECT_EQ(render("{{ 3 ** 39 }}"), "4052555153018976267");
  EXPECT_EQ(render("{{ 1 ** 9223372036854775807 }}|{{ (-1) ** 9223372036854775807 }}|{{ 0 ** 0 }}"), "1|-1|1");
  EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 2 }} {{ 7 % -2 }}"), "-4 1 -1");
  EXPECT_EQ(render("{{ 9007199254740993|int }}"), "9007199254740993");   // not through a double
}

TEST(JinjaLimits, HugeExponentDoesNotHang) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(render("{{ 1 ** 9223372036854775807 }}"), "1");   // was 2^63 multiplications
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(JinjaLimits, RenderResourceLimits) {
  EXPECT_EQ(error_of("{{ range(1000001)|length }}"),
            "template 1:4: range() of 1000001 items is over the limit of 1000000");
  EXPECT_NE(error_of("{% for i in range(9223372036854775807) %}{% endfor %}").find("range() of 9223372036854775807 items"),
            std::string::npos);
  EXPECT_EQ(render("{{ range(1000000)|length }}"), "1000000");
  EXPECT_NE(error_of("{{ 'ab' * 9223372036854775807 }}").find("string repetition of 2 bytes * 9223372036854775807"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'a' * 40000000 ~ 'b' * 40000000 }}").find("over the limit of 64 MiB"), std::string::npos);
  EXPECT_NE(error_of("{% for i in range(3) %}{{ 'a' * 30000000 }}{% endfor %}").find("output over the limit of 64 MiB"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}")
                .find("over the limit of 1000000"),
            std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000)|join('a' * 1000) }}").find("join makes a string over the limit of 64 MiB"),
            std::string::npos);
  EXPECT_NE(error_of("{{ ('a' * 1000000)|replace('a', 'b' * 100) }}").find("replace() makes a string over the limit of 64 MiB"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}")
                .find("more than 1000000 loop iterations in one render"),
            std::string::npos);
  // tojson: a billion spaces per level took 2.5 min and 5.9 GB before failing in bad_alloc.
  EXPECT_NE(error_of("{{ [1, 2]|tojson(indent=1000000000) }}").find("tojson indent 1000000000 is not in 0..256"),
            std::string::npos);
  EXPECT_EQ(render("{{ [1]|tojson(indent=2) }}"), "[\n  1\n]");
  EXPECT_NE(error_of("{{ range(1000000)|list|tojson(indent=256) }}").find("tojson makes a string over the limit of 64 MiB"),
            std::string::npos);
}

TEST(JinjaLimits, RangeNearTheInt64EndsDoesNotOverflow) {
  // The 5th addition of 2^62 wrapped around past INT64_MAX and the loop ran past the item cap.
  const std::string r = "range(" + kMin + ", 9223372036854775807, 4611686018427387904)";
  EXPECT_EQ(render("{{ " + r + "|list|length }}"), "4");
  EXPECT_EQ(render("{{ " + r + "|join(',') }}"), "-9223372036854775808,-4611686018427387904,0,4611686018427387904");
  EXPECT_EQ(render("{{ range(9223372036854775807, " + kMin + ", -4611686018427387904)|join(',') }}"),
            "9223372036854775807,4611686018427387903,-1,-4611686018427387905");
}

}  // namespace

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A chat template comes from the model file: nesting 10,000 deep must be one line, not a
// stack overflow in the parser, the evaluator or the tree's destructor (error.h limits).
TEST(JinjaLimits, DeepNestingIsRefusedInOneLine) {
  EXPECT_EQ(error_of("{{ " + repeat("(", 10000) + "1" + repeat(")", 10000) + " }}"),
            "template 1:68: expression nested more than 64 levels deep");
  EXPECT_EQ(error_of("{{ " + repeat("[", 10000) + repeat("]", 10000) + " }}"),
            "template 1:68: expression nested more than 64 levels deep");
  EXPECT_NE(error_of("{{ 'a'" + repeat(" ~ 'a'", 10000) + " }}").find("expression nested more than 256 levels deep"),
            std::string::npos);
  EXPECT_NE(error_of("{{ " + repeat("not ", 10000) + "x }}").find("nested more than"), std::string::npos);
  EXPECT_NE(error_of("{{ " + repeat("- ", 10000) + "1 }}").find("nested more than"), std::string::npos);
  EXPECT_NE(error_of("{{ 1" + repeat(" if x else 1", 10000) + " }}").find("nested more than"), std::string::npos);
  EXPECT_NE(error_of("{{ x" + repeat("|lower", 10000) + " }}").find("nested more than 256"), std::string::npos);
  EXPECT_NE(error_of(repeat("{% if x %}", 10000) + repeat("{% endif %}", 10000)).find("tags nested more than 64 levels deep"),
            std::string::npos);
  // ... while what real templates do stays well inside
  EXPECT_EQ(render("{{ " + repeat("(", 60) + "1" + repeat(")", 60) + " }}"), "1");
  EXPECT_EQ(render("{{ 'a'" + repeat(" ~ 'a'", 200) + " }}"), std::string(201, 'a'));
  EXPECT_EQ(render(repeat("{% if 1 %}", 60) + "y" + repeat("{% endif %}", 60)), "y");
}

// A long one-line template lexes in linear time: every token's line:col comes from a running
// character count, and the first tag with a bracket left open ends the split (it cannot
// parse). Columns count characters, not bytes: "é" is 2 bytes, 1 column.
TEST(JinjaLimits, LongOneLineTemplatesKeepTheirPositions) {
  EXPECT_EQ(render(repeat("{{ x }}", 100000), {{"x", Value(std::string("a"))}}), std::string(100000, 'a'));
  EXPECT_EQ(error_of("{{ x + }}"), "template 1:8: unexpected end of the tag");
  EXPECT_EQ(error_of(repeat("é", 50000) + "{{ x + }}"), "template 1:50008: unexpected end of the tag");
  // 100,000 tags each with an open bracket: the first names the error (column 4: its "(").
  EXPECT_EQ(error_of(repeat("{{ ( }}", 100000)), error_of("{{ ( }}"));
}
