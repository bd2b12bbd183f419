// A Jinja template engine for chat templates (tokenizer.chat_template).
//
// Renders as Hugging Face transformers does: jinja2 with trim_blocks=True,
// lstrip_blocks=True and loop controls, in an immutable sandbox (methods that change a
// list or dict, such as append or pop, are errors), with the globals raise_exception(msg)
// and strftime_now(fmt), and a tojson filter that writes Python's json.dumps with
// ensure_ascii=False (no key sorting, no HTML escaping).
//
// The subset: {{ }}, {% %}, {# #}, whitespace control; if/elif/else, for (loop.*, else,
// `if` filter), set (incl. block set and namespace attributes), macro, call, filter blocks,
// break/continue; the expressions, tests, filters and str/dict methods chat templates use
// (jinja_builtins.h lists them). Undefined names behave as jinja2's default Undefined:
// they print as "", are false and iterate as empty; attribute or item access on them, or
// calling them, is an error.
//
// Errors (syntax, with line and column; raise_exception; misuse of undefined values; the
// limits below) come back as a Status, never as a crash.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/llm/jinja_value.h"
#include "tessera/status.h"

namespace tessera::llm::jinja {

struct RenderOptions {
  // Bounds on what one render may do, so that a template that loops or nests without end
  // stops with an error instead of exhausting memory or the stack.
  size_t max_output_bytes = size_t{64} << 20;  // output and any one string value
  int64_t max_iterations = int64_t{1} << 22;    // loop iterations and range() items, in total
  int max_depth = 100;                          // macro calls, statement and expression nesting
  // The time strftime_now() formats (local time); unset: now.
  std::optional<std::tm> now;
};

// Renders `source` with the variables `vars` (a dict: name -> value).
Result<std::string> render(std::string_view source, const Value& vars, const RenderOptions& options = {});

// Checks that `source` parses; the error names line and column.
Status check_syntax(std::string_view source);

}  // namespace tessera::llm::jinja
