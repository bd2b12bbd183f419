// The attribute declarations of ops.def as a table, and the checks a node's attributes
// pass when it joins a graph (include/tessera/attrs.h).
#include "ops/attrs_check.h"

#include <array>
#include <charconv>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "tessera/graph.h"

namespace tessera {
namespace attr {

namespace {

// The default column of an ATTR line: a value, or one of these tags.
struct Required {};
struct Optional {};
struct Empty {};
constexpr Required required{};
constexpr Optional optional{};
constexpr Empty empty{};

template <Type T>
struct Declared {
  Presence presence = Presence::defaulted;
  AttrValue value;
  Declared(Required) : presence(Presence::required), value(typename Traits<T>::Value{}) {}
  Declared(Optional) : presence(Presence::optional), value(typename Traits<T>::Value{}) {}
  Declared(Empty) : value(typename Traits<T>::Value{}) {
    static_assert(T == Type::Ints || T == Type::Floats, "`empty` is a list default");
  }
  template <class V>
  Declared(V v) : value(typename Traits<T>::Value(v)) {}
};

template <Type T>
Spec make_spec(OpKind op, Key<T> key, Declared<T> d, const char* allowed, const char* meaning) {
  return Spec{op, key.id, T, key.name, d.presence, std::move(d.value), allowed, meaning};
}

const std::vector<Spec>& all_specs() {
  static const std::vector<Spec> kSpecs = {
#define ATTR(op, key, default_value, allowed, meaning) \
  make_spec(OpKind::op, attr::key, Declared<decltype(attr::key)::type>(default_value), allowed, meaning),
#include "ops/ops.def"
#undef ATTR
  };
  return kSpecs;
}

// index[op][key]: position in all_specs(), -1 when the op takes no such attribute.
using Index = std::vector<std::array<int16_t, kNumKeys>>;
const Index& index() {
  static const Index kIndex = [] {
    Index ix(static_cast<size_t>(kNumOps));
    for (auto& row : ix) row.fill(-1);
    const auto& specs = all_specs();
    for (size_t i = 0; i < specs.size(); ++i)
      ix[static_cast<size_t>(specs[i].op)][static_cast<size_t>(specs[i].id)] = static_cast<int16_t>(i);
    return ix;
  }();
  return kIndex;
}

constexpr const char* kKeyNames[] = {
#define ATTR_KEY(key, type) #key,
#include "ops/ops.def"
#undef ATTR_KEY
};

std::string node_label(OpKind op, std::string_view name) {
  std::string s = op_name(op);
  if (!name.empty()) s += " '" + std::string(name) + "'";
  return s;
}

// ---- `allowed` ----

std::string value_str(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>) {
          os << "'" << x << "'";
        } else if constexpr (std::is_same_v<X, int64_t> || std::is_same_v<X, double>) {
          os << x;
        } else {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << "]";
        }
      },
      v);
  return os.str();
}

bool parse_number(std::string_view s, double& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return false;
  // std::from_chars for double is in GCC 11+; ops.def holds plain decimal numbers.
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Calls f on each alternative of an "a|b|c" list until f returns true; whether one did.
template <class F>
bool any_alternative(std::string_view list, F f) {
  for (size_t pos = 0; pos <= list.size();) {
    size_t bar = list.find('|', pos);
    if (bar == std::string_view::npos) bar = list.size();
    if (f(list.substr(pos, bar - pos))) return true;
    pos = bar + 1;
  }
  return false;
}

// Whether `v` is among `allowed`. A malformed `allowed` in ops.def is a bug (the unit test
// reads every line).
bool allowed_value(const AttrValue& v, std::string_view allowed) {
  if (allowed.empty()) return true;
  if (const auto* s = std::get_if<std::string>(&v))
    return any_alternative(allowed, [&](std::string_view alt) { return alt == *s; });
  double x = 0;
  if (const auto* i = std::get_if<int64_t>(&v)) x = static_cast<double>(*i);
  else if (const auto* d = std::get_if<double>(&v)) x = *d;
  else return true;  // lists: no element rule in ops.def
  if (std::isnan(x)) return false;
  double bound = 0;
  if (allowed.starts_with(">=") && parse_number(allowed.substr(2), bound)) return x >= bound;
  if (allowed.starts_with(">") && parse_number(allowed.substr(1), bound)) return x > bound;
  if (auto dots = allowed.find(".."); dots != std::string_view::npos) {
    double lo = 0, hi = 0;
    TS_CHECK(parse_number(allowed.substr(0, dots), lo) && parse_number(allowed.substr(dots + 2), hi),
             "malformed range '" + std::string(allowed) + "' in ops.def");
    return x >= lo && x <= hi;
  }
  return any_alternative(allowed, [&](std::string_view alt) {
    TS_CHECK(parse_number(alt, bound), "malformed allowed list '" + std::string(allowed) + "' in ops.def");
    return x == bound;
  });
}

// Brings a value to the key's type where that loses nothing (an integer for a float, an
// integral float for an integer, one integer for an integer list); false otherwise.
bool coerce(AttrValue& v, Type t) {
  switch (t) {
    case Type::Int:
      if (std::holds_alternative<int64_t>(v)) return true;
      if (const auto* d = std::get_if<double>(&v)) {
        if (!(std::trunc(*d) == *d) || std::fabs(*d) > 9.0e15) return false;
        v = static_cast<int64_t>(*d);
        return true;
      }
      return false;
    case Type::Float:
      if (std::holds_alternative<double>(v)) return true;
      if (const auto* i = std::get_if<int64_t>(&v)) {
        v = static_cast<double>(*i);
        return true;
      }
      return false;
    case Type::Ints:
      if (std::holds_alternative<std::vector<int64_t>>(v)) return true;
      if (const auto* i = std::get_if<int64_t>(&v)) {
        v = std::vector<int64_t>{*i};
        return true;
      }
      return false;
    case Type::Floats:
      if (std::holds_alternative<std::vector<double>>(v)) return true;
      if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) {
        v = std::vector<double>(l->begin(), l->end());
        return true;
      }
      return false;
    case Type::Str:
      return std::holds_alternative<std::string>(v);
  }
  return false;
}

