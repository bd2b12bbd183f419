// The cpu attention kernel's inner loop (backend/cpu/kernels/attention.h): AVX2 against the
// portable version bit for bit, f32, f16 and q8_0 caches, head sizes with and without a
// tail, tiles of several queries; against attention in double; exp_approx's accuracy; a
// q8_0 cache against the f32 cache of its dequantized values; the q8_0 rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/attention.h"
#include "convert/gguf_blocks.h"
#include "convert/simd.h"
#include "ops/exp_approx.h"

namespace tessera {
#if defined(__x86_64__)
namespace cpu::x86 {
void silu_avx2(const float* x, float* y, int64_t n);
}
#elif defined(__aarch64__)
namespace cpu::arm {
void silu_neon(const float* x, float* y, int64_t n);
}
#endif
namespace {

// Fills a cache of `rows` rows from f32 values: q8_0 by its blocks, f16 by truncating
// normal values (any bits will do, they only need to agree between the kernels).
std::vector<uint8_t> make_cache(cpu::attn::Cache cache, const std::vector<float>& f) {
  using cpu::attn::Cache;
  std::vector<uint8_t> out;
  if (cache == Cache::q8_0) {
    out.resize(f.size() / 32 * kQ8_0BlockBytes);
    for (size_t b = 0; b < f.size() / 32; ++b) convert::quant_q8_0_block(&f[b * 32], &out[b * kQ8_0BlockBytes]);
  } else if (cache == Cache::f16) {
    out.resize(f.size() * 2);
    for (size_t i = 0; i < f.size(); ++i) {
      uint32_t b;
      std::memcpy(&b, &f[i], 4);
      const uint16_t h = static_cast<uint16_t>(((b >> 16) & 0x8000) | (((b >> 23) & 0xff) - 112) << 10 | ((b >> 13) & 0x3ff));
      std::memcpy(&out[i * 2], &h, 2);
    }
  } else {
    out.resize(f.size() * 4);
    std::memcpy(out.data(), f.data(), out.size());
  }
  return out;
}

// Tiles of 1..4 queries with equal, causal (consecutive) and unrelated row counts, every
// cache type, head sizes with and without a tail: the AVX2 kernel (which runs an f32
// tile's queries over shared blocks of rows and reduces eight scores at once) or the NEON
// one equals the scalar one, which runs each query alone, bit for bit.
// The SIMD kernel of this machine: AVX2 on x86-64, NEON on aarch64.
bool simd_attend(const cpu::attn::Tile& t) {
#if defined(__x86_64__)
  if (!convert::cpu_has_avx2()) return false;
  cpu::attn::avx2::attend(t);
  return true;
#elif defined(__aarch64__)
  cpu::attn::neon::attend(t);
  return true;
#else
  (void)t;
  return false;
#endif
}

TEST(AttentionKernel, SimdMatchesScalarBitForBit) {
  {
#if defined(__x86_64__)
    if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
#elif !defined(__aarch64__)
    GTEST_SKIP() << "no SIMD attention kernel on this architecture";
#endif
  }
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0, 1);
  using cpu::attn::Cache;
  for (Cache cache : {Cache::f32, Cache::f16, Cache::q8_0})
    for (int64_t d : {8, 12, 32, 40, 64, 72, 128})
      for (int64_t rows : {1, 2, 9, 17, 300})
        for (int nq = 1; nq <= cpu::attn::kTile; ++nq)
          for (int pattern = 0; pattern < 3; ++pattern) {
            if (cache == Cache::q8_0 && d % 32 != 0) continue;
            SCOPED_TRACE(std::string(cache == Cache::f32 ? "f32" : cache == Cache::f16 ? "f16" : "q8_0") + " d " +
                         std::to_string(d) + " rows " + std::to_string(rows) + " nq " + std::to_string(nq) +
                         " pattern " + std::to_string(pattern));
            // Row counts: all equal, causal (rows - nq + 1 + q), or drawn in [1, rows].
            std::vector<int64_t> nrows(nq);
            for (int q = 0; q < nq; ++q)
              nrows[q] = pattern == 0   ? rows
                         : pattern == 1 ? std::max<int64_t>(1, rows - nq + 1 + q)
                                        : std::uniform_int_distribution<int64_t>(1, rows)(rng);
            std::vector<float> qv(nq * d), kf(rows * d), vf(rows * d);
            for (auto& x : qv) x = nd(rng) * 2;
            // Normal values in binary16's normal range (|x| >= 2^-14), so truncation is valid.
            auto normal = [&] {
              const float x = nd(rng);
              return std::fabs(x) < 1e-3f ? 0.5f : x;
            };
            for (auto& x : kf) x = normal();
            for (auto& x : vf) x = normal();
            const std::vector<uint8_t> k = make_cache(cache, kf), v = make_cache(cache, vf);
            std::vector<float> scratch(cpu::attn::scratch_floats(rows)), o1(nq * d, -1), o2(nq * d, -2);
            cpu::attn::Tile t;
            t.nq = nq, t.k = k.data(), t.v = v.data(), t.cache = cache, t.d = d, t.scale = 0.125f;
            t.scratch = scratch.data();
            for (int q = 0; q < nq; ++q) t.query[q] = {&qv[q * d], nrows[q], &o1[q * d]};
            cpu::attn::scalar::attend(t);
            for (int q = 0; q < nq; ++q) t.query[q].out = &o2[q * d];
            std::fill(scratch.begin(), scratch.end(), 7.0f);
            ASSERT_TRUE(simd_attend(t));
            ASSERT_EQ(0, std::memcmp(o1.data(), o2.data(), nq * d * 4));
            // Not a vacuous comparison: the output is a weighted mean of the values.
            float vmax = 0;
            for (float x : o1) vmax = std::max(vmax, std::fabs(x));
            EXPECT_GT(vmax, 0.0f);
          }
}

// The kernel against attention computed in double (softmax of q.k * scale, weighted mean
// of the values) on an f32 cache: within 1e-5 of the largest value, for tiles of queries
// with causal row counts.
TEST(AttentionKernel, AgreesWithAttentionInDouble) {
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0, 1);
  for (int64_t d : {12, 64})
    for (int64_t rows : {1, 40, 257}) {
      const int nq = cpu::attn::kTile;
      std::vector<float> qv(nq * d), kf(rows * d), vf(rows * d);
      for (auto& x : qv) x = nd(rng) * 3;
      for (auto& x : kf) x = nd(rng);
      for (auto& x : vf) x = nd(rng);
      std::vector<float> scratch(cpu::attn::scratch_floats(rows)), o(nq * d);
      cpu::attn::Tile t;
      t.nq = nq, t.k = reinterpret_cast<const uint8_t*>(kf.data()), t.v = reinterpret_cast<const uint8_t*>(vf.data());
      t.cache = cpu::attn::Cache::f32, t.d = d, t.scale = 0.3f, t.scratch = scratch.data();
      for (int q = 0; q < nq; ++q) t.query[q] = {&qv[q * d], std::max<int64_t>(1, rows - q), &o[q * d]};
      cpu::attn::attend(t);
      for (int q = 0; q < nq; ++q) {
        const int64_t n = t.query[q].rows;
        std::vector<double> s(n);
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double a = 0;
          for (int64_t i = 0; i < d; ++i) a += static_cast<double>(qv[q * d + i]) * kf[j * d + i];
          s[j] = a * 0.3f;
          m = std::max(m, s[j]);
        }
        for (auto& x : s) sum += (x = std::exp(x - m));
        for (int64_t i = 0; i < d; ++i) {
          double want = 0;
          for (int64_t j = 0; j < n; ++j) want += s[j] / sum * vf[j * d + i];
          ASSERT_NEAR(o[q * d + i], want, 1e-5) << "d " << d << " rows " << rows << " query " << q << " value " << i;
        }
      }
    }
}

