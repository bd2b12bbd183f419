// ops::exp_f32 (the interpreter's e^x in float) and the cpu's float EXP and LOGISTIC built on
// it: the table against exp2l, the scalar within an ulp of e^x in long double (and at the
// edges of its range), the AVX2 and AVX-512 twins bit for bit against the scalar definition on
// a sweep of the 2^32 float bit patterns, and the cpu kernels at every SIMD level this CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "convert/simd.h"
#include "ops/exp_f32.h"
#include "ops/unary_math.h"
#include "runtime/packed_test_util.h"

namespace tessera {
#if defined(__x86_64__)
namespace cpu::x86 {
void exp_f32_avx2(const float* x, float* y, int64_t n);
void logistic_avx2(const float* x, float* y, int64_t n);
void exp_f32_avx512(const float* x, float* y, int64_t n);
void logistic_avx512(const float* x, float* y, int64_t n);
}  // namespace cpu::x86
#elif defined(__aarch64__)
namespace cpu::arm {
void exp_f32_neon(const float* x, float* y, int64_t n);
void logistic_neon(const float* x, float* y, int64_t n);
}  // namespace cpu::arm
#endif
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The floats where glibc's expf (x86-64) rounds e^x the other way (ops/exp_f32.h).
constexpr float kLibmDiffer[] = {0x1.04845ep+5f, -0x1.f8cbb2p+5f};

// Special inputs: zeros, infinities, NaNs (quiet, signalling, negative), denormals, the
// edges of the range and their neighbours, the floats of kLibmDiffer.
std::vector<float> specials() {
  using ops::expf32::kHigh, ops::expf32::kLow;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, from_bits(0x7fc00000u), from_bits(0xffc00000u),
                          from_bits(0x7f800001u), from_bits(0xff812345u), from_bits(0x7fffffffu),
                          from_bits(1), from_bits(0x807fffffu), std::numeric_limits<float>::min(),
                          88.0f, -88.0f, 89.0f, -104.0f, std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::lowest()};
  for (float e : {kHigh, kLow, kLibmDiffer[0], kLibmDiffer[1]}) {
    v.push_back(e);
    v.push_back(std::nextafter(e, inf));
    v.push_back(std::nextafter(e, -inf));
  }
  return v;
}

// The table holds 2^(i / 32) rounded to double (exp2l, rounded once more) less i << 47.
TEST(ExpF32, TableIsExp2lRoundedToDouble) {
  for (int i = 0; i < 32; ++i) {
    const double d = static_cast<double>(std::exp2(static_cast<long double>(i) / 32));
    uint64_t b;
    std::memcpy(&b, &d, 8);
    EXPECT_EQ(ops::expf32::kTable[i], b - (static_cast<uint64_t>(i) << 47)) << "i = " << i;
  }
}

