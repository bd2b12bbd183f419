// The fast LLM fully_connected kernels (backend/cpu/kernels/linear_q8.h): AVX2 and NEON
// against the portable kernels bit for bit, both against a dot product in double within
// the bound of the 8-bit activation rounding, and the cpu kernel through a Session (thread
// counts, the opt-in attribute, the reference when not asked).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/linear_q8.h"
#include "convert/simd.h"
#include "tessera/session.h"

namespace tessera {
namespace {

using cpu::q8::kBlock;

double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

// Nearest binary16 of a value in the normal range (the test's own encoder).
uint16_t f16_bits(double v) {
  const uint16_t s = v < 0 ? 0x8000 : 0;
  v = std::fabs(v);
  int e;
  std::frexp(v, &e);  // v = f * 2^e, f in [0.5, 1)
  const double unit = std::ldexp(1.0, e - 11);
  const double r = std::nearbyint(v / unit) * unit;
  std::frexp(r, &e);
  const int mant = static_cast<int>(std::ldexp(r, 11 - e)) - 1024;
  return static_cast<uint16_t>(s | ((e + 14) << 10) | mant);
}

struct Weights {
  DType t;
  int64_t oc, k;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // [oc, k] what the bytes represent
  std::vector<double> mag;     // [oc, k] |d code| + |m| for q4_1 / q5_1, else |value| (the error bound's weights)
  int64_t row_bytes() const { return static_cast<int64_t>(bytes.size()) / oc; }
};

// Random GGUF rows: q8_0 bytes over the whole int8 range (-128 included), q4_0 / q5_0 / iq4_nl codes,
// f16 values in [-1, 1); block scales in [0.005, 0.05).
Weights random_weights(DType t, int64_t oc, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> scale(0.005, 0.05), unit(-1, 1);
  std::uniform_int_distribution<int> byte(0, 255);
  Weights w{t, oc, k, {}, {}, {}};
  w.values.resize(static_cast<size_t>(oc * k));
  w.mag.resize(w.values.size());
  for (int64_t o = 0; o < oc; ++o) {
    if (t == DType::f16) {
      for (int64_t i = 0; i < k; ++i) {
        double u = unit(rng);
        if (std::fabs(u) < 1e-3) u = 0.25;  // stay in binary16's normal range
        const uint16_t h = f16_bits(u);
        w.bytes.push_back(h & 0xff), w.bytes.push_back(h >> 8);
        w.values[o * k + i] = f16_value(h);
      }
      continue;
    }
    for (int64_t b = 0; b < k / kBlock; ++b) {
      const uint16_t dh = f16_bits(scale(rng));
      const double d = f16_value(dh);
      w.bytes.push_back(dh & 0xff), w.bytes.push_back(dh >> 8);
      double* v = &w.values[o * k + b * kBlock];
      if (t == DType::q8_0) {
        for (int i = 0; i < kBlock; ++i) {
          const int8_t q = static_cast<int8_t>(byte(rng) - 128);
          w.bytes.push_back(static_cast<uint8_t>(q));
          v[i] = d * q;
        }
      } else if (t == DType::q5_0) {  // d, 32 fifth bits (bit j: value j), 16 nibble bytes; code - 16
        uint32_t qh = 0;
        for (int i = 0; i < 4; ++i) qh |= static_cast<uint32_t>(byte(rng)) << (8 * i);
        for (int i = 0; i < 4; ++i) w.bytes.push_back(static_cast<uint8_t>(qh >> (8 * i)));
        for (int j = 0; j < kBlock / 2; ++j) {
          const int lo = byte(rng) & 15, hi = byte(rng) & 15;
          w.bytes.push_back(static_cast<uint8_t>(lo | hi << 4));
          v[j] = d * ((lo | static_cast<int>((qh >> j) & 1) << 4) - 16);
          v[j + kBlock / 2] = d * ((hi | static_cast<int>((qh >> (j + 16)) & 1) << 4) - 16);
        }
      } else if (t == DType::q4_1 || t == DType::q5_1) {  // d, m, (32 fifth bits,) 16 nibble bytes; d code + m
        const uint16_t mh = f16_bits(scale(rng) * (byte(rng) % 2 ? -8 : 8));
        const double mv = f16_value(mh);
        w.bytes.push_back(mh & 0xff), w.bytes.push_back(mh >> 8);
        uint32_t qh = 0;
        if (t == DType::q5_1) {
          for (int i = 0; i < 4; ++i) qh |= static_cast<uint32_t>(byte(rng)) << (8 * i);
          for (int i = 0; i < 4; ++i) w.bytes.push_back(static_cast<uint8_t>(qh >> (8 * i)));
        }
        double* mg = &w.mag[o * k + b * kBlock];
        for (int j = 0; j < kBlock / 2; ++j) {
          const int lo = (byte(rng) & 15) | static_cast<int>((qh >> j) & 1) << 4;
          const int hi = (byte(rng) & 15) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
          w.bytes.push_back(static_cast<uint8_t>((lo & 15) | (hi & 15) << 4));
          v[j] = d * lo + mv, v[j + kBlock / 2] = d * hi + mv;
          mg[j] = d * lo + std::fabs(mv), mg[j + kBlock / 2] = d * hi + std::fabs(mv);
        }
        continue;
      } else if (t == DType::iq4_nl) {  // d, 16 bytes of codes into the non-linear table
        static const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
        for (int j = 0; j < kBlock / 2; ++j) {
          const int lo = byte(rng) & 15, hi = byte(rng) & 15;
          w.bytes.push_back(static_cast<uint8_t>(lo | hi << 4));
          v[j] = d * kTable[lo], v[j + kBlock / 2] = d * kTable[hi];
        }
      } else {
        for (int j = 0; j < kBlock / 2; ++j) {
          const int lo = byte(rng) & 15, hi = byte(rng) & 15;
          w.bytes.push_back(static_cast<uint8_t>(lo | hi << 4));
          v[j] = d * (lo - 8), v[j + kBlock / 2] = d * (hi - 8);
        }
      }
    }
  }
  if (t != DType::q4_1 && t != DType::q5_1)
    for (size_t i = 0; i < w.values.size(); ++i) w.mag[i] = std::fabs(w.values[i]);
  return w;
}

std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  v[0] = 0.5f;  // never all zeros; one block below is all zeros (d = 0)
  if (n >= 2 * kBlock) std::fill(v.begin() + kBlock, v.begin() + 2 * kBlock, 0.0f);
  return v;
}

struct Rounded {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> s;  // block sums
  std::vector<float> s1;   // offset sums (q4_1 / q5_1)
};

Rounded round_rows(const std::vector<float>& x, int64_t m, int64_t k, bool simd) {
  Rounded r{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / kBlock), std::vector<int32_t>(x.size() / kBlock),
            std::vector<float>(x.size() / kBlock)};
  auto* f = cpu::q8::scalar::quantize_row;
#if defined(__x86_64__)
  if (simd) f = cpu::q8::avx2::quantize_row;
#elif defined(__aarch64__)
  if (simd) f = cpu::q8::neon::quantize_row;
#endif
  for (int64_t i = 0; i < m; ++i) {
    f(x.data() + i * k, k, r.q.data() + i * k, r.d.data() + i * k / kBlock);
    cpu::q8::block_sums(r.q.data() + i * k, k, r.s.data() + i * k / kBlock);
    cpu::q8::offset_sums(x.data() + i * k, k, r.s.data() + i * k / kBlock, r.s1.data() + i * k / kBlock);
  }
  return r;
}

