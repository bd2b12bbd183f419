// The tile32 layout (tile-device.md "Tile layout"): its size rules and its conversions of
// plain encodings (exact). Block floats in tiles are bfp_rules.cpp's.
#include <algorithm>
#include <vector>

#include "convert/dtype.h"
#include "convert/rules.h"
#include "convert/tile.h"

namespace tessera::convert {

namespace {

bool tilize_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::tile32 && from.encoding == to.encoding &&
         encoding_is_plain(from.encoding);
}
Status tilize_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  tilize(src, dst, tile_geom(from.shape), encoding_size(from.encoding));
  return Status::Ok();
}

bool untilize_matches(const Format& from, const Format& to) { return tilize_matches(to, from); }
Status untilize_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  untilize(src, dst, tile_geom(from.shape), encoding_size(from.encoding));
  return Status::Ok();
}

// A recode fused with (un)tilize, one band of 32 rows at a time: the band is recoded into
// a staging buffer that stays in cache, so the tensor is read and written once.
bool recode_tilize_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::tile32 && from.encoding != to.encoding &&
         encoding_is_plain(from.encoding) && encoding_is_plain(to.encoding);
}
Status recode_tilize_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  const TileGeom g = tile_geom(from.shape);
  const int in_size = encoding_size(from.encoding), out_size = encoding_size(to.encoding);
  std::vector<uint8_t> band(kTileDim * g.w * out_size);
  for (int64_t s = 0; s < g.outer; ++s)
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = std::min(kTileDim, g.h - th * kTileDim);
      recode_n(from.encoding, src + (s * g.h + th * kTileDim) * g.w * in_size, to.encoding, band.data(), rows * g.w);
      TileGeom bg{1, rows, g.w, 1, g.tiles_w};
      tilize(band.data(), dst + g.tile_index(s, th, 0) * kTileElems * out_size, bg, out_size);
    }
  return Status::Ok();
}

bool untilize_recode_matches(const Format& from, const Format& to) { return recode_tilize_matches(to, from); }
Status untilize_recode_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  const TileGeom g = tile_geom(from.shape);
  const int in_size = encoding_size(from.encoding), out_size = encoding_size(to.encoding);
  std::vector<uint8_t> band(kTileDim * g.w * in_size);
  for (int64_t s = 0; s < g.outer; ++s)
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = std::min(kTileDim, g.h - th * kTileDim);
      TileGeom bg{1, rows, g.w, 1, g.tiles_w};
      untilize(src + g.tile_index(s, th, 0) * kTileElems * in_size, band.data(), bg, in_size);
      recode_n(from.encoding, band.data(), to.encoding, dst + (s * g.h + th * kTileDim) * g.w * out_size, rows * g.w);
    }
  return Status::Ok();
}

bool recode_exact(const Format& from, const Format& to) { return recode_is_exact(from.encoding, to.encoding); }

constexpr Rule kRules[] = {
    {"tilize", tilize_matches, tilize_run, true, ""},
    {"untilize", untilize_matches, untilize_run, true, ""},
    {"recode_tilize", recode_tilize_matches, recode_tilize_run, false,
     "round to nearest even (|err| <= half a unit in the last place of the target), integers saturate", recode_exact},
    {"untilize_recode", untilize_recode_matches, untilize_recode_run, false,
     "round to nearest even (|err| <= half a unit in the last place of the target), integers saturate", recode_exact},
};

// [..., H, W] -> [prod(outer) * Hp, Wp]: rank 0 is [1,1,1], rank 1 [1,1,W].
Result<Shape> tile32_padded(const Format& f) {
  const Shape& shape = f.shape;
  const int64_t w = shape.empty() ? 1 : shape.back();
  const int64_t h = shape.size() < 2 ? 1 : shape[shape.size() - 2];
  Size outer = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) outer *= shape[i];
  return checked_shape(f, {outer * Size(h).rounded_up(kTileDim), Size(w).rounded_up(kTileDim)});
}

// tile-device.md "Element formats and tile sizes": f32 4096, bf16 2048, bfp8_b 64+1024,
// bfp4_b 64+512 bytes a tile; other plain encodings tile at their element size.
Result<int64_t> tile32_bytes(const Format& f) {
  const int64_t tile = tile_bytes_of(f.encoding);
  if (tile == 0) return error(StatusCode::unsupported, "encoding ", encoding_name(f.encoding), " has no tile32 form");
  TS_ASSIGN_OR_RETURN(Shape p, tile32_padded(f));
  Size bytes = Size(p[0] / kTileDim) * (p[1] / kTileDim) * tile;
  if (bytes.ok()) return bytes.value_or_zero();
  return error(StatusCode::invalid_argument, "format ", f.to_string(), ": the byte size overflows 64 bits");
}

int64_t tile32_page(const Format& f) { return tile_bytes_of(f.encoding); }
int64_t tile32_alignment(const Format&) { return 32; }

LayoutInfo tile32_info() {
  LayoutInfo i;
  i.name = "tile32";
  i.aliases = {"tile"};
  i.summary = "[..., H, W]: each HxW slice padded to 32x32 tiles of four 16x16 faces";
  i.padded_shape = tile32_padded;
  i.byte_size = tile32_bytes;
  i.page_size = tile32_page;
  i.alignment = tile32_alignment;
  return i;
}

}  // namespace

const bool kTileFamily = [] {
  must_register(register_layout(tile32_info(), Layout::tile32));
  return register_rules("tile32", kRules, 10);
}();

}  // namespace tessera::convert
