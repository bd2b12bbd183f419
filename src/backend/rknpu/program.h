// The rknpu program: a segment's NPU operations, their tiling, the job plan, the resident
// weights and tables, and the register command buffers built for the bound addresses.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "backend/rknpu/lower.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "tessera/backend/device.h"

namespace tessera::rknpu {

struct CompiledOp {
  NpuOp op;
  Tiling tiling;
  BoInfo weights;  // packed weights (conv, depthwise, matmul), resident for the program's life
  BoInfo bs;       // bias/scale table
  BoInfo ew_const;  // a constant EW operand (NpuOp::ew_constant_data), resident for the program's life
  // matmul: its weights' entry in the WeightCache (the constants' bytes, one per member of
  // a fused matmul); empty: not cached.
  std::vector<const uint8_t*> weight_key;
  // A fused matmul (compile_segment, fuse_sibling_matmuls): the nodes reading the same input
  // whose weights it stacks along N, each writing its own output from the fused result in
  // the host step after the job. Empty for every other op.
  struct Part {
    TensorId output = kNoTensor;
    int64_t n0 = 0, n = 0;  // its output channels in the fused N
    int node = -1;
  };
  std::vector<Part> parts;
  // Host steps around a matmul (docs/rknpu.md "The int8 weight policy", "K split"):
  //  - int8: before the NPU runs, the host quantizes A (f32 NC1HWC2, C2 = 4) per row into
  //    `a8` (int8 NC1HWC2, C2 = 16), keeping the row scales; afterwards it converts the
  //    int32 sums in `partial` to f32 into C (row scale x channel scale, plus the bias);
  //  - K split (k_segments > 1): the NPU writes one partial result per K segment into
  //    `partial`, which the host sums into C.
  bool host_steps = false;
  BoInfo a8;       // int8 A (int8 matmuls)
  BoInfo partial;  // int32 / fp32 partial results, k_segments C-sized cubes
  std::vector<float> row_scale;
  int stage = 0;   // ops of one stage run between the same host steps
};

// Packed matmul weights shared by the programs of one device (a decoder's prompt and decode
// graphs read the same weights), keyed by the constant's bytes: converted and uploaded
// once, freed with the last program that uses them.
struct WeightCache {
  struct Entry {
    BoInfo bo;
    int refs = 0;
    std::vector<float> wscale;  // int8 weights: the per-output-channel scales
  };
  std::map<std::vector<const uint8_t*>, Entry> entries;
};

// Tasks of one job, in order: (op index, tile index).
struct JobPlan {
  std::vector<std::pair<int, int>> tasks;
  int lane = 0;  // the core lane (entity) it is submitted on; see RknpuProgram::lanes
  int stage = 0;  // the stage of its ops (CompiledOp::stage)
};

class RknpuProgram : public Program {
 public:
  RknpuProgram(Transport* t, WeightCache* cache = nullptr) : transport_(t), cache_(cache) {}
  ~RknpuProgram() override;
  std::string describe() const override;
  int64_t device_bytes() const override;  // the packed weight and table BOs

  const Graph* graph = nullptr;
  std::vector<int> nodes;          // the segment's nodes
  std::vector<CompiledOp> ops;
  std::vector<JobPlan> jobs;
  SchedulePolicy policy = SchedulePolicy::tessera;
  std::vector<std::string> notes;  // fusion decisions, for dumps
  int entity = 0;                  // the transport's scheduler entity its jobs are submitted to
  // Lanes: a segment of matmuls splits each one's N across `lanes` cores, lane i's jobs
  // submitted on lane_entities[i] at once (lane 0 on `entity`), see compile_segment.
  int lanes = 1;
  std::vector<int> lane_entities;

  // Built for one set of addresses (re-built when the bindings move).
  std::vector<uint32_t> bound_signature;
  BoInfo regcmd;                           // every task's command buffer, 64-byte aligned each
  std::vector<JobDesc> job_descs;
  std::vector<std::vector<uint64_t>> task_entries;  // per task in job order, for dumps

 private:
  Transport* transport_;
  WeightCache* cache_;

 public:
  // The device's lock, taken by the destructor: a session may be destroyed on one thread
  // while another runs a session of the same device (the transport and the weight cache
  // are the device's). Set by the device when it hands the program out.
  std::recursive_mutex* device_lock = nullptr;
};

// How closely the NPU follows TFLite's rounding. `exact`: per-channel convolutions without
// an activation run in two passes (lower.h split_by_sign: TFLite's rounding, twice the
// MACs), and adds stay separate element-wise tasks instead of fusing into their conv.
// `fast`: one pass rounding negatives at the layer's common shift, and adds fused into the
// producing conv's EW stage (each within one step, a little less often exact).
enum class Rounding : uint8_t { exact, fast };

// Compiles a segment for `policy`; weights and tables are uploaded through `t`.
// `cores`: a segment made only of matmuls splits each one's N across this many cores.
Result<std::unique_ptr<RknpuProgram>> compile_segment(const Segment& seg, Transport* t, SchedulePolicy policy,
                                                      Rounding rounding = Rounding::exact, int cores = 1,
                                                      WeightCache* cache = nullptr,
                                                      WeightPolicy weights = WeightPolicy::fp16, bool fuse = true);

// The host steps of a stage's matmuls (CompiledOp::host_steps): `before` quantizes A into
// a8, `after` turns the partial results into C. `bo_of` as for bind_program.
Status host_before(RknpuProgram& p, int stage, Transport* t, const std::map<TensorId, BoInfo>& bo_of);
Status host_after(RknpuProgram& p, int stage, Transport* t, const std::map<TensorId, BoInfo>& bo_of);
// The number of stages (1 + the largest CompiledOp::stage).
int stage_count(const RknpuProgram& p);

// Builds (or reuses) the command buffers for the BOs in `bo_of` (tensor -> BO) and returns
// the jobs to submit.
Status bind_program(RknpuProgram& p, Transport* t, const std::map<TensorId, BoInfo>& bo_of);

}  // namespace tessera::rknpu