TEST(LinearQ8, RoundingFollowsTheBlockRule) {
  const int64_t k = 8 * kBlock;
  std::vector<float> x = random_acts(k, 7);
  x[5] = -x[5] * 40;  // a block whose amax is negative
  Rounded r = round_rows(x, 1, k, false);
  for (int64_t b = 0; b < k / kBlock; ++b) {
    double amax = 0;
    for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(double{x[b * kBlock + i]}));
    EXPECT_LE(std::fabs(r.d[b] - amax / 127), amax / 127 * 0x1p-11);  // binary16-rounded
    for (int i = 0; i < kBlock; ++i) {
      const int64_t j = b * kBlock + i;
      ASSERT_LE(std::abs(int{r.q[j]}), 127);
      if (amax == 0) {
        EXPECT_EQ(r.q[j], 0);
        continue;
      }
      EXPECT_LE(std::fabs(x[j] - r.q[j] * double{r.d[b]}), amax * (1.0 / 254 + 0x1p-11) * (1 + 1e-6)) << "value " << j;
      if (std::fabs(x[j]) == amax) {
        EXPECT_EQ(std::abs(int{r.q[j]}), 127);
      }
    }
  }
}

// On CPUs with AVX-VNNI or AVX512-VNNI, avx2::gemm_quant runs its vpdpbusd form, so this
// test and the next check that form against the scalar kernels there.
TEST(LinearQ8, Avx2MatchesScalarBitForBit) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  uint32_t seed = 100;
  for (DType t : {DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_1, DType::q5_1, DType::iq4_nl, DType::f16})
    for (int64_t m : {1, 2, 5, 9, 70})
      for (int64_t oc : {1, 6, 7, 13}) {  // f16 k = 59: the decode order's chains 0-2 after the last 32
        const int64_t k = t == DType::f16 ? (oc == 6 ? 172 : 8 * oc + 3) : kBlock * (oc % 4 + 1) * 2;
        SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m) + " oc " + std::to_string(oc) + " k " +
                     std::to_string(k));
        Weights w = random_weights(t, oc, k, ++seed);
        std::vector<float> x = random_acts(m * k, ++seed);
        std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
        if (t == DType::f16) {
          for (bool round_x : {false, true}) {  // exact activations, then rounded to binary16
            cpu::q8::F16Gemm g{reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), m, k, ys.data(), oc, round_x};
            cpu::q8::scalar::gemm_f16(g, 0, oc);
            g.y = yv.data();
            cpu::q8::avx2::gemm_f16(g, 0, oc / 2);  // two calls: a split like two threads make
            cpu::q8::avx2::gemm_f16(g, oc / 2, oc);
            if (!round_x) {
              ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4)) << "f32 activations";
            }
          }
        } else {
          Rounded rs = round_rows(x, m, k, false), rv = round_rows(x, m, k, true);
          ASSERT_EQ(rs.q, rv.q);
          ASSERT_EQ(0, std::memcmp(rs.d.data(), rv.d.data(), rs.d.size() * 4));
          cpu::q8::QuantGemm g{t, w.bytes.data(), w.row_bytes(), {rs.q.data(), rs.d.data(), rs.s.data(), rs.s1.data(), m, k}, ys.data(), oc};
          cpu::q8::scalar::gemm_quant(g, 0, oc);
          g.y = yv.data();
          cpu::q8::avx2::gemm_quant(g, 0, oc / 2);
          cpu::q8::avx2::gemm_quant(g, oc / 2, oc);
        }
        ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
      }
