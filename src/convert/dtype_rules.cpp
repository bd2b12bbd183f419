// Registry rules for element encodings of row-major tensors, and the public value cast
// and requantization functions.
#include <cmath>
#include <limits>

#include "convert/dtype.h"
#include "convert/gguf_blocks.h"
#include "convert/gguf_kquants.h"
#include "convert/rules.h"

namespace tessera::convert {

namespace {

bool both_row_major(const Format& a, const Format& b) {
  return a.layout == Layout::row_major && b.layout == Layout::row_major;
}

bool recode_matches(const Format& from, const Format& to) {
  return both_row_major(from, to) && from.encoding != to.encoding && encoding_is_plain(from.encoding) &&
         encoding_is_plain(to.encoding);
}
Status recode_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  recode_n(from.encoding, src, to.encoding, dst, num_elements(from.shape));
  return Status::Ok();
}
bool recode_exact(const Format& from, const Format& to) { return recode_is_exact(from.encoding, to.encoding); }

bool dequant_matches(const Format& from, const Format& to) {
  return both_row_major(from, to) && encoding_is_gguf_block(from.encoding) && to.encoding == Encoding::f32;
}
Status dequant_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  const DType t = *dtype_of(from.encoding);
  dequant_gguf_n(t, src, reinterpret_cast<float*>(dst), num_elements(from.shape) / dtype_block_values(t));
  return Status::Ok();
}

constexpr Rule kRules[] = {
    {"recode", recode_matches, recode_run, false,
     "round to nearest even (|err| <= half a unit in the last place of the target), integers saturate",
     recode_exact},
    {"dequant", dequant_matches, dequant_run, true, ""},
};

bool plain_dtype(DType t) { return !dtype_is_block(t); }

template <typename T>
void load_as_i64(const void* src, int64_t i, int64_t* out) {
  *out = static_cast<const T*>(src)[i];
}

}  // namespace

// Casts between encodings carry no layout: only rules to register.
const bool kDtypeFamily = register_rules("dtype", kRules, 0);

Status cast_values(DType from, const void* src, DType to, void* dst, int64_t n) {
  if (!plain_dtype(from) || !plain_dtype(to))
    return error(StatusCode::unsupported, "cast_values: ", dtype_name(from), " -> ", dtype_name(to),
                 " needs plain element types (block types convert through convert())");
  if (n < 0) return error(StatusCode::invalid_argument, "cast_values: negative count ", n);
  cast_values_n(encoding_of(from), src, encoding_of(to), dst, n);
  return Status::Ok();
}

Status requantize(DType from, const void* src, const QuantParams& in, DType to, void* dst, const QuantParams& out,
                  const Shape& shape) {
  auto int_type = [](DType t) { return t == DType::i8 || t == DType::u8 || t == DType::i16 || t == DType::i32; };
  if (!int_type(from) || !int_type(to))
    return error(StatusCode::unsupported, "requantize: ", dtype_name(from), " -> ", dtype_name(to),
                 " needs integer types (i8, u8, i16, i32)");
  if (in.empty() || out.empty())
    return error(StatusCode::invalid_argument, "requantize: both parameter sets need a scale");
  const int rank = static_cast<int>(shape.size());
  auto check_axis = [&](const QuantParams& q, const char* which) -> Status {
    if (!q.per_axis()) return Status::Ok();
    if (q.axis < 0 || q.axis >= rank)
      return error(StatusCode::invalid_argument, "requantize: ", which, " axis ", q.axis, " outside shape ",
                   shape_str(shape));
    if (static_cast<int64_t>(q.scale.size()) != shape[q.axis])
      return error(StatusCode::invalid_argument, "requantize: ", which, " has ", q.scale.size(),
                   " scales for dim ", q.axis, " of size ", shape[q.axis]);
    return Status::Ok();
  };
  TS_RETURN_IF_ERROR(check_axis(in, "input"));
  TS_RETURN_IF_ERROR(check_axis(out, "output"));
  for (float s : out.scale)
    if (!(s > 0.0f) || !std::isfinite(s))
      return error(StatusCode::invalid_argument, "requantize: output scale ", s, " is not a positive finite number");
  const auto strides = row_major_strides(shape);
  auto channel = [&](const QuantParams& q, int64_t i) -> int64_t {
    return q.per_axis() ? (i / strides[q.axis]) % shape[q.axis] : 0;
  };
  int64_t lo = 0, hi = 0;
  switch (to) {
    case DType::i8: lo = -128, hi = 127; break;
    case DType::u8: lo = 0, hi = 255; break;
    case DType::i16: lo = std::numeric_limits<int16_t>::min(), hi = std::numeric_limits<int16_t>::max(); break;
    default: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
  }
  const int64_t n = num_elements(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t q = 0;
    switch (from) {
      case DType::i8: load_as_i64<int8_t>(src, i, &q); break;
      case DType::u8: load_as_i64<uint8_t>(src, i, &q); break;
      case DType::i16: load_as_i64<int16_t>(src, i, &q); break;
      default: load_as_i64<int32_t>(src, i, &q); break;
    }
    const int64_t ci = channel(in, i), co = channel(out, i);
    double real = static_cast<double>(in.scale_at(ci)) * static_cast<double>(q - in.zero_point_at(ci));
    double r = std::nearbyint(real / static_cast<double>(out.scale_at(co))) + static_cast<double>(out.zero_point_at(co));
    int64_t v = r <= static_cast<double>(lo) ? lo : r >= static_cast<double>(hi) ? hi : static_cast<int64_t>(r);
    switch (to) {
      case DType::i8: static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(v); break;
      case DType::u8: static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(v); break;
      case DType::i16: static_cast<int16_t*>(dst)[i] = static_cast<int16_t>(v); break;
      default: static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(v); break;
    }
  }
  return Status::Ok();
}

}  // namespace tessera::convert
