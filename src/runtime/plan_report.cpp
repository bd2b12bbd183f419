// Plan::report: the text `tessera inspect` prints.
#include <climits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "tessera/backend/plan.h"
#include "tessera/cpu_model.h"

namespace tessera {

namespace {
std::string human(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (1 << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}
}  // namespace

std::string Plan::report(bool per_tensor) const {
  std::ostringstream os;
  // A device model on a board: what the board's cpu spends on the other nodes (cpu_model.h).
  const CpuCoreModel* board = nullptr;
  std::vector<CpuNodeCost> board_costs;
  for (size_t d = 0; d < devices.size() && !board; ++d)
    if ((board = find_cpu_core_model(devices[d]->properties().board_cpu)))
      board_costs = plan_cpu_costs(*board, *this, static_cast<int>(d));
  double board_nodes = 0, board_transfers = 0;
  std::map<std::string, int> generic;  // op kinds the board model prices by its generic rule
  os << "nodes (" << graph.nodes().size() << "):\n";
  std::map<std::string, int> per_device;
  for (size_t i = 0; i < graph.nodes().size() && i < nodes.size(); ++i) {
    const Node& n = graph.nodes()[i];
    const NodePlacement& np = nodes[i];
    std::string dev = np.device >= 0 ? devices[np.device]->name() : "?";
    if (n.op != OpKind::transfer) per_device[dev]++;
    os << fmt::format("  #{:<4} {:<18} {:<8} {}", i, op_name(n.op), dev, n.name);
    if (!n.outputs.empty()) {
      const Tensor& t = graph.tensor(n.outputs[0]);
      os << " -> " << dtype_name(t.dtype) << shape_str(t.shape);
    }
    if (!np.note.empty()) os << "  [" << np.note << "]";
    if (i < board_costs.size() && board_costs[i].seconds >= 0) {
      const CpuNodeCost& c = board_costs[i];
      os << fmt::format("  [{} {:.3f} ms: {}]", board->name, c.seconds * 1e3, c.rule);
      (n.op == OpKind::transfer ? board_transfers : board_nodes) += c.seconds;
      if (!c.known()) generic[op_name(n.op)]++;
    }
    os << "\n";
    for (const auto& r : np.rejected) os << "         not on " << r << "\n";
  }
  // The graph's own nodes per device (transfers apart), and the preferred device's share.
  os << "placement:";
  int graph_nodes = 0;
  for (const auto& [d, k] : per_device) os << " " << d << " " << k << " nodes;", graph_nodes += k;
  os << " transfers " << transfers;
  if (per_device.size() > 1 && !devices.empty() && graph_nodes > 0) {
    const int mine = per_device.count(devices[0]->name()) ? per_device.at(devices[0]->name()) : 0;
    os << fmt::format(" ({} runs {} of the {} graph nodes, {:.1f}%)", devices[0]->name(), mine, graph_nodes,
                      100.0 * mine / graph_nodes);
  }
  os << "\n";
  // A float model on a device that runs quantized tensors only: say how to get one.
  int float_refusals = 0;
  for (const NodePlacement& np : nodes)
    for (const auto& r : np.rejected) float_refusals += r.find("quantized tensors only") != std::string::npos;
  if (float_refusals > 0 && 2 * float_refusals >= graph_nodes && !devices.empty())
    os << "hint: " << float_refusals << " nodes stay off " << devices[0]->name()
       << " for float tensors; `tessera quantize MODEL OUT.tflite --calibration IMAGES...` makes the int8 model it runs "
          "(docs/quantize.md)\n";
  if (board) {
    os << fmt::format("board cpu ({}, modelled): {:.3f} ms on the other devices' nodes, {:.3f} ms in transfers", board->description,
                      board_nodes * 1e3, board_transfers * 1e3);
    if (!generic.empty()) {
      os << "; priced by the generic rule:";
      for (const auto& [op, k] : generic) os << " " << op << " x" << k;
    }
    os << "\n";
  }
  if (per_tensor && !tensors.empty()) {
    os << "tensors:\n";
    for (const Tensor& t : graph.tensors()) {
      if (static_cast<size_t>(t.id) >= tensors.size()) break;
      const TensorPlacement& tp = tensors[t.id];
      if (tp.device < 0) continue;
      auto lb = t.host_bytes();
      os << fmt::format("  %{:<4} {:<36} {:<10} {:<8} {:<34} {:>10} (logical {})", t.id, t.name.substr(0, 36),
                        role_name(t.role), devices[tp.device]->name(), tp.format.to_string(), human(tp.bytes),
                        human(lb.ok() ? *lb : 0));
      if (tp.alias != kNoTensor && tp.alias_offset != 0) os << " view: bytes @" << tp.alias_offset << " of %" << tp.alias;
      else if (tp.alias != kNoTensor) os << " alias of %" << tp.alias;
      else if (tp.arena >= 0) os << " arena " << tp.arena << " @" << tp.offset;
      os << "\n";
    }
  }
  if (!memory.empty()) {
    os << "memory plan (format bytes):\n";
    for (size_t d = 0; d < devices.size() && d < memory.size(); ++d) {
      const DeviceMemoryPlan& m = memory[d];
      os << fmt::format("  {:<24} weights {:>10}  state {:>10}  activations {:>10} in {} arena(s) (logical {})"
                        "  peak {:>10}  allocations {}\n",
                        devices[d]->name(), human(m.weight_bytes), human(m.state_bytes), human(m.activation_peak),
                        m.arena_bytes.size(), human(m.logical_activation_bytes), human(m.peak_bytes()), m.allocations);
      if (m.in_place_constants > 0)
        os << fmt::format("  {:<24} + {} constants ({}) read in place from the model's bytes (no device copy)\n", "",
                          m.in_place_constants, human(m.in_place_bytes));
      if (m.program_constants > m.in_place_constants)
        os << fmt::format("  {:<24} + {} constants held by the compiled programs (`compiled programs` gives their bytes)\n",
                          "", m.program_constants - m.in_place_constants);
    }
  }
  return os.str();
}

}  // namespace tessera
