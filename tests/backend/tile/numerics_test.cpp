// The matrix engine's numerics: operand truncation per fidelity and accumulation modes,
// against a reference computed in double from the documented rules.
#include "backend/tile/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <random>

namespace tessera::tile {
namespace {

TEST(Numerics, KeepSignificantBitsTruncatesTowardZero) {
  EXPECT_EQ(keep_significant_bits(1.0f, 5), 1.0f);
  EXPECT_EQ(keep_significant_bits(1.96875f, 5), 1.9375f);  // 1.11111b -> 1.1111b
  EXPECT_EQ(keep_significant_bits(-1.96875f, 5), -1.9375f);
  EXPECT_EQ(keep_significant_bits(1.96875f, 3), 1.75f);
  EXPECT_EQ(keep_significant_bits(3.0f, 1), 2.0f);
  EXPECT_TRUE(std::isinf(keep_significant_bits(INFINITY, 5)));
}

TEST(Numerics, RoundBf16IsNearestEven) {
  EXPECT_EQ(round_bf16(1.0f + 1.0f / 256), 1.0f);             // halfway, even stays
  EXPECT_EQ(round_bf16(1.0f + 3.0f / 256), 1.0f + 4.0f / 256);  // halfway, odd rounds up
  EXPECT_EQ(round_bf16(1.0f + 1.5f / 256), 1.0f + 2.0f / 256);
}

TEST(Numerics, FidelityNamesParse) {
  EXPECT_EQ(fidelity_from_name("LoFi"), Fidelity::lofi);
  EXPECT_EQ(fidelity_from_name("hifi4"), Fidelity::hifi4);
  EXPECT_FALSE(fidelity_from_name("HiFi5").has_value());
  EXPECT_EQ(fidelity_passes(Fidelity::hifi3), 3);
}

// Reference: sum in double of trunc(a, in0 bits) * trunc(b, in1 bits).
double ref_dot(const std::vector<float>& a, const std::vector<float>& b, int a_bits, int b_bits) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k)
    s += static_cast<double>(keep_significant_bits(a[k], a_bits)) * keep_significant_bits(b[k], b_bits);
  return s;
}

TEST(Numerics, LoFiUsesSevenBitsOfIn0AndFiveOfIn1) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> a(64), b(64);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  MatrixNumerics lofi{Fidelity::lofi, Accumulate::fp32};
  SplitOperand sa = split_in0(a.data(), 64), sb = split_in1(b.data(), 64);
  double want = ref_dot(a, b, 7, 5);
  EXPECT_NEAR(tile_dot(sa, 0, sb, 0, 64, lofi), want, 1e-5 * 64);
  // HiFi2 completes in1 (11 bits), HiFi4 both operands.
  EXPECT_NEAR(tile_dot(sa, 0, sb, 0, 64, {Fidelity::hifi2, Accumulate::fp32}), ref_dot(a, b, 7, 11), 1e-5 * 64);
  double exact = 0;
  for (int k = 0; k < 64; ++k) exact += static_cast<double>(a[k]) * b[k];
  float hifi4 = tile_dot(sa, 0, sb, 0, 64, {Fidelity::hifi4, Accumulate::fp32});
  EXPECT_NEAR(hifi4, ref_dot(a, b, 11, 11), 1e-5 * 64);
  // Each fidelity step gets closer to the exact product on random data.
  EXPECT_LT(std::fabs(hifi4 - exact), std::fabs(tile_dot(sa, 0, sb, 0, 64, lofi) - exact));
}

TEST(Numerics, BlockFloatOperandsAreExactWhereTheNotesSay) {
  // bfp4 magnitudes have 3 bits, bfp8 magnitudes 7 (tile-device.md).
  std::vector<float> bfp4 = {0.75f, -0.5f, 0.875f, 0.125f}, bfp8 = {0.9921875f, -0.5078125f, 0.25f, 0.0078125f};
  std::vector<float> act = {1.5f, -0.25f, 0.375f, 2.0f};  // 3 significant bits
  MatrixNumerics lofi{Fidelity::lofi, Accumulate::fp32};
  auto exact = [](const std::vector<float>& x, const std::vector<float>& y) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * y[i];
    return s;
  };
  // bfp4 as in1 at LoFi: exact.
  EXPECT_EQ(tile_dot(split_in0(act.data(), 4), 0, split_in1(bfp4.data(), 4), 0, 4, lofi), exact(act, bfp4));
  // bfp8 as in0 at LoFi: exact; bfp8 as in1 needs HiFi2.
  EXPECT_EQ(tile_dot(split_in0(bfp8.data(), 4), 0, split_in1(act.data(), 4), 0, 4, lofi), exact(bfp8, act));
  EXPECT_NE(tile_dot(split_in0(act.data(), 4), 0, split_in1(bfp8.data(), 4), 0, 4, lofi), exact(act, bfp8));
  EXPECT_EQ(tile_dot(split_in0(act.data(), 4), 0, split_in1(bfp8.data(), 4), 0, 4, {Fidelity::hifi2, Accumulate::fp32}),
            exact(act, bfp8));
}