bool has_type(const AttrValue& v, Type t) {
  switch (t) {
    case Type::Int: return std::holds_alternative<int64_t>(v);
    case Type::Float: return std::holds_alternative<double>(v);
    case Type::Ints: return std::holds_alternative<std::vector<int64_t>>(v);
    case Type::Floats: return std::holds_alternative<std::vector<double>>(v);
    case Type::Str: return std::holds_alternative<std::string>(v);
  }
  return false;
}

const Spec* spec_by_name(OpKind op, std::string_view key) {
  for (int i = 0; i < kNumKeys; ++i)
    if (key == kKeyNames[i]) return find_spec(op, static_cast<Id>(i));
  return nullptr;
}

std::string takes_list(OpKind op) {
  std::string s;
  for (const Spec* sp : specs_of(op)) s += (s.empty() ? "" : ", ") + std::string(sp->name);
  return s.empty() ? "none" : s;
}

Status check_one(const Node& n, const Spec& sp, const AttrValue& v) {
  if (!has_type(v, sp.type))
    return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": attribute '", sp.name,
                 "' must be ", a_type(sp.type), ", got ", value_str(v));
  if (!allowed_value(v, sp.allowed))
    return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": attribute '", sp.name, "' is ",
                 value_str(v), ", allowed: ", sp.allowed);
  return Status::Ok();
}

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::Int: return "integer";
    case Type::Float: return "float";
    case Type::Ints: return "integer list";
    case Type::Floats: return "float list";
    case Type::Str: return "string";
  }
  return "?";
}

std::string a_type(Type t) { return (t == Type::Int ? "an " : "a ") + std::string(type_name(t)); }

const Spec* find_spec(OpKind op, Id id) {
  const auto o = static_cast<size_t>(op), k = static_cast<size_t>(id);
  if (o >= static_cast<size_t>(kNumOps) || k >= static_cast<size_t>(kNumKeys)) return nullptr;
  const int16_t i = index()[o][k];
  return i < 0 ? nullptr : &all_specs()[static_cast<size_t>(i)];
}

const std::vector<const Spec*>& specs_of(OpKind op) {
  static const std::vector<std::vector<const Spec*>> kByOp = [] {
    std::vector<std::vector<const Spec*>> by(static_cast<size_t>(kNumOps));
    for (const Spec& s : all_specs()) by[static_cast<size_t>(s.op)].push_back(&s);
    return by;
  }();
  static const std::vector<const Spec*> kNone;
  const auto o = static_cast<size_t>(op);
  return o < kByOp.size() ? kByOp[o] : kNone;
}

const char* key_name(Id id) {
  const auto k = static_cast<size_t>(id);
  return k < static_cast<size_t>(kNumKeys) ? kKeyNames[k] : "unknown";
}

const AttrValue& default_of(OpKind op, Id id, std::string_view node_name) {
  const Spec* s = find_spec(op, id);
  TS_CHECK(s != nullptr, node_label(op, node_name) + " read attribute '" + key_name(id) + "', which " + op_name(op) +
                             " does not declare (ops.def)");
  TS_CHECK(s->presence == Presence::defaulted, node_label(op, node_name) + " read attribute '" + key_name(id) +
                                                   "' without a default and unset (read it with find)");
  return s->default_value;
}

void wrong_type(OpKind op, Id id, std::string_view node_name) {
  const Spec* s = find_spec(op, id);
  check_failed("stored type == declared type", __FILE__, __LINE__,
               node_label(op, node_name) + " attribute '" + key_name(id) + "' is not " +
                   (s ? a_type(s->type) : std::string("declared")) + " (the graph was not validated)");
}

namespace {
// Every attribute of `n` against its op's declarations; a mutable node's values are first
// brought to their declared types where that loses nothing (coerce).
template <class N>
Status check_all(N& n) {
  for (auto& [key, value] : n.attrs) {
    const Spec* sp = spec_by_name(n.op, key);
    if (!sp)
      return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": unknown attribute '", key,
                   "' (", op_name(n.op), " takes: ", takes_list(n.op), ")");
    if constexpr (!std::is_const_v<N>) coerce(value, sp->type);
    TS_RETURN_IF_ERROR(check_one(n, *sp, value));
  }
  return check_required(n);
}
}  // namespace

Status normalize_and_check(Node& n) { return check_all(n); }
Status check(const Node& n) { return check_all(n); }

Status check_required(const Node& n) {
  for (const Spec* sp : specs_of(n.op))
    if (sp->presence == Presence::required && n.attrs.find(std::string_view(sp->name)) == n.attrs.end())
      return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": attribute '", sp->name,
                   "' is required (", sp->meaning, ")");
  return Status::Ok();
}

}  // namespace attr
}  // namespace tessera