// exp_f32 against e^x in long double: the nearest float or its neighbour, nearly always the
// nearest; and its edges: +inf past kHigh, the least denormal at kLow, +0 below it.
TEST(ExpF32, IsWithinAnUlpOfExpInLongDouble) {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> d(-104.0f, 89.0f);
  int not_nearest = 0;
  constexpr int kSamples = 1000000;
  for (int i = 0; i < kSamples; ++i) {
    const float x = d(rng);
    const long double exact = std::exp(static_cast<long double>(x));
    const float nearest = static_cast<float>(exact);
    const float got = ops::exp_f32(x);
    if (got == nearest) continue;
    ++not_nearest;
    ASSERT_TRUE(got == std::nextafter(nearest, 0.0f) || got == std::nextafter(nearest, INFINITY))
        << std::hexfloat << "x = " << x << ": " << got << ", e^x " << static_cast<double>(exact);
  }
  EXPECT_LT(not_nearest, kSamples / 1000);
  // The two floats glibc rounds the other way are rounded to nearest here.
  for (float x : kLibmDiffer)
    EXPECT_EQ(ops::exp_f32(x), static_cast<float>(std::exp(static_cast<long double>(x)))) << std::hexfloat << x;
  const float inf = std::numeric_limits<float>::infinity();
  using ops::expf32::kHigh, ops::expf32::kLow;
  EXPECT_EQ(ops::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(ops::exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(ops::exp_f32(1.0f), static_cast<float>(std::exp(1.0L)));
  EXPECT_LT(ops::exp_f32(kHigh), inf);
  EXPECT_EQ(ops::exp_f32(std::nextafter(kHigh, inf)), inf);
  EXPECT_EQ(ops::exp_f32(inf), inf);
  EXPECT_EQ(ops::exp_f32(kLow), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(bits(ops::exp_f32(std::nextafter(kLow, -inf))), 0u);
  EXPECT_EQ(bits(ops::exp_f32(-inf)), 0u);
  EXPECT_TRUE(std::isnan(ops::exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(ops::logistic_value(inf), 1.0f);
  EXPECT_EQ(ops::logistic_value(100.0f), 1.0f);
  EXPECT_EQ(bits(ops::logistic_value(-inf)), 0u);
}

#if defined(__x86_64__) || defined(__aarch64__)
using RowsFn = void (*)(const float*, float*, int64_t);

// Compares one vector function with its scalar definition on x; returns the differences (the
// first few reported).
int64_t count_differences(RowsFn rows, float (*scalar)(float), const std::vector<float>& x, std::vector<float>& y,
                          const char* what) {
  rows(x.data(), y.data(), static_cast<int64_t>(x.size()));
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = scalar(x[i]);
    if (std::memcmp(&want, &y[i], 4) != 0 && ++differ <= 3)
      ADD_FAILURE() << what << ": x = " << std::hex << bits(x[i]) << " (" << std::hexfloat << x[i] << "): " << y[i]
                    << ", the scalar " << want;
  }
  return differ;
}
#endif

// The AVX2, AVX-512 and NEON exp and logistic equal their scalar definitions bit for bit (NaN
// payloads included): every 61st bit pattern of all 2^32, every 13th pattern in [-104, 89]
// and the specials (the vector loops see them in every lane position, and in the scalar tail).
TEST(ExpF32, VectorTwinsEqualTheScalarOnASweepOfAllFloats) {
#if defined(__x86_64__) || defined(__aarch64__)
  struct Level {
    const char* name;
    bool has;
    RowsFn exp, logistic;
  };
#if defined(__x86_64__)
  const Level levels[] = {
      {"avx512", convert::cpu_avx512(), cpu::x86::exp_f32_avx512, cpu::x86::logistic_avx512},
      {"avx2", convert::cpu_has_avx2(), cpu::x86::exp_f32_avx2, cpu::x86::logistic_avx2},
  };
#else
  const Level levels[] = {{"neon", convert::cpu_has_neon(), cpu::arm::exp_f32_neon, cpu::arm::logistic_neon}};
#endif
  int ran = 0;
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> x, y(kChunk + 64);
  x.reserve(kChunk + 64);
  auto check = [&](const Level& l) {
    int64_t differ = count_differences(l.exp, ops::exp_f32, x, y, l.name);
    differ += count_differences(l.logistic, ops::logistic_value, x, y, l.name);
    return differ;
  };
  for (const Level& l : levels) {
    if (!l.has) continue;
    ++ran;
    SCOPED_TRACE(l.name);
    int64_t differ = 0, swept = 0;
    auto flush = [&] {
      differ += check(l);
      swept += static_cast<int64_t>(x.size());
      x.clear();
    };
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 61) {
      x.push_back(from_bits(static_cast<uint32_t>(b)));
      if (x.size() == kChunk) flush();
    }
    flush();
    // [-104, 89]: the patterns from -0 to -104 and from +0 to 89.
    for (uint32_t b = 0; b <= bits(89.0f); b += 13) {
      x.push_back(from_bits(b));
      x.push_back(from_bits(b | 0x80000000u));
      if (x.size() >= kChunk) flush();
    }
    for (uint32_t b = bits(89.0f); b <= bits(104.0f); b += 13) {
      x.push_back(from_bits(b | 0x80000000u));
      if (x.size() >= kChunk) flush();
    }
    flush();
    // The specials at each of 17 lane offsets, then alone (the scalar tail).
    const std::vector<float> s = specials();
    for (int offset = 0; offset < 17; ++offset) {
      x.assign(static_cast<size_t>(offset), 0.5f);
      for (float v : s) x.push_back(v);
      while (x.size() % 16 != 0) x.push_back(-2.5f);
      flush();
    }
    for (float v : s) {
      x.assign(1, v);
      flush();
    }
    EXPECT_EQ(differ, 0) << differ << " of " << swept << " values differ";
    EXPECT_GT(swept, 200000000);
  }
  if (ran == 0) GTEST_SKIP() << "this CPU has no AVX2";
#else
  GTEST_SKIP() << "no vector exp on this architecture";
#endif
}

// The cpu's float EXP and LOGISTIC kernels at every SIMD level this CPU has (and with
// TESSERA_SIMD=avx2, without AVX-512) give the scalar definitions' bits: seeded values over the
// whole range with a length that leaves a tail, and the specials.
TEST(ExpF32, CpuKernelsGiveTheScalarBitsAtEveryLevel) {
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> d(-110.0f, 95.0f);
  std::vector<float> x(50021);
  for (auto& v : x) v = d(rng);
  const std::vector<float> s = specials();
  std::copy(s.begin(), s.end(), x.begin() + 1000);
  packed_test::SimdGuard guard;
  for (OpKind op : {OpKind::exp, OpKind::logistic}) {
    Graph g;
    Tensor xt;
    xt.name = "x";
    xt.shape = {static_cast<int64_t>(x.size())};
    xt.dtype = DType::f32;
    xt.role = Role::input;
    const TensorId xi = g.add_tensor(xt);
    g.inputs = {xi};
    const TensorId y = *g.add_op(op, {xi}, {}, "y", DType::f32);
    g.tensor(y).role = Role::output;
    g.outputs = {y};
    std::vector<uint8_t> in(x.size() * 4);
    std::memcpy(in.data(), x.data(), in.size());
    for (convert::SimdLevel level : {convert::SimdLevel::avx2, convert::SimdLevel::neon, convert::SimdLevel::scalar}) {
      if (convert::set_simd_level(level) != level) continue;
      for (int threads : {1, 3}) {
        const packed_test::Bytes out = packed_test::run_one(g, in, packed_test::cpu_options("packed", threads));
        ASSERT_EQ(out.size(), in.size());
        int differ = 0;
        for (size_t i = 0; i < x.size(); ++i) {
          const float want = op == OpKind::exp ? ops::exp_f32(x[i]) : ops::logistic_value(x[i]);
          if (std::memcmp(&want, &out[4 * i], 4) != 0) ++differ;
        }
        EXPECT_EQ(differ, 0) << op_name(op) << ", " << convert::simd_level_name(level) << ", " << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace tessera
