// Registry rules for the channel layouts of NHWC tensors: nc1hwc2 and nchw (exact).
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

}  // namespace

std::span<const Rule> channel_rules() { return kRules; }

}  // namespace tessera::convert
