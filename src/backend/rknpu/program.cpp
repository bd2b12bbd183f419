#include "backend/rknpu/program.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"

namespace tessera::rknpu {

RknpuProgram::~RknpuProgram() {
  for (auto& op : ops) {
    if (op.weight_key && cache_) {
      auto it = cache_->entries.find(op.weight_key);
      if (it != cache_->entries.end() && --it->second.refs == 0) {
        (void)transport_->destroy_bo(it->second.bo.handle);
        cache_->entries.erase(it);
      }
    } else if (op.weights.handle) {
      (void)transport_->destroy_bo(op.weights.handle);
    }
    if (op.bs.handle) (void)transport_->destroy_bo(op.bs.handle);
  }
  if (regcmd.handle) (void)transport_->destroy_bo(regcmd.handle);
}

int64_t RknpuProgram::device_bytes() const {
  int64_t bytes = 0;
  for (const auto& c : ops) bytes += (c.weight_key ? 0 : c.weights.size) + c.bs.size;  // shared weights: the device's
  return bytes;
}

std::string RknpuProgram::describe() const {
  size_t tasks = 0;
  for (const auto& j : jobs) tasks += j.tasks.size();
  std::ostringstream os;
  auto plural = [](size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  os << plural(ops.size(), "NPU op", "NPU ops") << ", " << plural(tasks, "task", "tasks") << " in "
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

}  // namespace

Result<std::unique_ptr<RknpuProgram>> compile_segment(const Segment& seg, Transport* t, SchedulePolicy policy,
                                                      Rounding rounding, int cores, WeightCache* cache) {
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

  std::map<TensorId, int> op_of_output;  // tensor -> index into prog->ops
  for (int ni : seg.nodes) {
    const Node& n = g.nodes()[ni];
    // Matmul weights already packed for another program of this device are not packed again.
    const uint8_t* key = nullptr;
    if (cache && is_float_matmul(g, n) && g.tensor(n.inputs[1]).data) key = g.tensor(n.inputs[1]).data->data;
    LowerOptions lo;
    lo.pack_weights = !(key && cache->entries.count(key));
    auto lowered = lower_node(g, n, lo);
    if (!lowered.ok()) return lowered.status().with_context(n.label());
    NpuOp op = std::move(*lowered);
    op.nodes = {ni};
    if (key) {
      CompiledOp c;
      c.op = std::move(op);
      c.weight_key = key;
      op_of_output[n.outputs[0]] = static_cast<int>(prog->ops.size());
      prog->ops.push_back(std::move(c));
      continue;
    }
    bool fused = false;
    if (n.op == OpKind::add && rounding == Rounding::fast) {
      // Fuse into the convolution producing one operand, when that conv's output has no
      // other reader and the other operand exists before the conv runs. Only under
      // rounding=fast: the fused form rounds the conv with one 16-bit multiplier (BS), one
      // value in about 500 a step off; unfused, the conv rounds with two and the add is
      // chosen against TFLite's ADD (lower.cpp encode_add).
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
    if (c.weight_key) {
      WeightCache::Entry& e = cache->entries[c.weight_key];
      if (e.refs == 0) {
        auto bo = upload(t, c.op.weights);
        if (!bo.ok()) {
          cache->entries.erase(c.weight_key);
          c.weight_key = nullptr;
          return bo.status();
        }
        e.bo = *bo;
      }
      ++e.refs;
      c.weights = e.bo;
    } else if (!c.op.weights.empty()) {
      TS_ASSIGN_OR_RETURN(c.weights, upload(t, c.op.weights));
    }
    if (!c.op.bs_table.empty()) {
      TS_ASSIGN_OR_RETURN(c.bs, upload(t, c.op.bs_table));
    }
    c.op.weights.clear();
    c.op.weights.shrink_to_fit();
  }
  // Jobs. The kernel runs one entity's jobs one at a time on one core, so a job boundary
  // only adds the job's overhead: Tessera puts the segment's tasks, in execution order, in
  // one job, starting another only when the job's estimated time would pass a fifth of the
  // kernel's per-job timeout. Mesa makes one job per op.
  if (prog->lanes > 1) {
    // One job per lane holding, for every op, the N chunks i with i % lanes == lane.
    prog->jobs.resize(static_cast<size_t>(prog->lanes));
    for (int l = 0; l < prog->lanes; ++l) prog->jobs[l].lane = l;
    for (size_t i = 0; i < prog->ops.size(); ++i) {
      const Tiling& tl = prog->ops[i].tiling;
      int64_t chunk = -1, prev_oc0 = -1;
      for (size_t k = 0; k < tl.tiles.size(); ++k) {
        if (tl.tiles[k].oc0 != prev_oc0) ++chunk, prev_oc0 = tl.tiles[k].oc0;
        prog->jobs[chunk % prog->lanes].tasks.push_back({static_cast<int>(i), static_cast<int>(k)});
      }
    }
    prog->jobs.erase(std::remove_if(prog->jobs.begin(), prog->jobs.end(), [](const JobPlan& j) { return j.tasks.empty(); }),
                     prog->jobs.end());
    return prog;
  }
  double job_estimate = 0;
  for (size_t i = 0; i < prog->ops.size(); ++i) {
    const CompiledOp& c = prog->ops[i];
    const double estimate = double(c.op.macs) / (double(kMacsPerCycle) * kClockHz) /
                                (c.op.int16 ? kInt16MacRateFactor : 1.0) /
                                (c.op.fp16 ? double(kFp16MacsPerCycle) / double(kMacsPerCycle) : 1.0) /
                                (c.op.type == NpuOpType::depthwise ? kDepthwiseMacEfficiency : 1.0) +
                            double(c.tiling.tiles.size()) * kTaskOverheadSeconds;
    if (policy == SchedulePolicy::mesa || prog->jobs.empty() || job_estimate + estimate > kJobTimeoutSeconds / 5) {
      prog->jobs.emplace_back();
      job_estimate = 0;
    }
    job_estimate += estimate;
    for (size_t k = 0; k < c.tiling.tiles.size(); ++k) prog->jobs.back().tasks.push_back({static_cast<int>(i), static_cast<int>(k)});
  }
  return prog;
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
      a.input = in.dma_address, a.output = out.dma_address, a.ew = ew.dma_address;
      a.weights = c.weights.dma_address, a.bs = c.bs.dma_address;
      const TaskTile& tile = c.tiling.tiles[ti];
      // Weights stay in CBUF between consecutive tasks of one op and one output-channel
      // chunk when they are resident (Mesa re-fetches streamed weights every task).
      bool reuse = prev_op == oi && ti > 0 && c.tiling.tiles[ti - 1].oc0 == tile.oc0 &&
                   (c.tiling.weights_resident || p.policy == SchedulePolicy::tessera);
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
      add(reads, in.handle);
      add(reads, ew.handle);
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
