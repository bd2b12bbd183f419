// Pass: canonicalize. Checks the graph and drops nodes whose results nobody reads.
#include <algorithm>

#include "passes/passes.h"

namespace tessera::passes {

Status canonicalize(PassContext& c) {
  Graph& g = c.plan.graph;
  TS_RETURN_IF_ERROR(g.validate());
  std::vector<bool> needed(g.tensors().size(), false);
  for (TensorId id : g.outputs) needed[id] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (int i = static_cast<int>(g.nodes().size()) - 1; i >= 0; --i) {
    const Node& n = g.nodes()[i];
    bool used = false;  // a node that updates state is always kept
    for (size_t k = 0; k < n.outputs.size(); ++k) used = used || op_aliased_input(n.op, k) >= 0;
    for (TensorId o : n.outputs) used = used || needed[o];
    if (!used) continue;
    keep[i] = true;
    for (TensorId in : n.inputs)
      if (in != kNoTensor) needed[in] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (keep[i]) kept.push_back(std::move(g.nodes()[i]));
  g.nodes() = std::move(kept);
  return Status::Ok();
}

}  // namespace tessera::passes
