// Pages of a tensor in a device format: how many, and which ones a region touches.
//
// A page is one 32x32 tile of a tile32 format (tiles of each [H, W] slice row-major over
// the tile grid, slices one after another) or one row (the innermost dim) of a row-major
// format (tile-device.md "Tile layout", "Memory").
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/format.h"
#include "tessera/backend/region.h"

namespace tessera::tile {

// Number of pages of `f` (byte_size / page_size); at least 1.
Result<int64_t> page_count(const Format& f);
// The pages (ascending) that hold any element of `region` of a tensor in format `f`.
// Only tile32 and row_major formats are paged this way.
Result<std::vector<int64_t>> touched_pages(const Format& f, const Region& region);

}  // namespace tessera::tile
