// The registry's building blocks: a conversion step ("rule") between two formats.
//
// Each family of formats registers its table of rules with register_rules() from its own
// file, at static initialization, beside its layouts and encodings (format_registry.h):
// the shared families in src/convert/*_rules.cpp, a device's own in its folder. The
// registry (registry.cpp) matches a (from, to) pair against every table in order and
// chains rules through row-major formats when no single rule fits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/checked.h"
#include "tessera/backend/convert.h"
#include "tessera/format_registry.h"

namespace tessera::convert {

// What a step needs besides the formats and the bytes.
struct StepContext {
  const Options* options = nullptr;
  Stats* stats = nullptr;  // may be null
};

struct Rule {
  const char* name;  // short name, e.g. "tilize"
  // Whether this rule converts `from` to `to` directly (same logical shape is guaranteed).
  bool (*matches)(const Format& from, const Format& to);
  // Converts: src holds from.byte_size() bytes, dst to.byte_size() bytes.
  Status (*run)(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext& ctx);
  bool exact;         // exact for every input
  const char* bound;  // error bound when not exact
  // (optional) exactness that depends on the formats; overrides `exact` when set.
  bool (*exact_for)(const Format& from, const Format& to) = nullptr;
};

// Adds a family's rules (a static table) under `family`. Families are matched in
// ascending `order`, then by name (first match wins): the shared ones take 0..99
// (dtype_rules.cpp 0, tile_rules.cpp 10, bfp_rules.cpp 20, channel_rules.cpp 30,
// rk_weight_rules.cpp 40); a device's family takes 100 or more. False, and nothing added,
// when a family of that name is registered already. Not thread-safe (static initialization).
bool register_rules(const char* family, std::span<const Rule> rules, int order = 100);

// The shared library's own families, each registered by its file at static initialization.
// registry.cpp refers to these flags so that a program linking the static library keeps
// those objects (an archive member nothing refers to is left out, with its registrar).
extern const bool kDtypeFamily, kTileFamily, kBfpFamily, kChannelFamily, kRkWeightFamily;

// Helpers for a family's size rules (LayoutInfo).
// The padded shape from checked dims: an error names the format when one overflowed.
inline Result<Shape> checked_shape(const Format& f, const std::vector<Size>& dims) {
  Shape out;
  for (const Size& d : dims) {
    if (!d.ok())
      return error(StatusCode::invalid_argument, "format ", f.to_string(), ": the padded shape overflows 64 bits");
    out.push_back(d.value_or_zero());
  }
  return out;
}
// The bytes of a layout that stores `f`'s padded shape densely, element by element, for
// the ranks it accepts (`rank_ok`): errors name the layout and the shape, or the encoding
// without such a form (block encodings).
inline Result<int64_t> dense_layout_bytes(const Format& f, bool rank_ok) {
  if (!rank_ok)
    return error(StatusCode::invalid_argument, "layout ", layout_name(f.layout), " needs a rank-4 shape, got ",
                 shape_str(f.shape));
  if (encoding_element_bytes(f.encoding) == 0)
    return error(StatusCode::unsupported, "encoding ", encoding_name(f.encoding), " has no ", layout_name(f.layout),
                 " form");
  const LayoutInfo* li = find_layout(f.layout);
  TS_ASSIGN_OR_RETURN(Shape p, li->padded_shape(f));
  return dense_byte_size(f, p);
}

// A row-major format of encoding `e` with `shape` (a staging step of a chain).
inline Format row_major_of(Encoding e, const Shape& shape) { return Format{e, Layout::row_major, shape}; }

}  // namespace tessera::convert
