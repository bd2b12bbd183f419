// Region writes and reads (a box of a tensor, e.g. rows [r0, r1) of a KV cache) for every
// layout. The region's values are first staged row-major in the stored tensor's element
// encoding (f32 for bfp tiles), then placed page by page:
//   row_major: plain copies;  tile32: whole tiles, read back when partly covered;
//   bfp tiles: whole face rows, unpacked and re-packed when partly covered;
//   nc1hwc2:   whole C2 lines, read back when partly covered;
//   others (nchw, packed weights): the whole tensor is decoded, patched and re-encoded.
// Stats::rmw_bytes counts the stored bytes read back to preserve values outside the box.
#include <algorithm>
#include <cstring>
#include <vector>

#include "convert/bfp.h"
#include "convert/dtype.h"
#include "convert/rules.h"
#include "convert/tile.h"

namespace tessera::convert {

namespace {

// The element encoding a region is staged in before it is placed into `whole`.
Encoding staging_encoding(const Format& whole) {
  return bfp_mant_bits(whole.encoding) ? Encoding::f32 : whole.encoding;
}

// Bytes of one "element" for row-major box copies: block encodings copy whole rows.
// A box [..., H, W] viewed as [outer box, rows, cols] (tile32 and row-major alike).
struct Box3 {
  std::vector<int64_t> outer_full, outer_begin, outer_ext;  // the dims before H and W
  int64_t h0 = 0, h1 = 1, w0 = 0, w1 = 1;                   // rows and cols of the box
  int64_t H = 1, W = 1;                                     // slice size of the whole tensor
};

Box3 box3(const Shape& full, const Region& r) {
  Box3 b;
  const size_t rank = full.size();
  auto begin = [&](size_t d) { return r.is_whole() ? 0 : r.begin[d]; };
  auto end = [&](size_t d) { return r.is_whole() ? full[d] : r.end[d]; };
  if (rank >= 1) b.W = full[rank - 1], b.w0 = begin(rank - 1), b.w1 = end(rank - 1);
  if (rank >= 2) b.H = full[rank - 2], b.h0 = begin(rank - 2), b.h1 = end(rank - 2);
  for (size_t d = 0; d + 2 < rank; ++d) {
    b.outer_full.push_back(full[d]);
    b.outer_begin.push_back(begin(d));
    b.outer_ext.push_back(end(d) - begin(d));
  }
  return b;
}

// Calls fn(slice index in the whole tensor, slice index in the region) for every outer
// index of the box, in row-major order.
template <typename Fn>
void for_each_slice(const Box3& b, Fn&& fn) {
  const size_t k = b.outer_full.size();
  for (int64_t e : b.outer_ext)
    if (e == 0) return;
  std::vector<int64_t> idx(k, 0);
  for (int64_t o = 0;; ++o) {
    int64_t s = 0;
    for (size_t d = 0; d < k; ++d) s = s * b.outer_full[d] + b.outer_begin[d] + idx[d];
    fn(s, o);
    size_t d = k;
    while (d > 0 && ++idx[d - 1] == b.outer_ext[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

// Row-major box copy between the whole tensor and the dense region buffer.
void copy_box(const Box3& b, uint8_t* whole, uint8_t* region, int64_t esize, bool to_region) {
  const int64_t eh = b.h1 - b.h0, ew = b.w1 - b.w0, run = ew * esize;
  if (run == 0) return;
  for_each_slice(b, [&](int64_t s, int64_t o) {
    for (int64_t h = b.h0; h < b.h1; ++h) {
      uint8_t* w = whole + ((s * b.H + h) * b.W + b.w0) * esize;
      uint8_t* g = region + (o * eh + (h - b.h0)) * run;
      to_region ? std::memcpy(g, w, run) : std::memcpy(w, g, run);
    }
  });
}

// Walks every tile the box touches: fn(tile index, tile row/col origin, covered rows
// [r0, r1) and cols [c0, c1) in tile coordinates, slice index in the region, full) where
// `full` says the box covers every logical element of the tile.
template <typename Fn>
void for_each_tile(const Box3& b, const TileGeom& g, Fn&& fn) {
  if (b.h1 <= b.h0 || b.w1 <= b.w0) return;
  for_each_slice(b, [&](int64_t s, int64_t o) {
    for (int64_t th = b.h0 / kTileDim; th * kTileDim < b.h1; ++th) {
      for (int64_t tw = b.w0 / kTileDim; tw * kTileDim < b.w1; ++tw) {
        const int64_t y = th * kTileDim, x = tw * kTileDim;
        const int64_t r0 = std::max(b.h0, y) - y, r1 = std::min(b.h1, y + kTileDim) - y;
        const int64_t c0 = std::max(b.w0, x) - x, c1 = std::min(b.w1, x + kTileDim) - x;
        const bool full = r0 == 0 && c0 == 0 && r1 == std::min(b.H - y, kTileDim) && c1 == std::min(b.W - x, kTileDim);
        fn(g.tile_index(s, th, tw), y, x, r0, r1, c0, c1, o, full);
      }
    }
  });
}

// ---- tile32 of plain encodings -----------------------------------------------------------

void tile_write(const Format& whole, uint8_t* dst, const Box3& b, const uint8_t* vals, Stats* stats) {
  const int esize = encoding_size(whole.encoding);
  const TileGeom g = tile_geom(whole.shape);
  const int64_t tile_bytes = kTileElems * esize, eh = b.h1 - b.h0, ew = b.w1 - b.w0;
  std::vector<uint8_t> block(tile_bytes);
  for_each_tile(b, g, [&](int64_t t, int64_t y, int64_t x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t o,
                          bool full) {
    uint8_t* tile = dst + t * tile_bytes;
    if (full) {
      std::memset(block.data(), 0, tile_bytes);
    } else {
      tile_to_block(tile, block.data(), esize);
      if (stats) stats->rmw_bytes += tile_bytes;
    }
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(block.data() + (r * kTileDim + c0) * esize,
                  vals + ((o * eh + (y + r - b.h0)) * ew + (x + c0 - b.w0)) * esize, (c1 - c0) * esize);
    block_to_tile(block.data(), tile, esize);
  });
}

void tile_read(const Format& whole, const uint8_t* src, const Box3& b, uint8_t* vals) {
  const int esize = encoding_size(whole.encoding);
  const TileGeom g = tile_geom(whole.shape);
  const int64_t tile_bytes = kTileElems * esize, eh = b.h1 - b.h0, ew = b.w1 - b.w0;
  for_each_tile(b, g, [&](int64_t t, int64_t y, int64_t x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t o,
                          bool) {
    const uint8_t* tile = src + t * tile_bytes;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c)
        std::memcpy(vals + ((o * eh + (y + r - b.h0)) * ew + (x + c - b.w0)) * esize, tile + tile_offset(r, c) * esize,
                    esize);
  });
}

// ---- bfp tiles: face rows ------------------------------------------------------------------

Status bfp_write(const Format& whole, uint8_t* dst, const Box3& b, const float* vals, const Options& opt,
                 Stats* stats) {
  const int wbits = bfp_mant_bits(whole.encoding);
  const int64_t row_bytes = bfp_row_bytes(wbits), tile_bytes = bfp_tile_bytes(wbits);
  const TileGeom g = tile_geom(whole.shape);
  const int64_t eh = b.h1 - b.h0, ew = b.w1 - b.w0;
  Status status;
  for_each_tile(b, g, [&](int64_t t, int64_t y, int64_t x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t o,
                          bool) {
    if (!status.ok()) return;
    uint8_t* tile = dst + t * tile_bytes;
    for (int64_t r = r0; r < r1; ++r) {
      for (int half = 0; half < 2; ++half) {
        const int64_t f0 = half * kFaceDim;  // first tile column of this face row
        const int64_t lo = std::max(c0, f0), hi = std::min(c1, f0 + kFaceDim);
        if (lo >= hi) continue;
        const int64_t k = face_row_of(r, f0);
        uint8_t* codes = tile + kBfpExpBytes + k * row_bytes;
        alignas(32) float v[kFaceDim] = {};
        // The face row's logical columns are [f0, min(W - x, f0 + 16)); the rest is padding.
        const bool covered = lo == f0 && hi == std::min(b.W - x, f0 + kFaceDim);
        if (!covered) {
          unpack_face_row(tile[k], codes, v, wbits);
          if (stats) stats->rmw_bytes += 1 + row_bytes;
        }
        std::memcpy(v + (lo - f0), vals + (o * eh + (y + r - b.h0)) * ew + (x + lo - b.w0), (hi - lo) * sizeof(float));
        tile[k] = pack_face_row(v, codes, wbits);
        if (tile[k] == kBfpNonFiniteExp) {
          if (opt.bfp_nonfinite == Options::NonFinite::reject) {
            int64_t slice = t / (g.tiles_h * g.tiles_w);
            status = bfp_nonfinite_error(whole.encoding, {t, k, slice, y + r, x + f0}, whole.shape);
            return;
          }
          if (stats) stats->nonfinite_rows++;
        }
      }
    }
  });
  return status;
}

void bfp_read(const Format& whole, const uint8_t* src, const Box3& b, float* vals) {
  const int wbits = bfp_mant_bits(whole.encoding);
  const int64_t row_bytes = bfp_row_bytes(wbits), tile_bytes = bfp_tile_bytes(wbits);
  const TileGeom g = tile_geom(whole.shape);
  const int64_t eh = b.h1 - b.h0, ew = b.w1 - b.w0;
  for_each_tile(b, g, [&](int64_t t, int64_t y, int64_t x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t o,
                          bool) {
    const uint8_t* tile = src + t * tile_bytes;
    for (int64_t r = r0; r < r1; ++r) {
      for (int half = 0; half < 2; ++half) {
        const int64_t f0 = half * kFaceDim, lo = std::max(c0, f0), hi = std::min(c1, f0 + kFaceDim);
        if (lo >= hi) continue;
        const int64_t k = face_row_of(r, f0);
        alignas(32) float v[kFaceDim];
        unpack_face_row(tile[k], tile + kBfpExpBytes + k * row_bytes, v, wbits);
        std::memcpy(vals + (o * eh + (y + r - b.h0)) * ew + (x + lo - b.w0), v + (lo - f0), (hi - lo) * sizeof(float));
      }
    }
  });
}

// ---- nc1hwc2: C2 lines -------------------------------------------------------------------

// fn(line pointer offset in elements, channel range [lo, hi) inside the line, offset of
// the first of them in the region buffer, full line covered).
template <typename Fn>
void for_each_line(const Format& whole, const Region& region, Fn&& fn) {
  // Rank 2 [rows, C] is the line [1, 1, rows, C] (format.h nc1hwc2_nhwc).
  const Shape s = nc1hwc2_nhwc(whole.shape);
  Region r = region;
  if (whole.shape.size() == 2) {
    r.begin = {0, 0, region.begin[0], region.begin[1]};
    r.end = {1, 1, region.end[0], region.end[1]};
  }
  const int64_t c2 = whole.c2, C1 = (s[3] + c2 - 1) / c2;
  const Shape ext = r.extent(s);
  for (int64_t n = r.begin[0]; n < r.end[0]; ++n)
    for (int64_t h = r.begin[1]; h < r.end[1]; ++h)
      for (int64_t w = r.begin[2]; w < r.end[2]; ++w) {
        const int64_t base = (((n - r.begin[0]) * ext[1] + (h - r.begin[1])) * ext[2] + (w - r.begin[2])) * ext[3];
        for (int64_t c1 = r.begin[3] / c2; c1 * c2 < r.end[3]; ++c1) {
          const int64_t lo = std::max(r.begin[3], c1 * c2), hi = std::min(r.end[3], c1 * c2 + c2);
          const bool full = lo == c1 * c2 && hi == std::min(s[3], c1 * c2 + c2);
          fn((((n * C1 + c1) * s[1] + h) * s[2] + w) * c2, lo - c1 * c2, hi - c1 * c2, base + (lo - r.begin[3]), full);
        }
      }
}

void lines_write(const Format& whole, uint8_t* dst, const Region& r, const uint8_t* vals, Stats* stats) {
  const int esize = encoding_size(whole.encoding);
  for_each_line(whole, r, [&](int64_t line, int64_t lo, int64_t hi, int64_t at, bool full) {
    std::memcpy(dst + (line + lo) * esize, vals + at * esize, (hi - lo) * esize);
    if (!full && stats) stats->rmw_bytes += whole.c2 * esize;
  });
}

void lines_read(const Format& whole, const uint8_t* src, const Region& r, uint8_t* vals) {
  const int esize = encoding_size(whole.encoding);
  for_each_line(whole, r, [&](int64_t line, int64_t lo, int64_t hi, int64_t at, bool) {
    std::memcpy(vals + at * esize, src + (line + lo) * esize, (hi - lo) * esize);
  });
}

// Bytes of one row-major element for box copies; block encodings need whole rows.
Result<int64_t> box_element_bytes(const Format& whole, const Box3& b) {
  if (encoding_is_plain(whole.encoding)) return encoding_size(whole.encoding);
  return error(StatusCode::unsupported, "region access to ", whole.to_string(), " needs a plain encoding");
}

Status check_region_format(const Format& whole, const Region& region, const Format& host, const char* which) {
  // Whole regions (every step input and output) are checked without building a string or
  // a shape: the token loop of an LLM allocates nothing here.
  if (!region.is_whole()) {
    Status v = region.validate(whole.shape);
    if (!v.ok()) return v.with_context("region of " + whole.to_string());
  }
  if (region.is_whole() ? host.shape != whole.shape : host.shape != region.extent(whole.shape))
    return error(StatusCode::invalid_argument, which, " ", host.to_string(), " does not match the region's extent ",
                 shape_str(region.extent(whole.shape)), " of ", whole.to_string());
  if (host.layout != Layout::row_major)
    return error(StatusCode::invalid_argument, which, " ", host.to_string(), " must be row-major");
  return Status::Ok();
}

}  // namespace

Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt, const void* src,
                    Stats* stats) {
  return write_region(whole, dst, region, src_fmt, src, Options{}, stats);
}

Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt, const void* src,
                    const Options& options, Stats* stats) {
  TS_RETURN_IF_ERROR(check_region_format(whole, region, src_fmt, "source"));
  if (region.is_whole() || region.partial_axis(whole.shape) == -1)
    return convert(src_fmt, src, whole, dst, options, stats);
  TS_ASSIGN_OR_RETURN(int64_t whole_bytes, whole.byte_size());
  const Shape ext = region.extent(whole.shape);
  const Format staged = row_major_of(staging_encoding(whole), ext);
  // Stage the values in the stored element encoding (u8 -> i8 applies the offset, as a
  // whole-tensor conversion would).
  std::vector<uint8_t> buf;
  const uint8_t* vals = static_cast<const uint8_t*>(src);
  if (!(src_fmt == staged)) {
    TS_ASSIGN_OR_RETURN(int64_t bytes, staged.byte_size());
    buf.resize(bytes);
    TS_RETURN_IF_ERROR(convert(src_fmt, src, staged, buf.data(), options));
    vals = buf.data();
  }
  uint8_t* d = static_cast<uint8_t*>(dst);
  const Box3 b = box3(whole.shape, region);
  Stats local;
  Stats* st = stats ? stats : &local;
  switch (whole.layout) {
    case Layout::row_major: {
      TS_ASSIGN_OR_RETURN(int64_t eb, box_element_bytes(whole, b));
      copy_box(b, d, const_cast<uint8_t*>(vals), eb, false);
      break;
    }
    case Layout::tile32:
      if (bfp_mant_bits(whole.encoding)) {
        TS_RETURN_IF_ERROR(bfp_write(whole, d, b, reinterpret_cast<const float*>(vals), options, st));
      } else {
        tile_write(whole, d, b, vals, st);
      }
      break;
    case Layout::nc1hwc2: lines_write(whole, d, region, vals, st); break;
    default: {
      // Decode the whole tensor, patch the box, encode it again.
      const Format full = row_major_of(staged.encoding, whole.shape);
      TS_ASSIGN_OR_RETURN(int64_t full_bytes, full.byte_size());
      std::vector<uint8_t> tmp(full_bytes);
      TS_RETURN_IF_ERROR(convert(whole, d, full, tmp.data(), options));
      copy_box(b, tmp.data(), const_cast<uint8_t*>(vals), encoding_size(staged.encoding), false);
      TS_RETURN_IF_ERROR(convert(full, tmp.data(), whole, d, options));
      st->rmw_bytes += whole_bytes;
      break;
    }
  }
  st->bytes_in += *src_fmt.byte_size();
  st->bytes_out += *staged.byte_size();
  if (!(src_fmt == staged) || whole.layout != Layout::row_major) st->identity = false;
  return Status::Ok();
}

Status read_region(const Format& whole, const void* src, const Region& region, const Format& dst_fmt, void* dst,
                   Stats* stats) {
  TS_RETURN_IF_ERROR(check_region_format(whole, region, dst_fmt, "destination"));
  if (region.is_whole() || region.partial_axis(whole.shape) == -1) return convert(whole, src, dst_fmt, dst, stats);
  const Shape ext = region.extent(whole.shape);
  const Format staged = row_major_of(staging_encoding(whole), ext);
  TS_ASSIGN_OR_RETURN(int64_t staged_bytes, staged.byte_size());
  std::vector<uint8_t> buf;
  uint8_t* vals = static_cast<uint8_t*>(dst);
  if (!(dst_fmt == staged)) {
    buf.resize(staged_bytes);
    vals = buf.data();
  }
  const uint8_t* s = static_cast<const uint8_t*>(src);
  const Box3 b = box3(whole.shape, region);
  switch (whole.layout) {
    case Layout::row_major: {
      TS_ASSIGN_OR_RETURN(int64_t eb, box_element_bytes(whole, b));
      copy_box(b, const_cast<uint8_t*>(s), vals, eb, true);
      break;
    }
    case Layout::tile32:
      if (bfp_mant_bits(whole.encoding)) bfp_read(whole, s, b, reinterpret_cast<float*>(vals));
      else tile_read(whole, s, b, vals);
      break;
    case Layout::nc1hwc2: lines_read(whole, s, region, vals); break;
    default: {
      const Format full = row_major_of(staged.encoding, whole.shape);
      TS_ASSIGN_OR_RETURN(int64_t full_bytes, full.byte_size());
      std::vector<uint8_t> tmp(full_bytes);
      TS_RETURN_IF_ERROR(convert(whole, s, full, tmp.data()));
      copy_box(b, tmp.data(), vals, encoding_size(staged.encoding), true);
      break;
    }
  }
  if (!(dst_fmt == staged)) TS_RETURN_IF_ERROR(convert(staged, vals, dst_fmt, dst));
  if (stats) {
    stats->bytes_in += staged_bytes;
    stats->bytes_out += *dst_fmt.byte_size();
    if (!(dst_fmt == staged) || whole.layout != Layout::row_major) stats->identity = false;
  }
  return Status::Ok();
}

}  // namespace tessera::convert
