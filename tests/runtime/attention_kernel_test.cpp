// The cpu attention kernel's inner loop (backend/cpu/kernels/attention.h): AVX2 against the
// portable version bit for bit, f32 and f16 caches, head sizes with and without a tail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/attention.h"
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
  for (bool f16 : {false, true})
    for (int64_t d : {8, 12, 40, 64, 72})
      for (int64_t rows : {1, 2, 17, 300}) {
        SCOPED_TRACE((f16 ? "f16 d " : "f32 d ") + std::to_string(d) + " rows " + std::to_string(rows));
        std::vector<float> q(d), kf(rows * d), vf(rows * d);
        for (auto& x : q) x = nd(rng);
        // Normal values in binary16's normal range (|x| >= 2^-14), so truncation below is valid.
        auto normal = [&] {
          const float x = nd(rng);
          return std::fabs(x) < 1e-3f ? 0.5f : x;
        };
        for (auto& x : kf) x = normal();
        for (auto& x : vf) x = normal();
        std::vector<uint8_t> k(rows * d * (f16 ? 2 : 4)), v(k.size());
        if (f16) {
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
        cpu::attn::Item it{q.data(), k.data(), v.data(), f16, rows, d, 0.125f, s1.data(), o1.data()};
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

}  // namespace
}  // namespace tessera
