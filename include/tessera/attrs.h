// Typed op attributes, generated from the ATTR_KEY and ATTR lines of tessera/ops.def.
//
// Every attribute key is a constant of this namespace whose type says what it holds:
//
//   const int64_t sh = node.get(attr::stride_h);           // the op's default when unset
//   const std::string& act = node.get(attr::activation);
//   std::optional<double> fill = node.find(attr::value);   // attributes declared `optional`
//   node.set(attr::pad_top, 2);
//
// A node that joins a graph (Graph::add_node / add_op) has its attributes checked against
// its op's declarations: unknown keys, wrong types, values outside `allowed` and missing
// `required` ones are refused with an error naming the node and the attribute. Reading a
// key the node's op does not declare is a bug (TS_CHECK), never a silent default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tessera {

enum class OpKind : uint16_t;

// An attribute value: integer, float, integer list, float list or string.
using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

namespace attr {

// The types of ops.def's ATTR_KEY lines; the stored AttrValue alternative of each.
enum class Type : uint8_t { Int, Float, Ints, Floats, Str };
TESSERA_API const char* type_name(Type t);  // "integer", "float", "integer list", "float list", "string"

template <Type T> struct Traits;
template <> struct Traits<Type::Int> { using Value = int64_t; using Get = int64_t; };
template <> struct Traits<Type::Float> { using Value = double; using Get = double; };
template <> struct Traits<Type::Ints> { using Value = std::vector<int64_t>; using Get = const std::vector<int64_t>&; };
template <> struct Traits<Type::Floats> { using Value = std::vector<double>; using Get = const std::vector<double>&; };
template <> struct Traits<Type::Str> { using Value = std::string; using Get = const std::string&; };

// One id per ATTR_KEY line.
enum class Id : uint16_t {
#define ATTR_KEY(key, type) key,
#include "tessera/export.h"
#include "tessera/ops.def"
#undef ATTR_KEY
};
constexpr int kNumKeys = 0
#define ATTR_KEY(key, type) +1
#include "tessera/ops.def"
#undef ATTR_KEY
    ;

template <Type T>
struct Key {
  Id id;
  const char* name;
  static constexpr Type type = T;
};

// The keys: attr::stride_h, attr::activation, ...
#define ATTR_KEY(key, type) inline constexpr Key<Type::type> key{Id::key, #key};
#include "tessera/ops.def"
#undef ATTR_KEY

// What ops.def's ATTR line says of one attribute of one op.
enum class Presence : uint8_t { defaulted, required, optional };
struct TESSERA_API Spec {
  OpKind op;
  Id id;
  Type type;
  const char* name;
  Presence presence;
  AttrValue default_value;  // the declared default (presence == defaulted)
  const char* allowed;      // "", "a|b|c", ">= 1", "> 0", "0..1"
  const char* meaning;
};

// The declaration of `id` for `op`, or nullptr when the op takes no such attribute.
TESSERA_API const Spec* find_spec(OpKind op, Id id);
// Whether `op` takes the attribute (for code shared by several ops).
template <Type T>
bool declares(OpKind op, Key<T> key) { return find_spec(op, key.id) != nullptr; }
// Every attribute `op` takes, in ops.def order.
TESSERA_API const std::vector<const Spec*>& specs_of(OpKind op);
// Key name for an id ("stride_h").
TESSERA_API const char* key_name(Id id);

// The default of a declared, defaulted attribute (TS_CHECK otherwise).
TESSERA_API const AttrValue& default_of(OpKind op, Id id, std::string_view node_name);
// A stored value of the wrong type, read anyway (a graph that skipped validation): a bug.
[[noreturn]] TESSERA_API void wrong_type(OpKind op, Id id, std::string_view node_name);

}  // namespace attr
}  // namespace tessera
