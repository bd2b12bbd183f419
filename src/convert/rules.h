// The registry's building blocks: a conversion step ("rule") between two formats.
//
// Each family of conversions (dtype.cpp, tile.cpp, ...) exposes a table of rules; the
// registry (registry.cpp) matches a (from, to) pair against every table in order and
// chains rules through row-major formats when no single rule fits. A new family (e.g.
// the RK3588 weight packing) adds its table function here and one line to kFamilies in
// registry.cpp.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/backend/convert.h"

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

std::span<const Rule> dtype_rules();    // dtype_rules.cpp: casts, u8<->i8, GGUF dequant
std::span<const Rule> tile_rules();     // tile_rules.cpp: tilize / untilize of plain encodings
std::span<const Rule> bfp_rules();      // bfp_rules.cpp: f32 / q8_0 / q4_0 <-> bfp tiles
std::span<const Rule> channel_rules();  // channel_rules.cpp: NHWC <-> NC1HWC2, NHWC <-> NCHW
std::span<const Rule> rk_weight_rules();  // rk_weight_rules.cpp: i8/i16 -> RK3588 packed conv/depthwise weights

// A row-major format of encoding `e` with `shape` (a staging step of a chain).
inline Format row_major_of(Encoding e, const Shape& shape) { return Format{e, Layout::row_major, shape}; }

}  // namespace tessera::convert
