#include "runtime/llm/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>

namespace tessera::llm::jinja {

void fail(std::string message) { throw JinjaError{std::move(message), 0, 0}; }

const Value* CallArgs::get(size_t index, std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return index < pos.size() ? &pos[index] : nullptr;
}

Value Value::none() {
  Value v;
  v.kind = Kind::none;
  return v;
}
Value::Value(bool bv) : kind(Kind::boolean), b(bv) {}
Value::Value(int64_t v) : kind(Kind::integer), i(v) {}
Value::Value(double v) : kind(Kind::floating), f(v) {}
Value::Value(std::string str) : kind(Kind::string), s(std::move(str)) {}
namespace {
void check_nesting(uint32_t n) {
  if (n > kMaxNesting) fail("lists and dicts nest deeper than " + std::to_string(kMaxNesting) + " levels");
}
}  // namespace

Value::Value(List l) : kind(Kind::list), list(std::make_shared<List>(std::move(l))) {
  uint32_t inner = 0;
  for (const auto& v : *list) inner = std::max(inner, v.nesting);
  nesting = inner + 1;
  check_nesting(nesting);
}
Value::Value(Dict d) : kind(Kind::dict), dict(std::make_shared<Dict>(std::move(d))) {
  uint32_t inner = 0;
  for (const auto& kv : *dict) inner = std::max(inner, kv.second.nesting);
  nesting = inner + 1;
  check_nesting(nesting);
}

int64_t parse_index(const std::string& digits, const char* what) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, 10);
  if (errno == ERANGE || end == digits.c_str()) fail(std::string(what) + " '" + digits + "' is out of range");
  return v;
}
Value Value::make_namespace(Dict d) {
  Value v(std::move(d));
  v.kind = Kind::ns;
  return v;
}
Value Value::tuple(List l) {
  Value v(std::move(l));
  v.is_tuple = true;
  return v;
}
Value Value::callable(Function f, std::string name) {
  Value v;
  v.kind = Kind::callable;
  v.fn = std::make_shared<Function>(std::move(f));
  v.s = std::move(name);
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return b;
    case Kind::integer: return i != 0;
    case Kind::floating: return f != 0;
    case Kind::string: return !s.empty();
    case Kind::list: return is_generator || !list->empty();
    case Kind::dict: return !dict->empty();
    case Kind::ns:
    case Kind::callable: return true;
  }
  return false;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // buf holds d.ddde[+-]XX with the shortest digits; Python writes fixed notation for
  // exponents in [-4, 16), scientific otherwise.
  std::string sci = buf;
  const size_t epos = sci.find('e');
  const int exp = std::atoi(sci.c_str() + epos + 1);
  if (exp >= -4 && exp < 16) {
    const int decimals = std::max(prec - 1 - exp, 0);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string out = buf;
    if (out.find('.') == std::string::npos) out += ".0";
    return out;
  }
  std::string mant = sci.substr(0, epos);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return mant + ebuf;
}

