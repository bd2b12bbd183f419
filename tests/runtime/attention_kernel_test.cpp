// The cpu attention kernel's inner loop (backend/cpu/kernels/attention.h): AVX2 against the
// portable version bit for bit, f32, f16 and q8_0 caches, head sizes with and without a
// tail; a q8_0 cache against the f32 cache of its dequantized values; the q8_0 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/attention.h"
#include "convert/gguf_blocks.h"
#include "convert/simd.h"

namespace tessera {
namespace {

TEST(AttentionKernel, Avx2MatchesScalarBitForBit) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0, 1);
  using cpu::attn::Cache;
  for (Cache cache : {Cache::f32, Cache::f16, Cache::q8_0})
    for (int64_t d : {8, 12, 32, 40, 64, 72, 128})
      for (int64_t rows : {1, 2, 17, 300}) {
        if (cache == Cache::q8_0 && d % 32 != 0) continue;
        const bool f16 = cache == Cache::f16;
        SCOPED_TRACE(std::string(cache == Cache::f32 ? "f32" : f16 ? "f16" : "q8_0") + " d " + std::to_string(d) +
                     " rows " + std::to_string(rows));
        std::vector<float> q(d), kf(rows * d), vf(rows * d);
        for (auto& x : q) x = nd(rng);
        // Normal values in binary16's normal range (|x| >= 2^-14), so truncation below is valid.
        auto normal = [&] {
          const float x = nd(rng);
          return std::fabs(x) < 1e-3f ? 0.5f : x;
        };
        for (auto& x : kf) x = normal();
        for (auto& x : vf) x = normal();
        std::vector<uint8_t> k(rows * cpu::attn::row_bytes(cache, d)), v(k.size());
        if (cache == Cache::q8_0) {
          for (int64_t b = 0; b < rows * d / 32; ++b) {
            convert::quant_q8_0_block(&kf[b * 32], &k[b * kQ8_0BlockBytes]);
            convert::quant_q8_0_block(&vf[b * 32], &v[b * kQ8_0BlockBytes]);
          }
        } else if (f16) {
          for (int64_t i = 0; i < rows * d; ++i) {
            // Truncated binary16 of normal values: any bits will do, they only need to agree.
            uint32_t b;
            std::memcpy(&b, &kf[i], 4);
            const uint16_t hk = static_cast<uint16_t>(((b >> 16) & 0x8000) | (((b >> 23) & 0xff) - 112) << 10 | ((b >> 13) & 0x3ff));
            std::memcpy(&b, &vf[i], 4);
            const uint16_t hv = static_cast<uint16_t>(((b >> 16) & 0x8000) | (((b >> 23) & 0xff) - 112) << 10 | ((b >> 13) & 0x3ff));
            std::memcpy(&k[i * 2], &hk, 2);
            std::memcpy(&v[i * 2], &hv, 2);
          }
        } else {
          std::memcpy(k.data(), kf.data(), k.size());
          std::memcpy(v.data(), vf.data(), v.size());
        }
        std::vector<float> s1(rows), s2(rows), o1(d, -1), o2(d, -2);
        cpu::attn::Item it{q.data(), k.data(), v.data(), cache, rows, d, 0.125f, s1.data(), o1.data()};
        cpu::attn::scalar::attend(it);
        it.scores = s2.data(), it.out = o2.data();
        cpu::attn::avx2::attend(it);
        ASSERT_EQ(0, std::memcmp(o1.data(), o2.data(), d * 4));
        // Not a vacuous comparison: the output is a weighted mean of the values.
        float vmax = 0;
        for (float x : o1) vmax = std::max(vmax, std::fabs(x));
        EXPECT_GT(vmax, 0.0f);
      }
#endif
}

// Attention over a q8_0 cache reads the values d * q exactly: it equals attention over an
// f32 cache holding the dequantized values, bit for bit (the q8_0 cache's only error is
// the rounding when rows are written, bounded below).
TEST(AttentionKernel, Q8CacheIsTheF32CacheOfItsValues) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1);
  for (int64_t d : {32, 64, 128})
    for (int64_t rows : {1, 9, 130}) {
      std::vector<float> q(d), kf(rows * d), vf(rows * d);
      for (auto& x : q) x = nd(rng);
      for (auto& x : kf) x = nd(rng) * 3;
      for (auto& x : vf) x = nd(rng) * 3;
      const int64_t rb = cpu::attn::row_bytes(cpu::attn::Cache::q8_0, d);
      std::vector<uint8_t> k8(rows * rb), v8(rows * rb);
      for (int64_t b = 0; b < rows * d / 32; ++b) {
        convert::quant_q8_0_block(&kf[b * 32], &k8[b * kQ8_0BlockBytes]);
        convert::quant_q8_0_block(&vf[b * 32], &v8[b * kQ8_0BlockBytes]);
      }
      std::vector<float> kd(rows * d), vd(rows * d);
      convert::dequant_q8_0_n(k8.data(), kd.data(), rows * d / 32);
      convert::dequant_q8_0_n(v8.data(), vd.data(), rows * d / 32);
      std::vector<float> s1(rows), s2(rows), o1(d, -1), o2(d, -2);
      cpu::attn::Item a{q.data(), k8.data(), v8.data(), cpu::attn::Cache::q8_0, rows, d, 0.125f, s1.data(), o1.data()};
      cpu::attn::Item b{q.data(), reinterpret_cast<const uint8_t*>(kd.data()), reinterpret_cast<const uint8_t*>(vd.data()),
                        cpu::attn::Cache::f32, rows, d, 0.125f, s2.data(), o2.data()};
      cpu::attn::attend(a);
      cpu::attn::attend(b);
      ASSERT_EQ(0, std::memcmp(o1.data(), o2.data(), d * 4)) << "d " << d << " rows " << rows;
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
    if (amax == 0)
      for (float v : y) ASSERT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace tessera
