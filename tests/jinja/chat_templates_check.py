#!/usr/bin/env python3
"""Renders every chat template of ../shared/templates/chat with python3's jinja2 (the judge,
set up as Hugging Face transformers sets it up) and with `tessera chat-template`, over a few
conversations, and compares the bytes. Where jinja2 raises, Tessera must fail too.

Prints one line per template (pass/FAIL/xfail). Exits non-zero when a template fails that
EXPECTED_FAIL does not list, or when a listed one passes (so that the list stays honest).
Exit 77 (skipped) when the templates are absent, unless TESSERA_REQUIRE_FIXTURES=1.

usage: chat_templates_check.py TESSERA_BIN TEMPLATES_DIR [--only NAME] [--verbose]
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

# Templates Tessera is known to render differently, each with the reason.
EXPECTED_FAIL = {
}

# The date strftime_now() sees on both sides.
NOW = datetime.datetime(2026, 1, 15, 9, 30, 0)
BOS, EOS = "<s>", "</s>"

CONVERSATIONS = {
    "system_user_assistant_user": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "And of Italy?"},
    ],
    "user_only": [
        {"role": "user", "content": "Hello!"},
    ],
    "two_turns_no_system": [
        {"role": "user", "content": "Write a haiku about rain."},
        {"role": "assistant", "content": "Soft rain on the roof\nwhispers to the sleeping town\nmorning comes slowly"},
        {"role": "user", "content": "  Now one about snow.  "},
    ],
    "non_ascii": [
        {"role": "system", "content": "Réponds en français, s'il te plaît. <b>&</b>"},
        {"role": "user", "content": "Привет! 你好，世界 🌍 — naïve café \"quotes\""},
        {"role": "assistant", "content": "こんにちは！ Ça va très bien."},
        {"role": "user", "content": "Ελληνικά: αβγ ΑΒΓ\ttab"},
    ],
    # With `tools` (TOOLS below): a call, its result, and the answer.
    "tool_call": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"<clear> & dry\"}"},
        {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
        {"role": "user", "content": "Thanks!"},
    ],
}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
]
WITH_TOOLS = {"tool_call"}


def make_env():
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' tojson: json.dumps without HTML escaping, keys in their order.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def judge(env, source, messages, add_generation_prompt, tools=None):
    try:
        tpl = env.from_string(source)
        extra = {"tools": tools} if tools is not None else {}
        return True, tpl.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                bos_token=BOS, eos_token=EOS, **extra)
    except Exception as e:  # any exception: the template refuses this conversation
        return False, f"{type(e).__name__}: {e}"


def tessera(binary, path, messages_file, add_generation_prompt, tools_file=None):
    cmd = [binary, "chat-template", path, "--messages", messages_file, "--bos-token", BOS, "--eos-token", EOS,
           "--now", NOW.strftime("%Y-%m-%d %H:%M:%S")]
    if tools_file:
        cmd += ["--tools", tools_file]
    if not add_generation_prompt:
        cmd.append("--no-generation-prompt")
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    if r.returncode != 0:
        return False, r.stderr.decode("utf-8", "replace").strip()
    return True, r.stdout.decode("utf-8", "surrogateescape")


def first_difference(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k, a[max(0, k - 40):k + 40], b[max(0, k - 40):k + 40]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        args.remove(only)
    verbose = "--verbose" in sys.argv
    if len(args) != 2:
        print(__doc__)
        return 2
    binary, folder = args
    if not os.path.isdir(folder):
        if os.environ.get("TESSERA_REQUIRE_FIXTURES") == "1":
            print(f"missing fixture {folder}")
            return 1
        print(f"skipped: the chat templates {folder} are absent")
        return 77
    try:
        env = make_env()
    except ImportError:
        print("python3-jinja2 is not installed (scripts/setup.sh installs it)")
        return 1

    names = sorted(f for f in os.listdir(folder) if f.endswith(".jinja"))
    if only:
        names = [n for n in names if n.startswith(only)]
    passed, unexpected, stale = 0, [], []
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for conv, messages in CONVERSATIONS.items():
            files[conv] = os.path.join(tmp, conv + ".json")
            with open(files[conv], "w", encoding="utf-8") as f:
                json.dump(messages, f, ensure_ascii=False)
        tools_file = os.path.join(tmp, "tools.json")
        with open(tools_file, "w", encoding="utf-8") as f:
            json.dump(TOOLS, f, ensure_ascii=False)
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                source = f.read()
            problems = []
            refused = 0  # cases where both jinja2 and Tessera refuse the conversation
            cases = [(c, True) for c in CONVERSATIONS] + [("system_user_assistant_user", False)]
            for conv, agp in cases:
                tools = conv in WITH_TOOLS
                ok_j, out_j = judge(env, source, CONVERSATIONS[conv], agp, TOOLS if tools else None)
                ok_t, out_t = tessera(binary, path, files[conv], agp, tools_file if tools else None)
                case = f"{conv}{'' if agp else ' (no generation prompt)'}"
                if not ok_j and not ok_t:
                    refused += 1
                    if verbose:
                        print(f"      {case}: both refuse; jinja2: {out_j[:150]}")
                    continue
                if ok_j != ok_t:
                    problems.append(f"{case}: jinja2 {'rendered' if ok_j else 'raised ' + out_j[:200]}, "
                                    f"tessera {'rendered' if ok_t else 'failed: ' + out_t[:300]}")
                elif out_j != out_t:
                    k, a, b = first_difference(out_j, out_t)
                    problems.append(f"{case}: outputs differ at char {k}: jinja2 {a!r} vs tessera {b!r}")
            key = name[:-len(".jinja")]
            if not problems:
                if key in EXPECTED_FAIL:
                    stale.append(key)
                    print(f"PASS (but listed in EXPECTED_FAIL) {key}")
                else:
                    passed += 1
                    note = f" ({refused} of {len(cases)} conversations refused by both)" if refused else ""
                    print(f"pass  {key}{note}")
            elif key in EXPECTED_FAIL:
                print(f"xfail {key}: {EXPECTED_FAIL[key]}")
                if verbose:
                    for p in problems:
                        print(f"      {p}")
            else:
                unexpected.append(key)
                print(f"FAIL  {key}")
                for p in problems[: (len(problems) if verbose else 2)]:
                    print(f"      {p}")
    print(f"{passed} of {len(names)} templates pass; {len(unexpected)} fail unexpectedly; "
          f"{sum(1 for n in names if n[:-6] in EXPECTED_FAIL) - len(stale)} expected failures")
    if unexpected:
        print("unexpected failures: " + ", ".join(unexpected))
    if stale:
        print("listed in EXPECTED_FAIL but passing (remove them): " + ", ".join(stale))
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
