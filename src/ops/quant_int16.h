// TFLite's 16x8 quantization (int16 activations, zero point 0) for LOGISTIC and TANH, as the
// interpreter's builtin kernels run them (activations.cc SigmoidPrepare / TanhPrepare and
// SigmoidEval / TanhEval):
//  - an input scale of 2^-12 (within TFLite's CheckedLog2 tolerance), the input read as
//    Q3.12, and for TANH also 2^-11 (Q4.11, doubled with saturation to Q3.12): gemmlowp's
//    fixed-point logistic / tanh on int16 (the cpu's fixed_point16.h);
//  - any other input scale: the input rescaled to units of 1/(3·4096) (an integer multiplier
//    and a rounding right shift found by doubling), then linear interpolation in TFLite's
//    256-entry table of sigmoid(i/24) in 0.16 format (reference_integer_ops::Logistic /
//    Tanh, which the builtin kernel calls for these scales).
// The output is Q0.15: scale 1/32768, zero point 0.
// SOFTMAX (activations.cc SoftmaxPrepare / reference_ops::SoftmaxInt16): differences to the
// row maximum rescaled to [-65535, 0] ~ [-10, 0], exp through a 513-entry int16 table, the
// sum's reciprocal through a table of 1/(1 + x) (both interpolated, LUTPopulate's tables).
// Neutral ground (src/ops): the importer
// validates the parameters with these functions, the cpu kernel computes with them.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ops/quant_math.h"

