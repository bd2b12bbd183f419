// The Jinja renderer: runs a syntax tree (jinja_ast.h) against variables.
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "runtime/llm/jinja.h"
#include "runtime/llm/jinja_builtins.h"
#include "runtime/llm/jinja_parser.h"

namespace tessera::llm::jinja {

namespace {

// A frame of variables. For loops and macro calls open a child frame, so that `set` inside
// them does not change the variables outside (jinja2's scoping; namespace() gets around it).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { normal, break_, continue_ };

Value undefined_named(std::string name) {
  Value v;
  v.s = std::move(name);
  return v;
}

class Renderer {
 public:
  Renderer(const RenderOptions& o) : opt_(o) {
    env_.call = [this](const Value& fn, CallArgs& args) { return call(fn, args); };
    env_.max_string_bytes = o.max_output_bytes;
  }

  std::string run(const Template& tpl, const Value& vars) {
    auto root = std::make_shared<Scope>();
    add_globals(*root);
    if (vars.is_mapping())
      for (const auto& [k, v] : *vars.dict) root->vars[k] = v;
    std::string out;
    out_ = &out;
    if (exec(tpl.body, root) != Flow::normal) fail("'break' or 'continue' outside a loop");
    return out;
  }

 private:
  // --- statements ---
  void write(const std::string& s) {
    if (out_->size() + s.size() > opt_.max_output_bytes)
      fail("output exceeds the limit of " + std::to_string(opt_.max_output_bytes) + " bytes");
    *out_ += s;
  }

  void count_iteration() {
    if (++iterations_ > opt_.max_iterations)
      fail("more than " + std::to_string(opt_.max_iterations) + " loop iterations (the iteration limit)");
  }

  // Renders `body` into a string (block set, macro, filter block).
  std::string capture(const Body& body, const std::shared_ptr<Scope>& scope) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    const Flow f = exec(body, scope);
    out_ = saved;
    if (f != Flow::normal) fail("'break' or 'continue' outside a loop");
    return buf;
  }

  Flow exec(const Body& body, const std::shared_ptr<Scope>& scope) {
    for (const auto& n : body) {
      try {
        const Flow f = exec_node(*n, scope);
        if (f != Flow::normal) return f;
      } catch (JinjaError& e) {
        if (e.line == 0) {
          e.line = n->line;
          e.column = n->column;
        }
        throw;
      }
    }
    return Flow::normal;
  }

