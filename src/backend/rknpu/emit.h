// Emission: one task of an NPU operation -> its register command buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/rknpu/lower.h"
#include "backend/rknpu/tiling.h"

namespace tessera::rknpu {

// 32-bit device addresses of the buffers one operation touches.
struct OpAddresses {
  uint32_t input = 0;    // feature map, int8 NC1HWC2 [C1][H][W][16]
  uint32_t output = 0;   // feature map, int8 NC1HWC2
  uint32_t ew = 0;       // the EW operand (a tensor's or a packed constant's), int8 NC1HWC2 (0: none)
  uint32_t weights = 0;  // packed weights (conv, depthwise)
  uint32_t bs = 0;       // bias/scale table, kBsEntryBytes per output channel
};

// The register writes of task `tile` of `op` (without the PC chaining entries).
// `weight_reuse`: the weights are already in CBUF from the previous task of this job.
Result<std::vector<uint64_t>> emit_task(const NpuOp& op, const Tiling& tiling, const TaskTile& tile, const OpAddresses& a,
                                        bool weight_reuse);

// Appends the PC entries that end a task: the next task's command buffer address and size
// (0 for the last task of a job) and the operation enable; then pads with zero entries to
// the 64-byte alignment.
Status append_chain(std::vector<uint64_t>& entries, uint32_t next_addr, uint32_t next_count);

// Entries a task has after append_chain (its body plus chain and padding).
size_t chained_size(size_t body);

}  // namespace tessera::rknpu
