#include "tessera/format.h"

#include <sstream>

#include "core/checked.h"

namespace tessera {

namespace {
struct EncodingInfo {
  Encoding e;
  const char* name;
  int bytes;               // bytes per element; 0 for block encodings
  int64_t tile_bytes;      // bytes of one 32x32 tile (tile-device.md); 0 if not tileable
};
// tile-device.md "Element formats and tile sizes": f32 4096, bf16 2048, bfp8_b 64+1024,
// bfp4_b 64+512. Other plain encodings tile at their element size.
constexpr EncodingInfo kEncodings[kNumEncodings] = {
    {Encoding::f32, "f32", 4, 4096},      {Encoding::f16, "f16", 2, 2048},
    {Encoding::bf16, "bf16", 2, 2048},    {Encoding::i8, "i8", 1, 1024},
    {Encoding::u8, "u8", 1, 1024},        {Encoding::i16, "i16", 2, 2048},
    {Encoding::i32, "i32", 4, 4096},      {Encoding::i64, "i64", 8, 8192},
    {Encoding::boolean, "bool", 1, 1024}, {Encoding::q8_0, "q8_0", 0, 0},
    {Encoding::q4_0, "q4_0", 0, 0},       {Encoding::q4_1, "q4_1", 0, 0},
    {Encoding::q5_0, "q5_0", 0, 0},       {Encoding::q5_1, "q5_1", 0, 0},
    {Encoding::q2_k, "q2_K", 0, 0},       {Encoding::q3_k, "q3_K", 0, 0},
    {Encoding::q4_k, "q4_K", 0, 0},       {Encoding::q5_k, "q5_K", 0, 0},
    {Encoding::q6_k, "q6_K", 0, 0},       {Encoding::iq4_nl, "iq4_nl", 0, 0},
    {Encoding::iq4_xs, "iq4_xs", 0, 0},   {Encoding::bfp8_b, "bfp8_b", 0, 64 + 1024},
    {Encoding::bfp4_b, "bfp4_b", 0, 64 + 512},
};
const EncodingInfo& info(Encoding e) { return kEncodings[static_cast<int>(e)]; }

}  // namespace

const char* encoding_name(Encoding e) { return info(e).name; }

std::optional<Encoding> encoding_from_name(const std::string& name) {
  for (const auto& i : kEncodings)
    if (name == i.name) return i.e;
  if (name == "bfp8") return Encoding::bfp8_b;
  if (name == "bfp4") return Encoding::bfp4_b;
  return std::nullopt;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::row_major: return "row_major";
    case Layout::tile32: return "tile32";
    case Layout::nc1hwc2: return "nc1hwc2";
    case Layout::rk_conv_weight: return "rk_conv_weight";
    case Layout::rk_dw_weight: return "rk_dw_weight";
    case Layout::rk_matmul_weight: return "rk_matmul_weight";
    case Layout::nchw: return "nchw";
  }
  return "?";
}

std::optional<Layout> layout_from_name(const std::string& name) {
  if (name == "row_major" || name == "row" || name == "nhwc") return Layout::row_major;
  if (name == "tile32" || name == "tile") return Layout::tile32;
  if (name == "nc1hwc2") return Layout::nc1hwc2;
  if (name == "rk_conv_weight") return Layout::rk_conv_weight;
  if (name == "rk_dw_weight") return Layout::rk_dw_weight;
  if (name == "rk_matmul_weight") return Layout::rk_matmul_weight;
  if (name == "nchw") return Layout::nchw;
  return std::nullopt;
}

Encoding encoding_of(DType t) {
  switch (t) {
    case DType::f32: return Encoding::f32;
    case DType::f16: return Encoding::f16;
    case DType::bf16: return Encoding::bf16;
    case DType::i8: return Encoding::i8;
    case DType::u8: return Encoding::u8;
    case DType::i16: return Encoding::i16;
    case DType::i32: return Encoding::i32;
    case DType::i64: return Encoding::i64;
    case DType::boolean: return Encoding::boolean;
    case DType::q8_0: return Encoding::q8_0;
    case DType::q4_0: return Encoding::q4_0;
    case DType::q4_1: return Encoding::q4_1;
    case DType::q5_0: return Encoding::q5_0;
    case DType::q5_1: return Encoding::q5_1;
    case DType::q2_k: return Encoding::q2_k;
    case DType::q3_k: return Encoding::q3_k;
    case DType::q4_k: return Encoding::q4_k;
    case DType::q5_k: return Encoding::q5_k;
    case DType::q6_k: return Encoding::q6_k;
    case DType::iq4_nl: return Encoding::iq4_nl;
    case DType::iq4_xs: return Encoding::iq4_xs;
  }
  return Encoding::f32;
}

