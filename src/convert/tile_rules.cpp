// Registry rules for tile32 of plain encodings (tile-device.md "Tile layout"): exact.
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

constexpr Rule kRules[] = {
    {"tilize", tilize_matches, tilize_run, true, ""},
    {"untilize", untilize_matches, untilize_run, true, ""},
};

}  // namespace

std::span<const Rule> tile_rules() { return kRules; }

}  // namespace tessera::convert
