// The rknpu device: the RK3588 NPU behind the Tessera device interface. Feature maps live
// in int8 NC1HWC2 buffer objects (one per tensor, 32-bit NPU addresses); conv, depthwise,
// add and pooling nodes compile to register command streams that run on the device model
// (default) or, through the rocket transport, on a board.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/rknpu/dump.h"
#include "backend/rknpu/flat.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/program.h"
#include "backend/rknpu/rocket_transport.h"
#include "backend/rknpu/transport.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"
#include "tessera/format_registry.h"

namespace tessera {
namespace rknpu {
namespace {

// Capacity: the 32-bit NPU address space less page 0, which is never mapped.
constexpr int64_t kCapacity = static_cast<int64_t>(kAddressSpace) - kPageBytes;

// A u8/i8 per-tensor quantized activation (not a constant).
bool quantized_activation(const Tensor& t) {
  return (t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty() && !t.quant.per_axis() && !t.data;
}

bool is_feature_map(const Tensor& t) { return quantized_activation(t) && t.shape.size() == 4 && t.shape[0] == 1; }

// Rows [N, C] of a fully connected layer: one line of N pixels in NC1HWC2 (format.h).
bool is_rows(const Tensor& t) { return quantized_activation(t) && t.shape.size() == 2; }

// f32 rows [M, K] of a matrix multiplication (its A, or its C).
bool is_float_rows(const Tensor& t) { return t.dtype == DType::f32 && !t.data && t.shape.size() == 2; }

// The node producing tensor `id`, or null.
const Node* producer_of(const Graph& g, TensorId id) {
  for (const Node& n : g.nodes())
    for (TensorId o : n.outputs)
      if (o == id) return &n;
  return nullptr;
}

class RknpuDevice : public Device {
 public:
  RknpuDevice(std::unique_ptr<Transport> t, SchedulePolicy policy, Rounding rounding, int cores, WeightPolicy weights,
              bool in_place, bool fuse)
      : Device(make_props(*t, policy, rounding, cores, weights, fuse)), transport_(std::move(t)), policy_(policy), rounding_(rounding),
        cores_(cores), weights_(weights), in_place_(in_place), fuse_(fuse) {}

  static DeviceProperties make_props(const Transport& t, SchedulePolicy policy, Rounding rounding, int cores,
                                     WeightPolicy weights, bool fuse) {
    DeviceProperties p;
    p.name = "rknpu";
    p.description = t.modelled() ? "Rockchip RK3588 NPU (device model: register streams executed, time modelled)"
                                 : "Rockchip RK3588 NPU (rocket kernel driver)";
    p.is_model = t.modelled();
    p.capacity_bytes = kCapacity;
    p.max_allocation_bytes = kCapacity;
    p.alignment_bytes = kPageBytes;
    p.sub_allocation = false;
    p.cores = kCores;
    p.shared_clock = t.modelled();
    p.regions = kRegionWhole;
    p.program_owns_constants = true;  // programs pack weights and DPU tables into their own BOs
    // The model runs on another host: the board's cpu share is modelled on its Cortex-A76
    // (tessera/cpu_model.h). On the board itself the cpu's time is measured.
    if (t.modelled()) p.board_cpu = "rk3588-a76";
    p.extra = {{"transport", t.name()},
               {"schedule", policy == SchedulePolicy::mesa ? "mesa" : "tessera"},
               {"rounding", rounding == Rounding::exact ? "exact (per-channel linear convs in two passes, adds unfused)"
                                                    : "fast (one pass, adds fused into convs)"},
               {"formats", "i8 NC1HWC2 (C2=16) feature maps; packed conv/depthwise weights; matmul: fp16 NC1HWC2 "
                           "(C2=8) A, fp16 weight blocks, fp32 NC1HWC2 (C2=4) C"},
               {"cbuf", "12 banks x 32 KiB per core"},
               {"matmul", std::string(weights == WeightPolicy::int8
                                          ? "int8 x int8 -> int32, weights converted once to int8 blocks with one scale per "
                                            "output channel, activations quantized per row on the host"
                                          : "fp16 x fp16 -> fp32, weights converted once to fp16 blocks") +
                              "; K split above 11264; N split across " + std::to_string(cores) +
                              (cores == 1 ? " core" : " cores") +
                              (fuse && policy == SchedulePolicy::tessera
                                   ? "; consecutive matmuls reading one input (q/k/v, gate/up) fused into one"
                                   : "")},
               {"address space", "32-bit, one buffer object per tensor"}};
    return p;
  }

 protected:
  std::optional<Format> do_native_format(const Graph& g, TensorId id) const override {
    const Tensor& t = g.tensor(id);
    // A flat tensor (flat.h): row-major bytes, which element-wise tasks read as 16-channel
    // cubes; u8 stored as q - 0x80 like every 8-bit tensor on the NPU.
    if (is_flat(g, id)) return Format{Encoding::i8, Layout::row_major, t.shape};
    if (is_feature_map(t) || is_rows(t)) {
      Format f{Encoding::i8, Layout::nc1hwc2, t.shape};
      f.c2 = kC2;
      f.pad_value = t.quant.zero_point_at(0) - (t.dtype == DType::u8 ? kU8Offset : 0);
      return f;
    }
    if (is_float_rows(t)) {
      // A matmul's C: fp32 (N/4, M, 4); its A: fp16 (K/8, M, 8), converted on the way in
      // (rknpu-matmul.md "Layouts"; the transfer rounds f32 to fp16, nearest even). With
      // int8 weights, A stays f32 (N/4, M, 4) too: the host quantizes it per row.
      const Node* p = producer_of(g, id);
      const bool c = weights_ == WeightPolicy::int8 || (p && is_float_matmul(g, *p));
      Format f{c ? Encoding::f32 : Encoding::f16, Layout::nc1hwc2, t.shape};
      f.c2 = c ? kFp32OutC2 : kFp16C2;
      f.pad_value = 0;
      return f;
    }
    // Constants (weights, biases) keep their logical form here, for the plan's report: the
    // plan allocates no copy of them (program_owns_constants), each compiled program packs
    // its own into the native layouts (rk_conv_weight / rk_dw_weight + bias table).
    if (t.role == Role::weight && t.data) {
      // A matrix read only as a matmul's weights is held as fp16 blocks (by the programs, as
      // rk_matmul_weight: the plan reports that rounding; formats.md).
      bool matmul_only = t.shape.size() == 2, read = false;
      for (const Node& n : g.nodes())
        for (size_t i = 0; i < n.inputs.size(); ++i)
          if (n.inputs[i] == id) {
            read = true;
            matmul_only = matmul_only && i == 1 && is_float_matmul(g, n);
          }
      if (read && matmul_only)
        return Format{weights_ == WeightPolicy::int8 ? Encoding::i8 : Encoding::f16, Layout::rk_matmul_weight, t.shape};
      return t.host_format();
    }
    return std::nullopt;
  }

  // A SiLU whose table may run in its conv's pass (program.cpp) reads the conv's input at
  // the MUL's turn: the memory plan keeps that input alive up to the MUL.
  std::vector<TensorId> do_extra_reads(const Graph& g, int node) const override {
    // Two chained tables in one: the second reads the first one's input.
    if (const int p = absorbed_table(g, g.nodes()[node]); p >= 0) return {g.nodes()[p].inputs[0]};
    const TensorId in = silu_conv_input(g, g.nodes()[node]);
    if (in == kNoTensor) return {};
    return {in};
  }

  // The copies node `n` lowers to: a concatenation's parts, a slice's or a reshape's one copy
  // (none when it lowers to something else or not at all).
  static std::vector<NpuOp> copies_of(const Graph& g, const Node& n) {
    if (n.op == OpKind::concat) {
      auto parts = lower_concat_parts(g, n);
      if (parts.ok()) return std::move(*parts);
    } else if (n.op == OpKind::strided_slice || n.op == OpKind::reshape) {
      LowerOptions lo;
      lo.pack = false;
      auto op = lower_node(g, n, lo);
      if (op.ok()) return {std::move(*op)};
    }
    return {};
  }

  // Copies the plan may keep in place (plan_memory.cpp adopt_device_views): each input of a
  // concatenation as a run of its output's bytes, a slice's (or reshape's) output as a run of
  // its input's. The lowering's own checks decide which; the formats must agree: NC1HWC2 of
  // one encoding, block and H, W (runs of whole 16-channel surfaces), or flat tensors (flat.h:
  // row-major 8-bit, runs of 16-byte atoms). Not under the mesa schedule (Mesa copies).
  std::vector<TensorView> do_views(const Graph& g, int node, const std::function<Format(TensorId)>& format_of) const override {
    if (policy_ == SchedulePolicy::mesa || !in_place_) return {};
    const Node& n = g.nodes()[node];
    std::vector<TensorView> views;
    for (const NpuOp& c : copies_of(g, n)) {
      const Format fi = format_of(c.input), fo = format_of(c.output);
      if (c.type != NpuOpType::copy) return {};
      int64_t surface = 0, c2 = kC2;
      if (fi.layout == Layout::row_major && fo.layout == Layout::row_major && fi.encoding == Encoding::i8 &&
          fo.encoding == Encoding::i8) {
        surface = c.in_h * c.in_w * kC2;
      } else if (fi.layout == Layout::nc1hwc2 && fo.layout == Layout::nc1hwc2 && fi.encoding == fo.encoding &&
                 fi.c2 == fo.c2 && fi.c2 > 0 && fi.shape.size() == 4 && fo.shape.size() == 4 && fi.shape[1] == fo.shape[1] &&
                 fi.shape[2] == fo.shape[2] && c.src_c0 % fi.c2 == 0 && c.dst_c0 % fi.c2 == 0) {
        c2 = fi.c2;
        surface = fi.shape[1] * fi.shape[2] * fi.c2 * encoding_element_bytes(fi.encoding);
      } else {
        return {};
      }
      if (n.op == OpKind::concat)
        views.push_back({c.input, c.output, c.dst_c0 / c2 * surface});
      else
        views.push_back({c.output, c.input, c.src_c0 / c2 * surface});
    }
    return views;
  }

  Support do_supports(const Graph& g, const Node& n) const override {
    LowerOptions lo;
    lo.pack = false;
    lo.weights = weights_;
    auto op = lower_node(g, n, lo);
    if (!op.ok()) return Support::no(op.status().message());
    if (policy_ == SchedulePolicy::mesa &&
        (op->type == NpuOpType::avg_pool || op->type == NpuOpType::max_pool || op->type == NpuOpType::resize ||
         op->type == NpuOpType::row_copy))
      return Support::no("the mesa schedule runs pooling and resizes on the cpu, as Mesa does (no PPU)");
    // Cost: MAC time at the array's rate plus one task overhead (the partitioner compares);
    // a matmul streams its weights from DRAM, which bounds it as often as the MACs do.
    double cost = double(op->macs) / double(kMacsPerCycle) / kClockHz + kTaskOverheadSeconds;
    if (op->type == NpuOpType::matmul)
      cost = std::max(double(op->macs) / double(kFp16MacsPerCycle) / kClockHz, double(op->weight_bytes) / kDramBytesPerSecond) +
             kTaskOverheadSeconds;
    std::string split;
    if (op->type == NpuOpType::matmul)
      if (auto tl = check_tiling(*op); tl.ok() && tl->k_segments > 1)
        split = " (K split: " + std::to_string(tl->k_segments) + " segments of " + std::to_string(tl->k_chunk) +
                ", partial sums added on the host)";
    // A two-operand element-wise task (type add) names its op: add, sub or mul.
    const std::string kind = op->type == NpuOpType::add ? op->eltwise : std::string(npu_op_type_name(op->type));
    std::string upper = kind;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string note = "npu " + kind + (op->fp16 ? " fp16 x fp16 -> fp32" : "") +
                       (op->mm_int8 ? " int8 x int8 -> int32" : "") + split +
                       (op->int16 ? " (int16 MACs)" : "") +
                       (op->per_channel ? " (per-channel scales)" : "") +
                       (op->type == NpuOpType::lut ? " " + op->lut_function + " (DPU lookup table: TFLite's output on " +
                                                          std::to_string(op->lut_exact_codes) + " of 256 input codes, at most " +
                                                          std::to_string(op->lut_max_error) + " steps off)"
                                                    : "") +
                       (op->type == NpuOpType::resize ? " (nearest x2: PPU tasks, each pixel written as a 2x2 block)" : "") +
                       (op->exact_pairs >= 0 ? " (TFLite's " + upper + " on " + std::to_string(op->exact_pairs) + " of 65536 input pairs)" : "");
    if (op->type == NpuOpType::row_copy) note += " (PPU tasks: each input's rows at their offset in the output's rows)";
    // A table that the table reading it alone computes (absorbed_table) takes no task.
    const int self = static_cast<int>(&n - g.nodes().data());
    if (is_table_node(n.op) && self >= 0 && self < static_cast<int>(g.nodes().size()))
      for (const Node& m : g.nodes())
        if (absorbed_table(g, m) == self) note += " -- computed by the table of " + m.label() + " (one table for both)";
    return Support::yes(cost, note);
  }

  Result<Allocation> do_allocate(int64_t bytes) override {
    TS_ASSIGN_OR_RETURN(BoInfo bo, transport_->create_bo(bytes));
    bos_[bo.handle] = bo;
    return Allocation{bo.handle, bo.size};
  }

  Status do_free(Allocation a) override {
    auto it = bos_.find(static_cast<uint32_t>(a.handle));
    if (it == bos_.end()) return error(StatusCode::invalid_argument, "free of unknown buffer object ", a.handle);
    bos_.erase(it);
    return transport_->destroy_bo(static_cast<uint32_t>(a.handle));
  }

  Result<BoInfo> bo(const Placement& p) const {
    auto it = bos_.find(static_cast<uint32_t>(p.alloc.handle));
    if (it == bos_.end()) return error(StatusCode::invalid_argument, "unknown buffer object ", p.alloc.handle);
    return it->second;
  }

  Status do_write(const Placement& dst, const Region& region, const ConstHostView& src) override {
    TS_ASSIGN_OR_RETURN(BoInfo b, bo(dst));
    TS_RETURN_IF_ERROR(transport_->prep_bo(b.handle));
    convert::Stats st;
    Status s = convert::write_region(dst.format, b.cpu + dst.offset, region, src.format, src.data, &st);
    TS_RETURN_IF_ERROR(transport_->fini_bo(b.handle));
    TS_RETURN_IF_ERROR(s);
    if (!st.identity) counters_.bytes_converted += st.bytes_in;
    return Status::Ok();
  }

  Status do_read(const Placement& src, const Region& region, const HostView& dst) override {
    TS_ASSIGN_OR_RETURN(BoInfo b, bo(src));
    TS_RETURN_IF_ERROR(transport_->prep_bo(b.handle));
    convert::Stats st;
    Status s = convert::read_region(src.format, b.cpu + src.offset, region, dst.format, dst.data, &st);
    TS_RETURN_IF_ERROR(transport_->fini_bo(b.handle));
    TS_RETURN_IF_ERROR(s);
    if (!st.identity) counters_.bytes_converted += st.bytes_in;
    return Status::Ok();
  }

  Result<std::unique_ptr<Program>> do_compile(const Segment& seg) override {
    for (int i : seg.nodes)
      for (TensorId id : seg.graph->nodes()[i].inputs) {
        auto f = seg.formats.find(id);
        const Tensor& t = seg.graph->tensor(id);
        const bool flat = f != seg.formats.end() && f->second.layout == Layout::row_major &&
                          f->second.encoding == Encoding::i8 && is_flat(*seg.graph, id);
        if (!t.data && f != seg.formats.end() && f->second.layout != Layout::nc1hwc2 && !flat)
          return error(StatusCode::unsupported, "[", op_name(seg.graph->nodes()[i].op), "] input '", t.name, "' is in ",
                       f->second.to_string(), "; the NPU reads NC1HWC2 feature maps and flat 8-bit tensors");
        const bool i8 = weights_ == WeightPolicy::int8;
        if (!t.data && f != seg.formats.end() && is_float_matmul(*seg.graph, seg.graph->nodes()[i]) &&
            (f->second.encoding != (i8 ? Encoding::f32 : Encoding::f16) || f->second.c2 != (i8 ? kFp32OutC2 : kFp16C2)))
          return error(StatusCode::unsupported, "[fully_connected] input '", t.name, "' is in ", f->second.to_string(),
                       i8 ? "; the int8 matmul's host step reads f32 NC1HWC2 with C2 = 4"
                          : "; the NPU's fp16 matmul reads fp16 NC1HWC2 with C2 = 8");
      }
    TS_ASSIGN_OR_RETURN(auto prog,
                        compile_segment(seg, transport_.get(), policy_, rounding_, cores_, &weight_cache_, weights_, fuse_));
    prog->device_lock = &device_mutex();  // its destructor frees BOs and cache entries
    // One scheduler entity per session (its programs share the session's graph): a session's
    // segments run in order, while sessions sharing this device can use other cores. A
    // program split across cores submits its other lanes on further entities of the session.
    auto [it, fresh] = entity_of_graph_.try_emplace(seg.graph, std::vector<int>{0});
    if (fresh && entity_of_graph_.size() > 1) it->second[0] = transport_->open_entity();
    while (static_cast<int>(it->second.size()) < prog->lanes) it->second.push_back(transport_->open_entity());
    prog->entity = it->second[0];
    prog->lane_entities.assign(it->second.begin(), it->second.begin() + prog->lanes);
    return std::unique_ptr<Program>(std::move(prog));
  }

  Status do_execute(Program& pr, const Bindings& b) override {
    auto& p = static_cast<RknpuProgram&>(pr);
    std::map<TensorId, BoInfo> bo_of;
    for (const auto& [id, pl] : b.placements) {
      if (p.graph->tensor(id).data) continue;  // constants: the program holds packed copies
      TS_ASSIGN_OR_RETURN(BoInfo bi, bo(pl));
      // A view (Segment::views): its bytes start `offset` into the buffer object.
      if (pl.offset < 0 || pl.offset >= bi.size)
        return error(StatusCode::internal, "tensor '", p.graph->tensor(id).name, "' at offset ", pl.offset,
                     " of a buffer object of ", bi.size, " bytes");
      bi.dma_address += static_cast<uint32_t>(pl.offset);
      bi.cpu += pl.offset;
      bi.size -= pl.offset;
      bo_of[id] = bi;
    }
    TS_RETURN_IF_ERROR(bind_program(p, transport_.get(), bo_of));
    auto t0 = std::chrono::steady_clock::now();
    // Stage by stage: the host steps of a stage's matmuls (int8 quantization of A, partial
    // sums) before and after its jobs; one stage unless a stage's output feeds another op
    // with host steps. Timings merge in p.jobs order.
    SubmitTiming st;
    st.core_busy.assign(kCores, 0.0);
    const int stages = stage_count(p);
    for (int stage = 0; stage < std::max(stages, 1); ++stage) {
      TS_RETURN_IF_ERROR(host_before(p, stage, transport_.get(), bo_of));
      std::vector<size_t> idx;
      for (size_t j = 0; j < p.jobs.size(); ++j)
        if (p.jobs[j].stage == stage) idx.push_back(j);
      SubmitTiming part;
      if (p.lanes > 1) {
        // Lanes submitted at once; their timings merged in job order (one job per lane).
        std::vector<std::vector<JobDesc>> lanes(static_cast<size_t>(p.lanes));
        for (size_t j : idx) lanes[p.jobs[j].lane].push_back(p.job_descs[j]);
        std::vector<int> entities;
        std::vector<std::vector<JobDesc>> used;
        std::map<int, size_t> submit_of_lane;
        for (int l = 0; l < p.lanes; ++l)
          if (!lanes[l].empty()) {
            submit_of_lane[l] = entities.size();
            entities.push_back(p.lane_entities[l]), used.push_back(std::move(lanes[l]));
          }
        TS_ASSIGN_OR_RETURN(std::vector<SubmitTiming> sts, transport_->submit_lanes(entities, used));
        part.start = sts.empty() ? 0 : sts[0].start;
        part.core_busy.assign(kCores, 0.0);
        for (const SubmitTiming& lt : sts) {
          part.end = std::max(part.end, lt.end);
          part.seconds = std::max(part.seconds, lt.seconds);
          for (size_t c = 0; c < lt.core_busy.size() && c < part.core_busy.size(); ++c) part.core_busy[c] += lt.core_busy[c];
        }
        // Jobs in p.jobs order: lane l's k-th job is the k-th job of its submit.
        std::vector<size_t> next(sts.size(), 0);
        for (size_t j : idx) {
          const size_t si = submit_of_lane[p.jobs[j].lane];
          if (si < sts.size() && next[si] < sts[si].jobs.size()) part.jobs.push_back(sts[si].jobs[next[si]++]);
        }
      } else if (!idx.empty()) {
        std::vector<JobDesc> descs;
        for (size_t j : idx) descs.push_back(p.job_descs[j]);
        TS_ASSIGN_OR_RETURN(part, transport_->submit(p.entity, descs));
      }
      TS_RETURN_IF_ERROR(host_after(p, stage, transport_.get(), bo_of));
      if (stage == 0) st.start = part.start;
      st.end = std::max(st.end, part.end);
      st.seconds += part.seconds;
      for (size_t c = 0; c < part.core_busy.size() && c < st.core_busy.size(); ++c) st.core_busy[c] += part.core_busy[c];
      for (JobTiming& jt : part.jobs) st.jobs.push_back(std::move(jt));
    }
    double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dump_enabled()) TS_RETURN_IF_ERROR(dump_program(p, bo_of, transport_.get(), counters_.executes));
    // Per node: the modelled time of its op's tasks, with each job's overhead charged to
    // the first op of the job. A fused add reports no time of its own.
    std::map<int, double> node_time;
    size_t task = 0;
    for (size_t j = 0; j < p.jobs.size(); ++j) {
      for (size_t k = 0; k < p.jobs[j].tasks.size(); ++k, ++task) {
        const CompiledOp& c = p.ops[p.jobs[j].tasks[k].first];
        double s = transport_->modelled() && j < st.jobs.size() && k < st.jobs[j].tasks.size() ? st.jobs[j].tasks[k].seconds : 0;
        if (k == 0) s += transport_->modelled() ? kJobOverheadSeconds : 0;
        if (c.parts.empty()) {
          node_time[c.op.nodes[0]] += s;
        } else {
          // A fused matmul: its nodes share its time by their output channels.
          for (const CompiledOp::Part& part : c.parts) node_time[part.node] += s * double(part.n) / double(c.op.out_c);
        }
      }
    }
    for (int i : p.nodes) {
      NodeTime nt;
      nt.node = i;
      nt.host_seconds = host / std::max<size_t>(p.nodes.size(), 1);
      nt.modelled_seconds = transport_->modelled() ? node_time[i] : -1;
      counters_.last_nodes.push_back(nt);
    }
    if (transport_->modelled()) {
      counters_.modelled_seconds += st.seconds;
      counters_.modelled_core_seconds.resize(st.core_busy.size());
      for (size_t c = 0; c < st.core_busy.size(); ++c) counters_.modelled_core_seconds[c] += st.core_busy[c];
      counters_.modelled_clock_seconds = std::max(counters_.modelled_clock_seconds, st.end);
      for (const JobTiming& jt : st.jobs)
        for (const TaskTiming& tt : jt.tasks) counters_.modelled_dram_bytes += tt.dram_bytes;
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<Transport> transport_;
  SchedulePolicy policy_;
  Rounding rounding_;
  std::map<uint32_t, BoInfo> bos_;
  int cores_;
  WeightPolicy weights_;
  bool in_place_;  // concatenation inputs and channel slices as views (do_views)
  bool fuse_;      // sibling matmuls (q/k/v, gate/up) as one matmul (program.cpp fuse_sibling_matmuls)
  WeightCache weight_cache_;  // matmul weights packed once for all programs (declared after transport_)
  std::map<const Graph*, std::vector<int>> entity_of_graph_;  // session (by its plan's graph) -> its entities (lanes)
};

}  // namespace
}  // namespace rknpu

DeviceInfo rknpu_device_info() {
  DeviceInfo info;
  info.name = "rknpu";
  info.summary = "Rockchip RK3588 NPU: register-stream compiler, device model, rocket transport";
  info.options = {
      DeviceOption::choice("schedule", {"tessera", "mesa"}, "task order: Tessera's, or as Mesa's Teflon emits them"),
      DeviceOption::choice("rounding", {"exact", "fast"}, "requantization: TFLite-exact or the DPU's one-step form"),
      DeviceOption::choice("cores", {"3", "1"}, "NPU cores a matmul segment's N is split over"),
      DeviceOption::choice("weights", {"fp16", "int8"}, "LLM matmul weights on the NPU"),
      DeviceOption::choice("in_place", {"on", "off"},
                           "concatenation inputs and channel slices kept in place (on) or copied by DPU tasks (off)"),
      DeviceOption::choice("fuse", {"on", "off"},
                           "consecutive matmuls reading the same input (q/k/v, gate/up) run as one matmul (on) or each alone (off)"),
      DeviceOption::choice("transport", {"model", "rocket"}, "the device model, or the board's rocket driver"),
      DeviceOption::text("node", "", "rocket device node (default: the first /dev/accel/accel*)"),
      threads_option(),
  };
  info.create = [](const std::string&, const DeviceOptions& opts) -> Result<std::unique_ptr<Device>> {
    // Keys and values already checked against info.options by create_device.
    auto value = [&](const char* key, const char* fallback) {
      auto it = opts.find(key);
      return it != opts.end() ? it->second : std::string(fallback);
    };
    const auto policy = value("schedule", "tessera") == "mesa" ? rknpu::SchedulePolicy::mesa : rknpu::SchedulePolicy::tessera;
    const auto rounding = value("rounding", "exact") == "fast" ? rknpu::Rounding::fast : rknpu::Rounding::exact;
    const int cores = value("cores", "3") == "1" ? 1 : rknpu::kCores;
    const auto weights = value("weights", "fp16") == "int8" ? rknpu::WeightPolicy::int8 : rknpu::WeightPolicy::fp16;
    std::unique_ptr<rknpu::Transport> t;
    if (value("transport", "model") == "rocket") {
      TS_ASSIGN_OR_RETURN(t, rknpu::open_rocket_transport(value("node", "")));
    } else {
      t = rknpu::make_model_transport(rknpu::kAddressSpace);
    }
    const bool in_place = value("in_place", "on") == "on";
    const bool fuse = value("fuse", "on") == "on";
    return std::unique_ptr<Device>(new rknpu::RknpuDevice(std::move(t), policy, rounding, cores, weights, in_place, fuse));
  };
  return info;
}

}  // namespace tessera

