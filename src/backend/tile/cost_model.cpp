#include "backend/tile/cost_model.h"

#include <algorithm>

namespace tessera::tile {

namespace {
// tile-device.md "Arithmetic and speed": per core per cycle 8x16 @ 16x16 = 4096 flop in LoFi.
constexpr double kMatrixFlopsPerCycle = 4096;
// Not in tile-device.md (an estimate): the vector engine (SFPU) works on 32 lanes, so one
// 32x32 tile takes 1024 / 32 = 32 lane-cycles per instruction; a typical elementwise
// kernel issues about 4 instructions per element (load, op, store, loop), so 128 cycles.
constexpr double kVectorCyclesPerTile = 128;
// Not in tile-device.md (an estimate): the fixed cost of dispatching one kernel to the
// grid (command queue, runtime arguments, semaphores), of the order of microseconds
// in tt-metal's published program-dispatch measurements.
constexpr double kKernelOverheadSeconds = 5e-6;
}  // namespace

NodeCost node_cost(const TilePreset& p, Fidelity fidelity, const KernelWork& work, double dram_bytes) {
  NodeCost c;
  double cores = std::max(p.cores, 1);
  c.matrix_seconds = work.matrix_flops / (kMatrixFlopsPerCycle * cores) * fidelity_passes(fidelity) / p.clock_hz;
  c.vector_seconds = work.vector_tiles * kVectorCyclesPerTile / cores / p.clock_hz;
  c.dram_seconds = dram_bytes / p.dram_bytes_per_s;
  c.total_seconds = kKernelOverheadSeconds + std::max({c.matrix_seconds, c.vector_seconds, c.dram_seconds});
  return c;
}

double transfer_seconds(const TilePreset& p, double bytes) { return bytes / p.pcie_bytes_per_s; }

}  // namespace tessera::tile
