#include "runtime/llm/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "runtime/llm/jinja_args.h"
#include "runtime/llm/jinja_strings.h"

namespace tessera::llm::jinja {

namespace {

// Item or attribute `path` ("a.b", or an integer index) of a value, as jinja2's
// make_attrgetter does for map/selectattr/sort/join(attribute=...).
Value attr_path(const Value& v, const Value& path) {
  if (path.kind == Value::Kind::integer) return get_item(v, path);
  static const std::string kDot = ".";
  Value cur = v;
  for (const auto& part : str::split(path.str(), &kDot, -1)) {
    if (cur.is_undefined()) return cur;
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = get_item(cur, digits ? Value(parse_index(part, "index")) : Value(part));
  }
  return cur;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value to_int(const Value& v, const Value& def) {
  switch (v.kind) {
    case Value::Kind::integer: return v;
    case Value::Kind::boolean: return Value(int64_t(v.b));
    case Value::Kind::floating: return Value(static_cast<int64_t>(v.f));
    case Value::Kind::string: {
      const std::string t = str::strip(v.s, nullptr, true, true);
      char* end = nullptr;
      const long long i = std::strtoll(t.c_str(), &end, 10);
      if (!t.empty() && *end == '\0') return Value(static_cast<int64_t>(i));
      const double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && *end == '\0') return Value(static_cast<int64_t>(d));
      return def;
    }
    default: return def;
  }
}

// sort/dictsort key comparison: strings compare case-insensitively unless asked not to.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value(str::lower(v.s)) : v;
}

std::vector<Value> sorted(std::vector<Value> items, bool reverse, bool case_sensitive, const Value* attribute) {
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const Value ka = sort_key(attribute ? attr_path(a, *attribute) : a, case_sensitive);
    const Value kb = sort_key(attribute ? attr_path(b, *attribute) : b, case_sensitive);
    return reverse ? less(kb, ka) : less(ka, kb);
  });
  return items;
}

