// The Jinja engine (runtime/llm/jinja.h): whitespace control, statements, expressions,
// builtins, errors with their position, and the limits. The expected texts are what
// python3's jinja2 renders with trim_blocks=True and lstrip_blocks=True.
#include "runtime/llm/jinja.h"

#include <gtest/gtest.h>

namespace tessera::llm::jinja {
namespace {

Value vars_with_messages() {
  Value vars{Dict{}};
  vars.set("messages", Value(List{Value(Dict{{"role", Value("system")}, {"content", Value(" Be brief. ")}}),
                                  Value(Dict{{"role", Value("user")}, {"content", Value("Hi")}})}));
  vars.set("add_generation_prompt", Value(true));
  return vars;
}

std::string ok(std::string_view src, const Value& vars = vars_with_messages(), const RenderOptions& o = {}) {
  Result<std::string> r = render(src, vars, o);
  EXPECT_TRUE(r.ok()) << src << "\n" << r.status().to_string();
  return r.ok() ? r.value() : std::string();
}

std::string err(std::string_view src, const RenderOptions& o = {}) {
  Result<std::string> r = render(src, vars_with_messages(), o);
  EXPECT_FALSE(r.ok()) << src.substr(0, 200) << " rendered: " << (r.ok() ? r.value().substr(0, 200) : "");
  return r.ok() ? std::string() : r.status().message();
}

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  // trim_blocks drops the newline after %}; lstrip_blocks the indentation before {%.
  EXPECT_EQ(ok("{% if true %}\n  yes\n{% endif %}\nafter"), "  yes\nafter");
  EXPECT_EQ(ok("a\n    {% if true %}\nb\n    {% endif %}\nc"), "a\nb\nc");
  // Not for {{ }}: its indentation and the newline after it stay.
  EXPECT_EQ(ok("  {{ 1 }}\nx"), "  1\nx");
  // {%+ keeps the indentation.
  EXPECT_EQ(ok("  {%+ if true %}x{% endif %}"), "  x");
  // Comments are stripped the same way.
  EXPECT_EQ(ok("a\n  {# note #}\nb"), "a\nb");
  // One trailing newline of the source is dropped; "\r\n" becomes "\n".
  EXPECT_EQ(ok("x\n"), "x");
  EXPECT_EQ(ok("x\r\ny\n\n"), "x\ny\n");
}

TEST(JinjaWhitespace, MinusModifiers) {
  EXPECT_EQ(ok("a  \n {{- 'b' -}} \n  c"), "abc");
  EXPECT_EQ(ok("a\n\n{%- if true -%}\n\n  b  {%- endif %}"), "ab");
  EXPECT_EQ(ok("x {#- c -#} y"), "xy");
}

TEST(JinjaStatements, IfElifElse) {
  EXPECT_EQ(ok("{% for n in [1, 2, 3] %}{% if n == 1 %}a{% elif n == 2 %}b{% else %}c{% endif %}{% endfor %}"), "abc");
  EXPECT_EQ(ok("{% if none %}x{% elif undefined_name %}y{% else %}z{% endif %}"), "z");
}

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(ok("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "10TrueFalse3;21FalseFalse3;32FalseTrue3;");
  EXPECT_EQ(ok("{% for x in [1, 2, 3] %}{{ loop.previtem }}|{{ loop.nextitem }},{% endfor %}"), "|2,1|3,2|,");
  EXPECT_EQ(ok("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  // The `if` filter runs first: loop.* counts the kept items.
  EXPECT_EQ(ok("{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{ loop.length }} {{ m.content }}{% endfor %}"),
            "1/1 Hi");
  EXPECT_EQ(ok("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}"), "a=1 b=2 ");
  EXPECT_EQ(ok("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(ok("{% for x in [1,2] %}{% for y in 'ab' %}{{ loop.index }}{{ y }}{% endfor %}{{ loop.index }} {% endfor %}"),
            "1a2b1 1a2b2 ");
}

TEST(JinjaStatements, ScopingAndNamespace) {
  // `set` inside a loop does not change the outer variable; a namespace attribute does.
  EXPECT_EQ(ok("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(ok("{% set ns = namespace(x=1, found=false) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.found }}"),
            "4False");
  EXPECT_EQ(ok("{% set a, b = [1, 'two'] %}{{ b }}{{ a }}"), "two1");
  EXPECT_EQ(ok("{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]"), "[  inner 2  ]");
  EXPECT_EQ(ok("{% set t | upper %}abc{% endset %}{{ t }}"), "ABC");
  EXPECT_NE(err("{% set x = 1 %}{% set x.y = 2 %}").find("non-namespace"), std::string::npos);
}

TEST(JinjaStatements, MacrosAndCall) {
  EXPECT_EQ(ok("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hello A! Hello B?");
  EXPECT_EQ(ok("{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}in{% endcall %}"), "[in]");
  EXPECT_EQ(ok("{% macro f(x) %}{{ x }}{% if x > 0 %}{{ f(x - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "3210");
  EXPECT_EQ(ok("{% filter upper %}abc {{ 'd' }}{% endfilter %}"), "ABC D");
  EXPECT_NE(err("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").find("takes not more than 1"), std::string::npos);
}

TEST(JinjaExpressions, LiteralsAndOperators) {
  EXPECT_EQ(ok("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"), "7 3 -4 1 2 3.5 1024");
  EXPECT_EQ(ok("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }}"), "a1None abab [1, 2]");
  EXPECT_EQ(ok("{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }}"), "[1, 'a', None, True, 1.5, {'k': 'v'}]");
  EXPECT_EQ(ok("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3.0 }} {{ 1e-7 }}"), "0.30000000000000004 1e+20 3.0 1e-07");
  EXPECT_EQ(ok("{{ 1 < 2 < 3 }} {{ 'b' in 'abc' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 1 == 1.0 }}"),
            "True True True True True");
  EXPECT_EQ(ok("{{ 'yes' if messages else 'no' }}{{ 'x' if false }}|{{ none or 'd' }}{{ 0 and 1 }}"), "yes|d0");
  EXPECT_EQ(ok("{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[5] }}|"), "system Hi |");
  EXPECT_EQ(ok("{{ 'héllo'[1:3] }} {{ [1, 2, 3, 4][::-1] }} {{ 'abcdef'[::2] }} {{ [1,2,3][-2:] }}"), "él [4, 3, 2, 1] ace [2, 3]");
  EXPECT_EQ(ok("{{ {0: 'zero', 2: 'two'}[2] }} {{ {1: 'a'} }}"), "two {1: 'a'}");
}

TEST(JinjaExpressions, Tests) {
  EXPECT_EQ(ok("{{ x is defined }}{{ messages is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}"),
            "FalseTrueTrueTrueTrue");
  EXPECT_EQ(ok("{{ [] is iterable }}{{ 1 is number }}{{ 'a' is sequence }}{{ true is true }}{{ 0 is false }}"),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(ok("{{ 2 is equalto 2 }}{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ x is not defined }}"), "TrueTrueTrueTrue");
}

TEST(JinjaBuiltins, Filters) {
  EXPECT_EQ(ok("{{ messages[0].content | trim }}|{{ messages | length }}|{{ 'aBc' | upper }}{{ 'aBc' | lower }}"),
            "Be brief.|2|ABCabc");
  EXPECT_EQ(ok("{{ x | default('d') }}{{ '' | default('e', true) }}{{ [1, 2] | join(', ') }}{{ [3, 4] | first }}{{ [3, 4] | last }}"),
            "de1, 234");
  EXPECT_EQ(ok("{{ messages | map(attribute='role') | join(',') }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }}"),
            "system,user 1");
  EXPECT_EQ(ok("{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='role') | first }}"), "system");
  EXPECT_EQ(ok("{{ {'b': 1, 'a': [1, 'x\"<&>'], 'c': none} | tojson }}"), "{\"b\": 1, \"a\": [1, \"x\\\"<&>\"], \"c\": null}");
  EXPECT_EQ(ok("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(ok("{{ 'é' | tojson }}{{ 'a\\nb' | indent(2) }}|{{ 'hello world' | title }}{{ 'hELLO' | capitalize }}"),
            "\"é\"a\n  b|Hello WorldHello");
  EXPECT_EQ(ok("{{ '42' | int + 1 }}{{ 'x' | int }}{{ 3 | string ~ 'a' }}{{ 'a-b' | replace('-', '+') }}{{ '<a>' | e }}"),
            "4303aa+b&lt;a&gt;");
  EXPECT_EQ(ok("{% for k, v in {'b': 2, 'A': 1} | dictsort %}{{ k }}{{ v }}{% endfor %}{{ {'x': 1} | items | list }}"),
            "A1b2[('x', 1)]");
}

TEST(JinjaBuiltins, Methods) {
  EXPECT_EQ(ok("{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}"),
            "a b|axx|['a', 'b', '', 'c']|['a', 'b']");
  EXPECT_EQ(ok("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'aXa'.replace('a', 'b') }}{{ 'ab'.upper() }}"),
            "TrueTruebXbAB");
  EXPECT_EQ(ok("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b') }}{{ {'a': 1}.get('b', 2) }}{{ {'a': 1}.keys() | list }}"),
            "1None2['a']");
  EXPECT_EQ(ok("{{ '{} and {name}'.format(1, name='two') }}{{ 'Привет' | length }}"), "1 and two6");
  // The sandbox is immutable, as transformers' is.
  EXPECT_NE(err("{% set l = [] %}{{ l.append(1) }}").find("unsafe"), std::string::npos);
}

TEST(JinjaBuiltins, GlobalsAndUndefined) {
  RenderOptions o;
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  o.now = tm;
  EXPECT_EQ(ok("{{ strftime_now('%Y-%m-%d %b') }}", vars_with_messages(), o), "2026-01-15 Jan");
  EXPECT_EQ(ok("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ dict(a=1) }}"), "[0, 1, 2][1, 3, 5]{'a': 1}");
  // Undefined prints as empty, is false and iterates as empty...
  EXPECT_EQ(ok("[{{ nothing }}]{% if not nothing %}f{% endif %}{% for x in nothing %}x{% endfor %}{{ nothing | length }}"),
            "[]f0");
  // ...but reading an attribute of it, or calling it, is an error.
  EXPECT_NE(err("{{ nothing.attr }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ nothing() }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ nothing + 1 }}").find("'nothing' is undefined"), std::string::npos);
  // A missing attribute of a defined value is undefined, not an error.
  EXPECT_EQ(ok("{{ messages[0].missing is defined }}"), "False");
}

TEST(JinjaErrors, PositionsAndMessages) {
  EXPECT_EQ(err("line one\n{% if %}"), "[jinja] line 2, column 7: unexpected '%}'");
  EXPECT_EQ(err("{{ 1 +\n }}"), "[jinja] line 2, column 2: unexpected '}}'");
  EXPECT_EQ(err("{% if true %}no end"), "[jinja] line 1, column 20: unexpected end of template, expected 'elif'");
  EXPECT_EQ(err("{% generation %}"), "[jinja] line 1, column 4: unknown statement 'generation'");
  EXPECT_EQ(err("ab\n  {{ 'unterminated }}"), "[jinja] line 2, column 6: unterminated string literal");
  EXPECT_EQ(err("\n\n{{ raise_exception('Only user and assistant roles') }}"),
            "[jinja] line 3, column 4: Only user and assistant roles");
  EXPECT_NE(err("{{ 1 | no_such_filter }}").find("no filter named 'no_such_filter'"), std::string::npos);
  EXPECT_NE(err("{{ 1 is no_such_test }}").find("no test named 'no_such_test'"), std::string::npos);
  EXPECT_NE(err("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(err("{{ 'a' < 1 }}").find("not supported"), std::string::npos);
  EXPECT_FALSE(check_syntax("{% for %}").ok());
  EXPECT_TRUE(check_syntax("{% for x in y %}{% endfor %}").ok());
}

TEST(JinjaLimits, UnboundedTemplatesStopWithAnError) {
  // Recursion without end.
  EXPECT_NE(err("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("macro calls nest deeper"), std::string::npos);
  // Loops too long: the iteration budget, and range() checked before it allocates.
  RenderOptions small;
  small.max_iterations = 1000;
  EXPECT_NE(err("{% for i in range(999999999999) %}{% endfor %}").find("exceed the loop iteration limit"), std::string::npos);
  EXPECT_NE(err("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", small).find("iteration limit"),
            std::string::npos);
  // Output and strings.
  RenderOptions tiny;
  tiny.max_output_bytes = 100;
  EXPECT_NE(err("{% for i in range(1000) %}xx{% endfor %}", tiny).find("output exceeds"), std::string::npos);
  EXPECT_NE(err("{{ 'x' * 1000000000000 }}").find("exceeds the limit"), std::string::npos);
  // Nesting: expressions and statements deeper than the limit are a syntax error, not a
  // stack overflow.
  EXPECT_NE(err("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nests too deeply"),
            std::string::npos);
  std::string deep;
  for (int k = 0; k < 5000; ++k) deep += "{% if true %}";
  EXPECT_NE(err("{{ " + std::string(3000, '-') + "1 }}").find("nests too deeply"), std::string::npos);
  EXPECT_NE(err(deep).find("nests too deeply"), std::string::npos);
  // Values built to nest without end (each loop wraps the last list in a new one).
  EXPECT_NE(err("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                .find("nest deeper than"),
            std::string::npos);
  // A namespace that holds itself prints and compares without recursing; it has no JSON form.
  EXPECT_EQ(ok("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me == ns }}"), "True");
  EXPECT_NE(err("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns | tojson }}").find("not JSON serializable"),
            std::string::npos);
}

TEST(JinjaLimits, IntegersOutOfRangeAreErrors) {
  EXPECT_NE(err("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(err("{{ 2 ** 64 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(err("{{ -9223372036854775807 - 1 - 1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(err("{{ 99999999999999999999 }}").find("out of range"), std::string::npos);
  EXPECT_NE(err("{{ messages.99999999999999999999 }}").find("out of range"), std::string::npos);
  EXPECT_NE(err("{{ range(-9223372036854775807, 9223372036854775807) | list }}").find("iteration limit"),
            std::string::npos);
  EXPECT_EQ(ok("{{ (-1) ** 1000001 }} {{ 1 ** 999999999999 }} {{ 0 ** 5 }} {{ 3 ** 3 }}"), "-1 1 0 27");
}

}  // namespace
}  // namespace tessera::llm::jinja