#endif
}

// The kernels' integer sums at their bounds: every code byte all ones, all zeros or 0x80
// (each type's largest and smallest codes; q8_0's -128) against rows of one value of either
// sign (q = 127 or -127 everywhere). The maddubs form sums eight (4-bit codes) or four
// (5-bit) int16 pair sums before widening; one more would wrap.
TEST(LinearQ8, Avx2MatchesScalarAtTheIntegerBounds) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  uint32_t seed = 800;
  for (DType t : {DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_1, DType::q5_1, DType::iq4_nl})
    for (uint8_t fill : {uint8_t{0xff}, uint8_t{0x00}, uint8_t{0x80}})
      for (float xv : {1.0f, -1.0f})
        for (int64_t m : {1, 9}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + " fill " + std::to_string(fill) + " x " + std::to_string(xv) + " m " +
                       std::to_string(m));
          const int64_t oc = 11, k = 256;
          Weights w = random_weights(t, oc, k, ++seed);
          const int64_t bb = dtype_block_bytes(t);
          const int64_t keep = t == DType::q4_1 || t == DType::q5_1 ? 4 : 2;  // the f16 d (and m) fields
          for (size_t i = 0; i < w.bytes.size(); ++i)
            if (static_cast<int64_t>(i) % bb >= keep) w.bytes[i] = fill;
          std::vector<float> x(static_cast<size_t>(m * k), xv);
          Rounded r = round_rows(x, m, k, false);
          ASSERT_EQ(std::abs(int{r.q[0]}), 127);
          std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
          cpu::q8::QuantGemm g{t, w.bytes.data(), w.row_bytes(), {r.q.data(), r.d.data(), r.s.data(), r.s1.data(), m, k}, ys.data(), oc};
          cpu::q8::scalar::gemm_quant(g, 0, oc);
          g.y = yv.data();
          cpu::q8::avx2::gemm_quant(g, 0, oc);
          ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
        }
