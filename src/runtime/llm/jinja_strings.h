// Python str semantics on UTF-8 strings, for the Jinja builtins (jinja_builtins.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm::jinja::str {

// Python's str.isspace() for one code point given as its UTF-8 bytes.
bool is_space(std::string_view cp);
// str.strip/lstrip/rstrip: with chars == nullptr, Unicode whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit): sep == nullptr splits on runs of whitespace.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
std::string upper(std::string_view s);  // ASCII letters and Latin-1/Greek/Cyrillic basics
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // first upper, rest lower
std::string title(std::string_view s);       // jinja2's title filter
std::vector<std::string> splitlines(std::string_view s);

}  // namespace tessera::llm::jinja::str
