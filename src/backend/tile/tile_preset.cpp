#include "backend/tile/tile_preset.h"

#include <sstream>

namespace tessera::tile {

namespace {
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kKiB = 1024;

// tile-device.md "Memory": 12 DRAM banks of 1 GiB, DRAM alignment 32 B, L1 alignment 16 B,
// about 1.43 MiB of L1 per core (1464 KiB), 8x10 grid with 72 usable cores on the n150.
// "Arithmetic and speed": 72 cores at 1 GHz, 288 GB/s.
// PCIe: the n150 is a PCIe 4.0 x16 card (Tenstorrent's product page): 16 GT/s x 16 lanes
// with 128b/130b coding = 31.5 GB/s per direction.
TilePreset wormhole_n150() {
  TilePreset p;
  p.name = "wormhole_n150";
  p.summary = "Tenstorrent Wormhole n150 card (model): 72 Tensix cores, 12 GiB in 12 DRAM banks";
  p.dram_banks = 12;
  p.bank_bytes = 1 * kGiB;
  p.dram_alignment = 32;
  p.l1_alignment = 16;
  p.l1_bytes = 1464 * kKiB;
  p.grid_x = 8;
  p.grid_y = 10;
  p.cores = 72;
  p.clock_hz = 1.0e9;
  p.dram_bytes_per_s = 288e9;
  p.pcie_bytes_per_s = 31.5e9;
  return p;
}

// tile-device.md: Blackhole has 8 banks, DRAM alignment 64 B, 140 cores; the p150a has
// 32 GB at 512 GB/s (8 banks of 4 GiB). The notes give no Blackhole L1 size or clock:
// L1 is 1.5 MiB per core and the clock 1.35 GHz per Tenstorrent's Blackhole
// specification; the grid is 14x10 Tensix columns x rows (140 cores, all usable on p150a).
// PCIe: the p150a is a PCIe 5.0 x16 card: 32 GT/s x 16 lanes = 63 GB/s per direction.
TilePreset blackhole_p150a() {
  TilePreset p;
  p.name = "blackhole_p150a";
  p.summary = "Tenstorrent Blackhole p150a card (model): 140 Tensix cores, 32 GiB in 8 DRAM banks";
  p.dram_banks = 8;
  p.bank_bytes = 4 * kGiB;
  p.dram_alignment = 64;
  p.l1_alignment = 16;
  p.l1_bytes = 1536 * kKiB;
  p.grid_x = 14;
  p.grid_y = 10;
  p.cores = 140;
  p.clock_hz = 1.35e9;
  p.dram_bytes_per_s = 512e9;
  p.pcie_bytes_per_s = 63e9;
  return p;
}
}  // namespace

const std::vector<TilePreset>& tile_presets() {
  static const std::vector<TilePreset> kPresets = {wormhole_n150(), blackhole_p150a()};
  return kPresets;
}

Result<TilePreset> find_tile_preset(const std::string& name) {
  std::ostringstream known;
  for (const TilePreset& p : tile_presets()) {
    if (p.name == name) return p;
    known << (known.tellp() > 0 ? ", " : "") << p.name;
  }
  return error(StatusCode::not_found, "tile: no preset '", name, "' (presets: ", known.str(), ")");
}

}  // namespace tessera::tile