#endif
}

// The model's widths: eight-row groups split unevenly between calls (as threads split
// them), a decode row (prefetching up to the end of the call's rows) and a prompt that
// spans two 64-row activation chunks with an odd tile at the end; and a width of 5000
// (larger models' FFN), whose f16 prompt chains run over several blocks of steps with
// their partial sums kept between blocks.
TEST(LinearQ8, Avx2MatchesScalarAtModelWidthsAndUnevenSplits) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  uint32_t seed = 700;
  const int64_t oc = 45;
  for (int64_t k : {768, 5000})
    for (DType t : {DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_1, DType::q5_1, DType::iq4_nl, DType::f16})
      for (int64_t m : {1, 67, 200}) {  // 200: several row chunks of the prompt kernels
        // (f16: m = 1 with exact activations, the others rounded to binary16)
        if (k % kBlock != 0 && t != DType::f16) continue;
        SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m) + " k " + std::to_string(k));
        Weights w = random_weights(t, oc, k, ++seed);
        std::vector<float> x = random_acts(m * k, ++seed);
        std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
        Rounded r = round_rows(x, m, k, false);
        for (int pass = 0; pass < 2; ++pass) {
          float* y = pass == 0 ? ys.data() : yv.data();
          int64_t prev = 0;
          for (int64_t cut : {int64_t{5}, int64_t{21}, oc}) {  // pass 0: the scalar kernel in one call
            const int64_t o0 = pass == 0 ? 0 : prev, o1 = pass == 0 ? oc : cut;
            prev = cut;
            if (t == DType::f16) {
              cpu::q8::F16Gemm g{reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), m, k, y, oc, m > 1};
              pass == 0 ? cpu::q8::scalar::gemm_f16(g, o0, o1) : cpu::q8::avx2::gemm_f16(g, o0, o1);
            } else {
              cpu::q8::QuantGemm g{t, w.bytes.data(), w.row_bytes(), {r.q.data(), r.d.data(), r.s.data(), r.s1.data(), m, k}, y, oc};
              pass == 0 ? cpu::q8::scalar::gemm_quant(g, o0, o1) : cpu::q8::avx2::gemm_quant(g, o0, o1);
            }
            if (pass == 0) break;
          }
        }
        ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
      }
#endif
}

TEST(LinearQ8, NeonMatchesScalarBitForBit) {
#if !defined(__aarch64__)
  GTEST_SKIP() << "no NEON kernels on this architecture";
#else
  uint32_t seed = 300;
  for (DType t : {DType::q8_0, DType::q4_0})
    for (int64_t m : {1, 2, 5, 9, 70})
      for (int64_t oc : {1, 6, 7, 13}) {  // f16 k = 59: the decode order's chains 0-2 after the last 32
        const int64_t k = kBlock * (oc % 4 + 1) * 2;
        SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m) + " oc " + std::to_string(oc) + " k " +
                     std::to_string(k));
        Weights w = random_weights(t, oc, k, ++seed);
        std::vector<float> x = random_acts(m * k, ++seed);
        std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
        Rounded rs = round_rows(x, m, k, false), rv = round_rows(x, m, k, true);
        ASSERT_EQ(rs.q, rv.q);
        ASSERT_EQ(0, std::memcmp(rs.d.data(), rv.d.data(), rs.d.size() * 4));
        cpu::q8::QuantGemm g{t, w.bytes.data(), w.row_bytes(), {rs.q.data(), rs.d.data(), rs.s.data(), rs.s1.data(), m, k}, ys.data(), oc};
        cpu::q8::scalar::gemm_quant(g, 0, oc);
        g.y = yv.data();
        cpu::q8::neon::gemm_quant(g, 0, oc / 2);  // two calls: a split like two threads make
        cpu::q8::neon::gemm_quant(g, oc / 2, oc);
        ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
      }
  // F16 weights: both orders (m below and from kF16SeqMinRows), exact and rounded
  // activations, odd k (tails), partial panels, a split like two threads make.
  for (int64_t m : {1, 3, 8, 9, 70})
    for (int64_t oc : {1, 6, 7, 13, 37})
      for (bool round_x : {false, true}) {
        const int64_t k = oc == 6 ? 172 : 8 * oc + 3;
        SCOPED_TRACE("f16 m " + std::to_string(m) + " oc " + std::to_string(oc) + " k " + std::to_string(k) +
                     (round_x ? " rounded" : " exact"));
        Weights w = random_weights(DType::f16, oc, k, ++seed);
        std::vector<float> x = random_acts(m * k, ++seed);
        std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
        cpu::q8::F16Gemm g{reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), m, k, ys.data(), oc, round_x};
        cpu::q8::scalar::gemm_f16(g, 0, oc);
        g.y = yv.data();
        cpu::q8::neon::gemm_f16(g, 0, oc / 2);
        cpu::q8::neon::gemm_f16(g, oc / 2, oc);
        ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
      }
