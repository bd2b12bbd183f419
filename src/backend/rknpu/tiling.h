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
  // Matmul K split: this task sums K values [k0, k0 + kn) into partial result kseg.
  int64_t k0 = 0, kn = 0;
  int kseg = 0;
};

struct Tiling {
  int data_banks = 0;
  int weight_banks = 0;
  bool weights_resident = false;  // one weight fetch per job (WEIGHT_REUSE after the first task)
  int64_t data_row_bytes = 0;     // CBUF bytes of one input row
  // Matmul: K in k_segments segments of k_chunk values (the last one shorter), each a
  // separate partial result summed on the host (docs/rknpu.md "K split"); 1: no split.
  int k_segments = 1;
  int64_t k_chunk = 0;
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

// The matmul's tiling (rows of A x kernel groups of N, and K segments where one kernel
// group and a row do not fit the CBUF), used by plan_tiling for NpuOpType::matmul.
Result<Tiling> plan_matmul_tiling(const NpuOp& op);

// Bytes of one input row in CBUF: width x channels padded to C2 (x2 in int16).
int64_t cbuf_row_bytes(const NpuOp& op);

// The largest K one matmul task holds (a multiple of 32): one kernel's K values in one bank
// and one kernel group beside one data bank (11264 for fp16 and int8 alike).
int64_t matmul_max_task_k(bool int8);
// Byte offset of K segment `seg` in an op's packed weights: each segment is a complete
// rk_matmul_weight block set of [N, its K] (Rockchip's K segments, rknpu-matmul.md [S3]).
int64_t matmul_segment_weight_offset(const NpuOp& op, const Tiling& t, int seg);

}  // namespace tessera::rknpu
