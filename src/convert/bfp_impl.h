// The bfp tile loops, compiled twice (bfp.cpp portable, bfp_avx2.cpp for AVX2). The
// including file defines, in the same namespace before including:
//   template <int W> uint8_t pack_row(const float* v16, uint8_t* codes);
//   template <int W> void unpack_row(uint8_t e, const uint8_t* codes, float* v16);
//   template <int W> void pack_q8_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e);
//   template <int W> void pack_q4_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e);
// (a GGUF block's 32 values -> the two face rows they fill, exponents in e[0], e[1]).
// Needs tile.h, bfp.h and gguf_blocks.h.

// Packs every tile. pack32(s, h, tw, codes_left, codes_right, e) packs the 32 values of
// logical row h, tile column tw (zero padded past W) into its two face rows (cols 0-15 and
// 16-31 of the tile) and sets their exponents e[0], e[1]. Rows past H are zero.
template <int W, typename Pack32>
int64_t pack_tiles_impl(uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop, Pack32&& pack32) {
  constexpr int64_t kRowBytes = W == kBfp8MantBits ? 16 : 8;
  constexpr int64_t kTileBytes = kBfpExpBytes + kFaceRows * kRowBytes;
  int64_t n_bad = 0;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      for (int64_t r = 0; r < kTileDim; ++r) {
        const int64_t h = th * kTileDim + r;
        const int64_t k0 = face_row_of(r, 0), k1 = face_row_of(r, kFaceDim);
        for (int64_t tw = 0; tw < g.tiles_w; ++tw) {
          uint8_t* tile = dst + g.tile_index(s, th, tw) * kTileBytes;
          uint8_t* c0 = tile + kBfpExpBytes + k0 * kRowBytes;
          uint8_t* c1 = tile + kBfpExpBytes + k1 * kRowBytes;
          if (h >= g.h) {
            tile[k0] = tile[k1] = 0;
            std::memset(c0, 0, kRowBytes);
            std::memset(c1, 0, kRowBytes);
            continue;
          }
          uint8_t e[2];
          pack32(s, h, tw, c0, c1, e);
          tile[k0] = e[0];
          tile[k1] = e[1];
          if (e[0] == kBfpNonFiniteExp || e[1] == kBfpNonFiniteExp) [[unlikely]] {
            for (int half = 0; half < 2; ++half) {
              if (e[half] != kBfpNonFiniteExp) continue;
              if (n_bad++ == 0)
                *bad = {g.tile_index(s, th, tw), half ? k1 : k0, s, h, tw * kTileDim + half * kFaceDim};
            }
            if (stop) return n_bad;
          }
        }
      }
    }
  }
  return n_bad;
}

template <int W>
int64_t pack_f32_tiles_w(const float* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop) {
  return pack_tiles_impl<W>(dst, g, bad, stop, [&](int64_t s, int64_t h, int64_t tw, uint8_t* c0, uint8_t* c1,
                                                   uint8_t* e) {
    alignas(32) float buf[kTileDim];
    const float* v = src + (s * g.h + h) * g.w + tw * kTileDim;
    const int64_t n = g.w - tw * kTileDim;
    if (n < kTileDim) {
      std::memcpy(buf, v, n * sizeof(float));
      std::memset(buf + n, 0, (kTileDim - n) * sizeof(float));
      v = buf;
    }
    e[0] = pack_row<W>(v, c0);
    e[1] = pack_row<W>(v + kFaceDim, c1);
  });
}

// GGUF rows: W % 32 == 0, so tile column tw is exactly block tw of the row. The including
// file defines pack_q8_0_block<W> / pack_q4_0_block<W>(block, c0, c1, e).
template <int W>
int64_t pack_q8_0_tiles_w(const uint8_t* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop) {
  const int64_t blocks_per_row = g.w / kQBlock;
  return pack_tiles_impl<W>(dst, g, bad, stop, [&](int64_t s, int64_t h, int64_t tw, uint8_t* c0, uint8_t* c1,
                                                   uint8_t* e) {
    pack_q8_0_block<W>(src + ((s * g.h + h) * blocks_per_row + tw) * kQ8_0BlockBytes, c0, c1, e);
  });
}