#endif
}

// The dot-product kernels (every quantized type) against the scalar ones: a grid of rows,
// outputs and widths, split as two threads split it, and the integer bounds.
TEST(LinearQ8, NeonDotprodMatchesScalarBitForBit) {
#if !defined(__aarch64__)
  GTEST_SKIP() << "no NEON kernels on this architecture";
#else
  if (!cpu::q8::neon_dot::available()) GTEST_SKIP() << "this CPU lacks the dot-product instructions";
  uint32_t seed = 1300;
  for (DType t : {DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_1, DType::q5_1, DType::iq4_nl})
    for (int64_t m : {1, 3, 4, 9})
      for (int64_t oc : {1, 6, 13}) {
        for (uint8_t fill : {uint8_t{0x5a}, uint8_t{0xff}, uint8_t{0x00}}) {  // 0x5a: the random bytes kept
          const int64_t k = kBlock * (oc % 4 + 1) * 2;
          SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m) + " oc " + std::to_string(oc) + " fill " +
                       std::to_string(fill));
          Weights w = random_weights(t, oc, k, ++seed);
          std::vector<float> x = random_acts(m * k, ++seed);
          if (fill != 0x5a) {  // codes at their extremes against rows of one value (q = +-127)
            const int64_t bb = dtype_block_bytes(t), keep = t == DType::q4_1 || t == DType::q5_1 ? 4 : 2;
            for (size_t i = 0; i < w.bytes.size(); ++i)
              if (static_cast<int64_t>(i) % bb >= keep) w.bytes[i] = fill;
            std::fill(x.begin(), x.end(), fill == 0xff ? 1.0f : -1.0f);
          }
          Rounded r = round_rows(x, m, k, false);
          std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
          cpu::q8::QuantGemm g{t, w.bytes.data(), w.row_bytes(), {r.q.data(), r.d.data(), r.s.data(), r.s1.data(), m, k}, ys.data(), oc};
          cpu::q8::scalar::gemm_quant(g, 0, oc);
          g.y = yv.data();
          cpu::q8::neon_dot::gemm_quant(g, 0, oc / 2);
          cpu::q8::neon_dot::gemm_quant(g, oc / 2, oc);
          ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
        }
      }
#endif
}

