// The methods of str, dict and list that chat templates call (jinja_builtins.h lists them),
// and Python's two string formattings (str.format, str % args).
#include <algorithm>
#include <cctype>

#include "runtime/llm/jinja_args.h"
#include "runtime/llm/jinja_builtins.h"
#include "runtime/llm/jinja_strings.h"

namespace tessera::llm::jinja {

namespace {

Value format(const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    const char c = fmt[k];
    if (c == '{' && k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
    } else if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') {
      out += '}';
      ++k;
    } else if (c == '{') {
      const size_t end = fmt.find('}', k);
      if (end == std::string::npos) fail("format: single '{' encountered in format string");
      const std::string field = fmt.substr(k + 1, end - k - 1);
      if (field.find_first_of(":!") != std::string::npos) fail("format: format specifications are not supported");
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < args.pos.size() ? &args.pos[auto_index++] : nullptr;
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        const int64_t i = parse_index(field, "format field");
        v = i < static_cast<int64_t>(args.pos.size()) ? &args.pos[static_cast<size_t>(i)] : nullptr;
      } else {
        for (const auto& [n, kv] : args.kw)
          if (n == field) v = &kv;
      }
      if (!v) fail("format: no argument for field '{" + field + "}'");
      out += v->str();
      k = end;
    } else {
      out += c;
    }
  }
  return Value(std::move(out));
}

Value refused(const Value& obj, const std::string& name) {
  const std::string type = obj.type_name();
  return Value::callable(
      [type, name](CallArgs&) -> Value {
        fail("access to attribute '" + name + "' of '" + type + "' object is unsafe (the sandbox is immutable)");
      },
      name);
}

}  // namespace

Value percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> items = args.is_list() && args.is_tuple ? *args.list : std::vector<Value>{args};
  std::string out;
  size_t next = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    if (fmt[k] != '%') {
      out += fmt[k];
      continue;
    }
    if (++k >= fmt.size()) fail("incomplete format");
    const char c = fmt[k];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= items.size()) fail("not enough arguments for format string");
    const Value& v = items[next++];
    if (c == 's') out += v.str();
    else if (c == 'r') out += v.repr();
    else if ((c == 'd' || c == 'i') && v.is_number())
      out += std::to_string(v.kind == Value::Kind::floating ? static_cast<int64_t>(v.f) : v.kind == Value::Kind::boolean ? v.b : v.i);
    else fail(std::string("unsupported format character '") + c + "'");
  }
  if (next < items.size()) fail("not all arguments converted during string formatting");
  return Value(std::move(out));
}

