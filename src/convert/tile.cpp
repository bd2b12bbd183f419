// tile32 relayout: geometry, the portable loops and the dispatcher (tile-device.md).
#include "convert/tile.h"

#include <algorithm>
#include <cstring>

#include "convert/simd.h"

namespace tessera::convert {

TileGeom tile_geom(const Shape& s) {
  TileGeom g;
  g.w = s.empty() ? 1 : s.back();
  g.h = s.size() < 2 ? 1 : s[s.size() - 2];
  g.outer = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) g.outer *= s[i];
  g.tiles_h = (g.h + kTileDim - 1) / kTileDim;
  g.tiles_w = (g.w + kTileDim - 1) / kTileDim;
  return g;
}

namespace ref {
#include "convert/tile_impl.h"
}  // namespace ref

namespace ref {
void tilize(const void* src, void* dst, const TileGeom& g, int esize) { tilize_any(src, dst, g, esize); }
void untilize(const void* src, void* dst, const TileGeom& g, int esize) { untilize_any(src, dst, g, esize); }
}  // namespace ref

void tilize(const void* src, void* dst, const TileGeom& g, int esize) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::tilize(src, dst, g, esize);
#endif
  ref::tilize(src, dst, g, esize);
}
void untilize(const void* src, void* dst, const TileGeom& g, int esize) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::untilize(src, dst, g, esize);
#endif
  ref::untilize(src, dst, g, esize);
}

void tile_to_block(const void* tile, void* block, int esize) {
  auto t = static_cast<const uint8_t*>(tile);
  auto b = static_cast<uint8_t*>(block);
  for (int64_t r = 0; r < kTileDim; ++r)
    for (int half = 0; half < 2; ++half)
      std::memcpy(b + (r * kTileDim + half * kFaceDim) * esize, t + tile_offset(r, half * kFaceDim) * esize,
                  kFaceDim * esize);
}

void block_to_tile(const void* block, void* tile, int esize) {
  auto b = static_cast<const uint8_t*>(block);
  auto t = static_cast<uint8_t*>(tile);
  for (int64_t r = 0; r < kTileDim; ++r)
    for (int half = 0; half < 2; ++half)
      std::memcpy(t + tile_offset(r, half * kFaceDim) * esize, b + (r * kTileDim + half * kFaceDim) * esize,
                  kFaceDim * esize);
}

}  // namespace tessera::convert
