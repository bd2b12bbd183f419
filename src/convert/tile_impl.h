// The tilize/untilize loops, compiled twice: once portable (tile.cpp) and once for AVX2
// (tile_avx2.cpp), where the fixed-size face-row copies become 256-bit moves.
// Included inside a namespace; needs <cstring> and tile.h.

// Walks the source rows in order (streaming reads); each row feeds two face rows of every
// tile in its band. E = element size in bytes.
template <int E>
void tilize_impl(const uint8_t* src, uint8_t* dst, const TileGeom& g) {
  constexpr int64_t kRun = kFaceDim * E;  // bytes of one face row
  const int64_t tile_bytes = kTileElems * E;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      uint8_t* band = dst + g.tile_index(s, th, 0) * tile_bytes;
      for (int64_t r = 0; r < kTileDim; ++r) {
        int64_t h = th * kTileDim + r;
        const uint8_t* row = h < g.h ? src + (s * g.h + h) * g.w * E : nullptr;
        uint8_t* out = band + tile_offset(r, 0) * E;
        for (int64_t tw = 0; tw < g.tiles_w; ++tw, out += tile_bytes) {
          for (int half = 0; half < 2; ++half) {
            uint8_t* o = out + half * kFaceElems * E;
            int64_t w0 = tw * kTileDim + half * kFaceDim;
            int64_t n = row ? g.w - w0 : 0;
            if (n >= kFaceDim) {
              std::memcpy(o, row + w0 * E, kRun);
            } else {
              n = n < 0 ? 0 : n;
              if (n) std::memcpy(o, row + w0 * E, n * E);
              std::memset(o + n * E, 0, kRun - n * E);
            }
          }
        }
      }
    }
  }
}

template <int E>
void untilize_impl(const uint8_t* src, uint8_t* dst, const TileGeom& g) {
  constexpr int64_t kRun = kFaceDim * E;
  const int64_t tile_bytes = kTileElems * E;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const uint8_t* band = src + g.tile_index(s, th, 0) * tile_bytes;
      for (int64_t r = 0; r < kTileDim; ++r) {
        int64_t h = th * kTileDim + r;
        if (h >= g.h) break;
        uint8_t* row = dst + (s * g.h + h) * g.w * E;
        const uint8_t* in = band + tile_offset(r, 0) * E;
        for (int64_t tw = 0; tw < g.tiles_w; ++tw, in += tile_bytes) {
          for (int half = 0; half < 2; ++half) {
            int64_t w0 = tw * kTileDim + half * kFaceDim;
            int64_t n = g.w - w0;
            if (n >= kFaceDim) std::memcpy(row + w0 * E, in + half * kFaceElems * E, kRun);
            else if (n > 0) std::memcpy(row + w0 * E, in + half * kFaceElems * E, n * E);
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
