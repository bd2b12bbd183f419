#!/usr/bin/env python3
"""Renders small Jinja snippets, each probing one corner of the language, with python3's
jinja2 (as chat_templates_check.py sets it up) and with `tessera chat-template`, and
compares the bytes; where jinja2 raises, Tessera must fail too. Needs no fixtures.

usage: snippets_check.py TESSERA_BIN [--verbose]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_templates_check import BOS, EOS, NOW, judge, make_env, tessera  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "  sys text  "},
    {"role": "user", "content": "héllo wörld", "extra": None},
    {"role": "assistant", "content": "ok", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
]

SNIPPETS = [
    # whitespace
    "a\n  {% if true %}\n  b\n  {% endif %}\nc\n",
    "  {%- if true %} x {% endif -%}  \n y",
    "{% for m in messages %}\n{{ m.role }}\n{% endfor %}\n",
    "x {# c #}\n  {# d #}  y\n{#- e -#}\nz",
    "{{ 'a' }}\n{{ 'b' }}  \n  {%+ if true %}k{% endif %}",
    "   {% raw %}{% endraw %}" if False else "t\t{% set x = 1 %}\t\nu",
    # values and printing
    "{{ [1.0, 2.5, -0.0, 1e100, 123456789012345678, 1/3] }}",
    "{{ {'a': {'b': [none, true, false]}} }} {{ ('x', 1) }} {{ 'it\\'s' }} {{ ['it\\'s', \"q\\\"\"] }}",
    "{{ 10 / 5 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 3 * 1.5 }} {{ true + 1 }}",
    "{{ messages[1].content | length }} {{ messages[1].content[1:4] }} {{ messages[1].content | upper }}",
    "{{ messages[2].tool_calls[0].function.arguments | tojson }} {{ messages | tojson }}",
    "{{ messages[1] | tojson(indent=4) }}",
    "{{ {'z': 1, 'a': 2} | tojson }} {{ '</s><script>&\\'' | tojson }} {{ 1.5 | tojson }} {{ none | tojson }}",
    "{{ messages[1].extra }}|{{ messages[1].extra is none }}|{{ messages[1].missing is defined }}",
    "{{ messages[0].content.strip() }}|{{ messages[0]['content'] | trim }}|{{ messages[0].content.split() }}",
    "{{ 'a b  c'.split(' ') }} {{ 'a=b=c'.split('=', 1) }} {{ 'a=b=c'.rsplit('=', 1) }} {{ ' x '.rstrip() }}|",
    "{{ '<think>x</think>y'.split('</think>')[-1] }} {{ 'abc'.find('c') }} {{ 'Hello'.startswith('He') }}",
    "{{ 'hello world'.title() }} {{ 'HELLO'.lower() }} {{ 'x'.join(['a', 'b']) }} {{ 'aaa'.count('a') }}",
    "{{ '{}-{}'.format('a', 2) }}",
    # loops
    "{% for x in [3, 1, 2] | sort %}{{ x }}{% endfor %} {% for x in 'ab' | list | reverse %}{{ x }}{% endfor %}",
    "{% for m in messages %}{% if loop.first %}F{% endif %}{{ loop.revindex }}{% if loop.last %}L{% endif %}{% endfor %}",
    "{% for m in messages[::-1] %}{{ m.role[0] }}{% endfor %} {% for i in range(5, 0, -2) %}{{ i }}{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{% else %}none{% endfor %}",
    "{% for x in [] %}{% else %}E{% endfor %}{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}",
    "{% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %}",
    "{% set ns = namespace(last=none, n=0) %}{% for m in messages %}{% set ns.last = m.role %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.last }}{{ ns.n }}",
    "{% set x = 5 %}{% for i in [1] %}{% set x = 9 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set x = 7 %}{% endif %}{{ x }}",
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}{% for k, v in messages[1] | dictsort %}{{ k }};{% endfor %}",
    # filters
    "{{ messages | map(attribute='role') | list }} {{ messages | selectattr('role', 'eq', 'user') | map(attribute='content') | first }}",
    "{{ messages | selectattr('tool_calls', 'defined') | list | length }} {{ messages | rejectattr('extra') | list | length }}",
    "{{ messages | selectattr('extra', 'none') | list | length }} {{ [1, 2, 3] | select('odd') | list }} {{ [1, 2] | map('string') | join('|') }}",
    "{{ 'a\\nb\\n\\nc\\n' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(4, blank=true) }}",
    "{{ none | default('d') }} {{ undefined_var | default('d') }} {{ '' | default('e') }} {{ 0 | default(1, true) }}",
    "{{ [1, 2, 2, 3] | unique | list }} {{ [1, 5, 3] | max }} {{ [1, 5, 3] | min }} {{ [1, 2.5] | sum }} {{ '3.7' | float }} {{ '3.7' | int }}",
    "{{ {'b': 1, 'A': 2} | dictsort }} {{ {'b': 1} | items | list }} {{ 'abc' | first }} {{ 'abc' | last }} {{ 42 | string | length }}",
    "{{ 'hello WORLD' | capitalize }} {{ 'one two' | title }} {{ 'a-b' | replace('-', '') }} {{ '<&>' | e }} {{ '<x>' | safe }}",
    "{% filter upper %}up {{ 'x' }}{% endfilter %}{% set b %}blk{% endset %}{{ b | length }}",
    # tests
    "{{ 1 is number }}{{ true is number }}{{ 1.0 is integer }}{{ 'x' is iterable }}{{ 5 is iterable }}{{ none is mapping }}",
    "{{ x is undefined }}{{ x is iterable }}{{ x is sequence }}{{ x is none }}{{ [] is sequence }}{{ {} is iterable }}",
    "{{ true is sameas true }}{{ 1 is sameas true }}{{ 'a' is in 'abc' }}{{ 2 is in [1, 2] }}{{ 3 is gt 2 }}{{ 'abc' is lower }}",
    "{{ 1 is boolean }}{{ false is false }}{{ 0 is false }}{{ 1 is true }}{{ 4 is even }}{{ 9 is divisibleby(3) }}",
    # expressions
    "{{ 1 if 0 else 2 }} {{ 'a' if none }}| {{ not none }} {{ none or [] or 'x' }} {{ 1 and 'y' }} {{ '' and 1 }}|",
    "{{ 'ab' ~ 3 ~ none ~ true }} {{ 'a' + 'b' }} {{ [1] + [2, 3] }} {{ 'x' * 3 }} {{ -(3) }} {{ +3 }} {{ not 1 == 2 }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ none == none }} {{ 'a' != 'a' }}",
    "{{ 'sys' in messages[0].content }} {{ 'role' in messages[0] }} {{ 'x' not in [1] }} {{ 1 in [1.0] }}",
    "{{ messages[0]['role'] }} {{ messages[-1].role }} {{ messages.0.role }} {{ messages[10] is defined }} {{ {'a': 1}['a'] }}",
    "{{ 'abcdef'[-3:] }} {{ 'abcdef'[:-3] }} {{ [1, 2, 3][1:] }} {{ 'abc'[::-1] }} {{ [1, 2, 3, 4, 5][4:1:-2] }} {{ 'héllo'[1] }}",
    "{{ messages[1].get('extra', 'd') }} {{ messages[1].get('nope', 'd') }} {{ messages[1].get('nope') }} {{ messages[1].keys() | list }}",
    "{{ messages[1].items() | list }} {{ messages[1].values() | list | length }}",
    "{% macro m(a, b=2, c='x') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }} {{ m(1, 3) }} {{ m(1, c='y') }} {{ m(a=0) }}",
    "{% macro wrap(t) %}<{{ caller() }}|{{ t }}>{% endmacro %}{% call wrap('T') %}body{% endcall %}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t }}{% set l = [1, 2] %}{{ l[0] }}",
    "{{ range(3) | list }} {{ range(2, 8, 3) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%A, %B %-d') }}",
    "{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}",
    # more corners
    "{% for x in 'abc' %}{{ loop.cycle('o', 'e') }}{% endfor %} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 100.0 }}",
    "{{ messages | length > 1 }} {{ not messages[0].content is string }} {{ x is not defined and true }} {{ [1, 2, 3] | join }}",
    "{{ 'a' ~ [1] }} {{ messages[1].content[:5] ~ '...' }} {{ (messages | selectattr('role', 'equalto', 'user') | list)[-1].content }}",
    "{{ 'a\nb\tc\u00e9\x41' }} {{ \"d'q\" }} {{ 'abc' | list }} {{ {'a': 1} | list }} {{ {'a': 1} | length }}",
    "abc  {% if true %}x{% endif %}\n   {% if true %}y{% endif %}\n  {{- 'z' }}",
    "   {% if true %}x{% endif %}   \n{% if true %}  \n{% endif %}",
    "a{# c #}\nb{% if true %}\n\nc{% endif %}\n\n",
    "{% macro f() %}{{ v }}{% endmacro %}{% set v = 3 %}{{ f() }}",
    "{% set v = 1 %}{% macro f() %}{{ v }}{% endmacro %}{% set v = 2 %}{{ f() }}",
    "{% for i in [1, 2] %}{% macro g() %}{{ i }}{% endmacro %}{{ g() }}{% endfor %}",
    "{% macro f() %}{% set inner = 1 %}{% endmacro %}{{ f() }}{{ inner is defined }}",
    "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{{ '  x  ' | trim | length }} {{ 'Hello %s' % 'x' }}",
    "{{ messages[0] is mapping }} {{ messages is sequence }} {{ messages[0].content is string }} {{ messages[2].tool_calls is iterable }}",
    "{% for m in messages %}{% if m.role == 'user' %}{% set c = m.content %}{% endif %}{{ c }}|{% endfor %}",
    "{%- set ns = namespace(found=false) -%}{%- for m in messages -%}{%- if m.role == 'assistant' -%}{%- set ns.found = true -%}{%- endif -%}{%- endfor -%}{{ ns.found }}",
    "{{ messages[2]['tool_calls'][0]['function']['arguments'] | tojson }} {{ messages[2].tool_calls[0].function.arguments.x }}",
    "{% for tc in messages[2].tool_calls %}{{ tc.function.name }}({{ tc.function.arguments | items | list }}){% endfor %}",
    "{{ [3, 1, 2] | sort(reverse=true) }} {{ messages | sort(attribute='role') | map(attribute='role') | join(',') }}",
    "{{ 'A' ~ 'b' | upper }} {{ -1 | abs }} {{ 2.5 | round }} {{ 2.567 | round(2) }} {{ 3 | float }} {{ 'x,y' | replace(',', ', ') }}",
    "{{ 'ab' | reverse }} {{ 'a b c' | wordcount }} {{ none | string }} {{ true | string | lower }} {{ [] | first is defined }}",
    "{{ 'x' if messages[0].role == 'system' else 'y' if true else 'z' }} {{ (1, 2) | list }} {{ [[1, 2]] | first | last }}",
    "{% if messages %}{% for m in messages %}{{ m.role }}{{ ': ' if not loop.last else '' }}{% endfor %}{% endif %}",
    "{%- if true %}\n    a\n{%- endif %}\n  b",
    "{% for x in [1,2] -%}\n  {{ x }}\n{%- endfor %}",
    # lazy filters (generators) and Markup
    "{% if [] | select('odd') %}T{% else %}F{% endif %} {{ [1, 2] | reverse | list }} {{ [1, 2] | select('odd') | first }} {{ [2, 1] | map('string') | join }}",
    "{{ messages | selectattr('role') | list | length }} {{ messages | map(attribute='role') | reverse | list }} {{ [1, 1] | unique | list }}",
    "{{ 'a<' | safe + '<b>' }} {{ '<b>' + 'x' | safe }} {{ ('&' | e) + '&' }} {{ '<' ~ ('<' | safe) }} {{ '<' | e | e }} {{ '\"' | safe + '\"' }}",
    "{{ messages | map(attribute='role') | tojson }}",
    "{{ [1, 2] | map('string') | length }}",
    "{{ [1, 2] | select('odd') | last }}",
    # errors: both must fail
    "{{ raise_exception('nope') }}",
    "{{ undefined_var.attr }}",
    "{{ undefined_var['k'] }}",
    "{{ undefined_var() }}",
    "{{ undefined_var + 1 }}",
    "{{ undefined_var | tojson }}",
    "{% set l = [] %}{% set _ = l.append(1) %}",
    "{% set d = {} %}{{ d.update({'a': 1}) }}",
    "{{ 1 + 'a' }}",
    "{{ 'a' < 1 }}",
    "{% if %}",
    "{% for x in %}{% endfor %}",
    "{% if true %}",
    "{% endfor %}",
    "{{ 1 | nofilter }}",
    "{{ 1 is notest }}",
    "{% generation %}x{% endgeneration %}",
    "{{ 1 / 0 }}",
    "{{ messages[0].content.nomethod() }}",
    "{% for x in 5 %}{% endfor %}",
    "{{ 'a' in 5 }}",
    "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",
    "{% break %}",
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    if len(args) != 1:
        print(__doc__)
        return 2
    binary = args[0]
    try:
        env = make_env()
    except ImportError:
        print("python3-jinja2 is not installed (scripts/setup.sh installs it)")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        messages_file = os.path.join(tmp, "messages.json")
        with open(messages_file, "w", encoding="utf-8") as f:
            json.dump(MESSAGES, f, ensure_ascii=False)
        for k, src in enumerate(SNIPPETS):
            path = os.path.join(tmp, f"s{k}.jinja")
            with open(path, "w", encoding="utf-8") as f:
                f.write(src)
            ok_j, out_j = judge(env, src, MESSAGES, True)
            ok_t, out_t = tessera(binary, path, messages_file, True)
            same = (not ok_j and not ok_t) or (ok_j and ok_t and out_j == out_t)
            if not same:
                failed += 1
                print(f"FAIL  {src!r}\n      jinja2:  {'' if ok_j else 'raised '}{out_j!r}\n      tessera: {'' if ok_t else 'failed '}{out_t!r}")
            elif verbose:
                print(f"pass  {src!r} -> {out_j!r}")
    print(f"{len(SNIPPETS) - failed} of {len(SNIPPETS)} snippets agree with jinja2")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
