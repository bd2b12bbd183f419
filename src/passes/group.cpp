// Pass: group. After partitioning, the nodes are put in an order that runs as many as it can
// on one device before switching: a topological order of the data dependencies that, among
// the nodes ready to run, takes the earliest one on the current device and switches device
// only when none is ready there. A model file lists its ops in an order of its own (YOLOv8's
// TFLite export interleaves the detection head's cpu transposes with the neck's NPU
// convolutions, so the NPU's work came in five jobs where three suffice); every switch costs
// a device job and the segment boundaries limit what a device compiles together.
//
// The order changes nothing a node computes: each still runs after every node whose output
// it reads. Graphs with state updated in place (a node whose output shares an input's
// storage: KV caches, LSTM and SVDF state) keep their order, since a read of the old state
// is not a data dependency on the update; so do graphs on a single device.
#include <set>
#include <vector>

#include "passes/passes.h"

namespace tessera::passes {

Status group(PassContext& c) {
  Plan& p = c.plan;
  Graph& g = p.graph;
  const size_t n = g.nodes().size();
  if (n < 2 || p.nodes.size() != n) return Status::Ok();
  bool several = false;
  for (size_t i = 0; i < n; ++i) {
    several = several || p.nodes[i].device != p.nodes[0].device;
    const Node& node = g.nodes()[i];
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (op_aliased_input(node.op, k) >= 0) return Status::Ok();
  }
  for (const Tensor& t : g.tensors())
    if (t.role == Role::state) return Status::Ok();
  if (!several) return Status::Ok();

  std::vector<int> producer(g.tensors().size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (TensorId o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  std::vector<std::vector<int>> readers(n);
  std::vector<int> waiting(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::set<int> from;
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor && producer[in] >= 0 && producer[in] != static_cast<int>(i)) from.insert(producer[in]);
    waiting[i] = static_cast<int>(from.size());
    for (int f : from) readers[f].push_back(static_cast<int>(i));
  }
  // Whether a node's results reach (through any readers) a node on another device: work
  // that another device waits for. Nodes are listed in a topological order, so readers come
  // later and one backward sweep settles it.
  std::vector<bool> feeds_other(n, false);
  for (size_t k = n; k-- > 0;)
    for (int r : readers[k])
      feeds_other[k] = feeds_other[k] || feeds_other[r] || p.nodes[r].device != p.nodes[k].device;
  std::vector<int> left(p.devices.size() + 1, 0);  // unscheduled nodes per device
  for (size_t i = 0; i < n; ++i) left[static_cast<size_t>(p.nodes[i].device + 1)]++;
  std::set<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.insert(static_cast<int>(i));
  std::vector<int> order;
  order.reserve(n);
  int device = p.nodes[0].device;
  while (!ready.empty()) {
    // Here: the earliest ready node another device waits for, else the earliest ready one --
    // unless the device has work that is not ready yet (so it runs again after a switch) and
    // another device has ready work: then what only this device needs waits for that later
    // run instead of keeping the others waiting (YOLOv8n's class table joins the box
    // arithmetic's job instead of making one of its own).
    int here = -1, here_feeding = -1, elsewhere = -1, ready_here = 0;
    for (int r : ready) {
      if (p.nodes[r].device != device) {
        if (elsewhere < 0) elsewhere = r;
        continue;
      }
      ++ready_here;
      if (here < 0) here = r;
      if (here_feeding < 0 && feeds_other[r]) here_feeding = r;
    }
    const bool comes_back = left[static_cast<size_t>(device + 1)] > ready_here;
    int pick = here_feeding >= 0 ? here_feeding : here;
    if (pick >= 0 && here_feeding < 0 && elsewhere >= 0 && comes_back) pick = elsewhere;
    if (pick < 0) pick = elsewhere;  // nothing left here: the earliest ready node elsewhere
    device = p.nodes[pick].device;
    left[static_cast<size_t>(device + 1)]--;
    ready.erase(pick);
    order.push_back(pick);
    for (int r : readers[pick])
      if (--waiting[r] == 0) ready.insert(r);
  }
  if (order.size() != n) return error(StatusCode::internal, "group: the graph's nodes form a cycle");
  std::vector<Node> nodes;
  std::vector<NodePlacement> placed;
  nodes.reserve(n);
  placed.reserve(n);
  for (int i : order) {
    nodes.push_back(std::move(g.nodes()[i]));
    placed.push_back(std::move(p.nodes[i]));
  }
  g.nodes() = std::move(nodes);
  p.nodes = std::move(placed);
  return Status::Ok();
}

}  // namespace tessera::passes