std::optional<DType> dtype_of(Encoding e) {
  switch (e) {
    case Encoding::bfp8_b:
    case Encoding::bfp4_b: return std::nullopt;
    default: return static_cast<DType>(static_cast<int>(e));  // same order up to iq4_xs
  }
}

bool encoding_is_gguf_block(Encoding e) {
  return static_cast<int>(e) >= static_cast<int>(Encoding::q8_0) && static_cast<int>(e) <= static_cast<int>(Encoding::iq4_xs);
}

bool encoding_is_block(Encoding e) {
  return encoding_is_gguf_block(e) || e == Encoding::bfp8_b || e == Encoding::bfp4_b;
}

Shape nc1hwc2_nhwc(const Shape& s) {
  if (s.size() == 2) return {1, 1, s[0], s[1]};
  return s;
}

namespace {

// The padded shape with every product and rounding checked (padded_shape's contract).
Result<Shape> checked_padded_shape(const Format& f) {
  const Shape& shape = f.shape;
  std::vector<Size> p;
  switch (f.layout) {
    case Layout::row_major: return shape;
    case Layout::tile32: {
      // [prod(outer) * Hp, Wp]: rank 0 is [1,1,1], rank 1 [1,1,W].
      const int64_t w = shape.empty() ? 1 : shape.back();
      const int64_t h = shape.size() < 2 ? 1 : shape[shape.size() - 2];
      Size outer = 1;
      for (size_t i = 0; i + 2 < shape.size(); ++i) outer *= shape[i];
      p = {outer * Size(h).rounded_up(kTileDim), Size(w).rounded_up(kTileDim)};
      break;
    }
    case Layout::nc1hwc2: {
      if (shape.size() != 4 && shape.size() != 2) return shape;
      if (f.c2 <= 0) return error(StatusCode::invalid_argument, "format ", f.to_string(), ": channel block c2 = ", f.c2);
      const Shape v = nc1hwc2_nhwc(shape);
      Size cp = Size(v[3]).rounded_up(f.c2);
      p = {v[0], cp.value_or_zero() / f.c2, v[1], v[2], f.c2};
      p[1] = cp.ok() ? p[1] : cp;
      break;
    }
    case Layout::rk_conv_weight:
      // [OCp, KH, KW, ICp]: OC rounded up to even, IC to 16 (IC <= 16) or a multiple of 32;
      // stored in 32x32 channel blocks, the last ones partial (src/convert/rk_weights.h).
      if (shape.size() != 4) return shape;
      p = {Size(shape[0]).rounded_up(2), shape[1], shape[2], Size(shape[3]).rounded_up(shape[3] <= 16 ? 16 : 32)};
      break;
    case Layout::rk_dw_weight:
      // [1, KH, KW, Cp]: C rounded up to 16, stored in 64-channel groups (src/convert/rk_weights.h).
      if (shape.size() != 4) return shape;
      p = {1, shape[1], shape[2], Size(shape[3]).rounded_up(16)};
      break;
    case Layout::nchw:
      if (shape.size() != 4) return shape;
      return Shape{shape[0], shape[3], shape[1], shape[2]};
    case Layout::rk_matmul_weight: {
      // [Np, Kp]: N rounded up to the block's kernels (16 for f16, 32 for i8), K to 32
      // (rknpu-matmul.md "Layouts"; src/convert/rk_weights.h).
      if (shape.size() != 2) return shape;
      const int64_t kernels = f.encoding == Encoding::f16 ? 16 : 32;
      p = {Size(shape[0]).rounded_up(kernels), Size(shape[1]).rounded_up(32)};
      break;
    }
  }
  Shape out;
  for (const Size& d : p) {
    if (!d.ok())
      return error(StatusCode::invalid_argument, "format ", f.to_string(), ": the padded shape overflows 64 bits");
    out.push_back(d.value_or_zero());
  }
  return out;
}

}  // namespace

Shape Format::padded_shape() const {
  auto p = checked_padded_shape(*this);
  return p.ok() ? *p : shape;  // callers size the format with byte_size() first, which fails instead
}

