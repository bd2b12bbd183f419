#include "backend/rknpu/program.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>
#include <span>
#include <sstream>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "core/checked.h"
#include "convert/rk_weights.h"
#include "tessera/format_registry.h"

namespace tessera::rknpu {

RknpuProgram::~RknpuProgram() {
  std::unique_lock<std::recursive_mutex> lock;
  if (device_lock) lock = std::unique_lock<std::recursive_mutex>(*device_lock);
  for (auto& op : ops) {
    if (!op.weight_key.empty() && cache_) {
      auto it = cache_->entries.find(op.weight_key);
      if (it != cache_->entries.end() && --it->second.refs == 0) {
        (void)transport_->destroy_bo(it->second.bo.handle);
        cache_->entries.erase(it);
      }
    } else if (op.weights.handle) {
      (void)transport_->destroy_bo(op.weights.handle);
    }
    if (op.bs.handle) (void)transport_->destroy_bo(op.bs.handle);
    if (op.ew_const.handle) (void)transport_->destroy_bo(op.ew_const.handle);
    if (op.a8.handle) (void)transport_->destroy_bo(op.a8.handle);
    if (op.partial.handle) (void)transport_->destroy_bo(op.partial.handle);
  }
  if (regcmd.handle) (void)transport_->destroy_bo(regcmd.handle);
}

int64_t RknpuProgram::device_bytes() const {
  int64_t bytes = 0;
  for (const auto& c : ops)
    bytes += (c.weight_key.empty() ? c.weights.size : 0) + c.bs.size + c.ew_const.size + c.a8.size + c.partial.size;  // shared weights: the device's
  return bytes;
}

std::string RknpuProgram::describe() const {
  size_t tasks = 0;
  for (const auto& j : jobs) tasks += j.tasks.size();
  std::ostringstream os;
  auto plural = [](size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  size_t fused = 0, members = 0;
  for (const auto& c : ops)
    if (!c.parts.empty()) ++fused, members += c.parts.size();
  os << plural(ops.size(), "NPU op", "NPU ops");
  if (fused > 0) os << " (" << members << " matmuls reading one input as " << plural(fused, "fused matmul", "fused matmuls") << ")";
  os << ", " << plural(tasks, "task", "tasks") << " in "
     << plural(jobs.size(), "job", "jobs") << " ("
     << (policy == SchedulePolicy::mesa ? "mesa" : "tessera") << " schedule)";
  return os.str();
}

namespace {

Result<BoInfo> upload(Transport* t, const std::vector<uint8_t>& bytes) {
  TS_ASSIGN_OR_RETURN(BoInfo bo, t->create_bo(static_cast<int64_t>(bytes.size())));
  TS_RETURN_IF_ERROR(t->prep_bo(bo.handle));
  std::memcpy(bo.cpu, bytes.data(), bytes.size());
  TS_RETURN_IF_ERROR(t->fini_bo(bo.handle));
  return bo;
}

// Sibling matmuls: consecutive fully connected nodes of the segment that read the same A
// (a decoder layer's q, k and v projections of the normed x, its FFN gate and up) run as
// one matmul whose weights stack theirs along N (docs/rknpu.md "Fused projections"). Each
// output channel is the same dot product as before, in the same order, so the results are
// the same bytes; what changes is the tiling: one N to split over the cores instead of
// several narrow ones, e.g. Qwen2-0.5B's k and v (128 wide) no longer take a task on every
// core of their own. The fused result goes to the op's partial buffer and the host step
// after the job writes each node's output from its channels. Members must agree in M, K,
// precision, bias presence and one K segment; they must be consecutive nodes, so that
// writing a later member's output at the first member's turn overwrites nothing live (the
// nodes between them are members, which read only A and constants).
Status fuse_sibling_matmuls(const Graph& g, const std::vector<int>& seg_nodes, RknpuProgram& prog, WeightCache* cache,
                            WeightPolicy weights) {
  std::vector<CompiledOp>& ops = prog.ops;
  std::map<int, size_t> position;  // node -> its position in the segment
  for (size_t i = 0; i < seg_nodes.size(); ++i) position[seg_nodes[i]] = i;
  const auto has_bias = [&](const CompiledOp& c) {
    const Node& n = g.nodes()[c.op.nodes[0]];
    return n.inputs.size() > 2 && n.inputs[2] != kNoTensor;
  };
  const auto single = [&](const CompiledOp& c) {
    if (c.op.type != NpuOpType::matmul || c.op.nodes.size() != 1 || !c.parts.empty()) return false;
    auto tl = check_tiling(c.op);
    return tl.ok() && tl->k_segments == 1;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!single(ops[i])) continue;
    size_t end = i + 1;
    while (end < ops.size() && single(ops[end]) && ops[end].op.input == ops[i].op.input &&
           ops[end].op.in_h == ops[i].op.in_h && ops[end].op.in_c == ops[i].op.in_c &&
           ops[end].op.mm_int8 == ops[i].op.mm_int8 && ops[end].op.fp16 == ops[i].op.fp16 &&
           has_bias(ops[end]) == has_bias(ops[i]) &&
           position[ops[end].op.nodes[0]] == position[ops[end - 1].op.nodes[0]] + 1)
      ++end;
    if (end - i < 2) continue;
    std::vector<const uint8_t*> key;
    for (size_t j = i; j < end; ++j) {
      if (ops[j].weight_key.size() != 1) {
        key.clear();
        break;
      }
      key.push_back(ops[j].weight_key[0]);
    }
    const bool cached = cache && !key.empty() && cache->entries.count(key);
    CompiledOp fused;
    fused.op = ops[i].op;
    fused.weight_key = key;
    NpuOp& f = fused.op;
    f.label.clear();
    f.nodes.clear();
    f.out_c = f.macs = f.weight_bytes = 0;
    f.weights.clear();
    f.mm_wscale.clear();
    f.mm_bias.clear();
    f.bs_table.clear();
    for (size_t j = i; j < end; ++j) {
      NpuOp& m = ops[j].op;
      const Node& n = g.nodes()[m.nodes[0]];
      if (!cached && m.weights.empty()) {
        // Packed for the cache under its own key (another program): packed again here.
        LowerOptions lo;
        lo.weights = weights;
        auto again = lower_node(g, n, lo);
        if (!again.ok()) return again.status().with_context(n.label());
        m.weights = std::move(again->weights);
        m.mm_wscale = std::move(again->mm_wscale);
      }
      fused.parts.push_back({m.output, f.out_c, m.out_c, m.nodes[0]});
      f.label += (f.label.empty() ? "" : " + ") + m.label;
      f.nodes.push_back(m.nodes[0]);
      f.out_c += m.out_c;
      f.macs += m.macs;
      f.weight_bytes += m.weight_bytes;
      if (!cached) {
        f.weights.insert(f.weights.end(), m.weights.begin(), m.weights.end());
        f.mm_wscale.insert(f.mm_wscale.end(), m.mm_wscale.begin(), m.mm_wscale.end());
      }
      f.mm_bias.insert(f.mm_bias.end(), m.mm_bias.begin(), m.mm_bias.end());
      f.bs_table.insert(f.bs_table.end(), m.bs_table.begin(), m.bs_table.end());
    }
    if (!cached && static_cast<int64_t>(f.weights.size()) != f.weight_bytes)
      return error(StatusCode::internal, "[rknpu] ", f.label, ": fused weights are ", f.weights.size(), " bytes, expected ",
                   f.weight_bytes);
    prog.notes.push_back(f.label + ": one matmul of N = " + std::to_string(f.out_c) + " (" + std::to_string(end - i) +
                         " nodes reading the same input)");
    ops[i] = std::move(fused);
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i + 1), ops.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RknpuProgram>> compile_segment(const Segment& seg, Transport* t, SchedulePolicy policy,
                                                      Rounding rounding, int cores, WeightCache* cache,
                                                      WeightPolicy weights, bool fuse) {
  const Graph& g = *seg.graph;
  auto prog = std::make_unique<RknpuProgram>(t, cache);
  prog->graph = &g;
  prog->nodes = seg.nodes;
  prog->policy = policy;
  // Readers of every tensor in the whole graph (a fused conv output must have no other).
  std::vector<int> readers(g.tensors().size(), 0), producer(g.tensors().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor) readers[in]++;
    for (TensorId o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  }
  for (TensorId o : g.outputs) readers[o]++;
  // The last node reading each tensor (INT_MAX: a graph output), as the memory plan sees it.
  std::vector<int> last_reader(g.tensors().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor) last_reader[in] = static_cast<int>(i);
  for (TensorId o : g.outputs) last_reader[o] = INT_MAX;

  // A channel copy the plan made needless (Segment::views): its source channels already are
  // its destination's bytes (a concatenation's input written in place by its producer, a
  // slice read in place by its readers).
  const auto in_place = [&](const NpuOp& c) {
    const auto where = [&](TensorId t) {
      auto it = seg.views.find(t);
      return it == seg.views.end() ? std::pair<TensorId, int64_t>{t, 0} : it->second;
    };
    auto f = seg.formats.find(c.input);
    if (c.type != NpuOpType::copy || f == seg.formats.end()) return false;
    // NC1HWC2 surfaces of its block; a flat (row-major 8-bit) tensor's copies count 16-byte atoms.
    const bool flat = f->second.layout == Layout::row_major && f->second.encoding == Encoding::i8;
    if (!flat && (f->second.layout != Layout::nc1hwc2 || f->second.c2 <= 0)) return false;
    const int64_t c2 = flat ? kC2 : f->second.c2;
    const int64_t surface = c.in_h * c.in_w * c2 * std::max(encoding_element_bytes(f->second.encoding), 1);
    const auto [ri, oi] = where(c.input);
    const auto [ro, oo] = where(c.output);
    return ri == ro && oi + c.src_c0 / c2 * surface == oo + c.dst_c0 / c2 * surface;
  };
  std::map<TensorId, int> op_of_output;  // tensor -> index into prog->ops
  std::set<int> inside_table;             // LOGISTIC nodes computed by their SiLU's table
  for (int ni : seg.nodes) {
    const Node& n = g.nodes()[ni];
    // A LOGISTIC read only by the SiLU MUL of this segment runs inside that MUL's table
    // (lower.cpp lower_mul): no task of its own, its output is never written.
    if (n.op == OpKind::logistic && readers[n.outputs[0]] == 1) {
      bool inside = false;
      for (int mi : seg.nodes) {
        const Node& m = g.nodes()[mi];
        if (m.op != OpKind::mul || silu_logistic(g, m) != ni) continue;
        LowerOptions check;
        check.pack = false;
        inside = lower_node(g, m, check).ok();
      }
      if (inside) {
        prog->notes.push_back(n.label() + " computed by the SiLU table of the MUL that reads it");
        inside_table.insert(ni);
        continue;
      }
    }
    // A table node read only by a table node of this segment that absorbed it (lower.h
    // absorbed_table): the second one's table computes both.
    if (is_table_node(n.op) && readers[n.outputs[0]] == 1) {
      bool inside = false;
      std::string by;
      for (int mi : seg.nodes) {
        const Node& m = g.nodes()[mi];
        if (absorbed_table(g, m) != ni) continue;
        LowerOptions check;
        check.pack = false;
        auto lm = lower_node(g, m, check);
        inside = lm.ok() && lm->input == n.inputs[0];
        by = m.label();
      }
      if (inside) {
        prog->notes.push_back(n.label() + " computed by the table of " + by + ", which reads it alone");
        inside_table.insert(ni);
        continue;
      }
    }
    // Matmul weights already packed for another program of this device are not packed again.
    std::vector<const uint8_t*> key;
    if (cache && is_float_matmul(g, n) && g.tensor(n.inputs[1]).data) key = {g.tensor(n.inputs[1]).data->data};
    LowerOptions lo;
    lo.pack_weights = !(!key.empty() && cache->entries.count(key));
    lo.weights = weights;
    auto lowered = lower_node(g, n, lo);
    if (!lowered.ok()) return lowered.status().with_context(n.label());
    NpuOp op = std::move(*lowered);
    op.nodes = {ni};
    if (op.req_inexact_channels > 0)
      prog->notes.push_back(n.label() + ": " + std::to_string(op.req_inexact_channels) + " of " + std::to_string(op.out_c) +
                            " channels requantize some reachable accumulator off TFLite (no scale pair tried is exact)");
    if (!op.concat_parts.empty()) {
      // A concat: one channel copy per input, each to its offset in the output.
      auto parts = lower_concat_parts(g, n);
      if (!parts.ok()) return parts.status().with_context(n.label());
      int copies = 0;
      for (NpuOp& p : *parts) {
        if (in_place(p)) continue;
        p.nodes = {ni};
        CompiledOp c;
        c.op = std::move(p);
        prog->ops.push_back(std::move(c));
        ++copies;
      }
      if (copies < static_cast<int>(parts->size()))
        prog->notes.push_back(n.label() + ": " + std::to_string(parts->size() - copies) + " of " +
                              std::to_string(parts->size()) + " inputs written in place by their producers");
      if (copies > 0) op_of_output[n.outputs[0]] = static_cast<int>(prog->ops.size()) - 1;
      continue;
    }
    if ((n.op == OpKind::strided_slice || n.op == OpKind::reshape) && in_place(op)) {
      prog->notes.push_back(n.label() + " read in place (a view of its input)");
      continue;
    }
    if (!key.empty()) {
      CompiledOp c;
      c.op = std::move(op);
      c.weight_key = key;
      op_of_output[n.outputs[0]] = static_cast<int>(prog->ops.size());
      prog->ops.push_back(std::move(c));
      continue;
    }
    if (op.type == NpuOpType::lut && n.op == OpKind::mul) {
      // A SiLU whose x is a conv of this segment read by nothing else (the SiLU's MUL and
      // its LOGISTIC, which the table computes): the table runs in the conv's DPU pass
      // (lower.cpp fuse_lut), x is never written.
      auto it = op_of_output.find(op.input);
      const int li = silu_logistic(g, n);
      // The fused op runs where the MUL would (moved to the end of the list), and reads the
      // conv's input then: the memory plan must keep that input alive up to the MUL, or its
      // buffer may already hold a later tensor (the SiLU's own output among them). It does:
      // the device names that input as the MUL's extra read (rknpu_device.cpp
      // do_extra_reads, plan_memory.cpp), and a later reader would keep it too.
      bool input_live = false;
      if (it != op_of_output.end()) {
        const TensorId in = prog->ops[it->second].op.input;
        input_live = last_reader[in] >= ni || g.tensor(in).data.has_value() || silu_conv_input(g, n) == in;
      }
      if (it != op_of_output.end() && li >= 0 && inside_table.count(li) && readers[op.input] == 2 && input_live) {
        CompiledOp& conv = prog->ops[it->second];
        NpuOp with_table = conv.op;
        Status s = fuse_lut(op, with_table);
        if (s.ok()) {
          with_table.nodes.push_back(ni);
          prog->notes.push_back(n.label() + " (SiLU table) fused into " + g.nodes()[conv.op.nodes[0]].label());
          const int at = it->second;
          conv.op = std::move(with_table);
          CompiledOp moved = std::move(conv);
          prog->ops.erase(prog->ops.begin() + at);
          op_of_output.erase(it);
          for (auto& [t, i] : op_of_output)
            if (i > at) --i;
          op_of_output[n.outputs[0]] = static_cast<int>(prog->ops.size());
          prog->ops.push_back(std::move(moved));
          continue;
        }
        prog->notes.push_back(n.label() + " (SiLU table) not fused: " + s.message());
      }
    }
    bool fused = false;
    if (n.op == OpKind::add && rounding == Rounding::fast) {
      // Fuse into the convolution producing one operand, when that conv's output has no
      // other reader and the other operand exists before the conv runs. Only under
      // rounding=fast: the fused form rounds the conv with one 16-bit multiplier (BS), one
      // value in about 500 a step off; unfused, the conv rounds with two and the add is
      // chosen against TFLite's ADD (lower_binary.cpp encode_pair).
      for (int k = 0; k < 2; ++k) {
        TensorId src = n.inputs[k], other = n.inputs[1 - k];
        auto it = op_of_output.find(src);
        if (it == op_of_output.end() || readers[src] != 1) continue;
        CompiledOp& conv = prog->ops[it->second];
        if (producer[other] >= 0 && producer[other] > conv.op.nodes[0]) continue;
        NpuOp with_add = conv.op;
        Status s = fuse_add(g, n, ni, with_add);
        if (!s.ok()) {
          prog->notes.push_back(n.label() + " not fused: " + s.message());
          continue;
        }
        conv.op = std::move(with_add);
        op_of_output.erase(it);
        op_of_output[n.outputs[0]] = static_cast<int>(&conv - prog->ops.data());
        prog->notes.push_back(n.label() + " fused into " + g.nodes()[conv.op.nodes[0]].label());
        fused = true;
        break;
      }
    }
    if (fused) continue;
    if (op.single_round) {
      // One rounding: the same threshold for either sign, no split (lower.cpp encode_requant).
    } else if (op.per_channel && !op.negatives_clamped && rounding == Rounding::fast) {
      prog->notes.push_back(n.label() + " rounds negative outputs at a common shift (rounding=fast)");
    } else if (op.per_channel && !op.negatives_clamped) {
      // Linear per-channel conv: two passes round every channel exactly (lower.h).
      auto parts = split_by_sign(op);
      if (parts.ok()) {
        CompiledOp pos;
        pos.op = std::move(parts->first);
        prog->ops.push_back(std::move(pos));
        op = std::move(parts->second);
      } else {
        prog->notes.push_back(n.label() + " rounds negative outputs at a common shift: " + parts.status().message());
      }
    }
    CompiledOp c;
    c.op = std::move(op);
    op_of_output[n.outputs[0]] = static_cast<int>(prog->ops.size());
    prog->ops.push_back(std::move(c));
  }
  if (fuse && policy == SchedulePolicy::tessera) TS_RETURN_IF_ERROR(fuse_sibling_matmuls(g, seg.nodes, *prog, cache, weights));
  // A segment of matmuls (the projections of a decoder layer) splits each one's N across
  // the cores: decode streams every weight once per token, and three cores' DMA read three
  // times the bytes a single core's does (hw.h); pipelining layers instead would not shorten
  // one token, whose layers run in sequence.
  bool all_matmul = !prog->ops.empty();
  for (const auto& c : prog->ops) all_matmul = all_matmul && c.op.type == NpuOpType::matmul;
  prog->lanes = all_matmul && policy == SchedulePolicy::tessera ? std::clamp(cores, 1, kCores) : 1;
  for (auto& c : prog->ops) {
    c.op.lanes = prog->lanes;
    TS_ASSIGN_OR_RETURN(c.tiling, plan_tiling(c.op, policy));
    if (!c.weight_key.empty()) {
      WeightCache::Entry& e = cache->entries[c.weight_key];
      if (e.refs == 0) {
        auto bo = upload(t, c.op.weights);
        if (!bo.ok()) {
          cache->entries.erase(c.weight_key);
          c.weight_key.clear();
          return bo.status();
        }
        e.bo = *bo;
        e.wscale = c.op.mm_wscale;
      } else if (c.op.mm_int8) {
        c.op.mm_wscale = e.wscale;
      }
      ++e.refs;
      c.weights = e.bo;
    } else if (!c.op.weights.empty()) {
      TS_ASSIGN_OR_RETURN(c.weights, upload(t, c.op.weights));
    }
    if (!c.op.bs_table.empty()) {
      TS_ASSIGN_OR_RETURN(c.bs, upload(t, c.op.bs_table));
    }
    if (!c.op.ew_constant_data.empty()) {
      TS_ASSIGN_OR_RETURN(c.ew_const, upload(t, c.op.ew_constant_data));
      c.op.ew_constant_data.clear();
      c.op.ew_constant_data.shrink_to_fit();
    }
    c.op.weights.clear();
    c.op.weights.shrink_to_fit();
  }
  // Host steps (int8 matmuls, K splits): their scratch buffers, and the stages: an op that
  // reads the output of an op of the current stage starts a new stage when either of them
  // has host steps (the host must run between them).
  {
    int stage = 0;
    std::map<TensorId, bool> made_here;  // outputs of the current stage's ops -> with host steps
    for (auto& c : prog->ops) {
      c.host_steps = c.op.type == NpuOpType::matmul && (c.op.mm_int8 || c.tiling.k_segments > 1 || !c.parts.empty());
      bool cut = false;
      for (TensorId in : {c.op.input, c.op.ew_input})
        if (auto it = made_here.find(in); in != kNoTensor && it != made_here.end() && (it->second || c.host_steps)) cut = true;
      if (cut) {
        ++stage;
        made_here.clear();
      }
      c.stage = stage;
      made_here[c.op.output] = c.host_steps;
      for (const CompiledOp::Part& part : c.parts) made_here[part.output] = c.host_steps;
      if (!c.host_steps) continue;
      const int64_t m = c.op.in_h, k = c.op.in_c, n = c.op.out_c;
      const std::string what = "[rknpu] " + c.op.label + " host-step buffer bytes";
      if (c.op.mm_int8) {
        TS_ASSIGN_OR_RETURN(int64_t a8_bytes, checked_mul((k + kC2 - 1) / kC2 * 16, m, what));
        TS_ASSIGN_OR_RETURN(c.a8, t->create_bo(a8_bytes));
      }
      TS_ASSIGN_OR_RETURN(int64_t cube, checked_mul((n + kFp32OutC2 - 1) / kFp32OutC2 * 16, m, what));
      TS_ASSIGN_OR_RETURN(int64_t partial_bytes, checked_mul(cube, c.tiling.k_segments, what));
      TS_ASSIGN_OR_RETURN(c.partial, t->create_bo(partial_bytes));
    }
  }
  // Jobs. The kernel runs one entity's jobs one at a time on one core, so a job boundary
  // only adds the job's overhead: Tessera puts the segment's tasks, in execution order, in
  // one job, starting another only when the job's estimated time would pass a fifth of the
  // kernel's per-job timeout. Mesa makes one job per op.
  const int stages = stage_count(*prog);
  for (int stage = 0; stage < stages; ++stage) {
    if (prog->lanes > 1) {
      // One job per lane holding, for every op of the stage, the N chunks i with i % lanes == lane.
      const size_t first = prog->jobs.size();
      prog->jobs.resize(first + static_cast<size_t>(prog->lanes));
      for (int l = 0; l < prog->lanes; ++l) prog->jobs[first + l].lane = l, prog->jobs[first + l].stage = stage;
      for (size_t i = 0; i < prog->ops.size(); ++i) {
        if (prog->ops[i].stage != stage) continue;
        const Tiling& tl = prog->ops[i].tiling;
        int64_t chunk = -1, prev_oc0 = -1;
        for (size_t k = 0; k < tl.tiles.size(); ++k) {
          if (tl.tiles[k].oc0 != prev_oc0) ++chunk, prev_oc0 = tl.tiles[k].oc0;
          prog->jobs[first + chunk % prog->lanes].tasks.push_back({static_cast<int>(i), static_cast<int>(k)});
        }
      }
      prog->jobs.erase(std::remove_if(prog->jobs.begin() + static_cast<std::ptrdiff_t>(first), prog->jobs.end(),
                                      [](const JobPlan& j) { return j.tasks.empty(); }),
                       prog->jobs.end());
      continue;
    }
    double job_estimate = 0;
    bool stage_open = false;
    for (size_t i = 0; i < prog->ops.size(); ++i) {
      const CompiledOp& c = prog->ops[i];
      if (c.stage != stage) continue;
      const double estimate = double(c.op.macs) / (double(kMacsPerCycle) * kClockHz) /
                                  (c.op.int16 ? kInt16MacRateFactor : 1.0) /
                                  (c.op.fp16 ? double(kFp16MacsPerCycle) / double(kMacsPerCycle) : 1.0) /
                                  (c.op.type == NpuOpType::depthwise ? kDepthwiseMacEfficiency : 1.0) +
                              double(c.tiling.tiles.size()) * kTaskOverheadSeconds;
      if (policy == SchedulePolicy::mesa || !stage_open || job_estimate + estimate > kJobTimeoutSeconds / 5) {
        prog->jobs.emplace_back();
        prog->jobs.back().stage = stage;
        job_estimate = 0;
        stage_open = true;
      }
      job_estimate += estimate;
      for (size_t k = 0; k < c.tiling.tiles.size(); ++k) prog->jobs.back().tasks.push_back({static_cast<int>(i), static_cast<int>(k)});
    }
  }
  return prog;
}

int stage_count(const RknpuProgram& p) {
  int n = 0;
  for (const auto& c : p.ops) n = std::max(n, c.stage + 1);
  return n;
}

namespace {
// f32 / int32 NC1HWC2 with C2 = 4 ([C/4][M][4]) and int8 with C2 = 16: element offsets.
inline int64_t at4(int64_t m_rows, int64_t r, int64_t c) { return ((c / 4) * m_rows + r) * 4 + c % 4; }
inline int64_t at16(int64_t m_rows, int64_t r, int64_t c) { return ((c / 16) * m_rows + r) * 16 + c % 16; }

Result<BoInfo> bound(const RknpuProgram& p, const std::map<TensorId, BoInfo>& bo_of, TensorId id) {
  auto it = bo_of.find(id);
  if (it == bo_of.end()) return error(StatusCode::internal, "tensor '", p.graph->tensor(id).name, "' is not bound to a buffer object");
  return it->second;
}
}  // namespace

Status host_before(RknpuProgram& p, int stage, Transport* t, const std::map<TensorId, BoInfo>& bo_of) {
  for (auto& c : p.ops) {
    if (c.stage != stage || !c.op.mm_int8) continue;
    const int64_t m = c.op.in_h, k = c.op.in_c;
    TS_ASSIGN_OR_RETURN(BoInfo in, bound(p, bo_of, c.op.input));
    if (in.size < (k + 3) / 4 * m * 16 || c.a8.size < (k + 15) / 16 * m * 16)
      return error(StatusCode::internal, "[rknpu] ", c.op.label, ": A's buffer objects are smaller than [", m, ", ", k, "]");
    TS_RETURN_IF_ERROR(t->prep_bo(in.handle));
    std::vector<float> rows(static_cast<size_t>(m * k));
    const float* a = reinterpret_cast<const float*>(in.cpu);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < k; ++j) rows[r * k + j] = a[at4(m, r, j)];
    TS_RETURN_IF_ERROR(t->fini_bo(in.handle));
    std::vector<int8_t> q(rows.size());
    c.row_scale.resize(static_cast<size_t>(m));
    convert::quantize_rows_i8(rows.data(), m, k, k, q.data(), c.row_scale.data());
    TS_RETURN_IF_ERROR(t->prep_bo(c.a8.handle));
    int8_t* dst = reinterpret_cast<int8_t*>(c.a8.cpu);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < k; ++j) dst[at16(m, r, j)] = q[r * k + j];
    TS_RETURN_IF_ERROR(t->fini_bo(c.a8.handle));
  }
  return Status::Ok();
}

Status host_after(RknpuProgram& p, int stage, Transport* t, const std::map<TensorId, BoInfo>& bo_of) {
  for (auto& c : p.ops) {
    if (c.stage != stage || !c.host_steps) continue;
    const int64_t m = c.op.in_h, n = c.op.out_c, segs = c.tiling.k_segments;
    const int64_t cube = (n + 3) / 4 * m * 4;  // elements of one partial result
    if (c.partial.size < segs * cube * 4)
      return error(StatusCode::internal, "[rknpu] ", c.op.label, ": the partial results' buffer object is smaller than [", m,
                   ", ", n, "]");
    if (c.op.mm_int8 && (static_cast<int64_t>(c.row_scale.size()) != m || static_cast<int64_t>(c.op.mm_wscale.size()) != n))
      return error(StatusCode::internal, "[rknpu] ", c.op.label, ": int8 scales missing");
    // A fused matmul's nodes each take their channels of the fused result; any other op is
    // one part of all N (no allocation: this runs every token).
    const CompiledOp::Part whole{c.op.output, 0, n, -1};
    const std::span<const CompiledOp::Part> parts = c.parts.empty() ? std::span<const CompiledOp::Part>(&whole, 1)
                                                                    : std::span<const CompiledOp::Part>(c.parts);
    TS_RETURN_IF_ERROR(t->prep_bo(c.partial.handle));
    for (const CompiledOp::Part& part : parts) {
      TS_ASSIGN_OR_RETURN(BoInfo out, bound(p, bo_of, part.output));
      if (part.n0 < 0 || part.n < 1 || part.n0 + part.n > n || out.size < (part.n + 3) / 4 * m * 4 * 4)
        return error(StatusCode::internal, "[rknpu] ", c.op.label, ": C's buffer object is smaller than [", m, ", ", part.n, "]");
      TS_RETURN_IF_ERROR(t->prep_bo(out.handle));
      float* y = reinterpret_cast<float*>(out.cpu);
      if (c.op.mm_int8) {
        // Exact: int32 partials summed in 64 bits, then sa x sw (and the bias) in double,
        // rounded once to f32.
        const int32_t* acc = reinterpret_cast<const int32_t*>(c.partial.cpu);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < part.n; ++j) {
            const int64_t ch = part.n0 + j;
            int64_t sum = 0;
            for (int64_t s = 0; s < segs; ++s) sum += acc[s * cube + at4(m, r, ch)];
            double v = double(sum) * double(c.row_scale[r]) * double(c.op.mm_wscale[ch]);
            if (!c.op.mm_bias.empty()) v += double(c.op.mm_bias[ch]);
            y[at4(m, r, j)] = static_cast<float>(v);
          }
      } else {
        // fp32 partials (the bias in segment 0's) added in segment order, in fp32.
        const float* part_sums = reinterpret_cast<const float*>(c.partial.cpu);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < part.n; ++j) {
            const int64_t i = at4(m, r, part.n0 + j);
            float v = part_sums[i];
            for (int64_t s = 1; s < segs; ++s) v += part_sums[s * cube + i];
            y[at4(m, r, j)] = v;
          }
      }
      TS_RETURN_IF_ERROR(t->fini_bo(out.handle));
    }
    TS_RETURN_IF_ERROR(t->fini_bo(c.partial.handle));
  }
  return Status::Ok();
}