namespace {

std::string quote_repr(const std::string& s) {
  // Python picks single quotes unless the text has a single quote and no double quote.
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, int indent, bool sort_keys, int depth) {
  if (depth > 200) fail("tojson: nesting too deep");
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent) * d, ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind) {
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.b ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.i); return;
    case Value::Kind::floating:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity") : float_repr(v.f);
      return;
    case Value::Kind::string: json_string(out, v.s); return;
    case Value::Kind::list: {
      if (v.is_generator) fail("Object of type generator is not JSON serializable");
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_value(out, (*v.list)[k], indent, sort_keys, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      if (v.dict->empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.dict) items.push_back(&kv);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        const Value key = dict_key_value(items[k]->first);
        // json.dumps writes keys that are not strings as their JSON text.
        json_string(out, key.is_string() ? key.s : key.is_none() ? "null" : key.kind == Value::Kind::boolean ? (key.b ? "true" : "false") : key.str());
        out += ": ";
        json_value(out, items[k]->second, indent, sort_keys, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::undefined: fail("Object of type Undefined is not JSON serializable");
    case Value::Kind::ns: fail("Object of type Namespace is not JSON serializable");
    case Value::Kind::callable: fail("Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, int indent, bool sort_keys) {
  std::string out;
  json_value(out, v, indent, sort_keys, 0);
  return out;
}

namespace {
constexpr char kKeyTag = '\xff';  // never in UTF-8 text
}  // namespace

std::string dict_key(const Value& key) {
  switch (key.kind) {
    case Value::Kind::string: return key.s;
    case Value::Kind::boolean: return std::string(1, kKeyTag) + "i" + (key.b ? "1" : "0");
    case Value::Kind::integer: return std::string(1, kKeyTag) + "i" + std::to_string(key.i);
    case Value::Kind::floating:
      if (std::floor(key.f) == key.f && std::fabs(key.f) < 9.2e18)
        return std::string(1, kKeyTag) + "i" + std::to_string(static_cast<int64_t>(key.f));
      return std::string(1, kKeyTag) + "f" + float_repr(key.f);
    case Value::Kind::none: return std::string(1, kKeyTag) + "n";
    default: fail("unhashable type: '" + key.type_name() + "'");
  }
}

Value dict_key_value(const std::string& stored) {
  if (stored.empty() || stored[0] != kKeyTag) return Value(stored);
  if (stored.size() > 1 && stored[1] == 'i') return Value(static_cast<int64_t>(std::strtoll(stored.c_str() + 2, nullptr, 10)));
  if (stored.size() > 1 && stored[1] == 'f') return Value(std::strtod(stored.c_str() + 2, nullptr));
  return Value::none();
}

std::string Value::repr() const {
  if (kind == Kind::string) return quote_repr(s);
  return str();
}

std::string Value::str() const {
  switch (kind) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return b ? "True" : "False";
    case Kind::integer: return std::to_string(i);
    case Kind::floating: return float_repr(f);
    case Kind::string: return s;
    case Kind::list: {
      if (is_generator) return "<generator object>";
      std::string out = is_tuple ? "(" : "[";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out += ", ";
        out += (*list)[k].repr();
      }
      if (is_tuple && list->size() == 1) out += ",";
      return out + (is_tuple ? ")" : "]");
    }
    case Kind::dict: {
      std::string out = "{";
      for (size_t k = 0; k < dict->size(); ++k) {
        if (k) out += ", ";
        out += dict_key_value((*dict)[k].first).repr() + ": " + (*dict)[k].second.repr();
      }
      return out + "}";
    }
    case Kind::ns: return "<Namespace>";
    case Kind::callable: return "<function " + s + ">";
  }
  return "";
}

const Value* Value::find(std::string_view key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  // Namespaces are not traversed when printing or comparing (they may hold themselves), so
  // only dicts count nesting.
  if (kind == Kind::dict) {
    nesting = std::max(nesting, v.nesting + 1);
    check_nesting(nesting);
  }
  for (auto& [k, old] : *dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

std::string Value::type_name() const {
  switch (kind) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::list: return is_generator ? "generator" : is_tuple ? "tuple" : "list";
    case Kind::dict: return "dict";
    case Kind::ns: return "Namespace";
    case Kind::callable: return "function";
  }
  return "?";
}

namespace {
double as_double(const Value& v) {
  return v.kind == Value::Kind::floating ? v.f : v.kind == Value::Kind::boolean ? (v.b ? 1 : 0) : double(v.i);
}
bool both_int(const Value& a, const Value& b) {
  auto intlike = [](const Value& v) { return v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean; };
  return intlike(a) && intlike(b);
}
int64_t as_int(const Value& v) { return v.kind == Value::Kind::boolean ? (v.b ? 1 : 0) : v.i; }
}  // namespace

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return both_int(a, b) ? as_int(a) == as_int(b) : as_double(a) == as_double(b);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.s == b.s;
    case Value::Kind::list:
      if (a.is_generator || b.is_generator) return a.list == b.list;
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::dict:
    case Value::Kind::ns: {
      if (a.dict == b.dict) return true;
      if (a.kind == Value::Kind::ns || a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* o = b.find(k);
        if (!o || !equal(v, *o)) return false;
      }
      return true;
    }
    case Value::Kind::callable: return a.fn == b.fn;
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return both_int(a, b) ? as_int(a) < as_int(b) : as_double(a) < as_double(b);
  if (a.is_string() && b.is_string()) return a.s < b.s;  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list()) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (less((*a.list)[k], (*b.list)[k])) return true;
      if (less((*b.list)[k], (*a.list)[k])) return false;
    }
    return a.list->size() < b.list->size();
  }
  fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - k);
    out.emplace_back(s.substr(k, n));
    k += n;
  }
  return out;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace tessera::llm::jinja
