// The K-quant fully_connected kernels (backend/cpu/kernels/linear_kq.h): the Q8_K rounding
// against its definition written again here, the scalar dot products against double, AVX2
// against scalar bit for bit, and the cpu kernel through a Session (thread counts, the
// opt-in attribute).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/linear_kq.h"
#include "convert/gguf_kquants.h"
#include "convert/simd.h"
#include "tessera/session.h"

namespace tessera {
namespace {

using cpu::kq::kGroup;
using cpu::kq::kSuper;

double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

// A binary16 in [2^-10, 2^-6): exponent 5..8, any mantissa.
uint16_t random_scale(std::mt19937& rng) {
  return static_cast<uint16_t>(((5 + rng() % 4) << 10) | (rng() & 0x3ff));
}

struct Weights {
  DType t;
  int64_t oc, k;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // [oc, k] what the bytes represent
  std::vector<double> plus;    // [oc, k] q2_K, q4_K, q5_K: d sc code; q3_K, q6_K: the value (|w| bounds)
  std::vector<double> minus;   // [oc, k] q2_K, q4_K, q5_K: dmin m; q3_K, q6_K: 0
  int64_t row_bytes() const { return static_cast<int64_t>(bytes.size()) / oc; }
};

// Random super-blocks: every code, scale and min byte uniform over its bits, d and dmin
// from random_scale (q6_K's scales include -128).
Weights random_weights(DType t, int64_t oc, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights w{t, oc, k, {}, {}, {}, {}};
  const int64_t bb = dtype_block_bytes(t);
  w.bytes.resize(static_cast<size_t>(oc * k / kSuper * bb));
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  w.values.resize(static_cast<size_t>(oc * k)), w.plus.resize(w.values.size()), w.minus.resize(w.values.size());
  for (int64_t blk = 0; blk < oc * k / kSuper; ++blk) {
    uint8_t* b = w.bytes.data() + blk * bb;
    double* v = &w.values[blk * kSuper];
    double* p = &w.plus[blk * kSuper];
    double* n = &w.minus[blk * kSuper];
    if (t == DType::q4_k || t == DType::q5_k) {  // q5_K: fifth bits at 16, nibbles at 48
      const uint16_t dh = random_scale(rng), mh = random_scale(rng);
      std::memcpy(b, &dh, 2), std::memcpy(b + 2, &mh, 2);
      const bool q5 = t == DType::q5_k;
      for (int c = 0; c < 8; ++c) {
        int sc, m;
        convert::kquant_detail::scale_min_k4(b + 4, c, sc, m);
        for (int l = 0; l < 32; ++l) {
          const int nib = ((b[(q5 ? 48 : 16) + 32 * (c / 2) + l] >> (4 * (c % 2))) & 15) +
                          (q5 && (b[16 + l] >> c & 1) ? 16 : 0);
          p[32 * c + l] = f16_value(dh) * sc * nib, n[32 * c + l] = f16_value(mh) * m;
          v[32 * c + l] = p[32 * c + l] - n[32 * c + l];
        }
      }
    } else if (t == DType::q2_k || t == DType::q3_k) {
      const uint16_t dh = random_scale(rng), mh = random_scale(rng);
      const bool q3 = t == DType::q3_k;
      std::memcpy(b + (q3 ? 108 : 80), &dh, 2);
      if (!q3) std::memcpy(b + 82, &mh, 2);
      for (int i = 0; i < kSuper; ++i) {  // chunk c = i / 32, l = i % 32, 16-value group i / 16
        const int c = i / 32, l = i % 32;
        const int low = (b[(q3 ? 32 : 16) + 32 * (c / 4) + l] >> (2 * (c % 4))) & 3;
        if (q3) {
          const int code = low - ((b[l] >> c & 1) ? 0 : 4);
          const int sc = convert::kquant_detail::scale_q3_k(b + 96, i / 16) - 32;
          v[i] = p[i] = f16_value(dh) * sc * code, n[i] = 0;
        } else {
          p[i] = f16_value(dh) * (b[i / 16] & 15) * low, n[i] = f16_value(mh) * (b[i / 16] >> 4);
          v[i] = p[i] - n[i];
        }
      }
    } else if (t == DType::iq4_xs) {  // d, scales_h, scales_l[4], qs[128] (gguf_kquants.h)
      static const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      const uint16_t dh = random_scale(rng);
      std::memcpy(b, &dh, 2);
      for (int i = 0; i < kSuper; ++i) {  // sub-block c = i / 32, l = i % 32
        const int c = i / 32, l = i % 32;
        const int ls = ((b[4 + c / 2] >> (4 * (c % 2))) & 15) | (((b[2] | b[3] << 8) >> (2 * c)) & 3) << 4;
        const int code = l < 16 ? b[8 + 16 * c + l] & 15 : b[8 + 16 * c + l - 16] >> 4;
        v[i] = p[i] = f16_value(dh) * (ls - 32) * kTable[code], n[i] = 0;
      }
    } else {
      const uint16_t dh = random_scale(rng);
      std::memcpy(b + 208, &dh, 2);
      for (int i = 0; i < kSuper; ++i) {  // value i: half h = i / 128, l = i % 32, k = (i % 128) / 32
        const int h = i / 128, kk = (i % 128) / 32, l = i % 32;
        const int low = (b[64 * h + 32 * (kk & 1) + l] >> (kk < 2 ? 0 : 4)) & 15;
        const int high = (b[128 + 32 * h + l] >> (2 * kk)) & 3;
        const int sc = static_cast<int8_t>(b[192 + i / 16]);
        v[i] = p[i] = f16_value(dh) * sc * ((low | high << 4) - 32), n[i] = 0;
      }
    }
  }
  return w;
}

// Normal activations with a few large ones; k >= 512: super-block 1 all zeros (d = 0).
std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng) * (rng() % 64 == 0 ? 20.0f : 1.0f);
  v[0] = 0.5f;
  if (n >= 2 * kSuper) std::fill(v.begin() + kSuper, v.begin() + 2 * kSuper, 0.0f);
  return v;
}