// select/reject/selectattr/rejectattr: items for which the test (truthiness without one) holds.
Value select(const Value& seq, CallArgs& args, bool by_attr, bool keep, const BuiltinEnv& env) {
  if (!seq.truthy()) return Value(List{});  // jinja2 yields nothing for a false value (None)
  size_t first = 0;
  Value attribute;
  if (by_attr) {
    if (args.pos.empty()) fail("selectattr/rejectattr need an attribute");
    attribute = args.pos[0];
    first = 1;
  }
  std::string test;
  CallArgs test_args;
  if (args.pos.size() > first) {
    test = args.pos[first].str();
    test_args.pos.assign(args.pos.begin() + static_cast<ptrdiff_t>(first) + 1, args.pos.end());
  }
  List out;
  for (const auto& item : iterate(seq)) {
    const Value v = by_attr ? attr_path(item, attribute) : item;
    CallArgs ta = test_args;
    const bool ok = test.empty() ? v.truthy() : apply_test(test, v, ta, env);
    if (ok == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value indent(const std::string& s, CallArgs& args) {
  const Value* w = arg(args, 0, "width");
  const int64_t width = w && w->is_string() ? 0 : arg_int(args, 0, "width", 4);
  if (width > 4096) fail("indent: width " + std::to_string(width) + " is larger than 4096");
  const std::string ind = w && w->is_string() ? w->s : std::string(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  const bool first = arg_bool(args, 1, "first", false);
  const bool blank = arg_bool(args, 2, "blank", false);
  // jinja2 appends a newline before splitting lines, so a trailing newline is kept as is.
  const std::vector<std::string> lines = str::splitlines(s + "\n");
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k > 0) {
      out += "\n";
      if (blank || !lines[k].empty()) out += ind;
    }
    out += lines[k];
  }
  if (first) out = ind + out;
  return Value(std::move(out));
}

}  // namespace


int64_t length(const Value& v) {
  if (v.is_generator) fail("object of type 'generator' has no len()");
  switch (v.kind) {
    case Value::Kind::string: return static_cast<int64_t>(code_point_count(v.s));
    case Value::Kind::list: return static_cast<int64_t>(v.list->size());
    case Value::Kind::dict:
    case Value::Kind::ns: return static_cast<int64_t>(v.dict->size());
    case Value::Kind::undefined: return 0;
    default: fail("object of type '" + v.type_name() + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  std::vector<Value> out;
  switch (v.kind) {
    case Value::Kind::list: return *v.list;
    case Value::Kind::dict:
      for (const auto& kv : *v.dict) out.push_back(dict_key_value(kv.first));
      return out;
    case Value::Kind::string:
      for (auto& cp : code_points(v.s)) out.emplace_back(std::move(cp));
      return out;
    case Value::Kind::undefined: return out;
    default: fail("'" + v.type_name() + "' object is not iterable");
  }
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_mapping()) {
    if (!key.is_string() && obj.kind == Value::Kind::ns) return Value();
    if (key.is_list() || key.is_mapping() || key.is_undefined()) return Value();
    const Value* v = obj.find(dict_key(key));
    return v ? *v : Value();
  }
  if (obj.is_generator) return Value();
  if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::integer || key.kind == Value::Kind::boolean)) {
    const int64_t n = length(obj);
    int64_t i = key.kind == Value::Kind::boolean ? key.b : key.i;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    if (obj.is_list()) return (*obj.list)[static_cast<size_t>(i)];
    return Value(code_points(obj.s)[static_cast<size_t>(i)]);
  }
  return Value();
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  std::vector<Value> items;
  if (obj.is_list()) {
    items = *obj.list;
  } else if (obj.is_string()) {
    items = iterate(obj);
  } else {
    fail("'" + obj.type_name() + "' object is not subscriptable");
  }
  const int64_t n = static_cast<int64_t>(items.size());
  auto num = [](const Value& v, const char* what) -> int64_t {
    if (v.kind == Value::Kind::integer) return v.i;
    if (v.kind == Value::Kind::boolean) return v.b;
    fail(std::string("slice ") + what + " must be an integer or None");
  };
  const int64_t step = step_v.is_none() ? 1 : num(step_v, "step");
  if (step == 0) fail("slice step cannot be zero");
  // Python's slice.indices.
  auto clamp = [&](const Value& v, int64_t def, bool is_start) {
    if (v.is_none()) return def;
    int64_t i = num(v, is_start ? "start" : "stop");
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t start = clamp(start_v, step > 0 ? 0 : n - 1, true);
  const int64_t stop = clamp(stop_v, step > 0 ? n : -1, false);
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(items[static_cast<size_t>(i)]);
  if (obj.is_list()) return Value(std::move(out));
  std::string s;
  for (const auto& v : out) s += v.s;
  return Value(std::move(s));
}

namespace {

Value filter(const std::string& name, const Value& v, CallArgs& a, const BuiltinEnv& env);

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& a, const BuiltinEnv& env) {
  Value out = filter(name, v, a, env);
  // The filters jinja2 writes as generators (reverse: of a list, not of a string or a generator).
  const bool lazy = name == "map" || name == "select" || name == "reject" || name == "selectattr" ||
                    name == "rejectattr" || name == "unique" || name == "items" ||
                    (name == "reverse" && v.is_list() && !v.is_generator);
  if (lazy && out.is_list()) out.is_generator = true;
  return out;
}

namespace {

Value filter(const std::string& name, const Value& v, CallArgs& a, const BuiltinEnv& env) {
  if (name == "default" || name == "d") {
    const bool boolean = arg_bool(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) {
      const Value* d = arg(a, 0, "default_value");
      return d ? *d : Value("");
    }
    return v;
  }
  if (name == "length" || name == "count") return Value(length(v));
  if (name == "string") return Value(v.str());
  if (name == "safe" || name == "e" || name == "escape") {
    if (v.is_string() && v.is_safe) return v;
    Value out(name == "safe" ? v.str() : html_escape(v.str()));
    out.is_safe = true;
    return out;
  }
  if (name == "trim") {
    const Value* chars = arg(a, 0, "chars");
    std::string c = chars && chars->is_string() ? chars->s : std::string();
    return Value(str::strip(v.str(), chars && chars->is_string() ? &c : nullptr, true, true));
  }
  if (name == "upper") return Value(str::upper(v.str()));
  if (name == "lower") return Value(str::lower(v.str()));
  if (name == "capitalize") return Value(str::capitalize(v.str()));
  if (name == "title") return Value(str::title(v.str()));
  if (name == "replace") {
    if (a.pos.size() < 2) fail("replace needs old and new");
    return Value(str::replace(v.str(), a.pos[0].str(), a.pos[1].str(), arg_int(a, 2, "count", -1)));
  }
  if (name == "tojson") {
    const Value* ind = arg(a, 0, "indent");
    const int indent = ind && ind->kind == Value::Kind::integer ? static_cast<int>(ind->i) : -1;
    return Value(to_json(v, indent, arg_bool(a, 3, "sort_keys", false)));
  }
  if (name == "join") {
    const std::string sep = arg_str(a, 0, "d", "");
    const Value* attribute = arg(a, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += (attribute ? attr_path(item, *attribute) : item).str();
      if (env.max_string_bytes && out.size() > env.max_string_bytes) fail("join: the string exceeds the size limit");
    }
    return Value(std::move(out));
  }
  if (name == "list") return Value(iterate(v));
  if (name == "first") {
    auto items = iterate(v);
    return items.empty() ? Value() : items.front();
  }
  if (name == "last") {
    if (v.is_generator) fail("'generator' object is not reversible");
    auto items = iterate(v);
    return items.empty() ? Value() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) return slice(v, Value::none(), Value::none(), Value(int64_t{-1}));
    auto items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "items") {
    List out;
    if (v.is_undefined()) return Value(std::move(out));
    if (!v.is_mapping()) fail("items: expected a mapping, got " + v.type_name());
    for (const auto& [k, x] : *v.dict) out.push_back(Value::tuple(List{dict_key_value(k), x}));
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_mapping()) fail("dictsort: expected a mapping, got " + v.type_name());
    const bool cs = arg_bool(a, 0, "case_sensitive", false);
    const std::string by = arg_str(a, 1, "by", "key");
    const bool rev = arg_bool(a, 2, "reverse", false);
    List pairs;
    for (const auto& [k, x] : *v.dict) pairs.push_back(Value::tuple(List{dict_key_value(k), x}));
    const Value index(static_cast<int64_t>(by == "value" ? 1 : 0));
    return Value(sorted(std::move(pairs), rev, cs, &index));
  }
  if (name == "sort") {
    return Value(sorted(iterate(v), arg_bool(a, 0, "reverse", false), arg_bool(a, 1, "case_sensitive", false),
                        arg(a, 2, "attribute")));
  }
  if (name == "unique") {
    List out;
    for (const auto& item : iterate(v)) {
      bool seen = false;
      for (const auto& o : out) seen = seen || equal(sort_key(o, false), sort_key(item, false));
      if (!seen) out.push_back(item);
    }
    return Value(std::move(out));
  }
  if (name == "selectattr") return select(v, a, true, true, env);
  if (name == "rejectattr") return select(v, a, true, false, env);
  if (name == "select") return select(v, a, false, true, env);
  if (name == "reject") return select(v, a, false, false, env);
  if (name == "map") {
    List out;
    if (!v.truthy()) return Value(std::move(out));  // as jinja2: nothing for a false value
    const Value* attribute = nullptr;
    for (const auto& [k, x] : a.kw)
      if (k == "attribute") attribute = &x;
    if (attribute) {
      const Value* def = nullptr;
      for (const auto& [k, x] : a.kw)
        if (k == "default") def = &x;
      for (const auto& item : iterate(v)) {
        Value got = attr_path(item, *attribute);
        out.push_back(got.is_undefined() && def ? *def : got);
      }
      return Value(std::move(out));
    }
    if (a.pos.empty()) fail("map needs a filter name or attribute=");
    const std::string filter = a.pos[0].str();
    for (const auto& item : iterate(v)) {
      CallArgs fa;
      fa.pos.assign(a.pos.begin() + 1, a.pos.end());
      fa.kw = a.kw;
      out.push_back(apply_filter(filter, item, fa, env));
    }
    return Value(std::move(out));
  }
  if (name == "indent") return indent(v.str(), a);
  if (name == "int") {
    const Value* d = arg(a, 0, "default");
    return to_int(v, d ? *d : Value(int64_t{0}));
  }
  if (name == "float") {
    if (v.kind == Value::Kind::floating) return v;
    if (v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean) return Value(double(v.kind == Value::Kind::integer ? v.i : v.b));
    if (v.is_string()) {
      char* end = nullptr;
      const double d = std::strtod(v.s.c_str(), &end);
      if (!v.s.empty() && *end == '\0') return Value(d);
    }
    const Value* d = arg(a, 0, "default");
    return d ? *d : Value(0.0);
  }
  if (name == "abs") {
    if (v.kind == Value::Kind::integer) return Value(v.i < 0 ? -v.i : v.i);
    if (v.kind == Value::Kind::floating) return Value(std::fabs(v.f));
    fail("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    const int64_t prec = arg_int(a, 0, "precision", 0);
    const std::string method = arg_str(a, 1, "method", "common");
    const double x = v.kind == Value::Kind::floating ? v.f : double(v.i);
    const double m = std::pow(10.0, double(prec));
    // Python's round() halves to even (nearbyint in the default rounding mode).
    const double r = method == "floor" ? std::floor(x * m) / m : method == "ceil" ? std::ceil(x * m) / m : std::nearbyint(x * m) / m;
    return Value(r);
  }
  if (name == "sum") {
    Value total(int64_t{0});
    for (const auto& item : iterate(v)) {
      if (!item.is_number()) fail("sum: unsupported operand '" + item.type_name() + "'");
      if (total.kind == Value::Kind::integer && item.kind != Value::Kind::floating) total.i += item.kind == Value::Kind::boolean ? item.b : item.i;
      else total = Value((total.kind == Value::Kind::floating ? total.f : double(total.i)) + (item.kind == Value::Kind::floating ? item.f : double(item.i)));
    }
    return total;
  }
  if (name == "min" || name == "max") {
    auto items = iterate(v);
    if (items.empty()) return Value();
    Value best = items[0];
    for (const auto& item : items)
      if (name == "min" ? less(sort_key(item, false), sort_key(best, false)) : less(sort_key(best, false), sort_key(item, false)))
        best = item;
    return best;
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(str::split(v.str(), nullptr, -1).size()));
  fail("no filter named '" + name + "'");
}

}  // namespace

