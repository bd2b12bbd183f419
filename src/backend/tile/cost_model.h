// The tile device's cost model: modelled device time for a node and for transfers.
//
// node time = kernel overhead + max(matrix-engine time, vector-engine time, DRAM time)
//   matrix-engine time = flops / (4096 flop/cycle/core x cores) x fidelity passes / clock
//   vector-engine time = tiles x cycles per tile / cores / clock
//   DRAM time          = bytes read and written in the tensors' formats / DRAM bandwidth
// transfer time = bytes moved in the device's format / PCIe rate.
// The model assumes the work spreads evenly over the core grid and overlaps with DRAM
// traffic (a roofline); real kernels reach a fraction of it. Every figure it produces is
// labelled "modelled", never presented as measured.
#pragma once

#include "backend/tile/kernel.h"
#include "backend/tile/tile_preset.h"

namespace tessera::tile {

struct NodeCost {
  double matrix_seconds = 0;
  double vector_seconds = 0;
  double dram_seconds = 0;
  double total_seconds = 0;
};

NodeCost node_cost(const TilePreset& p, Fidelity fidelity, const KernelWork& work, double dram_bytes);
double transfer_seconds(const TilePreset& p, double bytes);

}  // namespace tessera::tile