  Flow exec_node(const Node& n, const std::shared_ptr<Scope>& scope) {
    switch (n.kind) {
      case Node::Kind::text: write(n.text); return Flow::normal;
      case Node::Kind::output: write(eval(*n.expr, scope).str()); return Flow::normal;
      case Node::Kind::if_:
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond, scope).truthy()) return exec(body, scope);
        return exec(n.else_body, scope);
      case Node::Kind::for_: return exec_for(n, scope);
      case Node::Kind::set: {
        Value v = eval(*n.expr, scope);
        if (!n.target_attr.empty()) {
          const Value* ns = scope->find(n.targets[0]);
          if (!ns || ns->kind != Value::Kind::ns) fail("cannot assign attribute on non-namespace object");
          Value target = *ns;  // shares the namespace's dict
          target.set(n.target_attr, std::move(v));
        } else {
          assign(n.targets, std::move(v), *scope);
        }
        return Flow::normal;
      }
      case Node::Kind::set_block: {
        Value v(capture(n.body, scope));
        if (n.expr) v = eval_filter(*n.expr, scope, &v);
        scope->vars[n.targets[0]] = std::move(v);
        return Flow::normal;
      }
      case Node::Kind::macro: scope->vars[n.text] = make_macro(n, scope); return Flow::normal;
      case Node::Kind::call: {
        // caller() renders the block body; the call expression gets it as `caller`.
        Value caller = make_macro(n, scope, true);
        const Expr& c = *n.expr;
        Value fn = eval(*c.items[0], scope);
        CallArgs args = eval_args(c, scope);
        args.kw.emplace_back("caller", caller);
        write(call(fn, args).str());
        return Flow::normal;
      }
      case Node::Kind::filter: {
        Value v(capture(n.body, scope));
        write(eval_filter(*n.expr, scope, &v).str());
        return Flow::normal;
      }
      case Node::Kind::break_: return Flow::break_;
      case Node::Kind::continue_: return Flow::continue_;
    }
    return Flow::normal;
  }

  void assign(const std::vector<std::string>& targets, Value v, Scope& scope) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = std::move(v);
      return;
    }
    std::vector<Value> parts = iterate(v);
    if (parts.size() != targets.size())
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(targets.size()) +
           " names");
    for (size_t k = 0; k < targets.size(); ++k) scope.vars[targets[k]] = std::move(parts[k]);
  }

  Flow exec_for(const Node& n, const std::shared_ptr<Scope>& scope) {
    const Value seq = eval(*n.expr, scope);
    if (!seq.is_undefined() && !seq.is_list() && !seq.is_mapping() && !seq.is_string())
      fail("'" + seq.type_name() + "' object is not iterable");
    std::vector<Value> items = iterate(seq);
    if (n.cond) {  // `for x in xs if cond`: the filter runs before loop.* is counted
      std::vector<Value> kept;
      for (auto& item : items) {
        count_iteration();
        auto s = std::make_shared<Scope>();
        s->parent = scope;
        assign(n.targets, item, *s);
        if (eval(*n.cond, s).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(n.else_body, scope);
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      count_iteration();
      auto s = std::make_shared<Scope>();
      s->parent = scope;
      Dict loop = {{"index", Value(k + 1)},        {"index0", Value(k)},
                   {"revindex", Value(len - k)},   {"revindex0", Value(len - k - 1)},
                   {"first", Value(k == 0)},       {"last", Value(k == len - 1)},
                   {"length", Value(len)},         {"depth", Value(1)},
                   {"depth0", Value(0)}};
      if (k > 0) loop.emplace_back("previtem", items[k - 1]);
      if (k + 1 < len) loop.emplace_back("nextitem", items[k + 1]);
      loop.emplace_back("cycle", Value::callable(
                                     [k](CallArgs& a) {
                                       if (a.pos.empty()) fail("no items for cycling given");
                                       return a.pos[static_cast<size_t>(k) % a.pos.size()];
                                     },
                                     "cycle"));
      s->vars["loop"] = Value(std::move(loop));
      assign(n.targets, items[k], *s);
      const Flow f = exec(n.body, s);
      if (f == Flow::break_) break;
    }
    return Flow::normal;
  }

  // A macro sees the variables of the scope it was defined in. It holds that scope weakly
  // (the scope holds the macro: a strong reference would be a cycle that is never freed);
  // the renderer keeps the scope alive until the render ends.
  Value make_macro(const Node& n, const std::shared_ptr<Scope>& defining, bool is_caller = false) {
    const Node* node = &n;
    const std::string name = is_caller ? "caller" : n.text;
    if (pinned_scopes_.empty() || pinned_scopes_.back() != defining) pinned_scopes_.push_back(defining);
    std::weak_ptr<Scope> weak = defining;
    return Value::callable(
        [this, node, weak, name](CallArgs& args) -> Value {
          std::shared_ptr<Scope> scope = weak.lock();
          if (!scope) fail("macro '" + name + "' called after its render ended");
          if (++depth_ > opt_.max_depth) fail("macro calls nest deeper than the limit of " + std::to_string(opt_.max_depth));
          struct Exit {
            int& d;
            ~Exit() { --d; }
          } exit_guard{depth_};
          auto s = std::make_shared<Scope>();
          s->parent = scope;
          const auto& params = node->params;
          if (args.pos.size() > params.size())
            fail("macro '" + name + "' takes not more than " + std::to_string(params.size()) + " argument(s)");
          for (size_t k = 0; k < params.size(); ++k) {
            if (k < args.pos.size()) {
              s->vars[params[k].first] = args.pos[k];
            } else if (params[k].second) {
              s->vars[params[k].first] = eval(*params[k].second, s);
            } else {
              s->vars[params[k].first] = undefined_named(params[k].first);
            }
          }
          for (auto& [key, v] : args.kw) {
            bool known = key == "caller";
            for (const auto& p : params) known = known || p.first == key;
            if (!known) fail("macro '" + name + "' takes no keyword argument '" + key + "'");
            s->vars[key] = v;
          }
          return Value(capture(node->body, s));
        },
        name);
  }

  // --- expressions ---
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope, size_t first = 1) {
    CallArgs a;
    for (size_t k = first; k < e.items.size(); ++k) a.pos.push_back(eval(*e.items[k], scope));
    for (const auto& [name, ex] : e.kwargs) a.kw.emplace_back(name, eval(*ex, scope));
    return a;
  }

  Value call(const Value& fn, CallArgs& args) {
    if (fn.is_undefined()) fail("'" + (fn.s.empty() ? std::string("value") : fn.s) + "' is undefined");
    if (fn.kind != Value::Kind::callable) fail("'" + fn.type_name() + "' object is not callable");
    return (*fn.fn)(args);
  }

  Value eval_filter(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* block_input) {
    Value target = e.items[0] ? (e.items[0]->kind == Expr::Kind::filter && block_input
                                     ? eval_filter(*e.items[0], scope, block_input)
                                     : eval(*e.items[0], scope))
                              : *block_input;
    CallArgs args = eval_args(e, scope);
    return apply_filter(e.name, target, args, env_);
  }

  Value attribute(const Value& obj, const std::string& name) {
    if (obj.is_undefined())
      fail("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined (reading attribute '" + name + "')");
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
      return get_item(obj, Value(parse_index(name, "index")));
    if (obj.kind == Value::Kind::ns) {
      const Value* v = obj.find(name);
      return v ? *v : undefined_named(name);
    }
    Value m = method(obj, name, env_);
    if (!m.is_undefined()) return m;
    if (obj.is_mapping()) {
      const Value* v = obj.find(name);
      if (v) return *v;
    }
    return undefined_named(obj.type_name() + " object has no attribute '" + name + "'");
  }

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
    try {
      return eval_inner(e, scope);
    } catch (JinjaError& err) {
      if (err.line == 0) {
        err.line = e.line;
        err.column = e.column;
      }
      throw;
    }
  }

  Value eval_inner(const Expr& e, const std::shared_ptr<Scope>& scope) {
    switch (e.kind) {
      case Expr::Kind::literal: return e.value;
      case Expr::Kind::name: {
        const Value* v = scope->find(e.name);
        return v ? *v : undefined_named(e.name);
      }
      case Expr::Kind::list:
      case Expr::Kind::tuple: {
        List l;
        for (const auto& it : e.items) l.push_back(eval(*it, scope));
        return e.kind == Expr::Kind::tuple ? Value::tuple(std::move(l)) : Value(std::move(l));
      }
      case Expr::Kind::dict: {
        Value d{Dict{}};
        for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
          Value key = eval(*e.items[k], scope);
          d.set(dict_key(key), eval(*e.items[k + 1], scope));
        }
        return d;
      }
      case Expr::Kind::attr: return attribute(eval(*e.items[0], scope), e.name);
      case Expr::Kind::item: {
        Value obj = eval(*e.items[0], scope);
        Value key = eval(*e.items[1], scope);
        if (obj.is_undefined())
          fail("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined (reading an item)");
        Value v = get_item(obj, key);
        if (v.is_undefined() && key.is_string() && obj.kind != Value::Kind::ns) {
          Value m = method(obj, key.s, env_);
          if (!m.is_undefined()) return m;
        }
        return v;
      }
      case Expr::Kind::slice: {
        Value obj = eval(*e.items[0], scope);
        Value parts[3];
        for (int k = 0; k < 3; ++k)
          parts[k] = e.items[k + 1] ? eval(*e.items[k + 1], scope) : Value::none();
        if (obj.is_undefined()) fail("'" + obj.s + "' is undefined (slicing)");
        return slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::call: {
        Value fn = eval(*e.items[0], scope);
        CallArgs args = eval_args(e, scope);
        return call(fn, args);
      }
      case Expr::Kind::filter: return eval_filter(e, scope, nullptr);
      case Expr::Kind::test: {
        Value target = eval(*e.items[0], scope);
        CallArgs args = eval_args(e, scope);
        return Value(apply_test(e.name, target, args, env_) != e.negate);
      }
      case Expr::Kind::unary: {
        Value v = eval(*e.items[0], scope);
        if (e.name == "not") return Value(!v.truthy());
        if (v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean)
        {
          const int64_t x = v.kind == Value::Kind::boolean ? int64_t(v.b) : v.i;
          if (e.name == "-" && x == INT64_MIN) fail("integer overflow");
          return Value(e.name == "-" ? -x : x);
        }
        if (v.kind == Value::Kind::floating) return Value(e.name == "-" ? -v.f : v.f);
        fail("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
      }
      case Expr::Kind::logic: {
        Value a = eval(*e.items[0], scope);
        if (e.name == "and") return a.truthy() ? eval(*e.items[1], scope) : a;
        return a.truthy() ? a : eval(*e.items[1], scope);
      }
      case Expr::Kind::cond:
        if (eval(*e.items[1], scope).truthy()) return eval(*e.items[0], scope);
        return e.items[2] ? eval(*e.items[2], scope) : Value();
      case Expr::Kind::binary: return binary(e.name, eval(*e.items[0], scope), eval(*e.items[1], scope));
    }
    fail("unknown expression");
  }

  [[noreturn]] static Value overflow() { fail("integer overflow (Tessera's integers are 64-bit)"); }

  Value check_size(std::string s) {
    if (s.size() > opt_.max_output_bytes) fail("a string exceeds the limit of " + std::to_string(opt_.max_output_bytes) + " bytes");
    return Value(std::move(s));
  }

  Value binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return check_size(a.str() + b.str());
    // Arithmetic on an undefined value is jinja2's UndefinedError, named after the value.
    const bool arithmetic = op == "+" || op == "-" || op == "*" || op == "/" || op == "//" || op == "%" || op == "**";
    if (arithmetic && (a.is_undefined() || b.is_undefined())) {
      const Value& u = a.is_undefined() ? a : b;
      fail("'" + (u.s.empty() ? std::string("value") : u.s) + "' is undefined");
    }
    if (op == "==") return Value(equal(a, b));
    if (op == "!=") return Value(!equal(a, b));
    if (op == "<") return Value(less(a, b));
    if (op == ">") return Value(less(b, a));
    if (op == "<=") return Value(!less(b, a));
    if (op == ">=") return Value(!less(a, b));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) fail("'in <string>' requires string as left operand, not " + a.type_name());
        found = b.s.find(a.s) != std::string::npos;
      } else if (b.is_list()) {
        for (const auto& x : *b.list) found = found || equal(a, x);
      } else if (b.is_mapping()) {
        found = b.find(dict_key(a)) != nullptr;
      } else if (!b.is_undefined()) {
        fail("argument of type '" + b.type_name() + "' is not iterable");
      }
      return Value(op == "in" ? found : !found);
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      if (!a.is_safe && !b.is_safe) return check_size(a.s + b.s);
      // Markup + str escapes the str (markupsafe), and the sum is Markup.
      Value out = check_size((a.is_safe ? a.s : html_escape(a.s)) + (b.is_safe ? b.s : html_escape(b.s)));
      out.is_safe = true;
      return out;
    }
    if (op == "%" && a.is_string()) return percent_format(a.s, b);
    if (op == "+" && a.is_list() && b.is_list() && !a.is_generator && !b.is_generator) {
      List l = *a.list;
      l.insert(l.end(), b.list->begin(), b.list->end());
      return Value(std::move(l));
    }
    if (op == "*" && (a.is_string() || b.is_string()) && (a.kind == Value::Kind::integer || b.kind == Value::Kind::integer)) {
      const std::string& s = a.is_string() ? a.s : b.s;
      const int64_t n = a.is_string() ? b.i : a.i;
      if (n > 0 && !s.empty() && static_cast<uint64_t>(n) > opt_.max_output_bytes / s.size())
        fail("a string exceeds the limit of " + std::to_string(opt_.max_output_bytes) + " bytes");
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += s;
      return Value(std::move(out));
    }
    if (!a.is_number() || !b.is_number())
      fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
    const bool ints = a.kind != Value::Kind::floating && b.kind != Value::Kind::floating;
    const int64_t ai = a.kind == Value::Kind::boolean ? a.b : a.i, bi = b.kind == Value::Kind::boolean ? b.b : b.i;
    const double af = a.kind == Value::Kind::floating ? a.f : double(ai), bf = b.kind == Value::Kind::floating ? b.f : double(bi);
    // Python's ints do not overflow; int64 does: an error rather than a wrong number.
    int64_t r = 0;
    if (op == "+") return ints ? (__builtin_add_overflow(ai, bi, &r) ? overflow() : Value(r)) : Value(af + bf);
    if (op == "-") return ints ? (__builtin_sub_overflow(ai, bi, &r) ? overflow() : Value(r)) : Value(af - bf);
    if (op == "*") return ints ? (__builtin_mul_overflow(ai, bi, &r) ? overflow() : Value(r)) : Value(af * bf);
    if (op == "/") {
      if (bf == 0) fail("division by zero");
      return Value(af / bf);
    }
    if (op == "//" || op == "%") {
      if (ints) {
        if (bi == 0) fail("integer division or modulo by zero");
        if (ai == INT64_MIN && bi == -1) overflow();
        int64_t q = ai / bi, r = ai % bi;
        if (r != 0 && ((r < 0) != (bi < 0))) {
          --q;
          r += bi;
        }
        return Value(op == "//" ? q : r);
      }
      if (bf == 0) fail("float division by zero");
      const double q = std::floor(af / bf);
      return op == "//" ? Value(q) : Value(af - q * bf);
    }
    if (op == "**") {
      if (ints && bi >= 0) {
        int64_t p = 1;
        for (int64_t k = 0; k < bi; ++k) {
          if (__builtin_mul_overflow(p, ai, &p)) overflow();
          if (p == 0 || p == 1) break;  // 0 and 1 stay; -1 alternates, handled below
        }
        if (ai == -1) p = (bi % 2 == 0) ? 1 : -1;
        return Value(p);
      }
      return Value(std::pow(af, bf));
    }
    fail("unknown operator " + op);
  }

  // --- globals ---
  void add_globals(Scope& root) {
    root.vars["raise_exception"] = Value::callable(
        [](CallArgs& a) -> Value { fail(a.pos.empty() ? std::string("raise_exception") : a.pos[0].str()); },
        "raise_exception");
    root.vars["strftime_now"] = Value::callable(
        [this](CallArgs& a) -> Value {
          const Value* fmt = a.get(0, "format");
          if (!fmt || !fmt->is_string()) fail("strftime_now() needs a format string");
          std::tm tm{};
          if (opt_.now) {
            tm = *opt_.now;
          } else {
            const std::time_t t = std::time(nullptr);
            localtime_r(&t, &tm);
          }
          char buf[512];
          const size_t n = std::strftime(buf, sizeof buf, fmt->s.c_str(), &tm);
          return Value(std::string(buf, n));
        },
        "strftime_now");
    root.vars["range"] = Value::callable(
        [this](CallArgs& a) -> Value {
          for (const auto& v : a.pos)
            if (v.kind != Value::Kind::integer) fail("range() takes integers");
          int64_t start = 0, stop = 0, step = 1;
          if (a.pos.size() == 1) stop = a.pos[0].i;
          else if (a.pos.size() >= 2) start = a.pos[0].i, stop = a.pos[1].i;
          if (a.pos.size() >= 3) step = a.pos[2].i;
          if (a.pos.empty() || a.pos.size() > 3) fail("range expected 1 to 3 arguments");
          if (step == 0) fail("range() arg 3 must not be zero");
          using Wide = __int128;  // the count of range(INT64_MIN, INT64_MAX) overflows int64
          const Wide span = step > 0 ? Wide(stop) - start : Wide(start) - stop;
          const Wide mag = step > 0 ? Wide(step) : -Wide(step);
          const Wide count = span > 0 ? (span + mag - 1) / mag : 0;
          if (count > Wide(opt_.max_iterations - iterations_))
            fail("range(): its items exceed the loop iteration limit");
          const int64_t n = static_cast<int64_t>(count);
          if (n > opt_.max_iterations - iterations_)
            fail("range() of " + std::to_string(n) + " items exceeds the loop iteration limit");
          List l;
          for (int64_t k = 0; k < n; ++k) l.push_back(Value(start + k * step));
          return Value(std::move(l));
        },
        "range");
    root.vars["namespace"] = Value::callable(
        [this](CallArgs& a) -> Value {
          Value ns = Value::make_namespace({});
          namespaces_.push_back(ns.dict);
          for (const auto& p : a.pos)
            if (p.is_mapping())
              for (const auto& [k, v] : *p.dict) ns.set(k, v);
          for (auto& [k, v] : a.kw) ns.set(k, v);
          return ns;
        },
        "namespace");
    root.vars["dict"] = Value::callable(
        [](CallArgs& a) -> Value {
          Value d{Dict{}};
          for (const auto& p : a.pos)
            if (p.is_mapping())
              for (const auto& [k, v] : *p.dict) d.set(k, v);
          for (auto& [k, v] : a.kw) d.set(k, v);
          return d;
        },
        "dict");
  }

  const RenderOptions& opt_;
  BuiltinEnv env_;
  std::string* out_ = nullptr;
  int64_t iterations_ = 0;
  int depth_ = 0;
  std::vector<std::shared_ptr<Scope>> pinned_scopes_;  // scopes that define macros
  // Every namespace of this render: emptied at the end, since `set ns.me = ns` makes a
  // cycle of references that would otherwise never be freed.
  std::vector<std::weak_ptr<Dict>> namespaces_;

 public:
  ~Renderer() {
    for (auto& w : namespaces_)
      if (auto d = w.lock()) {
        Dict dying = std::move(*d);  // destroyed after the dict is empty, so no re-entry
        d->clear();
      }
  }
};

Status to_status(const JinjaError& e) {
  std::string where = e.line > 0 ? "line " + std::to_string(e.line) + ", column " + std::to_string(e.column) + ": " : "";
  return error(StatusCode::invalid_argument, "[jinja] ", where, e.message);
}

}  // namespace

Result<std::string> render(std::string_view source, const Value& vars, const RenderOptions& options) {
  try {
    const Template tpl = parse(source, LexOptions{}, options.max_depth);
    Renderer r(options);
    return r.run(tpl, vars);
  } catch (const JinjaError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::out_of_memory, "[jinja] out of memory while rendering");
  } catch (const std::exception& e) {
    // The engine throws only JinjaError; anything else is a bug, reported, not a crash.
    return error(StatusCode::internal, "[jinja] ", e.what());
  }
}

Status check_syntax(std::string_view source) {
  try {
    (void)parse(source, LexOptions{}, RenderOptions{}.max_depth);
    return Status::Ok();
  } catch (const JinjaError& e) {
    return to_status(e);
  }
}

}  // namespace tessera::llm::jinja
