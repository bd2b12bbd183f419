// The RK3588 packed weight layouts (rk_weights.h, rknpu.md, rknpu-matmul.md): their size
// rules and the packing rules: row-major signed values (already w - weight_zero_point, so
// i8 or i16) -> the packed conv / depthwise layouts, f16 / i8 -> the matmul blocks.
// Packing is a pure relayout plus zero padding, hence exact. There is no reverse rule:
// packed weights never travel back to the host.
#include <cstring>

#include "convert/rk_weights.h"
#include "convert/rules.h"

namespace tessera::convert {

namespace {

bool signed_plain(Encoding e) { return e == Encoding::i8 || e == Encoding::i16; }

bool matches_conv(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::rk_conv_weight && from.encoding == to.encoding &&
         signed_plain(from.encoding);
}
bool matches_dw(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::rk_dw_weight && from.encoding == to.encoding &&
         signed_plain(from.encoding);
}

// The row-major values as int32 (the packers' input).
std::vector<int32_t> widen(const Format& from, const uint8_t* src) {
  int64_t n = num_elements(from.shape);
  std::vector<int32_t> d(static_cast<size_t>(n));
  if (from.encoding == Encoding::i8) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int8_t>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      int16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      d[i] = v;
    }
  }
  return d;
}

Status store(const Format& to, const Result<std::vector<uint8_t>>& packed, uint8_t* dst) {
  if (!packed.ok()) return packed.status();
  TS_ASSIGN_OR_RETURN(int64_t bytes, to.byte_size());
  if (static_cast<int64_t>(packed->size()) != bytes)
    return error(StatusCode::internal, "packed weights are ", packed->size(), " bytes but ", to.to_string(), " holds ",
                 bytes);
  std::memcpy(dst, packed->data(), packed->size());
  return Status::Ok();
}

Status run_conv(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  int elem = from.encoding == Encoding::i8 ? 1 : 2;
  return store(to, pack_rk_conv_weights(from.shape, widen(from, src), elem), dst);
}
Status run_dw(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  int elem = from.encoding == Encoding::i8 ? 1 : 2;
  return store(to, pack_rk_dw_weights(from.shape, widen(from, src), elem), dst);
}

bool matches_matmul(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::rk_matmul_weight && from.encoding == to.encoding &&
         (from.encoding == Encoding::f16 || from.encoding == Encoding::i8) && from.shape.size() == 2;
}
Status run_matmul(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  const int elem = from.encoding == Encoding::i8 ? 1 : 2;
  return store(to, pack_rk_matmul_weights(src, from.shape[0], from.shape[1], elem), dst);
}

const Rule kRules[] = {
    {"rk_pack_conv_weight", matches_conv, run_conv, true, ""},
    {"rk_pack_dw_weight", matches_dw, run_dw, true, ""},
    {"rk_pack_matmul_weight", matches_matmul, run_matmul, true, ""},
};

// [OCp, KH, KW, ICp]: OC rounded up to even, IC to 16 (IC <= 16) or a multiple of 32;
// stored in 32x32 channel blocks, the last ones partial.
Result<Shape> conv_padded(const Format& f) {
  const Shape& s = f.shape;
  if (s.size() != 4) return s;
  return checked_shape(f, {Size(s[0]).rounded_up(2), s[1], s[2], Size(s[3]).rounded_up(s[3] <= 16 ? 16 : 32)});
}
// [1, KH, KW, Cp]: C rounded up to 16, stored in 64-channel groups.
Result<Shape> dw_padded(const Format& f) {
  const Shape& s = f.shape;
  if (s.size() != 4) return s;
  return checked_shape(f, {1, s[1], s[2], Size(s[3]).rounded_up(16)});
}
// [Np, Kp]: N rounded up to the block's kernels (16 for f16, 32 for i8), K to 32.
Result<Shape> matmul_padded(const Format& f) {
  const Shape& s = f.shape;
  if (s.size() != 2) return s;
  const int64_t kernels = f.encoding == Encoding::f16 ? 16 : 32;
  return checked_shape(f, {Size(s[0]).rounded_up(kernels), Size(s[1]).rounded_up(32)});
}
Result<int64_t> rank4_bytes(const Format& f) { return dense_layout_bytes(f, f.shape.size() == 4); }
Result<int64_t> matmul_bytes(const Format& f) {
  if (f.shape.size() != 2 || (f.encoding != Encoding::f16 && f.encoding != Encoding::i8))
    return error(StatusCode::invalid_argument, "layout rk_matmul_weight holds f16 or i8 [N, K], got ",
                 encoding_name(f.encoding), " ", shape_str(f.shape));
  return dense_layout_bytes(f, true);
}

LayoutInfo info(const char* name, const char* summary, Result<Shape> (*padded)(const Format&),
                Result<int64_t> (*bytes)(const Format&)) {
  LayoutInfo i;
  i.name = name;
  i.summary = summary;
  i.padded_shape = padded;
  i.byte_size = bytes;
  return i;
}

}  // namespace

const bool kRkWeightFamily = [] {
  must_register(register_layout(info("rk_conv_weight", "RK3588 packed conv weights, logical [OC, KH, KW, IC]",
                                     conv_padded, rank4_bytes),
                                Layout::rk_conv_weight));
  must_register(register_layout(
      info("rk_dw_weight", "RK3588 packed depthwise weights, logical [1, KH, KW, C]", dw_padded, rank4_bytes),
      Layout::rk_dw_weight));
  must_register(register_layout(info("rk_matmul_weight",
                                     "RK3588 matmul weight blocks, logical [N, K]: [ceil(N/n)][ceil(K/32)][n][32], "
                                     "n = 16 (f16) or 32 (i8)",
                                     matmul_padded, matmul_bytes),
                                Layout::rk_matmul_weight));
  return register_rules("rk_weight", kRules, 40);
}();

}  // namespace tessera::convert
