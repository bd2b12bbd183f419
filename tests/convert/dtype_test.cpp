// Element casts: f16 / bf16 rounding against double references, every f16 bit pattern,
// AVX2 == reference, integer saturation, the u8 <-> i8 offset and requantization.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convert/dtype.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

using testing::bits_of;
using testing::random_floats;

// Correct rounding of a finite double to a binary format with `mant` fraction bits,
// exponent range [emin, emax], in double arithmetic (exact for these small formats).
double round_to_format(double x, int mant, int emin, int emax) {
  if (x == 0) return x;
  int e = std::ilogb(x);
  if (e < emin) e = emin;  // denormal spacing
  double ulp = std::ldexp(1.0, e - mant);
  double q = std::nearbyint(x / ulp) * ulp;  // ties to even
  double max = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  double mid = max + std::ldexp(1.0, emax - mant - 1);  // halfway to the next binade
  if (std::fabs(x) >= mid) return std::copysign(INFINITY, x);
  return q;
}

TEST(Dtype, F16DecodesEveryBitPatternExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    if (e == 31 && m) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    double want = e == 31 ? INFINITY : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, int(e) - 25);
    if (h & 0x8000) want = -want;
    ASSERT_EQ(f, static_cast<float>(want)) << "f16 0x" << std::hex << h;
    ASSERT_EQ(bits_of(f) >> 31, h >> 15) << h;  // the sign of zero too
  }
}

TEST(Dtype, F32ToF16RoundsToNearestEven) {
  auto v = random_floats(200000, 3, true, -30, 17);
  // Exact ties between neighbouring f16 values, denormal ties, the overflow midpoint.
  v.insert(v.end(), {1.0f + 0.00048828125f, 1.0f + 3 * 0.00048828125f, 65504.0f, 65519.99f, 65520.0f, -65520.0f,
                     std::ldexp(1.0f, -25), std::ldexp(3.0f, -25), std::ldexp(1.0f, -26), 6.1e-5f, 1e-8f});
  for (float x : v) {
    uint16_t h = f32_to_f16(x);
    double want = round_to_format(x, 10, -14, 15);
    ASSERT_EQ(f16_to_f32(h), static_cast<float>(want)) << "x = " << x;
    if (want == 0) {
      ASSERT_EQ(h >> 15, bits_of(x) >> 31) << "sign of zero for " << x;
    }
  }
  EXPECT_EQ(f32_to_f16(std::nanf("")), kF16NaN);
  EXPECT_EQ(f32_to_f16(-std::nanf("")), kF16NaN);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
}

TEST(Dtype, F32ToBf16RoundsToNearestEvenAndNanIs7FC0) {
  auto v = random_floats(200000, 4, true, -140, 127);
  v.insert(v.end(), {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), 3.3895313e38f,
                     std::numeric_limits<float>::max(), 1e-45f});
  for (float x : v) {
    double want = round_to_format(x, 7, -126, 127);
    ASSERT_EQ(bf16_to_f32(f32_to_bf16(x)), static_cast<float>(want)) << "x = " << x;
  }
  // tile-device.md: NaN becomes 0x7FC0.
  EXPECT_EQ(f32_to_bf16(std::nanf("")), 0x7FC0);
  EXPECT_EQ(f32_to_bf16(-std::nanf("1")), 0x7FC0);
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
}

