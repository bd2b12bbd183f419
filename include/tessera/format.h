// Format: the physical form of a tensor in some memory (a value type).
//
// A Format = element encoding + layout + the logical shape it holds. From those it
// derives the padded shape, the byte size, the page size and the natural alignment.
// Memory accounting always uses Format::byte_size(), never the logical bytes.
// Layouts and encodings are ids into the format registry (tessera/format_registry.h). Specs: docs/formats.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/export.h"
#include "tessera/types.h"

namespace tessera {

// How one element (or one block) is stored: an id; the registry holds what it means.
enum class Encoding : uint8_t {  // core's generic ones (the logical dtypes'), then families'
  f32, f16, bf16, i8, u8, i16, i32, i64, boolean,
  q8_0, q4_0, q4_1, q5_0, q5_1,  // GGUF blocks of 32 values: f16 scale (and min) + codes
  q2_k, q3_k, q4_k, q5_k, q6_k,  // GGUF K-quant super-blocks of 256 values
  iq4_nl, iq4_xs,  // GGUF non-linear 4-bit codes (a 16-value table), blocks of 32 / 256
  bfp8_b, bfp4_b,  // block floats, ids kept for src/convert/bfp_rules.cpp, which registers them
};
constexpr int kNumEncodings = 23;  // the built-in ids above; registered encodings take ids from 64

// How elements are arranged: an id; the registry holds each layout's size rules. Core's own:
enum class Layout : uint8_t {
  row_major,       // dense, last dim fastest (NHWC for 4-D feature maps)
  // The conversion library's families keep these ids (a device's own layouts take ids from 32):
  tile32,          // tile_rules.cpp: 32x32 tiles of four 16x16 faces
  nc1hwc2,         // channel_rules.cpp: NHWC -> [N][ceil(C/C2)][H][W][C2]
                   // (rank 2 [rows, C] is laid out as [1, 1, rows, C], nc1hwc2_nhwc)
  rk_conv_weight,  // rk_weight_rules.cpp: RK3588 packed conv weights
  rk_dw_weight,    // rk_weight_rules.cpp: RK3588 packed depthwise weights
  nchw,            // channel_rules.cpp: NHWC logical stored channel-major
  rk_matmul_weight,  // rk_weight_rules.cpp: RK3588 matmul weight blocks
};

TESSERA_API const char* encoding_name(Encoding e);
TESSERA_API std::optional<Encoding> encoding_from_name(const std::string& name);
TESSERA_API const char* layout_name(Layout l);
TESSERA_API std::optional<Layout> layout_from_name(const std::string& name);
// The encoding that stores a logical dtype as-is (f32 -> f32, q4_0 -> q4_0, ...).
TESSERA_API Encoding encoding_of(DType t);
// The logical dtype whose values an encoding represents natively, if any (bfp -> none).
TESSERA_API std::optional<DType> dtype_of(Encoding e);
TESSERA_API bool encoding_is_block(Encoding e);  // the GGUF blocks (q8_0 ... q6_k), bfp8_b, bfp4_b
TESSERA_API bool encoding_is_gguf_block(Encoding e);  // q8_0 ... q6_k

constexpr int64_t kTileDim = 32;   // tile-device.md: a tile is 32x32 values
constexpr int64_t kFaceDim = 16;   // four 16x16 faces per tile
constexpr int64_t kRkC2Int8 = 16;  // rknpu.md: C2 = 16 bytes for int8 feature maps

struct TESSERA_API Format {
  Encoding encoding = Encoding::f32;
  Layout layout = Layout::row_major;
  Shape shape;        // the logical shape this format holds
  int64_t c2 = kRkC2Int8;  // channel block for nc1hwc2
  // The value stored in padding elements that are not plain zeros: the padded channels of
  // nc1hwc2 hold the zero point (rknpu.md). It is expressed in this format's own encoding
  // (an i8 nc1hwc2 tensor made from u8 data with zero point zp has pad_value = zp - 128).
  // tile32 padding is always zero (tile-device.md) and ignores it.
  int64_t pad_value = 0;

  static Format row_major(DType t, Shape s) { return {encoding_of(t), Layout::row_major, std::move(s)}; }
  static Format tiled(Encoding e, Shape s) { return {e, Layout::tile32, std::move(s)}; }

  // The physical shape after padding: row_major = shape; tile32 = [prod(outer)*Hp, Wp];
  // nc1hwc2 = [N, C1, H, W, C2]; packed weights: their block grid.
  Shape padded_shape() const;
  // Total bytes this format occupies (padding and block headers included).
  Result<int64_t> byte_size() const;
  // The unit a device moves: one tile for tile32, one row for row_major, one C2 line for nc1hwc2.
  int64_t page_size() const;
  // The natural alignment in bytes (element or block size); devices may demand more.
  int64_t alignment() const;
  // Whether the bytes are the plain row-major logical values (no conversion needed to read).
  bool is_host_layout() const { return layout == Layout::row_major; }

  // "bfp8_b/tile32 [2,64,64]"; parse accepts "<encoding>[/<layout>]" with layout names or
  // the short forms "tile" (tile32) and "nhwc"/"row" (row_major); the shape is given apart.
  std::string to_string() const;
  static Result<Format> parse(const std::string& text, Shape shape);

  bool operator==(const Format&) const = default;
};

// The [N, H, W, C] shape an nc1hwc2 tensor is laid out by: rank 4 as is; rank 2 [rows, C]
// as one line of `rows` pixels, [1, 1, rows, C] (a fully connected layer's activations).
// Other ranks are returned unchanged (and have no nc1hwc2 form).
TESSERA_API Shape nc1hwc2_nhwc(const Shape& s);

}  // namespace tessera