// exp_approx against e^x in double: within 2 ulp over [-87, 88] (sampled densely and at
// the ends), 0 below, +inf above, NaN kept.
TEST(AttentionKernel, ExpApproxWithinTwoUlp) {
  int worst = 0;
  auto check = [&](float x) {
    const float y = ops::exp_approx(x);
    const double want = std::exp(static_cast<double>(x));
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    const int err = static_cast<int>(std::ceil(std::fabs(y - want) / ulp - 0.5));
    worst = std::max(worst, err);
    ASSERT_LE(std::fabs(y - want), 2 * ulp) << "x " << x;
  };
  for (float x = -87.0f; x <= 88.0f; x += 0.001953125f) check(x);
  for (float x : {-87.0f, -86.99999f, 0.0f, -0.0f, 1e-8f, -1e-8f, 0.3465736f, -0.3465736f, 87.99999f, 88.0f}) check(x);
  EXPECT_LE(worst, 2);
  EXPECT_EQ(ops::exp_approx(-87.01f), 0.0f);
  EXPECT_EQ(ops::exp_approx(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ops::exp_approx(88.01f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(ops::exp_approx(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(ops::exp_approx(0.0f), 1.0f);
}

// silu (ops/unary_math.h: x / (1 + exp_approx(-x))): the cpu kernel's AVX2 / NEON path equals the
// scalar formula bit for bit over seeded values of every magnitude (including the clamps
// of exp_approx and lengths with a tail), and the formula is within 4 ulp of x / (1 + e^-x)
// in double where the result is a normal float.
TEST(AttentionKernel, SiluSimdMatchesItsFormula) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(4099);
  for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (i % 3 == 0 ? 1.0f : i % 3 == 1 ? 10.0f : 60.0f);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = 87.5f, x[3] = -88.5f, x[4] = 200.0f, x[5] = -200.0f;
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    want[i] = ops::silu_value(x[i]);
    const double ref = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
    if (std::fabs(ref) >= 1e-30) {
      const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
      ASSERT_LE(std::fabs(want[i] - ref), 4 * ulp) << "x " << x[i];
    }
  }
  std::vector<float> got(x.size(), -1);
#if defined(__x86_64__)
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  cpu::x86::silu_avx2(x.data(), got.data(), static_cast<int64_t>(x.size()));
#elif defined(__aarch64__)
  cpu::arm::silu_neon(x.data(), got.data(), static_cast<int64_t>(x.size()));
#else
  GTEST_SKIP() << "no SIMD silu on this architecture";
#endif
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), x.size() * 4));
}