TEST(Dtype, Avx2MatchesReferenceOnEveryKernel) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  auto v = random_floats(100003, 9, true, -150, 127);  // odd length: exercises the tails
  v[7] = std::nanf("");
  v[8] = -std::nanf("5");
  v[9] = INFINITY;
  const size_t n = v.size();
  std::vector<uint16_t> a(n), b(n);
  ref::f32_to_bf16_n(v.data(), a.data(), n);
  avx2::f32_to_bf16_n(v.data(), b.data(), n);
  EXPECT_EQ(a, b);
  ref::f32_to_f16_n(v.data(), a.data(), n);
  avx2::f32_to_f16_n(v.data(), b.data(), n);
  EXPECT_EQ(a, b);
  // Every 16-bit pattern decodes identically (f16 NaNs included).
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> fa(65536), fb(65536);
  ref::f16_to_f32_n(all.data(), fa.data(), 65536);
  avx2::f16_to_f32_n(all.data(), fb.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i) ASSERT_EQ(bits_of(fa[i]), bits_of(fb[i])) << "f16 0x" << std::hex << i;
  ref::bf16_to_f32_n(all.data(), fa.data(), 65536);
  avx2::bf16_to_f32_n(all.data(), fb.data(), 65536);
  EXPECT_EQ(0, std::memcmp(fa.data(), fb.data(), fa.size() * 4));
  auto bytes = testing::random_bytes(1001, 2);
  std::vector<uint8_t> x(bytes.size()), y(bytes.size());
  avx2::flip_sign_bit_n(bytes.data(), x.data(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(x[i], bytes[i] ^ 0x80);
#endif
}

TEST(Dtype, FloatToIntRoundsHalfEvenAndSaturates) {
  const float in[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 127.49f, 127.5f, 300.0f, -300.0f, NAN, INFINITY, -INFINITY};
  const int8_t want_i8[] = {0, 2, 2, 0, -2, 127, 127, 127, -128, 0, 127, -128};
  const uint8_t want_u8[] = {0, 2, 2, 0, 0, 127, 128, 255, 0, 0, 255, 0};
  int8_t i8[12];
  uint8_t u8[12];
  ASSERT_TRUE(cast_values(DType::f32, in, DType::i8, i8, 12).ok());
  ASSERT_TRUE(cast_values(DType::f32, in, DType::u8, u8, 12).ok());
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(i8[i], want_i8[i]) << in[i];
    EXPECT_EQ(u8[i], want_u8[i]) << in[i];
  }
  const float big[] = {3e9f, -3e9f, 1e20f};
  int32_t i32[3];
  int64_t i64[3];
  ASSERT_TRUE(cast_values(DType::f32, big, DType::i32, i32, 3).ok());
  ASSERT_TRUE(cast_values(DType::f32, big, DType::i64, i64, 3).ok());
  EXPECT_EQ(i32[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i64[0], 3000000000LL);
  EXPECT_EQ(i64[2], std::numeric_limits<int64_t>::max());
}

TEST(Dtype, IntToNarrowFloatRoundsOnce) {
  // 0x0102FFFF: through f32 it would round twice (to 0x01030000, then a tie to 0x01040000);
  // the correct bf16 is 0x01020000 (the remainder 0xFFFF is below half of 0x20000).
  const int32_t in[] = {0x0102FFFF, 257, 2049, 65519, 65520, -70000, 16777217};
  uint16_t bf[7], h[7];
  ASSERT_TRUE(cast_values(DType::i32, in, DType::bf16, bf, 7).ok());
  ASSERT_TRUE(cast_values(DType::i32, in, DType::f16, h, 7).ok());
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(bf16_to_f32(bf[i]), static_cast<float>(round_to_format(in[i], 7, -126, 127))) << in[i];
    EXPECT_EQ(f16_to_f32(h[i]), static_cast<float>(round_to_format(in[i], 10, -14, 15))) << in[i];
  }
  int64_t big = (int64_t{1} << 60) + 1;
  float f;
  ASSERT_TRUE(cast_values(DType::i64, &big, DType::f32, &f, 1).ok());
  EXPECT_EQ(f, std::ldexp(1.0f, 60));
}

TEST(Dtype, IntToIntSaturatesAndBoolIsNonzero) {
  const int32_t in[] = {-200, -129, -128, 0, 127, 128, 255, 256, 70000};
  int8_t i8[9];
  uint8_t u8[9];
  int16_t i16[9];
  ASSERT_TRUE(cast_values(DType::i32, in, DType::i8, i8, 9).ok());
  ASSERT_TRUE(cast_values(DType::i32, in, DType::u8, u8, 9).ok());
  ASSERT_TRUE(cast_values(DType::i32, in, DType::i16, i16, 9).ok());
  const int8_t w8[] = {-128, -128, -128, 0, 127, 127, 127, 127, 127};
  const uint8_t wu8[] = {0, 0, 0, 0, 127, 128, 255, 255, 255};
  const int16_t w16[] = {-200, -129, -128, 0, 127, 128, 255, 256, 32767};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(i8[i], w8[i]);
    EXPECT_EQ(u8[i], wu8[i]);
    EXPECT_EQ(i16[i], w16[i]);
  }
  const float f[] = {0.0f, -0.0f, 0.1f, NAN};
  uint8_t b[4];
  ASSERT_TRUE(cast_values(DType::f32, f, DType::boolean, b, 4).ok());
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[2], 1);
  EXPECT_EQ(b[3], 1);
  EXPECT_FALSE(cast_values(DType::q8_0, f, DType::f32, b, 1).ok());
}

