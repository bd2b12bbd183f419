// Registry rules for the RK3588 weight packing (rk_weights.h): row-major signed values
// (already w - weight_zero_point, so i8 or i16) -> the packed conv / depthwise layouts.
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

}  // namespace

std::span<const Rule> rk_weight_rules() { return kRules; }

}  // namespace tessera::convert
