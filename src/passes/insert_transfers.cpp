// Pass: insert transfers. A node that reads a tensor whose home is another device gets a
// copy on its own device: weights are duplicated (uploaded once per device, no per-run
// cost); activations, inputs and state get a `transfer` node placed just before the first
// reader on that device, shared by later readers there.
#include <map>

#include "passes/passes.h"

namespace tessera::passes {

Status insert_transfers(PassContext& c) {
  Plan& p = c.plan;
  Graph& g = p.graph;
  std::map<std::pair<TensorId, int>, TensorId> copies;
  std::vector<Node> nodes;
  std::vector<NodePlacement> placements;
  std::vector<Node> old = std::move(g.nodes());
  g.nodes().clear();
  for (size_t i = 0; i < old.size(); ++i) {
    Node n = std::move(old[i]);
    int dev = p.nodes[i].device;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      TensorId src = n.inputs[k];
      if (src == kNoTensor || p.tensors[src].device == dev) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (op_aliased_input(n.op, o) == static_cast<int>(k))
          return error(StatusCode::internal, op_name(n.op), " state '", g.tensor(src).name, "' is on another device");
      auto key = std::make_pair(src, dev);
      auto it = copies.find(key);
      if (it == copies.end()) {
        Tensor t = g.tensor(src);
        t.name += "@" + p.devices[dev]->name();
        bool weight = t.role == Role::weight;
        if (!weight) t.role = Role::activation;
        TensorId id = g.add_tensor(t);
        TensorPlacement tp;
        tp.device = dev;
        tp.resident = weight;
        p.tensors.push_back(tp);
        it = copies.emplace(key, id).first;
        if (!weight) {
          Node tr;
          tr.op = OpKind::transfer;
          tr.name = g.tensor(src).name + " " + p.devices[p.tensors[src].device]->name() + "->" + p.devices[dev]->name();
          tr.inputs = {src};
          tr.outputs = {id};
          nodes.push_back(std::move(tr));
          placements.push_back({dev, 0, "transfer", {}});
          p.transfers++;
        }
      }
      n.inputs[k] = it->second;
    }
    nodes.push_back(std::move(n));
    placements.push_back(std::move(p.nodes[i]));
  }
  g.nodes() = std::move(nodes);
  p.nodes = std::move(placements);
  // Formats of the new copies: their device's native format (readers are now in place).
  for (const auto& [key, id] : copies) {
    Device* d = p.devices[key.second];
    auto f = d->native_format(g, id);
    if (!f)
      return error(StatusCode::unsupported, "tensor '", g.tensor(id).name, "' has no format on device '", d->name(), "'");
    p.tensors[id].format = *f;
    if (g.tensor(id).role == Role::weight && reads_in_place(*d, g.tensor(id), *f)) {
      p.tensors[id].in_program = p.tensors[id].in_place = true;
      p.tensors[id].resident = false;
    }
  }
  return Status::Ok();
}

}  // namespace tessera::passes