TEST(Dtype, U8ToI8IsTheOffsetInConvertAndSaturatesInCastValues) {
  auto u = testing::random_bytes(999, 77);
  Shape s{999};
  std::vector<uint8_t> i8(999), back(999);
  Stats st;
  ASSERT_TRUE(convert(Format::row_major(DType::u8, s), u.data(), Format::row_major(DType::i8, s), i8.data(), &st).ok());
  for (size_t i = 0; i < u.size(); ++i) ASSERT_EQ(static_cast<int8_t>(i8[i]), static_cast<int>(u[i]) - 128);
  ASSERT_TRUE(convert(Format::row_major(DType::i8, s), i8.data(), Format::row_major(DType::u8, s), back.data()).ok());
  EXPECT_EQ(back, u);  // exact round trip
  EXPECT_FALSE(st.identity);
  auto p = plan(Format::row_major(DType::u8, s), Format::row_major(DType::i8, s));
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->size(), 1u);
  EXPECT_TRUE((*p)[0].exact);
  // The value cast saturates instead.
  const uint8_t v[] = {0, 127, 128, 255};
  int8_t w[4];
  ASSERT_TRUE(cast_values(DType::u8, v, DType::i8, w, 4).ok());
  EXPECT_EQ(w[0], 0);
  EXPECT_EQ(w[2], 127);
  EXPECT_EQ(w[3], 127);
}

TEST(Dtype, RoundTripsThatMustBeExactAre) {
  // Every exact recode round-trips bit for bit; f16/bf16 -> f32 -> back included.
  Shape s{4097};
  auto bytes = testing::random_bytes(4097 * 8, 31);
  for (Encoding a : {Encoding::i8, Encoding::u8, Encoding::i16, Encoding::i32, Encoding::f16, Encoding::bf16}) {
    for (Encoding b : {Encoding::i16, Encoding::i32, Encoding::i64, Encoding::f32}) {
      if (!recode_is_exact(a, b)) continue;
      Format fa{a, Layout::row_major, s}, fb{b, Layout::row_major, s};
      std::vector<uint8_t> src(bytes.begin(), bytes.begin() + *fa.byte_size());
      if (a == Encoding::f16 || a == Encoding::bf16)  // canonical NaNs only: map NaN patterns away
        for (size_t i = 1; i < src.size(); i += 2) src[i] &= 0x7B;
      std::vector<uint8_t> mid(*fb.byte_size()), back(src.size());
      ASSERT_TRUE(convert(fa, src.data(), fb, mid.data()).ok());
      ASSERT_TRUE(convert(fb, mid.data(), fa, back.data()).ok());
      EXPECT_EQ(src, back) << encoding_name(a) << " -> " << encoding_name(b);
    }
  }
}

TEST(Dtype, RequantizeMatchesTheFormula) {
  // real = 0.5 * (q - 10); out = round_half_even(real / 0.25) + (-3), clamped to i8.
  const uint8_t q[] = {10, 11, 0, 255, 200, 74};
  int8_t out[6];
  QuantParams in{{0.5f}, {10}}, o{{0.25f}, {-3}};
  ASSERT_TRUE(requantize(DType::u8, q, in, DType::i8, out, o, {6}).ok());
  const int8_t want[] = {-3, -1, -23, 127, 127, 125};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
  // Per-axis input parameters along dim 1 of [2, 2].
  const int8_t q2[] = {4, 4, -4, -4};
  int8_t out2[4];
  QuantParams pa{{1.0f, 0.5f}, {0, 0}, 1}, po{{1.0f}, {0}};
  ASSERT_TRUE(requantize(DType::i8, q2, pa, DType::i8, out2, po, {2, 2}).ok());
  EXPECT_EQ(out2[0], 4);
  EXPECT_EQ(out2[1], 2);
  EXPECT_EQ(out2[2], -4);
  EXPECT_EQ(out2[3], -2);
  QuantParams bad{{1.0f, 2.0f, 3.0f}, {0}, 1};
  EXPECT_FALSE(requantize(DType::i8, q2, bad, DType::i8, out2, po, {2, 2}).ok());
  EXPECT_FALSE(requantize(DType::f32, q2, in, DType::i8, out2, po, {2}).ok());
}

}  // namespace
}  // namespace tessera::convert