Status bind_program(RknpuProgram& p, Transport* t, const std::map<TensorId, BoInfo>& bo_of) {
  auto addr = [&](TensorId id) -> Result<BoInfo> {
    if (id == kNoTensor) return BoInfo{};
    auto it = bo_of.find(id);
    if (it == bo_of.end())
      return error(StatusCode::internal, "tensor '", p.graph->tensor(id).name, "' is not bound to a buffer object");
    return it->second;
  };
  std::vector<uint32_t> sig;
  for (const auto& c : p.ops)
    for (TensorId id : {c.op.input, c.op.output, c.op.ew_input}) {
      TS_ASSIGN_OR_RETURN(BoInfo b, addr(id));
      sig.push_back(b.handle);
      sig.push_back(b.dma_address);
    }
  if (sig == p.bound_signature && p.regcmd.handle) return Status::Ok();

  // Emit every task, then lay the buffers out and chain them.
  struct Emitted {
    std::vector<uint64_t> entries;
  };
  std::vector<std::vector<Emitted>> per_job(p.jobs.size());
  size_t total = 0;
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    int prev_op = -1;
    for (auto [oi, ti] : p.jobs[j].tasks) {
      const CompiledOp& c = p.ops[oi];
      OpAddresses a;
      TS_ASSIGN_OR_RETURN(BoInfo in, addr(c.op.input));
      TS_ASSIGN_OR_RETURN(BoInfo out, addr(c.op.output));
      TS_ASSIGN_OR_RETURN(BoInfo ew, addr(c.op.ew_input));
      if (c.a8.handle) in = c.a8;
      if (c.partial.handle) out = c.partial;
      if (c.ew_const.handle) ew = c.ew_const;
      a.input = in.dma_address, a.output = out.dma_address, a.ew = ew.dma_address;
      a.weights = c.weights.dma_address, a.bs = c.bs.dma_address;
      const TaskTile& tile = c.tiling.tiles[ti];
      // Weights stay in CBUF between consecutive tasks of one op and one output-channel
      // chunk when they are resident (Mesa re-fetches streamed weights every task).
      bool reuse = prev_op == oi && ti > 0 && c.tiling.tiles[ti - 1].oc0 == tile.oc0 &&
                   c.tiling.tiles[ti - 1].kseg == tile.kseg && (c.tiling.weights_resident || p.policy == SchedulePolicy::tessera);
      prev_op = oi;
      TS_ASSIGN_OR_RETURN(auto e, emit_task(c.op, c.tiling, tile, a, reuse));
      total += chained_size(e.size());
      per_job[j].push_back({std::move(e)});
    }
  }
  if (p.regcmd.handle) {
    TS_RETURN_IF_ERROR(t->destroy_bo(p.regcmd.handle));
    p.regcmd = BoInfo{};
  }
  TS_ASSIGN_OR_RETURN(p.regcmd, t->create_bo(static_cast<int64_t>(total * sizeof(uint64_t))));
  TS_RETURN_IF_ERROR(t->prep_bo(p.regcmd.handle));
  p.job_descs.clear();
  p.task_entries.clear();
  size_t pos = 0;  // in entries
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    JobDesc jd;
    std::vector<uint32_t> reads, writes;
    auto add = [](std::vector<uint32_t>& v, uint32_t h) {
      if (h && std::find(v.begin(), v.end(), h) == v.end()) v.push_back(h);
    };
    for (size_t k = 0; k < per_job[j].size(); ++k) {
      auto& e = per_job[j][k].entries;
      const size_t size = chained_size(e.size());
      const bool last = k + 1 == per_job[j].size();
      const uint32_t next = last ? 0 : p.regcmd.dma_address + static_cast<uint32_t>((pos + size) * sizeof(uint64_t));
      const uint32_t next_count = last ? 0 : static_cast<uint32_t>(chained_size(per_job[j][k + 1].entries.size()));
      TS_RETURN_IF_ERROR(append_chain(e, next, next_count));
      std::memcpy(p.regcmd.cpu + pos * sizeof(uint64_t), e.data(), e.size() * sizeof(uint64_t));
      jd.tasks.push_back({p.regcmd.dma_address + static_cast<uint32_t>(pos * sizeof(uint64_t)), static_cast<uint32_t>(e.size())});
      pos += e.size();
      const CompiledOp& c = p.ops[p.jobs[j].tasks[k].first];
      TS_ASSIGN_OR_RETURN(BoInfo in, addr(c.op.input));
      TS_ASSIGN_OR_RETURN(BoInfo out, addr(c.op.output));
      TS_ASSIGN_OR_RETURN(BoInfo ew, addr(c.op.ew_input));
      if (c.a8.handle) in = c.a8;
      if (c.partial.handle) out = c.partial;
      add(reads, in.handle);
      add(reads, ew.handle);
      add(reads, c.ew_const.handle);
      add(reads, c.weights.handle);
      add(reads, c.bs.handle);
      add(writes, out.handle);
      p.task_entries.push_back(e);
    }
    add(reads, p.regcmd.handle);
    // A BO both read and written by the job (an intermediate inside a chain) is a write.
    for (uint32_t h : writes) reads.erase(std::remove(reads.begin(), reads.end(), h), reads.end());
    jd.in_bos = std::move(reads);
    jd.out_bos = std::move(writes);
    p.job_descs.push_back(std::move(jd));
  }
  TS_RETURN_IF_ERROR(t->fini_bo(p.regcmd.handle));
  p.bound_signature = std::move(sig);
  return Status::Ok();
}

}  // namespace tessera::rknpu
