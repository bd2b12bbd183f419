// The tilize/untilize loops, compiled twice: once portable (tile.cpp) and once for AVX2
// (tile_avx2.cpp), where the fixed-size face-row copies become 256-bit moves.
// Included inside a namespace; needs <algorithm>, <cstring> and tile.h.

// Within one band of 32 rows, tile after tile: the destination is written strictly in
// order and each source row contributes 32 contiguous elements (two face rows) per tile.
// (Row-major order over the band instead writes one face row into each of tiles_w tiles
// 4 KiB apart, which thrashes the L1 sets.) E = element size in bytes.
template <int E>
void tilize_impl(const uint8_t* src, uint8_t* dst, const TileGeom& g) {
  constexpr int64_t kRun = kFaceDim * E;  // bytes of one face row
  const int64_t tile_bytes = kTileElems * E;
  uint8_t* out = dst;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = std::min<int64_t>(kTileDim, g.h - th * kTileDim);
      const uint8_t* band = src + (s * g.h + th * kTileDim) * g.w * E;
      for (int64_t tw = 0; tw < g.tiles_w; ++tw, out += tile_bytes) {
        const int64_t w0 = tw * kTileDim;
        const int64_t n = std::min<int64_t>(kTileDim, g.w - w0);  // valid columns of this tile
        if (n == kTileDim && rows == kTileDim) {
          for (int64_t r = 0; r < kTileDim; ++r) {
            const uint8_t* row = band + (r * g.w + w0) * E;
            uint8_t* o = out + tile_offset(r, 0) * E;
            std::memcpy(o, row, kRun);
            std::memcpy(o + kFaceElems * E, row + kRun, kRun);
          }
          continue;
        }
        std::memset(out, 0, tile_bytes);
        for (int64_t r = 0; r < rows; ++r) {
          const uint8_t* row = band + (r * g.w + w0) * E;
          uint8_t* o = out + tile_offset(r, 0) * E;
          std::memcpy(o, row, std::min<int64_t>(n, kFaceDim) * E);
          if (n > kFaceDim) std::memcpy(o + kFaceElems * E, row + kRun, (n - kFaceDim) * E);
        }
      }
    }
  }
}

template <int E>
void untilize_impl(const uint8_t* src, uint8_t* dst, const TileGeom& g) {
  constexpr int64_t kRun = kFaceDim * E;
  const int64_t tile_bytes = kTileElems * E;
  const uint8_t* in = src;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = std::min<int64_t>(kTileDim, g.h - th * kTileDim);
      uint8_t* band = dst + (s * g.h + th * kTileDim) * g.w * E;
      for (int64_t tw = 0; tw < g.tiles_w; ++tw, in += tile_bytes) {
        const int64_t w0 = tw * kTileDim;
        const int64_t n = std::min<int64_t>(kTileDim, g.w - w0);
        for (int64_t r = 0; r < rows; ++r) {
          uint8_t* row = band + (r * g.w + w0) * E;
          const uint8_t* t = in + tile_offset(r, 0) * E;
          if (n == kTileDim) {
            std::memcpy(row, t, kRun);
            std::memcpy(row + kRun, t + kFaceElems * E, kRun);
          } else {
            std::memcpy(row, t, std::min<int64_t>(n, kFaceDim) * E);
            if (n > kFaceDim) std::memcpy(row + kRun, t + kFaceElems * E, (n - kFaceDim) * E);
          }
        }
      }
    }
  }
}

inline void tilize_any(const void* src, void* dst, const TileGeom& g, int esize) {
  auto s = static_cast<const uint8_t*>(src);
  auto d = static_cast<uint8_t*>(dst);
  switch (esize) {
    case 1: return tilize_impl<1>(s, d, g);
    case 2: return tilize_impl<2>(s, d, g);
    case 4: return tilize_impl<4>(s, d, g);
    default: return tilize_impl<8>(s, d, g);
  }
}

inline void untilize_any(const void* src, void* dst, const TileGeom& g, int esize) {
  auto s = static_cast<const uint8_t*>(src);
  auto d = static_cast<uint8_t*>(dst);
  switch (esize) {
    case 1: return untilize_impl<1>(s, d, g);
    case 2: return untilize_impl<2>(s, d, g);
    case 4: return untilize_impl<4>(s, d, g);
    default: return untilize_impl<8>(s, d, g);
  }
}
