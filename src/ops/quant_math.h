// Fixed-point arithmetic of TFLite's quantized reference kernels (tensorflow/lite/kernels/
// internal/common.h, quantization_util.cc) and of gemmlowp's fixedpoint.h, which those
// kernels use for softmax. Every function reproduces the reference bit for bit: the
// quantized CPU kernels are the oracle the NPU devices are compared against. Neutral
// ground: the cpu device's kernels and the rknpu device's lowering both use it
// (backend/cpu/kernels/quant_math.h adds the cpu's own helpers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "tessera/types.h"

namespace tessera::q {

// Hybrid operators (f32 activations, int8 weights) with TFLite's asymmetric on-the-fly input
// quantization sum w * (code - zero point) in int32: at most INT32_MAX / (127 * 255)
// products (weights in [-127, 127], code - zero point in [-255, 255]) fit.
constexpr int64_t kAsymmetricHybridMaxDepth = 66311;

// A real multiplier as a Q31 significand and a power-of-two exponent:
// real ~= multiplier * 2^(shift - 31) (TFLite QuantizeMultiplier).
struct Multiplier {
  int32_t multiplier = 0;
  int shift = 0;
};

inline Multiplier quantize_multiplier(double real) {
  Multiplier m;
  if (real == 0.0) return m;
  int shift = 0;
  const double frac = std::frexp(real, &shift);
  int64_t fixed = static_cast<int64_t>(std::round(frac * static_cast<double>(int64_t{1} << 31)));
  if (fixed == (int64_t{1} << 31)) {
    fixed /= 2;
    ++shift;
  }
  if (shift < -31) {  // too small to represent: zero
    shift = 0;
    fixed = 0;
  }
  if (shift > 30) {  // TFLite saturates multipliers above 2^30
    shift = 30;
    fixed = (int64_t{1} << 31) - 1;
  }
  m.multiplier = static_cast<int32_t>(fixed);
  m.shift = shift;
  return m;
}

// gemmlowp SaturatingRoundingDoublingHighMul: (a * b * 2) >> 32, rounded half away from 0.
inline int32_t srdhm(int32_t a, int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  const int32_t high = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
  return overflow ? std::numeric_limits<int32_t>::max() : high;
}

// gemmlowp RoundingDivideByPOT: x / 2^exponent, rounded half away from zero.
inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// TFLite MultiplyByQuantizedMultiplier (the default double-rounding form).
inline int32_t multiply(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  return rounding_divide_by_pot(srdhm(static_cast<int32_t>(static_cast<uint32_t>(x) << left), multiplier), right);
}
inline int32_t multiply(int32_t x, const Multiplier& m) { return multiply(x, m.multiplier, m.shift); }

// The same product rounded once, as TFLite's builtin per-channel CONV_2D computes it (its
// GEMM runs in ruy, whose MultiplyByQuantizedMultiplier is
// (int64(x) * multiplier + 2^(total_shift - 1)) >> total_shift, total_shift = 31 - shift):
// x * multiplier * 2^(shift - 31) rounded half up (towards +infinity), where multiply()
// rounds twice (the high multiply, then the right shift, whose ties go away from zero).
// The two differ by one on values whose product lies near a rounding boundary, and on
// negative ties. Saturates to int32 (only multipliers above 1 can get there).
inline int32_t multiply_single_round(int32_t x, int32_t multiplier, int shift) {
  const int total_shift = 31 - shift;  // quantize_multiplier keeps shift in [-31, 30]
  const int64_t round = int64_t{1} << (total_shift - 1);
  const int64_t r = (static_cast<int64_t>(x) * multiplier + round) >> total_shift;
  return static_cast<int32_t>(std::clamp<int64_t>(r, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}
inline int32_t multiply_single_round(int32_t x, const Multiplier& m) {
  return multiply_single_round(x, m.multiplier, m.shift);
}

// The value range of a quantized dtype (u8, i8, i16; i32 for TFLite's int32 QUANTIZE).
inline int32_t qmin(DType t) {
  switch (t) {
    case DType::u8: return 0;
    case DType::i8: return -128;
    case DType::i32: return std::numeric_limits<int32_t>::min();
    default: return -32768;
  }
}
inline int32_t qmax(DType t) {
  switch (t) {
    case DType::u8: return 255;
    case DType::i8: return 127;
    case DType::i32: return std::numeric_limits<int32_t>::max();
    default: return 32767;
  }
}

// Quantized clamp range of a fused activation on an output with (scale, zero_point),
// as TFLite's CalculateActivationRangeQuantized.
struct Range {
  int32_t lo, hi;
};
inline Range activation_range(const std::string& act, DType t, float scale, int32_t zp) {
  auto quant = [&](float x) { return zp + static_cast<int32_t>(std::round(x / scale)); };
  int32_t lo = qmin(t), hi = qmax(t);
  if (act == "relu") {
    lo = std::max(lo, quant(0.0f));
  } else if (act == "relu6") {
    lo = std::max(lo, quant(0.0f));
    hi = std::min(hi, quant(6.0f));
  } else if (act == "relu_n1_to_1") {
    lo = std::max(lo, quant(-1.0f));
    hi = std::min(hi, quant(1.0f));
  }
  return {lo, hi};
}

// Loads element i of a u8 / i8 / i16 / i32 buffer as int32.
inline int32_t load(const uint8_t* p, DType t, int64_t i) {
  switch (t) {
    case DType::u8: return p[i];
    case DType::i8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::i32: return reinterpret_cast<const int32_t*>(p)[i];
    default: return reinterpret_cast<const int16_t*>(p)[i];
  }
}
// Stores a value already clamped to the dtype's range.
inline void store(uint8_t* p, DType t, int64_t i, int32_t v) {
  switch (t) {
    case DType::u8: p[i] = static_cast<uint8_t>(v); break;
    case DType::i8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::i32: reinterpret_cast<int32_t*>(p)[i] = v; break;
    default: reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
  }
}
inline int32_t clamp(int32_t v, int32_t lo, int32_t hi) { return std::min(std::max(v, lo), hi); }

// TFLite's QUANTIZE of an integer tensor (Requantize): the input scale over the output's as
// a quantized multiplier, applied to code - zi, plus zo, clamped to the output dtype. For
// 8-bit inputs the cpu kernel tabulates it; the rknpu device holds the same table.
struct Requantize {
  Multiplier m;
  int32_t zi = 0, zo = 0;
  DType to = DType::i8;
  int32_t code(int32_t v) const { return clamp(multiply(v - zi, m) + zo, qmin(to), qmax(to)); }
};
inline Requantize requantize_params(float si, int32_t zi, float so, int32_t zo, DType to) {
  return Requantize{quantize_multiplier(static_cast<double>(si) / static_cast<double>(so)), zi, zo, to};
}

// TFLite's 8-bit LUT activations (activations.cc LUTPopulate, used by int8 / uint8
// LOGISTIC and TANH): the output code of input code v, computed in float as TFLite does
// (dequantize, f, divide by the output scale, round, add the zero point, clamp).
inline int32_t lut_unary_code(float (*f)(float), float si, int32_t zi, float so, int32_t zo, DType t, int32_t v) {
  const float real = si * static_cast<float>(v - zi);
  const float rescaled = std::round(f(real) * (1 / so));
  const int32_t quantized = static_cast<int32_t>(rescaled + static_cast<float>(zo));
  return clamp(quantized, qmin(t), qmax(t));
}
// TFLite's LOGISTIC and TANH as that LUT's functions (float).
inline float logistic_f(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float tanh_f(float x) { return std::tanh(x); }

// TFLite's quantized MUL (mul.cc: the real multiplier s1 * s2 / so in float, then
// QuantizeMultiplier; the product of the operands less their zero points rescaled, the
// output zero point added, clamped to the fused activation's range).
struct MulRescale {
  Multiplier m;
  int32_t z1 = 0, z2 = 0, zo = 0;
  Range r{0, 0};
  int32_t code(int32_t a, int32_t b) const;
};

// TFLite's quantized ADD / SUB (add.cc, sub.cc, general scales): both operands, less their
// zero points, are shifted left (by 20 for 8-bit operands, 15 for int16 ones) and rescaled
// to units of twice the larger input scale with Q31 multipliers, summed (or subtracted) and
// rescaled to the output, which adds its zero point. The caller clamps to the activation
// range.
struct AddRescale {
  static constexpr int kLeftShift = 20;       // add.cc: left_shift for uint8 / int8
  static constexpr int kLeftShiftInt16 = 15;  // add.cc / sub.cc: left_shift for int16
  Multiplier m1, m2, mo;
  int32_t z1 = 0, z2 = 0, zo = 0;
  int left_shift = kLeftShift;
};
inline AddRescale add_rescale(float s1, int32_t z1, float s2, int32_t z2, float so, int32_t zo,
                              int left_shift = AddRescale::kLeftShift) {
  const double twice_max = static_cast<double>(2 * std::max(s1, s2));
  return {quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
          quantize_multiplier(twice_max / static_cast<double>((1 << left_shift) * so)), z1, z2, zo, left_shift};
}
inline int32_t add_codes(const AddRescale& p, int32_t a, int32_t b, bool subtract = false) {
  const int32_t v1 = multiply((a - p.z1) * (1 << p.left_shift), p.m1);
  const int32_t v2 = multiply((b - p.z2) * (1 << p.left_shift), p.m2);
  return multiply(subtract ? v1 - v2 : v1 + v2, p.mo) + p.zo;
}

// TFLite MultiplyByQuantizedMultiplier for an int64 accumulator (common.h, the int16x8
// convolutions): the Q31 multiplier is first rounded to Q15, then x * m15 is shifted right
// by 15 - shift with one rounding (half up). x must lie in [-2^47, 2^47).
inline int32_t multiply_int64(int64_t x, int32_t multiplier, int shift) {
  const int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - shift;
  const int64_t round = int64_t{1} << (total_shift - 1);
  const int64_t r = (x * reduced + round) >> total_shift;
  return static_cast<int32_t>(std::clamp<int64_t>(r, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}
inline int32_t multiply_int64(int64_t x, const Multiplier& m) { return multiply_int64(x, m.multiplier, m.shift); }

// ---- gemmlowp fixed point (int32 raw values with a number of integer bits) ----
namespace fp {

// SaturatingRoundingMultiplyByPOT with a positive exponent: saturating left shift.
inline int32_t saturating_shift_left(int32_t x, int exponent) {
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}
// Rescale from `src_bits` to `dst_bits` integer bits (gemmlowp Rescale).
inline int32_t rescale(int32_t raw, int src_bits, int dst_bits) {
  int e = src_bits - dst_bits;
  if (e > 0) return saturating_shift_left(raw, e);
  if (e < 0) return rounding_divide_by_pot(raw, -e);
  return raw;
}

// TFLite GetInvSqrtQuantizedMultiplierExp with reverse_shift -1 (quantization_util.h):
// 1 / sqrt(x) for x >= 1 as a Q31 multiplier and a left shift, by five Newton-Raphson
// steps in Q3.28 from x = 1; x <= 1 gives (INT32_MAX, 0).
inline Multiplier inv_sqrt_multiplier_exp(int32_t x) {
  if (x <= 1) return {std::numeric_limits<int32_t>::max(), 0};
  int shift = 11;
  while (x >= (1 << 29)) {
    x /= 4;
    ++shift;
  }
  int lz = 0;  // leading zeros of x (x > 0)
  for (uint32_t v = static_cast<uint32_t>(x); !(v & 0x80000000u); v <<= 1) ++lz;
  const int pairs = (lz - 1) / 2 - 1;
  shift -= pairs;
  x <<= 2 * pairs;
  const int32_t input = x >> 1;                          // F3
  const int32_t half_input = rounding_divide_by_pot(input, 1);
  const int32_t half_three = (1 << 28) + (1 << 27);      // 1.5 in F3
  int32_t r = 1 << 28;                                   // F3 one
  for (int i = 0; i < 5; ++i) {
    const int32_t r3 = rescale(srdhm(srdhm(r, r), r), 9, 3);
    r = rescale(srdhm(half_three, r) - srdhm(half_input, r3), 6, 3);
  }
  r = srdhm(r, 1518500250);  // sqrt(2) / 2 in F0
  if (shift < 0) {
    r = static_cast<int32_t>(static_cast<uint32_t>(r) << -shift);
    shift = 0;
  }
  return {r, -shift};
}

// ---- int32 gemmlowp fixed point for TFLite's quantized LOG_SOFTMAX ----
// Additions and subtractions of raw values wrap, as gemmlowp's; products are srdhm.
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
inline int32_t wrap_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
inline int32_t saturate64(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}
// RoundingHalfSum: (a + b) / 2, rounded half away from zero.
inline int32_t rounding_half_sum(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + b;
  return static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// exp(a) for a in [-1/4, 0), Q0.31 in and out: a Taylor expansion around -1/8.
inline int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
  constexpr int32_t kExpMinusOneEighth = 1895147668, kOneThird = 715827883;
  const int32_t x = wrap_add(a, 1 << 28);  // a + 1/8
  const int32_t x2 = srdhm(x, x), x3 = srdhm(x2, x), x4 = srdhm(x2, x2);
  const int32_t x4_over_4 = rounding_divide_by_pot(x4, 2);
  const int32_t poly = rounding_divide_by_pot(wrap_add(srdhm(wrap_add(x4_over_4, x3), kOneThird), x2), 1);
  return wrap_add(kExpMinusOneEighth, srdhm(kExpMinusOneEighth, wrap_add(x, poly)));
}

// exp(a) for a <= 0 held with `int_bits` integer bits (at most 5 here); Q0.31 out.
inline int32_t exp_on_negative_values(int32_t a, int int_bits) {
  const int frac_bits = 31 - int_bits;
  const int32_t one_quarter = int32_t{1} << (frac_bits - 2);
  const int32_t a_mod_quarter_minus_one_quarter = wrap_sub(a & (one_quarter - 1), one_quarter);
  int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(
      rescale(a_mod_quarter_minus_one_quarter, int_bits, 0));
  const int32_t remainder = wrap_sub(a_mod_quarter_minus_one_quarter, a);
  // exp(-2^k) for k = -2..4, applied for each set bit of the remainder.
  constexpr struct {
    int exponent;
    int32_t multiplier;
  } kSteps[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                {2, 39332535},    {3, 720401},       {4, 242}};
  for (const auto& st : kSteps)
    if (int_bits > st.exponent && (remainder & (int32_t{1} << (frac_bits + st.exponent))))
      result = srdhm(result, st.multiplier);
  if (a == 0) result = std::numeric_limits<int32_t>::max();
  return result;
}

// 1 / (1 + a) for a in [0, 1), Q0.31 in and out (three Newton-Raphson steps in Q2.29).
inline int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t half_denominator = rounding_half_sum(a, std::numeric_limits<int32_t>::max());
  constexpr int32_t k48Over17 = 1515870810, kMinus32Over17 = -1010580540;  // Q2.29
  int32_t x = wrap_add(k48Over17, srdhm(half_denominator, kMinus32Over17));
  for (int i = 0; i < 3; ++i) {
    const int32_t one_minus_hx = wrap_sub(int32_t{1} << 29, srdhm(half_denominator, x));
    x = wrap_add(x, rescale(srdhm(x, one_minus_hx), 4, 2));
  }
  return rescale(x, 1, 0);  // x / 2 read as Q1.30, rescaled to Q0.31
}

// log(x) for x >= 1 held with `in_bits` integer bits, as a raw value with `out_bits`
// integer bits (TFLite's log_x_for_x_greater_than_or_equal_to_1: x = 2^z r with r in
// [sqrt(1/2), sqrt(2)) about 2^(-1/4), and a rational approximation of log r).
inline int32_t log_x_for_x_greater_than_or_equal_to_1(int32_t x, int in_bits, int out_bits) {
  const int accum_bits = out_bits + 1;
  constexpr int32_t kLog2 = 1488522236, kSqrtSqrtHalf = 1805811301, kSqrtHalf = 1518500250, kOneQuarter = 536870912;
  constexpr int32_t kAlphaN = 117049297, kAlphaD = 127690142, kAlphaI = 1057819769, kAlphaF = 638450708;
  const int32_t shifted_quarter = rescale(kOneQuarter, 0, accum_bits);
  auto leading_zeros = [](uint32_t v) {
    int n = 0;
    for (; n < 32 && !(v & 0x80000000u); ++n) v <<= 1;
    return n;
  };
  const int za_headroom_plus_1 = leading_zeros(static_cast<uint32_t>(x));
  const int32_t ra_tmp = saturating_shift_left(x, za_headroom_plus_1 - 1);
  const int32_t ra = saturating_shift_left(srdhm(ra_tmp, kSqrtHalf), 1);
  const int32_t za_pow2_adj =
      saturate64(int64_t{saturating_shift_left(in_bits - za_headroom_plus_1, 31 - accum_bits)} + shifted_quarter);
  const int32_t zb = srdhm(x, kSqrtHalf);
  const int zb_headroom = leading_zeros(static_cast<uint32_t>(zb)) - 1;
  const int32_t rb = saturating_shift_left(x, zb_headroom);
  const int32_t zb_pow2_adj =
      saturate64(int64_t{saturating_shift_left(in_bits - zb_headroom, 31 - accum_bits)} - shifted_quarter);
  const int32_t r = std::min(ra, rb);
  const int32_t z_pow2_adj = std::max(za_pow2_adj, zb_pow2_adj);
  const int32_t p = rounding_half_sum(r, kSqrtSqrtHalf);
  int32_t qv = wrap_sub(r, kSqrtSqrtHalf);
  qv = wrap_add(qv, qv);
  const int32_t common_sq = srdhm(qv, qv);
  const int32_t num = wrap_add(srdhm(qv, r), srdhm(srdhm(qv, common_sq), kAlphaN));
  const int32_t denom_minus_one =
      wrap_add(srdhm(p, wrap_add(wrap_add(kAlphaI, qv), srdhm(kAlphaD, common_sq))), srdhm(kAlphaF, qv));
  const int32_t recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one);
  const int32_t num_scaled = rescale(num, 0, accum_bits);
  return rescale(wrap_add(srdhm(z_pow2_adj, kLog2), srdhm(num_scaled, recip_denom)), accum_bits, out_bits);
}
}  // namespace fp
inline int32_t MulRescale::code(int32_t a, int32_t b) const { return clamp(multiply((a - z1) * (b - z2), m) + zo, r.lo, r.hi); }
inline MulRescale mul_rescale(const std::string& act, float s1, int32_t z1, float s2, int32_t z2, float so, int32_t zo, DType t) {
  return {quantize_multiplier(static_cast<double>(s1 * s2 / so)), z1, z2, zo, activation_range(act, t, so, zo)};
}

// TFLite's quantized HARD_SWISH (reference_ops::HardSwish with HardSwishParams from
// activations.cc): int16 fixed point with a "reluish" ramp. The output code is a function of
// the input code alone: the cpu kernel runs it per element, the rknpu device holds it as a
// lookup table.
namespace hs {
inline int16_t srdhm16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  const int32_t ab = static_cast<int32_t>(a) * b;
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}
inline int16_t sdhm16(int16_t a, int16_t b) {  // SaturatingDoublingHighMul: no rounding
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((static_cast<int32_t>(a) * b) / (1 << 15));
}
inline int16_t rdbpot16(int16_t x, int e) {
  const int16_t mask = static_cast<int16_t>((1 << e) - 1);
  const int16_t rem = static_cast<int16_t>(x & mask);
  const int16_t th = static_cast<int16_t>((mask >> 1) + (x < 0 ? 1 : 0));
  return static_cast<int16_t>((x >> e) + (rem > th ? 1 : 0));
}
inline int16_t sat_shl16(int16_t x, int e) {
  const int32_t v = static_cast<int32_t>(x) * (1 << e);
  return static_cast<int16_t>(std::clamp<int32_t>(v, -32768, 32767));
}
inline int16_t downscale_to_i16(int32_t m) {  // DownScaleInt32ToInt16Multiplier
  constexpr int32_t kRounding = 1 << 15;
  if (m >= std::numeric_limits<int32_t>::max() - kRounding) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((m + kRounding) >> 16);
}
}  // namespace hs
struct HardSwish {
  Multiplier om, rm;        // output and reluish multipliers (32-bit, as quantized)
  int16_t om16 = 0, rm16 = 0;
  int32_t zi = 0, zo = 0;
  DType t = DType::i8;
  bool ok() const { return om.shift <= 0; }  // TFLite's kernel needs the output exponent <= 0
  int32_t code(int32_t v) const {
    const int16_t in = static_cast<int16_t>(v - zi);
    const int16_t hires = static_cast<int16_t>(in * (1 << 7));
    const int16_t pre_out = hs::srdhm16(hires, om16);
    int16_t reluish = hires;
    if (rm.shift > 0) reluish = hs::sat_shl16(reluish, rm.shift - 1);
    reluish = hs::srdhm16(reluish, rm16);
    if (rm.shift > 0) reluish = hs::sat_shl16(reluish, 1);
    if (rm.shift < 0) reluish = hs::rdbpot16(reluish, -rm.shift);
    reluish = static_cast<int16_t>((reluish + (1 << 15)) >> 1);
    const int16_t pre_shift = hs::sdhm16(reluish, pre_out);
    const int32_t out = hs::rdbpot16(pre_shift, -om.shift) + zo;
    return clamp(out, qmin(t), qmax(t));
  }
};
inline HardSwish hard_swish_params(float si, int32_t zi, float so, int32_t zo, DType t) {
  const float hires_input_scale = (1.0f / 128.0f) * si;
  const float reluish_scale = 3.0f / 32768.0f;  // activations.cc: "3.0f / 32768.0f"
  HardSwish p;
  p.om = quantize_multiplier(hires_input_scale / so);
  p.rm = quantize_multiplier(hires_input_scale / reluish_scale);
  p.om16 = hs::downscale_to_i16(p.om.multiplier);
  p.rm16 = hs::downscale_to_i16(p.rm.multiplier);
  p.zi = zi;
  p.zo = zo;
  p.t = t;
  return p;
}
}  // namespace tessera::q