struct Q8K {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int16_t> bsums;
  cpu::kq::Q8KRows rows(int64_t m, int64_t k) const { return {q.data(), d.data(), bsums.data(), m, k}; }
};

Q8K round_rows(const std::vector<float>& x, int64_t m, int64_t k) {
  Q8K r{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / kSuper), std::vector<int16_t>(x.size() / kGroup)};
  for (int64_t i = 0; i < m; ++i)
    cpu::kq::quantize_row_q8k(x.data() + i * k, k, r.q.data() + i * k, r.d.data() + i * k / kSuper,
                              r.bsums.data() + i * k / kGroup);
  return r;
}

// The Q8_K rule written again: round to nearest even by adding 1.5 * 2^23 in f32 (the
// form llama.cpp writes it in), ties of magnitude to the first value.
void q8k_definition(const float* x, int8_t* q, float* d, int16_t* bsums) {
  int imax = 0;
  for (int i = 1; i < kSuper; ++i)
    if (std::fabs(x[i]) > std::fabs(x[imax])) imax = i;
  const float max = x[imax];
  const volatile float iscale = max == 0 ? 0.0f : -127.0f / max;
  for (int i = 0; i < kSuper; ++i) {
    const volatile float prod = iscale * x[i];
    const volatile float shifted = prod + 12582912.0f;
    int32_t bits;
    const float s = shifted;
    std::memcpy(&bits, &s, 4);
    q[i] = static_cast<int8_t>(std::min(127, (bits & 0x007fffff) - 0x00400000));
  }
  *d = max == 0 ? 0.0f : 1.0f / iscale;
  for (int g = 0; g < kSuper / kGroup; ++g) {
    int s = 0;
    for (int i = 0; i < kGroup; ++i) s += q[kGroup * g + i];
    bsums[g] = static_cast<int16_t>(s);
  }
}

