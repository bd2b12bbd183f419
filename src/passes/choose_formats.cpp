// Pass: choose formats. Every tensor gets a home device (its producer's, or for weights,
// inputs and state the device of its first reader) and that device's native format. A
// constant whose readers all run on a device whose programs hold their own constants
// (DeviceProperties::program_owns_constants) is left to those programs: no allocation;
// so is a weight a device reads in place from the model's bytes (the cpu reading a
// mapped GGUF file: DeviceProperties::constants_in_place_alignment).
#include "passes/passes.h"

namespace tessera::passes {

Status choose_formats(PassContext& c) {
  Plan& p = c.plan;
  const Graph& g = p.graph;
  p.tensors.assign(g.tensors().size(), {});
  int fallback = cpu_index(p) >= 0 ? cpu_index(p) : 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    for (TensorId in : n.inputs)
      if (in != kNoTensor && p.tensors[in].device < 0) p.tensors[in].device = p.nodes[i].device;
    for (TensorId o : n.outputs) p.tensors[o].device = p.nodes[i].device;
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int src = op_aliased_input(n.op, k);
      if (src < 0 || static_cast<size_t>(src) >= n.inputs.size() || n.inputs[src] == kNoTensor) continue;
      TensorPlacement& out = p.tensors[n.outputs[k]];
      out.alias = n.inputs[src];
      out.device = p.tensors[n.inputs[src]].device;
    }
  }
  // Constants read by nodes of more than one device.
  std::vector<bool> shared_constant(g.tensors().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor && g.tensor(in).data && p.tensors[in].device != p.nodes[i].device) shared_constant[in] = true;
  for (const Tensor& t : g.tensors()) {
    TensorPlacement& tp = p.tensors[t.id];
    if (tp.device < 0) tp.device = fallback;  // unused tensor (e.g. an ignored input)
    tp.resident = t.role == Role::weight || t.role == Role::state;
    tp.in_program = t.role == Role::weight && t.data && !shared_constant[t.id] &&
                    p.devices[tp.device]->properties().program_owns_constants;
    if (tp.in_program) tp.resident = false;
    Device* d = p.devices[tp.device];
    auto f = d->native_format(g, t.id);
    if (!f && tp.device != fallback) {
      // The device cannot hold it at all; keep it on the cpu (a transfer follows).
      tp.device = fallback;
      f = p.devices[fallback]->native_format(g, t.id);
    }
    if (!f)
      return error(StatusCode::unsupported, "tensor '", t.name, "' (", dtype_name(t.dtype), shape_str(t.shape),
                   ") has no format on device '", d->name(), "'");
    tp.format = *f;
    if (!tp.in_program && !shared_constant[t.id] && reads_in_place(*p.devices[tp.device], t, tp.format)) {
      tp.in_program = tp.in_place = true;
      tp.resident = false;
    }
  }
  for (size_t i = 0; i < g.tensors().size(); ++i)
    if (p.tensors[i].alias != kNoTensor) p.tensors[i].format = p.tensors[p.tensors[i].alias].format;
  return Status::Ok();
}

}  // namespace tessera::passes
