// The syntax tree of a Jinja template (built by jinja_parser.h, run by jinja_render.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/llm/jinja_value.h"

namespace tessera::llm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,    // value
    name,       // name
    list,       // items
    tuple,      // items (evaluates to a list)
    dict,       // items as key, value pairs
    attr,       // a.name
    item,       // a[b]
    slice,      // a[b:c:d] (items: start, stop, step; each may be null)
    call,       // a(args, name=kwargs)
    filter,     // a | name(args)   (a is items[0]; may be null in a filter block)
    test,       // a is [not] name(args)   (negate)
    unary,      // op a: "not", "-", "+"
    binary,     // a op b: arithmetic, comparisons, "in", "not in", "~"
    logic,      // a and/or b (op)
    cond,       // a if b else c   (items: then, test, else-or-null)
  };
  Kind kind;
  int line = 0, column = 0;
  Value value;
  std::string name;  // name, attribute, filter/test name, operator
  bool negate = false;
  std::vector<ExprPtr> items;  // operands / elements
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    text,      // text
    output,    // {{ expr }}
    if_,       // branches (cond, body); else_body
    for_,      // targets in expr [if cond]: body; else_body
    set,       // targets (or ns.attr: target_attr) = expr
    set_block, // {% set target %}body{% endset %} (filters applied: filter)
    macro,     // name(params = defaults): body
    call,      // {% call(params) expr %}body{% endcall %}
    filter,    // {% filter f %}body{% endfilter %}
    break_,
    continue_,
  };
  Kind kind;
  int line = 0, column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::string target_attr;  // set ns.attr
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro/call parameters, defaults may be null
};

struct Template {
  Body body;
};

}  // namespace tessera::llm::jinja
