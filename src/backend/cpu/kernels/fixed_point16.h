// gemmlowp's fixed-point logistic and tanh on int16 raw values (fixedpoint.h), which the
// TFLite interpreter's integer LSTM applies to its gates (tensor_utils::ApplySigmoid on
// Q3.12, ApplyTanh on Q(n).(15-n)); results are Q0.15. Every step keeps gemmlowp's int16
// semantics bit for bit: additions and negations wrap (they are not saturating, except
// where gemmlowp says so), products are SaturatingRoundingDoublingHighMul, constants are
// gemmlowp's Q31 constants rounded to 16 bits (RescaleConstantInitializer).
//
// A value here is a raw int16 plus a number of integer bits known to the caller; the
// functions take that number as an argument where gemmlowp takes a template parameter.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu::fx16 {

using raw = int16_t;
constexpr int kBits = 16;

inline raw wrap(int32_t v) { return static_cast<raw>(static_cast<uint16_t>(static_cast<uint32_t>(v))); }
inline raw add(raw a, raw b) { return wrap(int32_t{a} + b); }
inline raw sub(raw a, raw b) { return wrap(int32_t{a} - b); }
inline raw neg(raw a) { return wrap(-int32_t{a}); }

// SaturatingRoundingDoublingHighMul for int16: (a * b * 2) >> 16, rounded half away from 0.
inline raw mul(raw a, raw b) {
  if (a == b && a == INT16_MIN) return INT16_MAX;
  const int32_t ab = int32_t{a} * int32_t{b};
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<raw>((ab + nudge) / (1 << 15));
}

// RoundingDivideByPOT on int16: x / 2^e rounded half away from zero.
inline raw rounding_divide_by_pot(raw x, int e) {
  const int32_t mask = (1 << e) - 1;
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<raw>((x >> e) + (remainder > threshold ? 1 : 0));
}

// SaturatingRoundingMultiplyByPOT: a saturating left shift for e > 0, a rounding right
// shift for e < 0.
inline raw multiply_by_pot(raw x, int e) {
  if (e == 0) return x;
  if (e < 0) return rounding_divide_by_pot(x, -e);
  const int32_t threshold = (1 << (kBits - 1 - e)) - 1;
  if (x > threshold) return INT16_MAX;
  if (x < -threshold) return INT16_MIN;
  return wrap(int32_t{x} * (1 << e));
}