TEST(Numerics, Bf16AccumulationRoundsEverySixteenTerms) {
  // 48 terms of 1 + 2^-8 each: float32 keeps 48.1875; bf16 rounding after each chunk of
  // 16 (16.0625 -> 16, 32.0625 -> 32, 48.0625 -> 48) loses every fraction.
  std::vector<float> a(48, 1.0f + 1.0f / 256), b(48, 1.0f);
  SplitOperand sa = split_in0(a.data(), 48), sb = split_in1(b.data(), 48);
  EXPECT_FLOAT_EQ(tile_dot(sa, 0, sb, 0, 48, {Fidelity::hifi4, Accumulate::fp32}), 48.1875f);
  EXPECT_FLOAT_EQ(tile_dot(sa, 0, sb, 0, 48, {Fidelity::hifi4, Accumulate::bf16}), 48.0f);
}

// The requantization against TFLite's integer arithmetic, written here from its
// definition: QuantizeMultiplier of the double multiplier, then gemmlowp's
// SaturatingRoundingDoublingHighMul (nudge, truncating division) and RoundingDivideByPOT
// (two roundings), or ruy's (x * m + 2^(s-1)) >> s (one rounding), in 64/128-bit integers.
struct Q31 {
  int64_t m;
  int shift;
};
Q31 q31_of(double real) {
  int shift;
  double frac = std::frexp(real, &shift);
  int64_t m = static_cast<int64_t>(std::round(frac * 2147483648.0));
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++shift;
  }
  return {m, shift};
}
int64_t tflite_two_roundings(int64_t x, Q31 q) {
  const int left = std::max(q.shift, 0), right = std::max(-q.shift, 0);
  const __int128 ab = static_cast<__int128>(x * (int64_t{1} << left)) * q.m;
  const __int128 nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  const int64_t high = static_cast<int64_t>((ab + nudge) / (int64_t{1} << 31));  // truncates toward zero
  const int64_t mask = (int64_t{1} << right) - 1, remainder = high & mask;
  const int64_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return (high >> right) + (remainder > threshold ? 1 : 0);
}
int64_t tflite_one_rounding(int64_t x, Q31 q) {
  const int total = 31 - q.shift;
  return static_cast<int64_t>((static_cast<__int128>(x) * q.m + (static_cast<__int128>(1) << (total - 1))) >> total);
}

TEST(Numerics, RequantizationEqualsTflitesIntegerArithmetic) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> log2_real(-22.0, 4.0);
  std::uniform_int_distribution<int> bits(1, 24);
  int64_t checked = 0, naive_differ = 0;
  for (int mult = 0; mult < 2000; ++mult) {
    const double real = std::exp2(log2_real(rng));
    const Q31 q = q31_of(real);
    const Requantizer twice = make_requantizer(real, false), once = make_requantizer(real, true);
    ASSERT_EQ(twice.shift, q.shift) << real;
    // The two float32 parts hold the Q31 significand exactly.
    ASSERT_EQ(static_cast<double>(twice.significand) + twice.significand_rest, std::ldexp(static_cast<double>(q.m), -31));
    for (int i = 0; i < 1000; ++i) {
      // Sums of every magnitude below 2^24, both signs.
      const int64_t range = (int64_t{1} << bits(rng)) - 1;
      const int64_t x = std::uniform_int_distribution<int64_t>(-range, range)(rng);
      const float xf = static_cast<float>(x);
      // Compared within +-2^16 (every code lies far inside; beyond, both saturate at the
      // clamp, and float32 no longer holds every integer past 2^24).
      auto clip = [](double v) { return std::clamp(v, -65536.0, 65536.0); };
      ASSERT_EQ(clip(twice.apply(xf)), clip(tflite_two_roundings(x, q))) << "x " << x << " real " << real;
      ASSERT_EQ(clip(once.apply(xf)), clip(tflite_one_rounding(x, q))) << "x " << x << " real " << real;
      // A plain float32 product (24 bits of the multiplier, one rounding of the product)
      // gets some of these wrong: what the two-product is for.
      const int left = std::max(q.shift, 0);
      const float naive_high = std::round(std::ldexp(xf, left) * twice.significand);
      if (clip(std::round(std::ldexp(naive_high, -std::max(-q.shift, 0)))) != clip(tflite_two_roundings(x, q)))
        ++naive_differ;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2000000);
  EXPECT_GT(naive_differ, 0);
  std::printf("requantization: %lld sums equal to the integer arithmetic; a plain float32 product differs on %lld\n",
              static_cast<long long>(checked), static_cast<long long>(naive_differ));
}

TEST(Numerics, RequantizationOfZeroAndTinyMultipliers) {
  EXPECT_EQ(make_requantizer(0.0, false).apply(12345.0f), 0.0f);
  EXPECT_EQ(make_requantizer(std::ldexp(1.0, -40), true).apply(16777215.0f), 0.0f);  // below 2^-31: zero, as TFLite
  // 0.25 = 0.5 x 2^-1: the high multiply gives 6 x 0.5 = 3, and the tie of the final
  // shift (3 / 2) goes away from zero: 2, and -2 for -6.
  EXPECT_EQ(make_requantizer(0.25, false).apply(6.0f), 2.0f);
  EXPECT_EQ(make_requantizer(0.25, false).apply(-6.0f), -2.0f);
  // One rounding, half up: -1.5 -> -1.
  EXPECT_EQ(make_requantizer(0.25, true).apply(-6.0f), -1.0f);
}

}  // namespace
}  // namespace tessera::tile
