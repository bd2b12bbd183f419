// Reading the arguments of builtins (jinja_builtins.cpp, jinja_methods.cpp): by position or
// keyword, with a default when absent or None.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/llm/jinja_value.h"

namespace tessera::llm::jinja {

inline const Value* arg(const CallArgs& a, size_t i, std::string_view name) { return a.get(i, name); }
inline std::string arg_str(const CallArgs& a, size_t i, std::string_view name, std::string def) {
  const Value* v = a.get(i, name);
  return v && !v->is_none() && !v->is_undefined() ? v->str() : def;
}
inline int64_t arg_int(const CallArgs& a, size_t i, std::string_view name, int64_t def) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return def;
  if (v->kind == Value::Kind::integer) return v->i;
  if (v->kind == Value::Kind::boolean) return v->b;
  fail("expected an integer argument '" + std::string(name) + "', got " + v->type_name());
}
inline bool arg_bool(const CallArgs& a, size_t i, std::string_view name, bool def) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : def;
}

inline Value str_list(std::vector<std::string> parts) {
  List l;
  for (auto& p : parts) l.emplace_back(std::move(p));
  return Value(std::move(l));
}

}  // namespace tessera::llm::jinja