Value method(const Value& obj, const std::string& name, const BuiltinEnv& env) {
  auto bind = [&](auto fn) { return Value::callable([obj, fn](CallArgs& a) -> Value { return fn(obj, a); }, name); };
  if (obj.is_string()) {
    auto opt_str = [](const CallArgs& a, size_t i, const char* n, std::string& store) -> const std::string* {
      const Value* v = a.get(i, n);
      if (!v || v->is_none()) return nullptr;
      store = v->str();
      return &store;
    };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const bool l = name != "rstrip", r = name != "lstrip";
      return bind([=](const Value& o, CallArgs& a) {
        std::string c;
        return Value(str::strip(o.s, opt_str(a, 0, "chars", c), l, r));
      });
    }
    if (name == "split" || name == "rsplit") {
      const bool right = name == "rsplit";
      return bind([=](const Value& o, CallArgs& a) {
        std::string sep;
        const std::string* s = opt_str(a, 0, "sep", sep);
        const int64_t maxsplit = arg_int(a, 1, "maxsplit", -1);
        return str_list(right ? str::rsplit(o.s, s, maxsplit) : str::split(o.s, s, maxsplit));
      });
    }
    if (name == "startswith" || name == "endswith") {
      const bool starts = name == "startswith";
      return bind([=](const Value& o, CallArgs& a) {
        if (a.pos.empty()) fail(name + "() takes at least 1 argument");
        std::vector<Value> options = a.pos[0].is_list() ? *a.pos[0].list : std::vector<Value>{a.pos[0]};
        for (const auto& p : options) {
          if (!p.is_string()) fail(name + "() argument must be str or a tuple of str");
          const std::string& x = p.s;
          if (x.size() <= o.s.size() &&
              (starts ? o.s.compare(0, x.size(), x) == 0 : o.s.compare(o.s.size() - x.size(), x.size(), x) == 0))
            return Value(true);
        }
        return Value(false);
      });
    }
    if (name == "upper") return bind([](const Value& o, CallArgs&) { return Value(str::upper(o.s)); });
    if (name == "lower") return bind([](const Value& o, CallArgs&) { return Value(str::lower(o.s)); });
    if (name == "title") return bind([](const Value& o, CallArgs&) { return Value(str::title(o.s)); });
    if (name == "capitalize") return bind([](const Value& o, CallArgs&) { return Value(str::capitalize(o.s)); });
    if (name == "splitlines") return bind([](const Value& o, CallArgs&) { return str_list(str::splitlines(o.s)); });
    if (name == "replace")
      return bind([](const Value& o, CallArgs& a) {
        if (a.pos.size() < 2) fail("replace() takes at least 2 arguments");
        return Value(str::replace(o.s, a.pos[0].str(), a.pos[1].str(), arg_int(a, 2, "count", -1)));
      });
    if (name == "find" || name == "rfind" || name == "count") {
      return bind([name](const Value& o, CallArgs& a) {
        if (a.pos.empty() || !a.pos[0].is_string()) fail(name + "() needs a string");
        const std::string& x = a.pos[0].s;
        if (name == "count") {
          if (x.empty()) return Value(static_cast<int64_t>(code_point_count(o.s) + 1));
          int64_t n = 0;
          for (size_t at = o.s.find(x); at != std::string::npos; at = o.s.find(x, at + x.size())) ++n;
          return Value(n);
        }
        const size_t at = name == "find" ? o.s.find(x) : o.s.rfind(x);
        return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(code_point_count(o.s.substr(0, at))));
      });
    }
    if (name == "join")
      return bind([](const Value& o, CallArgs& a) {
        if (a.pos.empty()) fail("join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (const auto& item : iterate(a.pos[0])) {
          if (!item.is_string()) fail("join: expected str instance, " + item.type_name() + " found");
          if (!first) out += o.s;
          first = false;
          out += item.s;
        }
        return Value(std::move(out));
      });
    if (name == "format") return bind([](const Value& o, CallArgs& a) { return format(o.s, a); });
    if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" ||
        name == "isupper") {
      return bind([name](const Value& o, CallArgs&) {
        if (o.s.empty()) return Value(false);
        if (name == "islower") return Value(str::lower(o.s) == o.s && str::upper(o.s) != o.s);
        if (name == "isupper") return Value(str::upper(o.s) == o.s && str::lower(o.s) != o.s);
        for (const auto& cp : code_points(o.s)) {
          const unsigned char c = static_cast<unsigned char>(cp[0]);
          bool ok = name == "isspace"   ? str::is_space(cp)
                    : name == "isdigit" ? (cp.size() == 1 && std::isdigit(c))
                    : name == "isalpha" ? (cp.size() > 1 || std::isalpha(c))
                                        : (cp.size() > 1 || std::isalnum(c));
          if (!ok) return Value(false);
        }
        return Value(true);
      });
    }
    return Value();
  }
  if (obj.kind == Value::Kind::dict) {
    if (name == "get")
      return bind([](const Value& o, CallArgs& a) {
        if (a.pos.empty()) fail("get() takes at least 1 argument");
        const Value* v = o.find(dict_key(a.pos[0]));
        if (v) return *v;
        return a.pos.size() > 1 ? a.pos[1] : Value::none();
      });
    if (name == "items") return bind([&env](const Value& o, CallArgs& a) { return apply_filter("items", o, a, env); });
    if (name == "keys")
      return bind([](const Value& o, CallArgs&) {
        List l;
        for (const auto& kv : *o.dict) l.push_back(dict_key_value(kv.first));
        return Value(std::move(l));
      });
    if (name == "values")
      return bind([](const Value& o, CallArgs&) {
        List l;
        for (const auto& kv : *o.dict) l.push_back(kv.second);
        return Value(std::move(l));
      });
    if (name == "pop" || name == "popitem" || name == "update" || name == "setdefault" || name == "clear")
      return refused(obj, name);
    return Value();
  }
  if (obj.is_list()) {
    if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
        name == "clear" || name == "sort" || name == "reverse")
      return refused(obj, name);
    if (name == "index" || name == "count")
      return bind([name](const Value& o, CallArgs& a) {
        if (a.pos.empty()) fail(name + "() takes exactly one argument");
        int64_t n = 0;
        for (size_t k = 0; k < o.list->size(); ++k) {
          if (!equal((*o.list)[k], a.pos[0])) continue;
          if (name == "index") return Value(static_cast<int64_t>(k));
          ++n;
        }
        if (name == "index") fail("list.index(x): x not in list");
        return Value(n);
      });
  }
  return Value();
}

}  // namespace tessera::llm::jinja