// Against double: |y - exact| <= sum_b amax_b (1/254 + 2^-11) sum_{i in b} |w_i| (q4_1 / q5_1:
// |d code_i| + |m| in place of |w_i|: the min term m sum x is taken as m s1, within 32 amax_b (1/254 + 2^-11))
// (activation rounding, linear_q8.h; for f16 with round_x the binary16 rounding of each
// activation, 2^-11 sum |w x| + 2^-25 sum |w|; f16 without: none) + 1e-6 * sum |w x|
// (float accumulation over at most a few hundred terms).
TEST(LinearQ8, WithinTheActivationRoundingBoundOfDouble) {
  uint32_t seed = 500;
  for (int variant = 0; variant < 8; ++variant) {
    const DType t = variant == 0 ? DType::q8_0 : variant == 1 ? DType::q4_0 : variant == 4 ? DType::q5_0
                    : variant == 5 ? DType::iq4_nl : variant == 6 ? DType::q4_1 : variant == 7 ? DType::q5_1 : DType::f16;
    const bool exact_f16 = variant == 3;  // f16 weights, f32 activations
    SCOPED_TRACE(std::string(dtype_name(t)) + (exact_f16 ? " exact activations" : ""));
    const int64_t m = 3, oc = 7, k = t == DType::f16 ? 172 : 256;
    Weights w = random_weights(t, oc, k, ++seed);
    std::vector<float> x = random_acts(m * k, ++seed);
    std::vector<float> y(static_cast<size_t>(m * oc));
    if (t == DType::f16) {
      cpu::q8::gemm_f16({reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), m, k, y.data(), oc, !exact_f16}, 0,
                        oc);
    } else {
      Rounded r = round_rows(x, m, k, convert::use_avx2());  // the level the dispatch uses
      cpu::q8::gemm_quant({t, w.bytes.data(), w.row_bytes(), {r.q.data(), r.d.data(), r.s.data(), r.s1.data(), m, k}, y.data(), oc}, 0, oc);
    }
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t o = 0; o < oc; ++o) {
        double exact = 0, mag = 0, bound = 0;
        for (int64_t b = 0; b * kBlock < k; ++b) {
          double amax = 0, wsum = 0;
          for (int64_t j = b * kBlock; j < std::min(k, (b + 1) * kBlock); ++j) {
            const double xv = x[i * k + j], wv = w.values[o * k + j];
            exact += xv * wv, mag += std::fabs(xv * wv), wsum += w.mag[o * k + j];
            amax = std::max(amax, std::fabs(xv));
          }
          if (t != DType::f16) bound += amax * (1.0 / 254 + 0x1p-11) * wsum;
          if (t == DType::f16 && !exact_f16) bound += 0x1p-25 * wsum;
        }
        if (t == DType::f16 && !exact_f16) bound += 0x1p-11 * mag;
        bound += 1e-6 * mag;
        const double err = std::fabs(y[i * oc + o] - exact);
        EXPECT_LE(err, bound) << dtype_name(t) << " row " << i << " out " << o;
        worst = std::max(worst, err / bound);
      }
    // The bound is not vacuous: the activation rounding error is a visible part of it.
    if (!exact_f16) {
      EXPECT_GT(worst, 0.01) << dtype_name(t);
    }
  }
}

// ---- through a Session: the cpu fully_connected kernel ----

Graph fc_graph(const Weights& w, int64_t m, bool rounding) {
  Graph g;
  Tensor x;
  x.name = "x", x.shape = {m, w.k}, x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  g.inputs.push_back(xi);
  Tensor wt;
  wt.name = "w", wt.shape = {w.oc, w.k}, wt.dtype = w.t, wt.role = Role::weight;
  wt.data = ConstData::from_vector(std::vector<uint8_t>(w.bytes));
  TensorId wi = g.add_tensor(wt);
  AttrMap attrs;
  if (rounding) attrs["input_rounding"] = std::string("q8_0");
  TensorId y = *g.add_op(OpKind::fully_connected, {xi, wi}, attrs, "fc");
  g.tensor(y).role = Role::output;
  g.outputs = {y};
  return g;
}

std::vector<float> run_fc(const Graph& g, const std::vector<float>& x, int threads) {
  SessionOptions o;
  o.device_options["threads"] = std::to_string(threads);
  auto s = Session::create(g, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  EXPECT_TRUE((*s)->set_input(0, x.data(), static_cast<int64_t>(x.size() * 4)).ok());
  EXPECT_TRUE((*s)->run().ok());
  auto out = (*s)->output(0);
  std::vector<float> y(out->size() / 4);
  std::memcpy(y.data(), out->data(), out->size());
  return y;
}

// What the scalar kernels compute for m activation rows against weights w (oc x k): the
// rounded activations' dot products (quantized weights), or the f16 product with or
// without the binary16 rounding of the activations.
std::vector<float> scalar_fc(const Weights& w, DType t, const std::vector<float>& x, int64_t m, int64_t k, int64_t oc,
                             bool round_x = true) {
  std::vector<float> y(static_cast<size_t>(m * oc));
  if (t == DType::f16) {
    cpu::q8::scalar::gemm_f16({reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), m, k, y.data(), oc, round_x},
                              0, oc);
  } else {
    Rounded r = round_rows(x, m, k, false);
    cpu::q8::scalar::gemm_quant({t, w.bytes.data(), w.row_bytes(), {r.q.data(), r.d.data(), r.s.data(), r.s1.data(), m, k}, y.data(), oc},
                                0, oc);
  }
  return y;
}