// Attention over a q8_0 cache reads the values d * q exactly: it equals attention over an
// f32 cache holding the dequantized values, bit for bit (the q8_0 cache's only error is
// the rounding when rows are written, bounded below).
TEST(AttentionKernel, Q8CacheIsTheF32CacheOfItsValues) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1);
  for (int64_t d : {32, 64, 128})
    for (int64_t rows : {1, 9, 130})
      for (int nq : {1, 3}) {
        std::vector<float> q(nq * d), kf(rows * d), vf(rows * d);
        for (auto& x : q) x = nd(rng);
        for (auto& x : kf) x = nd(rng) * 3;
        for (auto& x : vf) x = nd(rng) * 3;
        const std::vector<uint8_t> k8 = make_cache(cpu::attn::Cache::q8_0, kf), v8 = make_cache(cpu::attn::Cache::q8_0, vf);
        std::vector<float> kd(rows * d), vd(rows * d);
        convert::dequant_q8_0_n(k8.data(), kd.data(), rows * d / 32);
        convert::dequant_q8_0_n(v8.data(), vd.data(), rows * d / 32);
        std::vector<float> scratch(cpu::attn::scratch_floats(rows)), o1(nq * d, -1), o2(nq * d, -2);
        cpu::attn::Tile a;
        a.nq = nq, a.k = k8.data(), a.v = v8.data(), a.cache = cpu::attn::Cache::q8_0, a.d = d, a.scale = 0.125f;
        a.scratch = scratch.data();
        cpu::attn::Tile b = a;
        b.k = reinterpret_cast<const uint8_t*>(kd.data()), b.v = reinterpret_cast<const uint8_t*>(vd.data());
        b.cache = cpu::attn::Cache::f32;
        for (int i = 0; i < nq; ++i) {
          a.query[i] = {&q[i * d], rows - i > 0 ? rows - i : 1, &o1[i * d]};
          b.query[i] = {&q[i * d], a.query[i].rows, &o2[i * d]};
        }
        cpu::attn::attend(a);
        cpu::attn::attend(b);
        ASSERT_EQ(0, std::memcmp(o1.data(), o2.data(), nq * d * 4)) << "d " << d << " rows " << rows;
      }
}

// The q8_0 rounding against its definition computed in double: each value within half a
// step of the block's scale d = max|x| / 127 (d itself rounded to binary16, which moves a
// reconstructed value by at most 127 * |d - d16| <= 127 * 2^-11 d more), on blocks of scales 2^-4 .. 2^10 (d in binary16's normal range, where its relative
// rounding is 2^-11) and an all-zero block.
TEST(AttentionKernel, Q8RoundingWithinHalfAStep) {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0, 1);
  std::uniform_int_distribution<int> ex(-4, 10);
  for (int trial = 0; trial < 500; ++trial) {
    float x[32];
    const float scale = trial == 0 ? 0.0f : std::ldexp(1.0f, ex(rng));
    for (float& v : x) v = nd(rng) * scale;
    uint8_t block[kQ8_0BlockBytes];
    convert::quant_q8_0_block(x, block);
    float y[32];
    convert::dequant_q8_0_block(block, y);
    double amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
    const double d = amax / 127.0;
    for (int i = 0; i < 32; ++i) {
      const double bound = d / 2 + 127 * d * std::ldexp(1.0, -11) + 1e-30;
      ASSERT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), bound) << "trial " << trial << " value " << i;
    }
    if (amax == 0) {
      for (float v : y) ASSERT_EQ(v, 0.0f);
    }
  }
}

}  // namespace
}  // namespace tessera
