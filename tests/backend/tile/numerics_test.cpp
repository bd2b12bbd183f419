// The matrix engine's numerics: operand truncation per fidelity and accumulation modes,
// against a reference computed in double from the documented rules.
#include "backend/tile/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace tessera::tile
