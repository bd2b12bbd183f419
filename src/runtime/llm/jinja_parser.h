// The Jinja parser: tokens (jinja_lexer.h) to a syntax tree (jinja_ast.h).
//
// Statements: if/elif/else, for (targets, `if` filter, else), set (expression, `ns.attr`,
// block), macro, call, filter, break, continue. Expressions follow jinja2's precedence:
// conditional < or < and < not < comparisons and in < + - < ~ < * / // % < ** < unary -
// < filters and tests < attribute, item, slice and call.
#pragma once

#include <string_view>

#include "runtime/llm/jinja_ast.h"
#include "runtime/llm/jinja_lexer.h"

namespace tessera::llm::jinja {

// Throws JinjaError with the line and column of the offending token. `max_depth` bounds
// the nesting of statements and expressions.
Template parse(std::string_view source, const LexOptions& options, int max_depth);

}  // namespace tessera::llm::jinja
