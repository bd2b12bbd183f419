// The channel layouts of NHWC tensors, nc1hwc2 (rknpu.md "Feature maps") and nchw: their
// size rules and their conversions (exact).
#include <algorithm>
#include <cstring>

#include "convert/dtype.h"
#include "convert/nc1hwc2.h"
#include "convert/rules.h"

namespace tessera::convert {

namespace {

Nhwc nhwc_of(const Shape& shape) {
  const Shape s = nc1hwc2_nhwc(shape);  // rank 2 [rows, C]: one line of pixels
  return {s[0], s[1], s[2], s[3]};
}

bool is_offset_pair(Encoding a, Encoding b) {
  return (a == Encoding::u8 && b == Encoding::i8) || (a == Encoding::i8 && b == Encoding::u8);
}

// Same encoding, or u8 <-> i8 with the 0x80 offset applied on the way.
bool channel_encodings(const Format& a, const Format& b) {
  return encoding_is_plain(a.encoding) && (a.encoding == b.encoding || is_offset_pair(a.encoding, b.encoding));
}

bool to_blocked_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::nc1hwc2 && to.c2 > 0 && channel_encodings(from, to);
}
Status to_blocked_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  // The pad value is given in the destination encoding; store it as one element's bytes.
  const int esize = encoding_size(to.encoding);
  uint8_t pad[8] = {};
  const int64_t pv = to.pad_value;
  recode_n(Encoding::i64, &pv, to.encoding, pad, 1);
  nhwc_to_nc1hwc2(src, dst, nhwc_of(from.shape), to.c2, esize, pad, from.encoding != to.encoding);
  return Status::Ok();
}

bool from_blocked_matches(const Format& from, const Format& to) {
  return from.layout == Layout::nc1hwc2 && to.layout == Layout::row_major && from.c2 > 0 && channel_encodings(from, to);
}
Status from_blocked_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  nc1hwc2_to_nhwc(src, dst, nhwc_of(from.shape), from.c2, encoding_size(from.encoding),
                  from.encoding != to.encoding);
  return Status::Ok();
}

bool to_nchw_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == Layout::nchw && from.encoding == to.encoding &&
         encoding_is_plain(from.encoding);
}
Status to_nchw_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  nhwc_to_nchw(src, dst, nhwc_of(from.shape), encoding_size(from.encoding));
  return Status::Ok();
}

bool from_nchw_matches(const Format& from, const Format& to) { return to_nchw_matches(to, from); }
Status from_nchw_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  nchw_to_nhwc(src, dst, nhwc_of(from.shape), encoding_size(from.encoding));
  return Status::Ok();
}

constexpr Rule kRules[] = {
    {"nhwc_to_nc1hwc2", to_blocked_matches, to_blocked_run, true, ""},
    {"nc1hwc2_to_nhwc", from_blocked_matches, from_blocked_run, true, ""},
    {"nhwc_to_nchw", to_nchw_matches, to_nchw_run, true, ""},
    {"nchw_to_nhwc", from_nchw_matches, from_nchw_run, true, ""},
};

// NHWC logical -> [N][ceil(C/C2)][H][W][C2]; rank 2 [rows, C] as [1, 1, rows, C].
Result<Shape> nc1hwc2_padded(const Format& f) {
  if (f.shape.size() != 4 && f.shape.size() != 2) return f.shape;
  if (f.c2 <= 0) return error(StatusCode::invalid_argument, "format ", f.to_string(), ": channel block c2 = ", f.c2);
  const Shape v = nc1hwc2_nhwc(f.shape);
  const Size cp = Size(v[3]).rounded_up(f.c2);
  const Size c1 = cp.ok() ? Size(cp.value_or_zero() / f.c2) : cp;
  return checked_shape(f, {v[0], c1, v[1], v[2], f.c2});
}
Result<int64_t> nc1hwc2_bytes(const Format& f) {
  return dense_layout_bytes(f, f.shape.size() == 4 || f.shape.size() == 2);
}
int64_t c2_line(const Format& f) { return f.c2 * std::max(encoding_element_bytes(f.encoding), 1); }

// The padded channels hold the pad value (the zero point), which must be a value of the
// encoding; c2 must be positive.
Status nc1hwc2_check(const Format& f) {
  if (f.c2 <= 0) return error(StatusCode::invalid_argument, "format ", f.to_string(), ": channel block c2 = ", f.c2);
  if (encoding_is_plain(f.encoding) && !encoding_is_float(f.encoding)) {
    int64_t back = 0;
    uint8_t elem[8] = {};
    recode_n(Encoding::i64, &f.pad_value, f.encoding, elem, 1);
    recode_n(f.encoding, elem, Encoding::i64, &back, 1);
    if (back != f.pad_value)
      return error(StatusCode::invalid_argument, "format ", f.to_string(), ": pad value ", f.pad_value,
                   " does not fit encoding ", encoding_name(f.encoding));
  }
  return Status::Ok();
}

// NHWC logical [N, H, W, C] stored channel-major as [N][C][H][W].
Result<Shape> nchw_padded(const Format& f) {
  if (f.shape.size() != 4) return f.shape;
  return Shape{f.shape[0], f.shape[3], f.shape[1], f.shape[2]};
}
Result<int64_t> nchw_bytes(const Format& f) { return dense_layout_bytes(f, f.shape.size() == 4); }

LayoutInfo nc1hwc2_info() {
  LayoutInfo i;
  i.name = "nc1hwc2";
  i.summary = "NHWC logical -> [N][ceil(C/C2)][H][W][C2], padded channels = pad value; rank 2 [rows, C] as [1, 1, rows, C]";
  i.padded_shape = nc1hwc2_padded;
  i.byte_size = nc1hwc2_bytes;
  i.page_size = c2_line;
  i.alignment = c2_line;
  i.check = nc1hwc2_check;
  return i;
}

LayoutInfo nchw_info() {
  LayoutInfo i;
  i.name = "nchw";
  i.summary = "NHWC logical [N, H, W, C] stored channel-major as [N][C][H][W]";
  i.padded_shape = nchw_padded;
  i.byte_size = nchw_bytes;
  return i;
}

}  // namespace

const bool kChannelFamily = [] {
  must_register(register_layout(nc1hwc2_info(), Layout::nc1hwc2));
  must_register(register_layout(nchw_info(), Layout::nchw));
  return register_rules("channel", kRules, 30);
}();

}  // namespace tessera::convert
