// The format registry: layouts and encodings as an open set.
//
// A Format names its layout and encoding by id (tessera/format.h). What an id means (its
// name, the shapes and sizes it stores, its alignment and page) is registered here, one
// family of formats per file, at static initialization, the way devices register
// themselves (register_device): the conversion library registers its families
// (src/convert/*_rules.cpp: tile32, bfp8_b/bfp4_b, nc1hwc2/nchw, the RK3588 weight
// layouts), and a device folder or a test registers its own beside them, with its
// conversion rules (convert::register_rules, src/convert/rules.h). Core keeps only the
// generic ones: the row_major layout and the encodings of the logical dtypes.
//
// The built-in families keep the ids format.h names (Layout::tile32, Encoding::bfp8_b, ...);
// a new family takes the next free id. Registration is not thread-safe: register before any
// thread uses the registry (static initialization is).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/format.h"
#include "tessera/status.h"

namespace tessera {

struct TESSERA_API LayoutInfo {
  std::string name;                  // what to_string() prints and parse() reads: "tile32"
  std::vector<std::string> aliases;  // other names parse() accepts: "tile"
  std::string summary;               // one line: what the layout stores and how
  // The physical shape, padding included, every product and rounding checked (an error
  // names the format). Required.
  Result<Shape> (*padded_shape)(const Format& f) = nullptr;
  // The total bytes, padding and block headers included. Called once the logical shape is
  // known sound (no negative dim, element count within 64 bits). Required.
  Result<int64_t> (*byte_size)(const Format& f) = nullptr;
  // The unit a device moves (one tile, one C2 line); null: the whole tensor.
  int64_t (*page_size)(const Format& f) = nullptr;
  // The natural alignment in bytes; null: the element size (1 for block encodings).
  int64_t (*alignment)(const Format& f) = nullptr;
  // (optional) What a format of this layout must satisfy beyond its size (nc1hwc2: c2 > 0
  // and a pad value the encoding holds); the conversion library checks it before converting.
  Status (*check)(const Format& f) = nullptr;
};

struct TESSERA_API EncodingInfo {
  std::string name;                  // "bfp8_b"
  std::vector<std::string> aliases;  // "bfp8"
  int element_bytes = 0;             // bytes per element; 0 for block encodings
  // Bytes of one 32x32 tile in a tiled layout; 0: element_bytes * 1024 for a plain
  // encoding, no tiled form for a block encoding.
  int64_t tile_bytes = 0;
  bool block = false;                // values stored in blocks (GGUF blocks, block floats)
  std::optional<DType> dtype;        // the logical dtype it stores as-is, if any
  bool has_row_major = true;         // whether it exists in the row_major layout (bfp: no)
  // The row-major encoding its values decode to exactly (itself, or f32 for block floats):
  // the conversion library's staging format for it.
  Encoding decodes_to = Encoding::f32;
};

// Adds a layout / an encoding. With `id` it takes that id (the built-in families keep the
// ids format.h names); without, the next free one. Fails when the name (or an alias) or the
// id is taken, when no id is left, or when a required rule is missing.
TESSERA_API Result<Layout> register_layout(LayoutInfo info, std::optional<Layout> id = std::nullopt);
TESSERA_API Result<Encoding> register_encoding(EncodingInfo info, std::optional<Encoding> id = std::nullopt);
// For registrars at static initialization: the id, or a message and abort (a build error:
// two families claiming one name).
TESSERA_API Layout must_register(Result<Layout> r);
TESSERA_API Encoding must_register(Result<Encoding> r);

// What an id means; nullptr when nothing registered it (its family not linked).
TESSERA_API const LayoutInfo* find_layout(Layout l);
TESSERA_API const EncodingInfo* find_encoding(Encoding e);
// Every registered id, ascending.
TESSERA_API std::vector<Layout> registered_layouts();
TESSERA_API std::vector<Encoding> registered_encodings();

// Helpers for a layout's rules.
// Bytes of one 32x32 tile of encoding `e` (EncodingInfo::tile_bytes); 0 when it has no tiled form.
TESSERA_API int64_t tile_bytes_of(Encoding e);
// The element size of `e` (EncodingInfo::element_bytes); 0 for block or unknown encodings.
TESSERA_API int encoding_element_bytes(Encoding e);
// element_bytes(f.encoding) * prod(padded), checked: an error names the format on overflow.
TESSERA_API Result<int64_t> dense_byte_size(const Format& f, const Shape& padded);

}  // namespace tessera
