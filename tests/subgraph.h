// Test helper: runs a slice of a graph's nodes with given values for the tensors the slice
// reads but does not produce, so that a test can feed one op (or the rest of a network)
// exactly the values it wants: another device's output, a perturbed activation, a peer's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "tessera/session.h"

namespace tessera::testing {

// Runs `h` in a session made with `options`, input k taking the bytes given for h.inputs[k]
// (an error if absent); returns the bytes of every output, in order.
inline Result<std::vector<std::vector<uint8_t>>> run_graph(Graph h, const std::map<TensorId, std::vector<uint8_t>>& given,
                                                           const SessionOptions& options = {}) {
  const std::vector<TensorId> inputs = h.inputs;
  const size_t outputs = h.outputs.size();
  for (TensorId t : inputs)
    if (!given.count(t)) return error(StatusCode::invalid_argument, "no value given for '", h.tensor(t).name, "'");
  TS_ASSIGN_OR_RETURN(auto s, Session::create(std::move(h), options));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& v = given.at(inputs[k]);
    TS_RETURN_IF_ERROR(s->set_input(k, v.data(), static_cast<int64_t>(v.size())));
  }
  TS_RETURN_IF_ERROR(s->run());
  std::vector<std::vector<uint8_t>> out;
  for (size_t k = 0; k < outputs; ++k) {
    TS_ASSIGN_OR_RETURN(auto v, s->output(k));
    out.push_back(std::move(v));
  }
  return out;
}

// Runs nodes [first, last) of `g` in a session made with `options`. Every non-constant
// tensor those nodes read without producing it becomes an input whose bytes come from
// `given` (an error if absent); returns the bytes of `wanted`, in order.
inline Result<std::vector<std::vector<uint8_t>>> run_nodes(const Graph& g, size_t first, size_t last,
                                                           const std::map<TensorId, std::vector<uint8_t>>& given,
                                                           const std::vector<TensorId>& wanted,
                                                           const SessionOptions& options = {}) {
  Graph h = g;
  h.nodes().assign(g.nodes().begin() + static_cast<std::ptrdiff_t>(first),
                   g.nodes().begin() + static_cast<std::ptrdiff_t>(last));
  for (const Tensor& t : g.tensors())
    if (t.role == Role::input || t.role == Role::output) h.tensor(t.id).role = Role::activation;
  h.inputs.clear();
  h.outputs = wanted;
  std::set<TensorId> produced;
  for (const Node& n : h.nodes()) {
    for (TensorId t : n.inputs)
      if (t != kNoTensor && !h.tensor(t).data && !produced.count(t) &&
          std::find(h.inputs.begin(), h.inputs.end(), t) == h.inputs.end()) {
        h.inputs.push_back(t);
        h.tensor(t).role = Role::input;
      }
    for (TensorId t : n.outputs) produced.insert(t);
  }
  for (TensorId t : wanted) h.tensor(t).role = Role::output;
  return run_graph(std::move(h), given, options);
}

}  // namespace tessera::testing