TEST(LinearKQ, Q8KRoundingFollowsItsDefinition) {
  uint32_t seed = 10;
  for (int64_t k : {256, 1024, 4096}) {
    std::vector<float> x = random_acts(k, ++seed);
    if (k == 1024) {  // super-block 2: ties of magnitude (first wins) and halves to even
      float* b = x.data() + 2 * kSuper;
      for (int i = 0; i < kSuper; ++i) b[i] = static_cast<float>(i % 100) + 0.5f - 50.0f;
      b[3] = 127.0f, b[9] = -127.0f;  // max = 127: iscale = -1 exactly
    }
    Q8K r = round_rows(x, 1, k);
    for (int64_t sb = 0; sb < k / kSuper; ++sb) {
      int8_t q[kSuper];
      float d;
      int16_t bs[kSuper / kGroup];
      q8k_definition(x.data() + sb * kSuper, q, &d, bs);
      ASSERT_EQ(0, std::memcmp(q, r.q.data() + sb * kSuper, kSuper)) << "super-block " << sb;
      ASSERT_EQ(0, std::memcmp(&d, &r.d[sb], 4)) << "super-block " << sb;
      ASSERT_EQ(0, std::memcmp(bs, r.bsums.data() + sb * kSuper / kGroup, sizeof bs)) << "super-block " << sb;
      for (int i = 0; i < kSuper; ++i) {  // within half a step, q in [-127, 127]
        const double xi = x[sb * kSuper + i];
        EXPECT_LE(std::fabs(xi - double{d} * q[i]), std::fabs(double{d}) * (0.5 + 1e-4) + 1e-30);
        EXPECT_GE(q[i], -127);
      }
    }
    if (k == 1024) {
      EXPECT_EQ(r.d[2], -1.0f);
      EXPECT_EQ(r.q[2 * kSuper + 3], -127);
      EXPECT_EQ(r.q[2 * kSuper + 9], 127);
      EXPECT_EQ(r.q[2 * kSuper + 0], 50);   // -(-49.5): half to even
      EXPECT_EQ(r.q[2 * kSuper + 1], 48);   // -(-48.5)
      EXPECT_EQ(r.d[1], 0.0f);              // the zero super-block
      EXPECT_EQ(r.q[kSuper + 5], 0);
    }
  }
}

// The scalar kernel against double on the dequantized weights and dequantized activations
// (only float rounding apart), and against the exact activations within the Q8_K bound.
TEST(LinearKQ, ScalarMatchesDoubleOfTheRoundedActivations) {
  uint32_t seed = 300;
  for (DType t : {DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_xs})
    for (int64_t k : {256, 768, 2048, 4096}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " k " + std::to_string(k));
      const int64_t m = 3, oc = 9;
      Weights w = random_weights(t, oc, k, ++seed);
      std::vector<float> x = random_acts(m * k, ++seed);
      Q8K r = round_rows(x, m, k);
      std::vector<float> y(static_cast<size_t>(m * oc));
      cpu::kq::scalar::gemm_kquant({t, w.bytes.data(), w.row_bytes(), r.rows(m, k), y.data(), oc}, 0, oc);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t o = 0; o < oc; ++o) {
          double rounded = 0, exact = 0, mag = 0, bound = 0;
          for (int64_t j = 0; j < k; ++j) {
            const double dx = r.d[(i * k + j) / kSuper], xq = dx * r.q[i * k + j];
            const size_t wj = static_cast<size_t>(o * k + j);
            rounded += w.values[wj] * xq, exact += w.values[wj] * x[i * k + j];
            mag += (std::fabs(w.plus[wj]) + std::fabs(w.minus[wj])) * std::fabs(xq);
            bound += std::fabs(dx) * (0.5 + 1e-4) * std::fabs(w.values[wj]);
          }
          const double got = y[i * oc + o];
          EXPECT_NEAR(got, rounded, (k / kSuper + 3) * std::ldexp(mag, -23)) << "row " << i << " out " << o;
          EXPECT_NEAR(got, exact, bound + (k / kSuper + 3) * std::ldexp(mag, -23)) << "row " << i << " out " << o;
        }
    }
}

using GemmFn = void (*)(const cpu::kq::KQuantGemm&, int64_t, int64_t);

// A SIMD kernel against the scalar one, bit for bit, over a grid of types, row lengths,
// activation rows and outputs, called on uneven output ranges as threads split them.
void expect_bit_identical_on_a_grid(GemmFn kernel) {
  uint32_t seed = 500;
  for (DType t : {DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_xs})
    for (int64_t k : {256, 512, 2048, 4096})
      for (int64_t m : {1, 2, 4, 5, 8, 9, 13})  // from 8 rows: x86's panel kernel
        for (int64_t oc : {1, 7, 37, 77}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + " k " + std::to_string(k) + " m " + std::to_string(m) + " oc " +
                       std::to_string(oc));
          Weights w = random_weights(t, oc, k, ++seed);
          std::vector<float> x = random_acts(m * k, ++seed);
          Q8K r = round_rows(x, m, k);
          std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
          cpu::kq::KQuantGemm g{t, w.bytes.data(), w.row_bytes(), r.rows(m, k), ys.data(), oc};
          cpu::kq::scalar::gemm_kquant(g, 0, oc);
          g.y = yv.data();
          kernel(g, 0, oc / 3);
          kernel(g, oc / 3, oc);
          ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
        }
}