// A prompt's f16 product on several threads takes its panels at run time (q8::F16Shared):
// every output is still one chain, so any thread count gives the scalar kernel's bits.
// k = 2048 makes chunks of 24 activation rows (61 rows: three chunks, the last short),
// 37 outputs three panels (the last partial), k = 200 one chunk and an 8-value tail.
TEST(LinearQ8, F16PromptOnThreadsGivesTheSameBits) {
  uint32_t seed = 1700;
  for (int64_t k : {2048, 200}) {
    SCOPED_TRACE(k);
    const int64_t m = 61, oc = 37;
    Weights w = random_weights(DType::f16, oc, k, ++seed);
    std::vector<float> x = random_acts(m * k, ++seed);
    for (bool rounding : {true, false}) {
      const std::vector<float> want = scalar_fc(w, DType::f16, x, m, k, oc, rounding);
      const Graph g = fc_graph(w, m, rounding);
      for (int threads : {1, 2, 3}) EXPECT_EQ(run_fc(g, x, threads), want) << threads << " threads";
    }
  }
}

// Output rows on several threads: each thread's own share first, then the rest in pieces
// taken at run time (parallel_rows_guided in linear_q8.cpp). 301 outputs (38 eight-row
// groups, the last partial), decode and short batches: any thread count gives the scalar
// kernels' bits.
TEST(LinearQ8, RowsTakenAtRunTimeGiveTheSameBits) {
  uint32_t seed = 2100;
  for (DType t : {DType::q8_0, DType::q4_0, DType::f16})
    for (int64_t m : {1, 3}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " m=" + std::to_string(m));
      const int64_t oc = 301, k = 256;
      Weights w = random_weights(t, oc, k, ++seed);
      std::vector<float> x = random_acts(m * k, ++seed);
      const std::vector<float> want = scalar_fc(w, t, x, m, k, oc);
      const Graph g = fc_graph(w, m, true);
      for (int threads : {1, 2, 3}) EXPECT_EQ(run_fc(g, x, threads), want) << threads << " threads";
    }
}

TEST(LinearQ8, SessionKernelTakesThePathItIsAskedFor) {
  uint32_t seed = 900;
  for (DType t : {DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_1, DType::q5_1, DType::iq4_nl, DType::f16}) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t m = 5, oc = 37, k = 128;
    Weights w = random_weights(t, oc, k, ++seed);
    std::vector<float> x = random_acts(m * k, ++seed);
    // What the kernels compute, called directly.
    const std::vector<float> want = scalar_fc(w, t, x, m, k, oc);
    const Graph rounded = fc_graph(w, m, true);
    for (int threads : {1, 2, 3}) EXPECT_EQ(run_fc(rounded, x, threads), want) << threads << " threads";
    // Without the attribute, f16 weights take the fast kernel on exact activations.
    if (t == DType::f16) {
      const std::vector<float> exact = scalar_fc(w, t, x, m, k, oc, /*round_x=*/false);
      EXPECT_NE(exact, want);
      for (int threads : {1, 2}) EXPECT_EQ(run_fc(fc_graph(w, m, false), x, threads), exact) << threads << " threads";
    }
    // Without the attribute, quantized weights take the f32 reference: exact activations.
    if (t != DType::f16) {
      std::vector<float> ref = run_fc(fc_graph(w, m, false), x, 2);
      ASSERT_EQ(ref.size(), want.size());
      EXPECT_NE(ref, want);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t o = 0; o < oc; ++o) {
          double exact = 0, mag = 0;
          for (int64_t j = 0; j < k; ++j)
            exact += double{x[i * k + j]} * w.values[o * k + j], mag += std::fabs(x[i * k + j] * w.values[o * k + j]);
          EXPECT_NEAR(ref[i * oc + o], exact, 1e-6 * mag + 1e-7);
        }
    }
  }
}

}  // namespace
}  // namespace tessera
