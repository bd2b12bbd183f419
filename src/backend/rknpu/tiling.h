// Tiling and scheduling: an NPU operation -> tasks (output-row bands x output-channel
// chunks) under the CBUF budget, and tasks -> jobs.
//
// CBUF (rknpu.md): 12 banks of 32 KiB shared by input data and weights. When an op's
// weights fit beside at least one data bank they stay resident for all its tasks (weight
// reuse); otherwise the CBUF is split 7 data + 5 weight banks (Mesa's choice) and the
// output channels are chunked so that each chunk's weights fit the weight banks. Each task
// takes as many output rows as its input rows (kh - 1 rows of overlap) fit the data banks.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/rknpu/lower.h"

namespace tessera::rknpu {

struct TaskTile {
  int64_t out_row0 = 0, out_rows = 0;  // output rows [out_row0, out_row0 + out_rows)
  int64_t in_row0 = 0, in_rows = 0;    // input rows read (clipped to the input), for the CNA
  int64_t pad_top = 0;                 // rows of top padding this tile sees
  int64_t oc0 = 0, ocn = 0;            // output channels [oc0, oc0 + ocn)
};

struct Tiling {
  int data_banks = 0;
  int weight_banks = 0;
  bool weights_resident = false;  // one weight fetch per job (WEIGHT_REUSE after the first task)
  int64_t data_row_bytes = 0;     // CBUF bytes of one input row
  std::vector<TaskTile> tiles;
};

// How ops become tasks and jobs.
enum class SchedulePolicy : uint8_t {
  mesa,     // Mesa's schedule: one job per op, no add fusion
  tessera,  // fused adds, one job per chain of dependent ops
};

// Tiles `op` for `policy`; an error (unsupported) names the CBUF limit it breaks.
Result<Tiling> plan_tiling(const NpuOp& op, SchedulePolicy policy);
// The same check supports() uses.
inline Result<Tiling> check_tiling(const NpuOp& op) { return plan_tiling(op, SchedulePolicy::tessera); }

// The matmul's tiling (rows of A x 16-kernel groups of N; K is never split), used by
// plan_tiling for NpuOpType::matmul.
Result<Tiling> plan_matmul_tiling(const NpuOp& op);

// Bytes of one input row in CBUF: width x channels padded to C2 (x2 in int16).
int64_t cbuf_row_bytes(const NpuOp& op);

}  // namespace tessera::rknpu