namespace tessera::q::i16 {

// TFLite's sigmoid_table_uint16 (kernels/internal/common.h): sigmoid(i/24) in 0.16 format
// for i = 0..255, the values as TFLite lists them (not all are round(65536·sigmoid(i/24)),
// so they cannot be recomputed).
inline constexpr uint16_t kSigmoidTable[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535};

// TFLite's CheckedLog2 (quantization_util.h): log2(x) in float, rounded; true when the
// fractional part is below 1e-3 (x a power of two, near enough).
inline bool checked_log2(float x, int* log2_result) {
  const float x_log2 = std::log(x) * (1.0f / std::log(2.0f));
  const float rounded = std::round(x_log2);
  *log2_result = static_cast<int>(rounded);
  return std::fabs(x_log2 - rounded) < 1e-3f;
}

// TFLite's shift-only int16 ADD / SUB (add.cc, sub.cc), taken instead of the general-scale
// kernel when the options' pot_scale_int16 is set (its default) and both operand scales and
// the output scale are powers of two as CheckedLog2 sees them. Each operand's shift is
// log2(its scale) - log2(the output's); Prepare demands both <= 0 and one of them 0: the
// other operand is divided by 2^-shift (gemmlowp's RoundingDivideByPOT in int16), then the
// two codes are added (or subtracted) with int16 saturation and clamped to the activation.
struct PotAddSub {
  int shift1 = 0, shift2 = 0;  // <= 0, one of them 0
};
inline bool pot_add_sub_applies(bool pot_option, float s1, float s2, float so) {
  int l = 0;
  return pot_option && checked_log2(s1, &l) && checked_log2(s2, &l) && checked_log2(so, &l);
}
// The shifts, or the reason Prepare refuses the scales ("" when they are taken).
inline std::string pot_add_sub(float s1, float s2, float so, PotAddSub* p) {
  int l1 = 0, l2 = 0, lo = 0;
  checked_log2(s1, &l1), checked_log2(s2, &l2), checked_log2(so, &lo);
  p->shift1 = l1 - lo;
  p->shift2 = l2 - lo;
  if (p->shift1 > 0 || p->shift2 > 0 || (p->shift1 != 0 && p->shift2 != 0))
    return "power-of-two scales 2^" + std::to_string(l1) + " and 2^" + std::to_string(l2) + " with output 2^" +
           std::to_string(lo) + ": TFLite's shift-only kernel needs one operand at the output's scale and the other at a scale no larger";
  if (p->shift1 < -31 || p->shift2 < -31)
    return "an operand scale 2^" + std::to_string(std::min(l1, l2)) + " is more than 2^31 below the output's 2^" +
           std::to_string(lo) + " (gemmlowp's RoundingDivideByPOT takes exponents up to 31)";
  return "";
}
// gemmlowp's RoundingDivideByPOT instantiated for int16: mask, remainder and threshold are
// int16 values (so exponents from 16 on give what that arithmetic gives).
inline int16_t rounding_divide_by_pot_i16(int16_t x, int exponent) {
  const auto mask = static_cast<int16_t>((1ll << exponent) - 1);
  const auto remainder = static_cast<int16_t>(x & mask);
  const auto threshold = static_cast<int16_t>((mask >> 1) + (x < 0 ? 1 : 0));
  return static_cast<int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}
inline int16_t pot_add_sub_code(const PotAddSub& p, int16_t a, int16_t b, bool subtract) {
  // The operand with shift 0 is taken as is; the other one is divided.
  const int32_t x1 = p.shift1 == 0 ? a : rounding_divide_by_pot_i16(a, -p.shift1);
  const int32_t x2 = p.shift2 == 0 ? b : rounding_divide_by_pot_i16(b, -p.shift2);
  const int32_t r = subtract ? x1 - x2 : x1 + x2;
  return static_cast<int16_t>(r < -32768 ? -32768 : r > 32767 ? 32767 : r);
}

// The output scale TFLite requires of int16 LOGISTIC and TANH (Q0.15).
inline constexpr double kUnitOutputScale = 1.0 / 32768;

// How an int16 LOGISTIC / TANH reads its input (from the input scale, as Prepare does).
struct UnitActivation {
  bool pot = false;    // power-of-two scale: the gemmlowp path; `left_shift` is 0 (or 1, TANH)
  int32_t multiplier = 0;  // otherwise: v = (x · multiplier + round) >> left_shift
  int left_shift = 0;
};

// Prepare's parameters for input scale `s`; "" or the reason TFLite's arithmetic cannot take
// it (a multiplier below 1, or one whose products overflow int32).
inline std::string unit_activation(float s, bool is_tanh, UnitActivation* p) {
  if (!(s > 0) || !std::isfinite(s)) return "input scale must be positive and finite";
  constexpr int kInputIntegerBits = 3;  // activations.cc: Q3.12 inputs
  int log2 = 0;
  const bool pot = checked_log2(s, &log2);
  const int shift = (15 - kInputIntegerBits) + log2;
  if (pot && (shift == 0 || (is_tanh && shift == 1))) {
    *p = {true, 0, shift};
    return "";
  }
  // Rescale to 1/(3·4096): doubled until above 32767/2, at most 31 times.
  double m = static_cast<double>(s) * 4096.0 * 3.0;
  int ls = 0;
  while (m <= 32767.0 / 2.0 && ls <= 30) {
    ++ls;
    m *= 2.0;
  }
  if (m < 1.0) return "input scale " + std::to_string(s) + " is too small for TFLite's int16 table (multiplier 0)";
  if (m >= 65536.0) return "input scale " + std::to_string(s) + " is too large for TFLite's int16 table (products overflow)";
  *p = {false, static_cast<int32_t>(m), ls};
  return "";
}

// reference_integer_ops::Logistic (int16, multiplier > 0): Q0.15 out.
inline int16_t logistic_lut(int16_t x, const UnitActivation& p) {
  const int32_t round = p.left_shift > 0 ? 1 << (p.left_shift - 1) : 0;
  const int32_t v = (int32_t{x} * p.multiplier + round) >> p.left_shift;
  const uint32_t a = static_cast<uint32_t>(std::abs(v));
  const uint32_t uh = a >> 9;  // the table's step, 1/24, is 512 units of 1/(3·4096)
  uint32_t r;
  if (uh >= 255) {
    r = 0x7FFFu << 10;
  } else {
    const uint32_t ua = kSigmoidTable[uh], ub = kSigmoidTable[uh + 1];
    r = (ua << 9) + (a & 0x1ffu) * (ub - ua);
  }
  r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1;
  return static_cast<int16_t>(r >> 10);
}

// reference_integer_ops::Tanh (int16, multiplier > 0): tanh(x) = 2·sigmoid(2x) − 1, Q0.15 out.
inline int16_t tanh_lut(int16_t x, const UnitActivation& p) {
  const int32_t round = p.left_shift > 0 ? 1 << (p.left_shift - 1) : 0;
  const int32_t v = (int32_t{x} * p.multiplier + round) >> p.left_shift;
  const uint32_t a = static_cast<uint32_t>(std::abs(v));
  const uint32_t uh = a >> 8;  // 2x: the table's step is 256 units
  int32_t r;
  if (uh >= 255) {
    r = 0xFFFF << 8;
  } else {
    const uint32_t ua = kSigmoidTable[uh], ub = kSigmoidTable[uh + 1];
    r = static_cast<int32_t>((ua << 8) + (a & 0xffu) * (ub - ua));
  }
  r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
  return static_cast<int16_t>(r >> 8);
}

// ---- SOFTMAX ----

// An interpolated table of 513 int16 values, as activations.cc fills it (LUTPopulate<int16_t>
// in double): f over the int16 codes read at `in_scale` less `in_zp`, in 512 steps, each
// entry biased by half the interpolation error at the step's midpoint, written at output
// scale 2/65535 (the codes span [-1, 1]); the last entry only gives the last step's slope.
inline constexpr int kLutSteps = 512;
struct Lut16 {
  int16_t v[kLutSteps + 1];
};
template <typename F>
Lut16 make_lut16(double in_scale, int32_t in_zp, F f) {
  constexpr double kRange = 65535.0;  // int16 max - min
  const double lo = in_scale * (-32768 - in_zp), hi = in_scale * (32767 - in_zp);
  const double out_scale = 2.0 / kRange;
  const double out_min = out_scale * -32768, out_max = out_scale * 32767;
  const double step = (hi - lo) / kLutSteps, half_step = step / 2;
  const double inv = 65536.0 / (out_max - out_min);
  auto clamp16 = [](double v) { return static_cast<int16_t>(std::min(std::max(v, -32768.0), 32767.0)); };
  Lut16 t{};
  for (int i = 0; i < kLutSteps; ++i) {
    const double val = f(lo + i * step), mid = f(lo + i * step + half_step), next = f(lo + (i + 1) * step);
    const double sample = std::round(val * inv);
    const double midpoint_interp = std::round((next * inv + std::round(val * inv)) / 2);
    const double bias = std::round((midpoint_interp - std::round(mid * inv)) / 2);
    t.v[i] = clamp16(sample - bias);
  }
  t.v[kLutSteps] = clamp16(std::round(f(hi) * inv));
  return t;
}

// The table value at a symmetric int16 input (512 base values, 7 bits of interpolation).
inline int16_t lut16_lookup(int16_t value, const Lut16& t) {
  const int index = 256 + (value >> 7);
  const int32_t offset = value & 0x7f;
  const int16_t base = t.v[index];
  const int16_t slope = static_cast<int16_t>(t.v[index + 1] - t.v[index]);
  return static_cast<int16_t>(base + ((int32_t{slope} * offset + 64) >> 7));
}

// SoftmaxPrepare's tables: exp over [-10, 0] and 1/(1 + x) over [0, 1], each as LUTPopulate
// spans them: the input scale times the int16 codes less the zero point.
struct SoftmaxLuts {
  Lut16 exp, one_over_one_plus_x;
};
inline SoftmaxLuts softmax_luts() {
  constexpr double kRange = 65535.0;  // int16 max - min
  return {make_lut16(10.0 / kRange, 32767, [](double x) { return std::exp(x); }),
          make_lut16(1.0 / kRange, -32768, [](double x) { return 1.0 / (1.0 + x); })};
}

// The input rescaling: in_scale · beta (a float product) over 10/65535, the differences'
// units, as QuantizeMultiplier makes it; "" or why TFLite's arithmetic cannot take it (a
// difference of up to 65535 shifted left past int32).
inline std::string softmax_rescale(float in_scale, float beta, Multiplier* m) {
  const double real = static_cast<double>(in_scale * beta) / (10.0 / 65535.0);
  // (beta 0, a model without SoftmaxOptions, gives multiplier 0: every row uniform.)
  if (!(real >= 0) || !std::isfinite(real)) return "input scale times beta must be non-negative and finite";
  *m = quantize_multiplier(real);
  if (m->shift > 15)
    return "input scale times beta (" + std::to_string(in_scale * beta) + ") is too large for TFLite's int16 softmax";
  return "";
}

}  // namespace tessera::q::i16
