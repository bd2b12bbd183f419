// The cpu's float softmax without a mask (ops::softmax_f32_row, the TFLite interpreter's form)
// on seeded shapes: the AVX2 and AVX-512 row twins bit for bit against the scalar definition
// (row lengths around the vector widths, -inf entries, equal rows, in place), and the kernel at
// every SIMD level this CPU has on 1 to 3 threads, along the last axis and an inner one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "convert/simd.h"
#include "ops/softmax_f32.h"
#include "runtime/packed_test_util.h"

namespace tessera {
#if defined(__x86_64__)
namespace cpu::x86 {
void softmax_rows_avx2(const float* x, float* y, int64_t rows, int64_t len, float beta);
void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t len, float beta);
}  // namespace cpu::x86
#endif
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// rows x len seeded floats in [-spread, spread]; with specials, some rows of equal values, some
// with one value far above the rest, and -inf entries (never a whole row).
std::vector<float> seeded_rows(int64_t rows, int64_t len, float spread, bool specials, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-spread, spread);
  std::vector<float> x(static_cast<size_t>(rows * len));
  for (auto& v : x) v = d(rng);
  if (specials && len > 1) {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = x.data() + r * len;
      if (r % 5 == 2) std::fill(row, row + len, row[0]);
      if (r % 7 == 4) row[rng() % len] = 1e30f;
      if (r % 3 == 1) row[1 + rng() % (len - 1)] = kNegInf;
    }
  }
  return x;
}

// The scalar definition over rows of len.
std::vector<float> scalar_rows(const std::vector<float>& x, int64_t len, float beta) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(len); ++r)
    ops::softmax_f32_row(x.data() + r * len, y.data() + r * len, len, beta);
  return y;
}

int64_t count_differences(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], 4) != 0;
  return differ;
}

const int64_t kLens[] = {1, 2, 3, 5, 7, 8, 9, 10, 15, 16, 17, 23, 24, 31, 32, 33, 64, 100, 1000, 1031};

TEST(SoftmaxF32, VectorRowsEqualTheScalarDefinition) {
#if defined(__x86_64__)
  using RowsFn = void (*)(const float*, float*, int64_t, int64_t, float);
  struct Level {
    const char* name;
    bool has;
    RowsFn rows;
  };
  const Level levels[] = {{"avx512", convert::cpu_avx512(), cpu::x86::softmax_rows_avx512},
                          {"avx2", convert::cpu_has_avx2(), cpu::x86::softmax_rows_avx2}};
  int ran = 0;
  for (const Level& l : levels) {
    if (!l.has) continue;
    ++ran;
    SCOPED_TRACE(l.name);
    uint32_t seed = 10;
    int64_t checked = 0;
    for (int64_t len : kLens) {
      const int64_t rows = std::max<int64_t>(3, 6000 / len);
      for (float beta : {1.0f, 0.37f, 2.5f}) {
        for (float spread : {1.0f, 12.0f, 80.0f}) {
          const std::vector<float> x = seeded_rows(rows, len, spread, spread > 10.0f, ++seed);
          const std::vector<float> want = scalar_rows(x, len, beta);
          std::vector<float> got(x.size(), 7.0f);
          l.rows(x.data(), got.data(), rows, len, beta);
          EXPECT_EQ(count_differences(got, want), 0) << "len " << len << " beta " << beta << " spread " << spread;
          std::vector<float> inplace = x;  // y = x
          l.rows(inplace.data(), inplace.data(), rows, len, beta);
          EXPECT_EQ(count_differences(inplace, want), 0) << "in place, len " << len << " beta " << beta;
          checked += static_cast<int64_t>(x.size());
        }
      }
    }
    EXPECT_GT(checked, 1000000);
  }
  if (ran == 0) GTEST_SKIP() << "this CPU has no AVX2";
#else
  GTEST_SKIP() << "no vector softmax on this architecture";
#endif
}

// The kernel: a graph of one softmax along `axis` at every SIMD level this CPU has (AVX-512 where
// it has it; TESSERA_SIMD=avx2 leaves it out) on 1, 2 and 3 threads, against the definition.
TEST(SoftmaxF32, CpuKernelGivesTheScalarBitsAtEveryLevel) {
  struct Shape3 {
    int64_t outer, len, inner;  // the softmax runs along len
  };
  const Shape3 shapes[] = {{4 * 2100, 16, 1}, {3000, 10, 1}, {700, 33, 1}, {20, 1000, 1}, {9, 1, 1}, {50, 16, 7}, {3, 33, 40}};
  packed_test::SimdGuard guard;
  uint32_t seed = 500;
  for (const Shape3& s : shapes) {
    for (double beta : {1.0, 0.37}) {
      SCOPED_TRACE(std::to_string(s.outer) + "x" + std::to_string(s.len) + "x" + std::to_string(s.inner) + " beta " +
                   std::to_string(beta));
      const std::vector<float> x = seeded_rows(s.outer * s.inner, s.len, 15.0f, s.inner == 1, ++seed);
      // The definition: along len, stride inner.
      std::vector<float> want(x.size());
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.len * s.inner + i;
          ops::softmax_f32_row(x.data() + base, want.data() + base, s.len, static_cast<float>(beta), s.inner);
        }
      Graph g;
      Tensor xt;
      xt.name = "x";
      xt.shape = {s.outer, s.len, s.inner};
      xt.dtype = DType::f32;
      xt.role = Role::input;
      const TensorId xi = g.add_tensor(xt);
      g.inputs = {xi};
      const TensorId y = *g.add_op(OpKind::softmax, {xi}, {{"axis", int64_t{1}}, {"beta", beta}}, "y", DType::f32);
      g.tensor(y).role = Role::output;
      g.outputs = {y};
      std::vector<uint8_t> in(x.size() * 4);
      std::memcpy(in.data(), x.data(), in.size());
      for (convert::SimdLevel level : {convert::SimdLevel::avx2, convert::SimdLevel::neon, convert::SimdLevel::scalar}) {
        if (convert::set_simd_level(level) != level) continue;
        for (int threads : {1, 2, 3}) {
          const packed_test::Bytes out = packed_test::run_one(g, in, packed_test::cpu_options("packed", threads));
          ASSERT_EQ(out.size(), in.size());
          std::vector<float> got(x.size());
          std::memcpy(got.data(), out.data(), in.size());
          EXPECT_EQ(count_differences(got, want), 0) << convert::simd_level_name(level) << ", " << threads << " threads";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
