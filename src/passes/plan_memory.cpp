// Pass: plan memory. For every device:
//  - weights and state are resident, one allocation each (they outlive any one run);
//  - activations (with inputs, outputs and transfer copies) are placed by liveness:
//    where the device can sub-allocate, into arenas at aligned offsets (greedy, largest
//    first), splitting into several arenas when one would pass the maximum allocation;
//    where it cannot, one allocation per tensor, reused only by a later tensor of exactly
//    the same size and page size once the first is dead.
// All sizes are the format's bytes, aligned to the device's alignment.
#include <algorithm>
#include <climits>
#include <map>

#include "passes/passes.h"

namespace tessera::passes {

namespace {
int64_t align_up(int64_t v, int64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
bool overlap(const TensorPlacement& a, const TensorPlacement& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}
// Device views (Device::views): a tensor kept inside another's storage at a byte offset,
// no copy made. Adopted node by node, in order, where
//  - the tensor that moves (the view's own root: it may already hold views of its own) is
//    an activation made and read only by nodes of the proposing device, no transfer, no
//    graph input or output, so no one but that device's programs ever sees the offset;
//  - it lands wholly inside the source's root, and the views of one node that move it
//    agree on where and together cover all of it (a concatenation whose inputs are two
//    slices of one tensor moves that tensor, a concatenation of only one of them moves
//    nothing: its bytes beside that slice would be overwritten by the next input);
//  - or both already share a root at exactly that offset.
// Chains are flattened: `alias` names the tensor owning the allocation.
void adopt_device_views(Plan& p, const std::vector<bool>& graph_output) {
  const Graph& g = p.graph;
  const size_t nt = g.tensors().size();
  // Per tensor: the one device all its producers and readers run on (-1: none yet, -2: mixed
  // or made by a transfer). A transfer that reads a tensor reads it where it lies (the
  // device's read() of its placement, offset included): it does not pin the tensor.
  std::vector<int> only(nt, -1);
  const auto touch = [&](TensorId t, int i) {
    if (t == kNoTensor || t >= static_cast<TensorId>(nt)) return;
    const int d = g.nodes()[i].op == OpKind::transfer ? -2 : p.nodes[i].device;
    only[t] = only[t] == -1 ? d : only[t] == d ? d : -2;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (g.nodes()[i].op != OpKind::transfer)
      for (TensorId t : g.nodes()[i].inputs) touch(t, static_cast<int>(i));
    for (TensorId t : g.nodes()[i].outputs) touch(t, static_cast<int>(i));
  }
  const auto movable = [&](TensorId t, int d) {
    const TensorPlacement& tp = p.tensors[t];
    return g.tensor(t).role == Role::activation && !graph_output[t] && only[t] == d && tp.device == d && !tp.resident &&
           !tp.in_program;
  };
  const auto bytes = [&](TensorId t) -> int64_t {
    auto b = p.tensors[t].format.byte_size();
    return b.ok() ? *b : -1;
  };
  const auto resolve = [&](TensorId t) {
    int64_t off = 0;
    while (p.tensors[t].alias != kNoTensor) off += p.tensors[t].alias_offset, t = p.tensors[t].alias;
    return std::pair<TensorId, int64_t>{t, off};
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const int d = p.nodes[i].device;
    if (d < 0 || d >= static_cast<int>(p.devices.size())) continue;
    const std::vector<TensorView> views =
        p.devices[d]->views(g, static_cast<int>(i), [&](TensorId t) { return p.tensors[t].format; });
    if (views.empty()) continue;
    struct Move {
      TensorId into = kNoTensor;
      int64_t base = 0;
      bool ok = true;
      std::vector<std::pair<int64_t, int64_t>> slots;  // [begin, end) in `into`
    };
    std::map<TensorId, Move> moves;
    size_t kept = 0;
    for (const TensorView& v : views) {
      if (v.view == kNoTensor || v.source == kNoTensor || v.view >= static_cast<TensorId>(nt) ||
          v.source >= static_cast<TensorId>(nt) || v.offset < 0 || p.tensors[v.source].device != d ||
          p.tensors[v.source].resident || p.tensors[v.source].in_program || bytes(v.view) < 0)
        continue;
      const auto [rv, ov] = resolve(v.view);
      const auto [rs, os] = resolve(v.source);
      if (rv == rs) {
        kept += ov == os + v.offset;
        continue;
      }
      Move& m = moves[rv];
      const int64_t base = os + v.offset - ov;
      if (m.into == kNoTensor) m.into = rs, m.base = base;
      m.ok = m.ok && m.into == rs && m.base == base;
      m.slots.push_back({os + v.offset, os + v.offset + bytes(v.view)});
    }
    for (auto& [rv, m] : moves) {
      const int64_t n = bytes(rv), cap = bytes(m.into);
      if (!m.ok || !movable(rv, d) || m.base < 0 || n < 0 || cap < 0 || m.base + n > cap) continue;
      std::sort(m.slots.begin(), m.slots.end());
      int64_t covered = m.base;
      for (auto [b, e] : m.slots) {
        if (b > covered) break;
        covered = std::max(covered, e);
      }
      if (covered != m.base + n) continue;
      p.tensors[rv].alias = m.into;
      p.tensors[rv].alias_offset = m.base;
      kept += m.slots.size();
    }
    if (kept == views.size()) p.nodes[i].note += " -- in place: no copy (its tensors are views)";
  }
  for (size_t t = 0; t < nt; ++t)
    if (p.tensors[t].alias != kNoTensor) {
      const auto [root, off] = resolve(static_cast<TensorId>(t));
      p.tensors[t].alias = root;
      p.tensors[t].alias_offset = off;
    }
}

}  // namespace

Status plan_memory(PassContext& c) {
  Plan& p = c.plan;
  const Graph& g = p.graph;
  const int end = static_cast<int>(g.nodes().size());
  // Views: a reshape on the cpu whose input is an intermediate in the plain row-major
  // layout is the same bytes, so its output aliases the input (the kernel then copies
  // nothing) and the input lives as long as the view (below). Not for the caller's inputs
  // and outputs (they may be bound to the caller's buffers), state or constants, nor other
  // devices' layouts.
  const int cpu = cpu_index(p);
  std::vector<bool> graph_output(g.tensors().size(), false);
  for (TensorId o : g.outputs) graph_output[o] = true;
  for (int i = 0; i < end && cpu >= 0; ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != OpKind::reshape || n.inputs.empty() || n.inputs[0] == kNoTensor || n.outputs.size() != 1) continue;
    TensorId root = n.inputs[0];
    while (p.tensors[root].alias != kNoTensor) root = p.tensors[root].alias;
    const TensorId out = n.outputs[0];
    const TensorPlacement &src = p.tensors[root], &in = p.tensors[n.inputs[0]];
    TensorPlacement& dst = p.tensors[out];
    const auto same_bytes = [](const Format& a, const Format& b) {
      const auto ab = a.byte_size(), bb = b.byte_size();
      return a.is_host_layout() && b.is_host_layout() && a.encoding == b.encoding && ab.ok() && bb.ok() && *ab == *bb;
    };
    if (p.nodes[i].device != cpu || src.device != cpu || dst.device != cpu || dst.alias != kNoTensor) continue;
    if (g.tensor(root).role != Role::activation || g.tensor(out).role != Role::activation || graph_output[root] ||
        graph_output[out] || src.resident || src.in_program || dst.resident || dst.in_program)
      continue;
    if (!same_bytes(in.format, dst.format) || !same_bytes(src.format, dst.format)) continue;
    dst.alias = root;
  }
  adopt_device_views(p, graph_output);
  // Liveness.
  for (auto& tp : p.tensors) tp.first_use = tp.last_use = -1;
  for (const Tensor& t : g.tensors())
    if (t.role == Role::input) p.tensors[t.id].first_use = -1;
  std::vector<bool> produced(g.tensors().size(), false);
  for (int i = 0; i < end; ++i) {
    const Node& n = g.nodes()[i];
    for (TensorId in : n.inputs)
      if (in != kNoTensor) p.tensors[in].last_use = std::max(p.tensors[in].last_use, i);
    for (TensorId o : n.outputs) {
      if (!produced[o]) p.tensors[o].first_use = i;
      produced[o] = true;
      p.tensors[o].last_use = std::max(p.tensors[o].last_use, i);
    }
  }
  // What a device's node reads beyond its inputs (Device::extra_reads: a node run inside an
  // earlier node's pass reads that node's inputs at its own turn) lives up to that node.
  for (int i = 0; i < end; ++i) {
    const int d = p.nodes[i].device;
    if (d < 0 || d >= static_cast<int>(p.devices.size())) continue;
    for (TensorId t : p.devices[d]->extra_reads(g, i))
      if (t != kNoTensor && t < static_cast<TensorId>(p.tensors.size())) p.tensors[t].last_use = std::max(p.tensors[t].last_use, i);
  }
  for (TensorId o : g.outputs) p.tensors[o].last_use = INT_MAX;
  // A view's uses are its source's: a reshape view is read after its source is made; a
  // device view may also be made before its source's own producer runs (a concatenation's
  // inputs written in place), so its source's storage lives from the earliest of them.
  for (auto& tp : p.tensors)
    if (tp.alias != kNoTensor && !p.tensors[tp.alias].resident) {
      TensorPlacement& src = p.tensors[tp.alias];
      src.last_use = std::max(src.last_use, tp.last_use);
      src.first_use = std::min(src.first_use, tp.first_use);
    }