// RoundingHalfSum: (a + b) / 2 rounded half away from zero.
inline raw rounding_half_sum(raw a, raw b) {
  const int32_t sum = int32_t{a} + b;
  return static_cast<raw>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// gemmlowp's constants are Q31 raw values; for int16 they are rounded by 16 bits.
inline raw constant(int32_t q31) { return static_cast<raw>(q::rounding_divide_by_pot(q31, 32 - kBits)); }

// One in a format with `int_bits` integer bits (Q0.15: the largest value, 32767).
inline raw one(int int_bits) { return int_bits == 0 ? INT16_MAX : static_cast<raw>(1 << (kBits - 1 - int_bits)); }
// 2^exponent in a format with `int_bits` integer bits.
inline raw pot(int int_bits, int exponent) { return static_cast<raw>(1 << (kBits - 1 - int_bits + exponent)); }

// exp(a) for a in [-1/4, 0), Q0.15 in and out (a Taylor expansion around -1/8).
inline raw exp_on_interval_between_negative_one_quarter_and_0_excl(raw a) {
  const raw constant_term = constant(1895147668);      // exp(-1/8)
  const raw constant_1_over_3 = constant(715827883);   // 1/3
  const raw x = add(a, pot(0, -3));
  const raw x2 = mul(x, x);
  const raw x3 = mul(x2, x);
  const raw x4 = mul(x2, x2);
  const raw x4_over_4 = multiply_by_pot(x4, -2);
  const raw poly = multiply_by_pot(add(mul(add(x4_over_4, x3), constant_1_over_3), x2), -1);
  const int32_t sum = int32_t{constant_term} + mul(constant_term, add(x, poly));  // AddSaturatingIf16Bit
  return static_cast<raw>(std::clamp<int32_t>(sum, INT16_MIN, INT16_MAX));
}

// exp(a) for a <= 0 with `int_bits` integer bits; Q0.15 out.
inline raw exp_on_negative_values(raw a, int int_bits) {
  const int frac_bits = kBits - 1 - int_bits;
  const raw one_quarter = pot(int_bits, -2);
  const raw mask = sub(one_quarter, 1);
  const raw a_mod_quarter_minus_one_quarter = sub(static_cast<raw>(a & mask), one_quarter);
  raw result = exp_on_interval_between_negative_one_quarter_and_0_excl(
      multiply_by_pot(a_mod_quarter_minus_one_quarter, int_bits));  // Rescale to 0 integer bits
  const raw remainder = sub(a_mod_quarter_minus_one_quarter, a);
  // exp(-2^k) for k = -2..4, gemmlowp's barrel shifter.
  struct Step {
    int exponent;
    int32_t multiplier;
  };
  constexpr Step kSteps[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                             {2, 39332535},    {3, 720401},       {4, 242}};
  for (const Step& s : kSteps) {
    if (int_bits <= s.exponent) continue;
    const int shift = frac_bits + s.exponent;
    if (remainder & wrap(1 << shift)) result = mul(result, constant(s.multiplier));
  }
  if (int_bits > 5) {
    const raw clamp = constant(-(1 << (36 - int_bits)));  // -32
    if (a < clamp) result = 0;
  }
  if (a == 0) result = one(0);
  return result;
}

// (1 - a) / (1 + a) for a in (0, 1), Q0.15 (Newton-Raphson division).
inline raw one_minus_x_over_one_plus_x_for_x_in_0_1(raw a) {
  const raw half_denominator = rounding_half_sum(a, one(0));
  const raw c48_17 = constant(1515870810), c_neg32_17 = constant(-1010580540);  // Q2.13
  raw x = add(c48_17, mul(half_denominator, c_neg32_17));
  for (int i = 0; i < 3; ++i) {
    const raw one_minus_hx = sub(one(2), mul(half_denominator, x));
    x = add(x, multiply_by_pot(mul(x, one_minus_hx), 2));
  }
  return multiply_by_pot(sub(x, one(2)), 2);
}

// 1 / (1 + a) for a in (0, 1), Q0.15.
inline raw one_over_one_plus_x_for_x_in_0_1(raw a) {
  const raw half_denominator = rounding_half_sum(a, one(0));
  const raw c48_17 = constant(1515870810), c_neg32_17 = constant(-1010580540);
  raw x = add(c48_17, mul(half_denominator, c_neg32_17));
  for (int i = 0; i < 3; ++i) {
    const raw one_minus_hx = sub(one(2), mul(half_denominator, x));
    x = add(x, multiply_by_pot(mul(x, one_minus_hx), 2));
  }
  return multiply_by_pot(x, 1);  // x / 2 in Q1.14, rescaled to Q0.15
}

// logistic(a), a with `int_bits` integer bits; Q0.15 out.
inline raw logistic(raw a, int int_bits) {
  if (a == 0) return constant(1 << 30);  // 1/2
  const bool positive = a > 0;
  const raw abs_a = positive ? a : neg(a);
  const raw if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(neg(abs_a), int_bits));
  return positive ? if_positive : sub(one(0), if_positive);
}

// tanh(a), a with `int_bits` integer bits; Q0.15 out.
inline raw tanh(raw a, int int_bits) {
  if (a == 0) return 0;
  const bool negative = a < 0;
  const raw n = negative ? a : neg(a);
  // exp(2n): the same raw value read with one more integer bit.
  const raw t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, int_bits + 1));
  return negative ? neg(t) : t;
}

}  // namespace tessera::cpu::fx16
