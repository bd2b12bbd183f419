// The checks of a node's attributes against ops.def's declarations (src/ops/attrs.cpp),
// run when a node joins a graph and by Graph::validate.
#pragma once

#include <string>

#include "tessera/graph.h"

namespace tessera::attr {

// Every attribute of `n` is declared by its op, has the declared type (after lossless
// coercion: an integer for a float, an integral float for an integer, one integer for a
// list) and an allowed value; every `required` one is set. Errors name node and attribute.
Status normalize_and_check(Node& n);
// The same without coercion (a node already in a graph).
Status check(const Node& n);
Status check_required(const Node& n);
// "an integer", "a float list", ...
std::string a_type(Type t);

}  // namespace tessera::attr