bool apply_test(const std::string& name, const Value& v, CallArgs& a, const BuiltinEnv&) {
  auto other = [&]() -> const Value& {
    if (a.pos.empty()) fail("test '" + name + "' needs an argument");
    return a.pos[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.kind == Value::Kind::dict;
  // jinja2's Undefined is iterable and a sequence (it has __iter__, __len__, __getitem__).
  if (name == "iterable") return v.is_string() || v.is_list() || v.kind == Value::Kind::dict || v.is_undefined();
  if (name == "sequence") return v.is_string() || (v.is_list() && !v.is_generator) || v.kind == Value::Kind::dict || v.is_undefined();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Value::Kind::integer;
  if (name == "float") return v.kind == Value::Kind::floating;
  if (name == "boolean") return v.kind == Value::Kind::boolean;
  if (name == "true") return v.kind == Value::Kind::boolean && v.b;
  if (name == "false") return v.kind == Value::Kind::boolean && !v.b;
  if (name == "callable") return v.kind == Value::Kind::callable;
  if (name == "equalto" || name == "eq" || name == "==") return equal(v, other());
  if (name == "ne" || name == "!=") return !equal(v, other());
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, other());
  if (name == "gt" || name == "greaterthan" || name == ">") return less(other(), v);
  if (name == "le" || name == "<=") return !less(other(), v);
  if (name == "ge" || name == ">=") return !less(v, other());
  if (name == "sameas") {
    const Value& o = other();
    if (v.kind != o.kind) return false;
    switch (v.kind) {
      case Value::Kind::none:
      case Value::Kind::undefined: return true;
      case Value::Kind::boolean: return v.b == o.b;
      case Value::Kind::list: return v.list == o.list;
      case Value::Kind::dict:
      case Value::Kind::ns: return v.dict == o.dict;
      default: return equal(v, o);
    }
  }
  if (name == "in") {
    const Value& c = other();
    if (c.is_string()) return v.is_string() && c.s.find(v.s) != std::string::npos;
    if (c.is_mapping()) return c.find(dict_key(v)) != nullptr;
    for (const auto& x : iterate(c))
      if (equal(v, x)) return true;
    return false;
  }
  if (name == "lower") return str::lower(v.str()) == v.str();
  if (name == "upper") return str::upper(v.str()) == v.str();
  auto integer = [&](const Value& x) {
    if (x.kind != Value::Kind::integer) fail("test '" + name + "' needs an integer");
    return x.i;
  };
  if (name == "odd") return integer(v) % 2 != 0;
  if (name == "even") return integer(v) % 2 == 0;
  if (name == "divisibleby") {
    const int64_t d = integer(other());
    if (d == 0) fail("integer division or modulo by zero");
    return integer(v) % d == 0;
  }
  fail("no test named '" + name + "'");
}

}  // namespace tessera::llm::jinja
