// The Jinja lexer: template source to tokens, with whitespace control applied.
//
// Matches jinja2's lexer with trim_blocks=True and lstrip_blocks=True (how Hugging Face
// transformers renders chat templates):
//   - "\r\n" and "\r" become "\n", and one trailing newline of the source is dropped;
//   - `{#- ... -#}`, `{%- ... -%}`, `{{- ... -}}`: "-" strips all whitespace on that side;
//   - trim_blocks: the first newline after a `%}` or `#}` is removed;
//   - lstrip_blocks: spaces and tabs from the start of a line to a `{%` or `{#` are removed
//     (`{%+` keeps them);
//   - comments produce no tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm::jinja {

struct Token {
  enum class Type { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };
  Type type;
  std::string text;  // text, name, operator, string value (unescaped), number literal
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws JinjaError with the position of the first bad character.
std::vector<Token> lex(std::string_view source, const LexOptions& options);

}  // namespace tessera::llm::jinja
