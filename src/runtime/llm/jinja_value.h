// Values of the Jinja engine (jinja.h): the data model of Python as chat templates see it.
//
// A Value is undefined, none, a bool, an int (int64), a float (double), a string (UTF-8
// bytes; lengths, indices and slices count code points, as Python's str does), a list, a
// dict (string keys in insertion order), a namespace (a dict whose attributes `set` may
// assign), or a callable (a builtin, a bound method or a macro). Lists, dicts and
// namespaces are shared by reference, as Python objects are.
//
// Errors inside the engine are thrown as JinjaError and turned into a Status at the API
// boundary (jinja.cpp); nothing throws across jinja.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::llm::jinja {

// An error while parsing or rendering; line/column are 1-based, 0 when unknown.
struct JinjaError {
  std::string message;
  int line = 0;
  int column = 0;
};
[[noreturn]] void fail(std::string message);

// The deepest nesting of lists and dicts a value may have (Python's json module stops near
// 1000 levels as well).
inline constexpr uint32_t kMaxNesting = 512;

struct Value;
using List = std::vector<Value>;
// Insertion order, unique keys. Keys are strings as written; a key of another type (an int
// in `{0: 1}`) is stored as dict_key() encodes it, behind a byte that UTF-8 text never has.
using Dict = std::vector<std::pair<std::string, Value>>;

// Arguments of a call: positional, then keyword (name, value) in the order written.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument `name` at position `index`, or nullptr when not passed.
  const Value* get(size_t index, std::string_view name) const;
};
using Function = std::function<Value(CallArgs&)>;

struct Value {
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };

  Value() = default;  // undefined
  static Value none();
  Value(bool b);  // NOLINT: implicit by design
  Value(int v) : Value(static_cast<int64_t>(v)) {}  // NOLINT
  Value(int64_t v);                                  // NOLINT
  Value(double v);                                   // NOLINT
  Value(std::string s);                              // NOLINT
  Value(const char* s) : Value(std::string(s)) {}    // NOLINT
  Value(List l);                                     // NOLINT
  Value(Dict d);                                     // NOLINT
  static Value make_namespace(Dict d);
  static Value tuple(List l);  // a list that prints as Python's tuple: (1, 'a')
  static Value callable(Function f, std::string name);

  Kind kind = Kind::undefined;
  bool b = false;
  bool is_tuple = false;  // list: written as a tuple (`(a, b)`, items(), dictsort)
  // list: the result of a filter that jinja2 computes lazily (map, select, selectattr,
  // reject, rejectattr, unique, items, reverse): always true, iterable, but without a
  // length, an index or a JSON form until `| list` makes it a list.
  bool is_generator = false;
  // string: a jinja2 Markup (from `safe` or `escape`): `+` with a plain string escapes the
  // plain one (&, <, >, ", ').
  bool is_safe = false;
  // list, dict: how deeply containers nest inside (1 for a flat one). Bounded by
  // kMaxNesting where containers are built, so that printing, comparing and freeing a
  // value recurse a bounded number of times.
  uint32_t nesting = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;                  // string; a callable's name; an undefined value's name
  std::shared_ptr<List> list;     // list
  std::shared_ptr<Dict> dict;     // dict, namespace
  std::shared_ptr<Function> fn;   // callable

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::none; }
  bool is_string() const { return kind == Kind::string; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
  bool is_mapping() const { return kind == Kind::dict || kind == Kind::ns; }
  bool is_list() const { return kind == Kind::list; }

  bool truthy() const;
  // Python's str(): None, True, 1.5, ['a', 1]; undefined prints as "".
  std::string str() const;
  // Python's repr(): strings quoted.
  std::string repr() const;
  // The entry `key` of a dict or namespace, or nullptr.
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);  // dict or namespace
  std::string type_name() const;            // Python's names: str, int, list, dict...
};

// The stored key of a dict key value (strings as they are; ints, bools as ints, None and
// floats encoded), and back. Unhashable keys (lists, dicts) are an error.
std::string dict_key(const Value& key);
Value dict_key_value(const std::string& stored);

// Python's ==.
bool equal(const Value& a, const Value& b);
// Python's <: numbers, strings, lists; other pairs are an error.
bool less(const Value& a, const Value& b);

// The UTF-8 code points of s as separate strings.
// A decimal integer (digits only) or an error naming `what` when it does not fit int64.
int64_t parse_index(const std::string& digits, const char* what);

std::vector<std::string> code_points(std::string_view s);
size_t code_point_count(std::string_view s);

// Python's repr of a float (shortest round trip: 0.1, 1.0, 1e-05, 1e+16).
std::string float_repr(double v);

// Python's json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys); indent < 0
// for none. Undefined and callables are an error.
std::string to_json(const Value& v, int indent, bool sort_keys);

}  // namespace tessera::llm::jinja