template <int W>
int64_t pack_q4_0_tiles_w(const uint8_t* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop) {
  const int64_t blocks_per_row = g.w / kQBlock;
  return pack_tiles_impl<W>(dst, g, bad, stop, [&](int64_t s, int64_t h, int64_t tw, uint8_t* c0, uint8_t* c1,
                                                   uint8_t* e) {
    pack_q4_0_block<W>(src + ((s * g.h + h) * blocks_per_row + tw) * kQ4_0BlockBytes, c0, c1, e);
  });
}

// Tile after tile within each band of 32 rows (tiles are read in order; the band's output
// rows stay in cache), like untilize.
template <int W>
void unpack_tiles_w(const uint8_t* src, float* dst, const TileGeom& g) {
  constexpr int64_t kRowBytes = W == kBfp8MantBits ? 16 : 8;
  constexpr int64_t kTileBytes = kBfpExpBytes + kFaceRows * kRowBytes;
  alignas(32) float buf[kFaceDim];
  const uint8_t* tile = src;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = g.h - th * kTileDim < kTileDim ? g.h - th * kTileDim : kTileDim;
      float* band = dst + (s * g.h + th * kTileDim) * g.w;
      for (int64_t tw = 0; tw < g.tiles_w; ++tw, tile += kTileBytes) {
        for (int64_t r = 0; r < rows; ++r) {
          float* row = band + r * g.w;
          for (int half = 0; half < 2; ++half) {
            const int64_t k = face_row_of(r, half * kFaceDim);
            const int64_t w0 = tw * kTileDim + half * kFaceDim;
            const int64_t n = g.w - w0;
            if (n <= 0) break;
            float* out = n >= kFaceDim ? row + w0 : buf;
            unpack_row<W>(tile[k], tile + kBfpExpBytes + k * kRowBytes, out);
            if (n < kFaceDim) std::memcpy(row + w0, buf, n * sizeof(float));
          }
        }
      }
    }
  }
}

// The entry points of this namespace (ref or avx2), declared in bfp.h. This header is
// included by exactly one .cpp per namespace, so these are ordinary definitions.
uint8_t pack_face_row(const float* v, uint8_t* codes, int wbits) {
  return wbits == kBfp8MantBits ? pack_row<kBfp8MantBits>(v, codes) : pack_row<kBfp4MantBits>(v, codes);
}

void unpack_face_row(uint8_t e, const uint8_t* codes, float* v, int wbits) {
  wbits == kBfp8MantBits ? unpack_row<kBfp8MantBits>(e, codes, v) : unpack_row<kBfp4MantBits>(e, codes, v);
}

int64_t pack_f32_tiles(const float* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
  return wbits == kBfp8MantBits ? pack_f32_tiles_w<kBfp8MantBits>(src, dst, g, bad, stop)
                                : pack_f32_tiles_w<kBfp4MantBits>(src, dst, g, bad, stop);
}

int64_t pack_q8_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
  return wbits == kBfp8MantBits ? pack_q8_0_tiles_w<kBfp8MantBits>(src, dst, g, bad, stop)
                                : pack_q8_0_tiles_w<kBfp4MantBits>(src, dst, g, bad, stop);
}

int64_t pack_q4_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
  return wbits == kBfp8MantBits ? pack_q4_0_tiles_w<kBfp8MantBits>(src, dst, g, bad, stop)
                                : pack_q4_0_tiles_w<kBfp4MantBits>(src, dst, g, bad, stop);
}

void unpack_tiles(const uint8_t* src, float* dst, const TileGeom& g, int wbits) {
  wbits == kBfp8MantBits ? unpack_tiles_w<kBfp8MantBits>(src, dst, g) : unpack_tiles_w<kBfp4MantBits>(src, dst, g);
}
