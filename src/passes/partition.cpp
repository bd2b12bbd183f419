// Pass: partition. Every node gets a device: the pinned one (layer offload) or the
// preferred one (devices[0]) when it supports the node, otherwise the cpu. Refusals are
// kept so that `inspect` can say why a node fell back.
#include "passes/passes.h"

namespace tessera::passes {

Status partition(PassContext& c) {
  Plan& p = c.plan;
  const Graph& g = p.graph;
  int cpu = cpu_index(p);
  p.nodes.assign(g.nodes().size(), {});
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    NodePlacement& np = p.nodes[i];
    int want = 0;
    if (c.opts.pin) {
      int pinned = c.opts.pin(g, n, static_cast<int>(i));
      if (pinned >= 0 && pinned < static_cast<int>(p.devices.size())) want = pinned;
      else if (pinned >= 0)
        return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": pinned to device index ",
                     pinned, " but the plan has ", p.devices.size(), " devices");
    }
    Support s = p.devices[want]->supports(g, n);
    if (s.ok) {
      np.device = want;
      np.cost = s.cost;
      np.note = s.reason;
      continue;
    }
    np.rejected.push_back(p.devices[want]->name() + ": " + s.reason);
    if (!c.opts.allow_fallback || cpu < 0 || cpu == want)
      return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.label(), ": device '", p.devices[want]->name(),
                   "' cannot run it: ", s.reason);
    Support cs = p.devices[cpu]->supports(g, n);
    if (!cs.ok)
      return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.label(), ": no device can run it (",
                   p.devices[want]->name(), ": ", s.reason, "; cpu: ", cs.reason, ")");
    np.device = cpu;
    np.cost = cs.cost;
    np.note = "fallback: " + s.reason;
  }
  return Status::Ok();
}

}  // namespace tessera::passes
