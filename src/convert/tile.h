// The tile32 layout (tile-device.md "Tile layout"): a tensor [..., H, W] is viewed as
// [outer, H, W]; each HxW slice is padded with zeros to [Hp, Wp] (multiples of 32) and cut
// into 32x32 tiles stored row-major over the tile grid, slice after slice. A tile is four
// 16x16 row-major faces: face 0 = rows 0-15/cols 0-15, 1 = rows 0-15/cols 16-31,
// 2 = rows 16-31/cols 0-15, 3 = rows 16-31/cols 16-31.
#pragma once

#include <cstdint>

#include "tessera/format.h"

namespace tessera::convert {

constexpr int64_t kTileElems = kTileDim * kTileDim;  // 1024 values per tile
constexpr int64_t kFaceElems = kFaceDim * kFaceDim;  // 256 values per face
constexpr int64_t kFaceRows = 4 * kFaceDim;          // 64 face rows per tile

// The [outer, H, W] view of a shape and its tile grid.
struct TileGeom {
  int64_t outer = 1, h = 1, w = 1;     // logical slice count and slice size
  int64_t tiles_h = 1, tiles_w = 1;    // tiles per slice along H and W (ceil(/32))
  int64_t tiles() const { return outer * tiles_h * tiles_w; }
  int64_t tile_index(int64_t slice, int64_t th, int64_t tw) const { return (slice * tiles_h + th) * tiles_w + tw; }
};
TileGeom tile_geom(const Shape& shape);

// Element offset of (r, c), 0 <= r, c < 32, inside one tile.
constexpr int64_t tile_offset(int64_t r, int64_t c) {
  return ((r / kFaceDim) * 2 + c / kFaceDim) * kFaceElems + (r % kFaceDim) * kFaceDim + c % kFaceDim;
}
// Face row k (0..63) of a tile holds tile rows/cols: face k/16, row k%16.
constexpr int64_t face_row_of(int64_t r, int64_t c) { return ((r / kFaceDim) * 2 + c / kFaceDim) * kFaceDim + r % kFaceDim; }

// Row-major [outer, H, W] of `esize`-byte elements (1, 2, 4 or 8) <-> tile32 bytes.
// tilize writes every padding element as zero bytes.
void tilize(const void* src, void* dst, const TileGeom& g, int esize);
void untilize(const void* src, void* dst, const TileGeom& g, int esize);

// One tile <-> a dense row-major 32x32 block (for region read-modify-write).
void tile_to_block(const void* tile, void* block, int esize);
void block_to_tile(const void* block, void* tile, int esize);

namespace ref {
void tilize(const void* src, void* dst, const TileGeom& g, int esize);
void untilize(const void* src, void* dst, const TileGeom& g, int esize);
}  // namespace ref
#if defined(__x86_64__)
namespace avx2 {
void tilize(const void* src, void* dst, const TileGeom& g, int esize);
void untilize(const void* src, void* dst, const TileGeom& g, int esize);
}  // namespace avx2
#endif

}  // namespace tessera::convert
