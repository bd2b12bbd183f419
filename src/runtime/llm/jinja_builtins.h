// Builtins of the Jinja engine: filters, tests, and the methods of str, dict and list.
//
// Filters: abs, capitalize, count, d/default, dictsort, e/escape, first, float, indent,
// int, items, join, last, length, list, lower, map, max, min, reject, rejectattr, replace,
// reverse, round, safe, select, selectattr, sort, string, sum, title, tojson, trim, unique,
// upper, wordcount.
// Tests: boolean, callable, defined, divisibleby, eq/equalto/==, even, false, float, ge, gt,
// in, integer, iterable, le, lower, lt, mapping, ne, none, number, odd, sameas, sequence,
// string, true, undefined, upper.
// Methods: str capitalize, count, endswith, find, format, isalnum, isalpha, isdigit,
// islower, isspace, isupper, join, lower, lstrip, replace, rfind, rsplit, rstrip, split,
// splitlines, startswith, strip, title, upper; dict get, items, keys, values; list count,
// index. Mutating methods (append, pop, update, ...) are refused as the immutable sandbox
// refuses them.
#pragma once

#include <functional>
#include <string>

#include "runtime/llm/jinja_value.h"

namespace tessera::llm::jinja {

// What builtins need from the renderer: calling a value, applying a test or filter by name
// (map, select), and the limits.
struct BuiltinEnv {
  std::function<Value(const Value& fn, CallArgs& args)> call;
  size_t max_string_bytes = 0;
};

// Applies filter `name`; an unknown name is an error.
Value apply_filter(const std::string& name, const Value& target, CallArgs& args, const BuiltinEnv& env);
// Applies test `name`; an unknown name is an error.
bool apply_test(const std::string& name, const Value& target, CallArgs& args, const BuiltinEnv& env);
// The method `name` of obj bound to it, or undefined when obj has none.
Value method(const Value& obj, const std::string& name, const BuiltinEnv& env);

// Helpers shared with the renderer.
Value get_item(const Value& obj, const Value& key);          // obj[key]: undefined when missing
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
std::vector<Value> iterate(const Value& v);                 // for x in v: lists, dict keys, characters
int64_t length(const Value& v);
// markupsafe's escape: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(const std::string& s);
// Python's `fmt % args` for %s, %r, %d, %i and %%.
Value percent_format(const std::string& fmt, const Value& args);

}  // namespace tessera::llm::jinja