Result<int64_t> Format::byte_size() const {
  const EncodingInfo& ei = info(encoding);
  auto sized = [&](Size bytes) -> Result<int64_t> {
    if (bytes.ok()) return bytes.value_or_zero();
    return error(StatusCode::invalid_argument, "format ", to_string(), ": the byte size overflows 64 bits");
  };
  Size elements = 1;
  for (int64_t d : shape) {
    if (d < 0) return error(StatusCode::invalid_argument, "negative dim in ", shape_str(shape));
    elements *= d;
  }
  TS_RETURN_IF_ERROR(sized(elements).status());
  switch (layout) {
    case Layout::row_major: {
      if (encoding == Encoding::bfp8_b || encoding == Encoding::bfp4_b)
        return error(StatusCode::unsupported, "encoding ", ei.name, " exists only in the tile32 layout");
      const int64_t inner = shape.empty() ? 1 : shape.back();
      TS_ASSIGN_OR_RETURN(int64_t row, dtype_row_bytes(*dtype_of(encoding), inner));
      return sized(Size(inner == 0 ? 0 : elements.value_or_zero() / inner) * row);
    }
    case Layout::tile32: {
      if (ei.tile_bytes == 0)
        return error(StatusCode::unsupported, "encoding ", ei.name, " has no tile32 form");
      TS_ASSIGN_OR_RETURN(Shape p, checked_padded_shape(*this));
      return sized(Size(p[0] / kTileDim) * (p[1] / kTileDim) * ei.tile_bytes);
    }
    case Layout::nc1hwc2:
    case Layout::nchw:
    case Layout::rk_conv_weight:
    case Layout::rk_dw_weight:
    case Layout::rk_matmul_weight: {
      if (layout == Layout::rk_matmul_weight && (shape.size() != 2 || (encoding != Encoding::f16 && encoding != Encoding::i8)))
        return error(StatusCode::invalid_argument, "layout rk_matmul_weight holds f16 or i8 [N, K], got ", ei.name, " ",
                     shape_str(shape));
      if (layout != Layout::rk_matmul_weight && !(layout == Layout::nc1hwc2 && shape.size() == 2) && shape.size() != 4)
        return error(StatusCode::invalid_argument, "layout ", layout_name(layout), " needs a rank-4 shape, got ",
                     shape_str(shape));
      if (ei.bytes == 0)
        return error(StatusCode::unsupported, "encoding ", ei.name, " has no ", layout_name(layout), " form");
      TS_ASSIGN_OR_RETURN(Shape p, checked_padded_shape(*this));
      Size n = ei.bytes;
      for (int64_t d : p) n *= d;
      return sized(n);
    }
  }
  return error(StatusCode::internal, "unknown layout");
}

int64_t Format::page_size() const {
  const EncodingInfo& ei = info(encoding);
  switch (layout) {
    case Layout::tile32: return ei.tile_bytes;
    case Layout::row_major: {
      auto dt = dtype_of(encoding);
      if (!dt) return 1;
      auto r = dtype_row_bytes(*dt, shape.empty() ? 1 : shape.back());
      return r.ok() ? std::max<int64_t>(*r, 1) : 1;
    }
    case Layout::nc1hwc2: return c2 * std::max(ei.bytes, 1);
    default: {
      auto b = byte_size();
      return b.ok() ? *b : 1;
    }
  }
}

int64_t Format::alignment() const {
  if (layout == Layout::tile32) return 32;
  if (layout == Layout::nc1hwc2) return c2 * std::max(info(encoding).bytes, 1);
  return std::max(info(encoding).bytes, 1);
}

std::string Format::to_string() const {
  std::ostringstream os;
  os << encoding_name(encoding) << '/' << layout_name(layout) << ' ' << shape_str(shape);
  return os.str();
}

Result<Format> Format::parse(const std::string& text, Shape s) {
  std::string enc = text, lay = "row_major";
  if (auto slash = text.find('/'); slash != std::string::npos) {
    enc = text.substr(0, slash);
    lay = text.substr(slash + 1);
  }
  auto e = encoding_from_name(enc);
  if (!e)
    return error(StatusCode::invalid_argument, "unknown encoding '", enc,
                 "' in format '", text, "' (known: f32 f16 bf16 i8 u8 i16 i32 i64 bool q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs bfp8_b bfp4_b)");
  auto l = layout_from_name(lay);
  if (!l)
    return error(StatusCode::invalid_argument, "unknown layout '", lay, "' in format '", text,
                 "' (known: row_major|nhwc, tile32|tile, nc1hwc2, nchw, rk_conv_weight, rk_dw_weight, rk_matmul_weight)");
  Format f{*e, *l, std::move(s)};
  if (auto b = f.byte_size(); !b.ok()) return b.status().with_context("format '" + text + "'");
  return f;
}

}  // namespace tessera
