// Presets of the tile device: the numbers of one card, from ../shared/hardware/tile-device.md
// unless a comment says otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::tile {

struct TilePreset {
  std::string name;            // "wormhole_n150"
  std::string summary;         // one line for `tessera devices`
  int dram_banks = 0;          // DRAM banks pages are interleaved over
  int64_t bank_bytes = 0;      // capacity of one bank
  int64_t dram_alignment = 0;  // each page is padded to this many bytes in a bank
  int64_t l1_alignment = 0;    // alignment of buffers in a core's L1
  int64_t l1_bytes = 0;        // L1 (SRAM) per Tensix core
  int grid_x = 0, grid_y = 0;  // Tensix grid
  int cores = 0;               // usable Tensix cores
  double clock_hz = 0;         // core clock
  double dram_bytes_per_s = 0; // DRAM bandwidth of the card
  double pcie_bytes_per_s = 0; // host <-> card link

  int64_t capacity_bytes() const { return bank_bytes * dram_banks; }
};

// Every preset, the default first.
const std::vector<TilePreset>& tile_presets();
// The preset called `name`, or a not_found error that lists the valid ones.
Result<TilePreset> find_tile_preset(const std::string& name);

}  // namespace tessera::tile