  p.memory.assign(p.devices.size(), {});
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const DeviceProperties& props = p.devices[d]->properties();
    DeviceMemoryPlan& mp = p.memory[d];
    std::vector<TensorId> acts;
    for (const Tensor& t : g.tensors()) {
      TensorPlacement& tp = p.tensors[t.id];
      if (tp.device != static_cast<int>(d) || tp.alias != kNoTensor) continue;
      if (tp.in_program) {  // held by the device's compiled program (Program::device_bytes)
        mp.program_constants++;
        if (tp.in_place) {
          mp.in_place_constants++;
          mp.in_place_bytes += t.data ? t.data->size : 0;
        }
        continue;
      }
      if (tp.first_use == -1 && tp.last_use == -1 && !tp.resident && t.role != Role::input) continue;  // unused
      // The device's own footprint for the format (page padding, bank rounding).
      TS_ASSIGN_OR_RETURN(tp.bytes, p.devices[d]->allocation_bytes(tp.format));
      if (tp.bytes > props.max_allocation_bytes)
        return error(StatusCode::out_of_memory, "tensor '", t.name, "' needs ", tp.bytes, " bytes in ",
                     tp.format.to_string(), ", above device '", props.name, "' maximum single allocation of ",
                     props.max_allocation_bytes, " bytes");
      if (tp.resident) {
        (t.role == Role::weight ? mp.weight_bytes : mp.state_bytes) += tp.bytes;
        mp.allocations++;
        continue;
      }
      if (tp.first_use == -1) tp.first_use = -1;
      if (tp.last_use < tp.first_use) tp.last_use = tp.first_use;
      acts.push_back(t.id);
      auto hb = t.host_bytes();
      mp.logical_activation_bytes += hb.ok() ? *hb : 0;
    }
    std::sort(acts.begin(), acts.end(), [&](TensorId a, TensorId b) {
      if (p.tensors[a].bytes != p.tensors[b].bytes) return p.tensors[a].bytes > p.tensors[b].bytes;
      return a < b;
    });
    std::vector<std::vector<TensorId>> arena_members;
    if (props.sub_allocation) {
      for (TensorId id : acts) {
        TensorPlacement& tp = p.tensors[id];
        bool placed = false;
        for (size_t a = 0; a < arena_members.size() && !placed; ++a) {
          // Lowest aligned offset that avoids every live member of this arena.
          std::vector<std::pair<int64_t, int64_t>> busy;
          for (TensorId m : arena_members[a])
            if (overlap(tp, p.tensors[m])) busy.push_back({p.tensors[m].offset, p.tensors[m].offset + p.tensors[m].bytes});
          std::sort(busy.begin(), busy.end());
          int64_t off = 0;
          for (auto [b, e] : busy) {
            if (off + tp.bytes <= b) break;
            off = std::max(off, align_up(e, props.alignment_bytes));
          }
          if (off + tp.bytes <= props.max_allocation_bytes) {
            tp.arena = static_cast<int>(a);
            tp.offset = off;
            arena_members[a].push_back(id);
            placed = true;
          }
        }
        if (!placed) {
          tp.arena = static_cast<int>(arena_members.size());
          tp.offset = 0;
          arena_members.push_back({id});
        }
      }
      for (auto& members : arena_members) {
        int64_t size = 0;
        for (TensorId m : members) size = std::max(size, p.tensors[m].offset + p.tensors[m].bytes);
        mp.arena_bytes.push_back(size);
      }
    } else {
      // One allocation per tensor; a dead tensor's allocation passes to a later tensor of
      // the same size and page size (never to a differently paged one).
      std::sort(acts.begin(), acts.end(), [&](TensorId a, TensorId b) {
        if (p.tensors[a].first_use != p.tensors[b].first_use) return p.tensors[a].first_use < p.tensors[b].first_use;
        return a < b;
      });
      for (TensorId id : acts) {
        TensorPlacement& tp = p.tensors[id];
        int found = -1;
        for (size_t a = 0; a < arena_members.size() && found < 0; ++a) {
          const TensorPlacement& last = p.tensors[arena_members[a].back()];
          if (last.bytes == tp.bytes && last.format.page_size() == tp.format.page_size() &&
              last.last_use < tp.first_use)
            found = static_cast<int>(a);
        }
        if (found < 0) {
          found = static_cast<int>(arena_members.size());
          arena_members.push_back({});
          mp.arena_bytes.push_back(tp.bytes);
        }
        tp.arena = found;
        tp.offset = 0;
        arena_members[found].push_back(id);
      }
    }
    for (int64_t b : mp.arena_bytes) mp.activation_peak += b;
    mp.allocations += static_cast<int64_t>(mp.arena_bytes.size());
    if (mp.peak_bytes() > props.capacity_bytes)
      return error(StatusCode::out_of_memory, "device '", props.name, "' needs ", mp.peak_bytes(),
                   " bytes (weights ", mp.weight_bytes, ", state ", mp.state_bytes, ", activations ", mp.activation_peak,
                   ") but has a capacity of ", props.capacity_bytes, " bytes");
  }
  for (auto& tp : p.tensors)
    if (tp.alias != kNoTensor) {
      TensorPlacement& src = p.tensors[tp.alias];
      tp.arena = src.arena;
      tp.offset = src.offset + tp.alias_offset;
      auto own = tp.format.byte_size();  // a view's own bytes (a reshape's are its source's)
      tp.bytes = own.ok() && *own <= src.bytes - tp.alias_offset ? *own : src.bytes;
      tp.resident = src.resident;
    }
  return Status::Ok();
}

}  // namespace tessera::passes