// The SIMD kernels add products in narrow lanes before scaling them (x86's panel kernel
// sums up to eight maddubs results in int16: q4_K 8, q5_K / q2_K / q3_K 4, q6_K 2, iq4_xs
// 1; at the largest codes and |q| = 127 of one sign those sums come within 1% of 2^15, and
// one more would wrap). Blocks of all-ones or all-zero code bytes (each type's largest
// unsigned code, or iq4_xs's -127) against rows of one constant value (q = 127 or -127
// everywhere) must still give the scalar kernel's bits.
void expect_bit_identical_at_the_integer_bounds(GemmFn kernel) {
  uint32_t seed = 700;
  for (DType t : {DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_xs})
    for (uint8_t fill : {uint8_t{0xff}, uint8_t{0x00}, uint8_t{0x77}})
      for (float xv : {1.0f, -1.0f}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " fill " + std::to_string(fill) + " x " + std::to_string(xv));
        const int64_t oc = 19, k = 1024, m = 11;
        Weights w = random_weights(t, oc, k, ++seed);
        const int64_t bb = dtype_block_bytes(t);
        // Byte ranges of the binary16 d (and dmin) fields, kept from random_weights.
        const int64_t d0 = t == DType::q2_k ? 80 : t == DType::q3_k ? 108 : t == DType::q6_k ? 208 : 0;
        const int64_t d1 = d0 + (t == DType::q2_k || t == DType::q4_k || t == DType::q5_k ? 4 : 2);
        for (size_t i = 0; i < w.bytes.size(); ++i) {
          const int64_t off = static_cast<int64_t>(i) % bb;
          if (off < d0 || off >= d1) w.bytes[i] = fill;
        }
        std::vector<float> x(static_cast<size_t>(m * k), xv);
        Q8K r = round_rows(x, m, k);
        ASSERT_EQ(std::abs(int{r.q[0]}), 127);
        std::vector<float> ys(static_cast<size_t>(m * oc), -1), yv(ys.size(), -2);
        cpu::kq::KQuantGemm g{t, w.bytes.data(), w.row_bytes(), r.rows(m, k), ys.data(), oc};
        cpu::kq::scalar::gemm_kquant(g, 0, oc);
        g.y = yv.data();
        kernel(g, 0, oc);
        ASSERT_EQ(0, std::memcmp(ys.data(), yv.data(), ys.size() * 4));
      }
}

TEST(LinearKQ, Avx2MatchesScalarBitForBit) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  expect_bit_identical_on_a_grid(cpu::kq::avx2::gemm_kquant);
  expect_bit_identical_at_the_integer_bounds(cpu::kq::avx2::gemm_kquant);
#endif
}

TEST(LinearKQ, NeonDotprodMatchesScalarBitForBit) {
#if !defined(__aarch64__)
  GTEST_SKIP() << "no NEON kernels on this architecture";
#else
  if (!cpu::kq::neon::available()) GTEST_SKIP() << "this CPU lacks the dot-product instructions";
  expect_bit_identical_on_a_grid(cpu::kq::neon::gemm_kquant);
  expect_bit_identical_at_the_integer_bounds(cpu::kq::neon::gemm_kquant);
#endif
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

// With input_rounding = "q8_0" the session gives the scalar kernel's bits at 1-3 threads
// (301 outputs: uneven pieces taken at run time); without it, the f32 reference.
TEST(LinearKQ, SessionKernelTakesThePathItIsAskedFor) {
  uint32_t seed = 900;
  for (DType t : {DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_xs})
    for (int64_t m : {1, 3}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m));
      const int64_t oc = 301, k = 512;
      Weights w = random_weights(t, oc, k, ++seed);
      std::vector<float> x = random_acts(m * k, ++seed);
      Q8K r = round_rows(x, m, k);
      std::vector<float> want(static_cast<size_t>(m * oc));
      cpu::kq::scalar::gemm_kquant({t, w.bytes.data(), w.row_bytes(), r.rows(m, k), want.data(), oc}, 0, oc);
      const Graph rounded = fc_graph(w, m, true);
      for (int threads : {1, 2, 3}) EXPECT_EQ(run_fc(rounded, x, threads), want) << threads << " threads";
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

}  // namespace
}  // namespace tessera
