// The byte table lookup micro-kernel (ukernels/lut8.h): every SIMD form this CPU runs gives
// the scalar definition's bytes, for every index byte, lengths ending inside a vector and on
// one, and writes nothing past the end.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backend/cpu/ukernels/lut8.h"
#include "convert/simd.h"

namespace tessera {
namespace {

TEST(Lut8, SimdGivesTheTableBytes) {
#if defined(__x86_64__)
  const cpu::uk::Lut8Fn simd = cpu::uk::avx512_vbmi_lut8();
#else
  const cpu::uk::Lut8Fn simd = nullptr;
#endif
  if (!simd) GTEST_SKIP() << "this CPU has no AVX512-VBMI";
  std::mt19937 rng(8);
  std::vector<uint8_t> table(256), x(1000);
  for (int trial = 0; trial < 20; ++trial) {
    for (auto& t : table) t = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i < 256 ? i : rng());  // every index
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{256}, int64_t{999}}) {
      std::vector<uint8_t> want(1000, 0xEE), got(1000, 0xEE);
      cpu::uk::lut8_scalar(x.data(), n, table.data(), want.data());
      simd(x.data(), n, table.data(), got.data());
      ASSERT_EQ(got, want) << "trial " << trial << ", n " << n;  // the bytes past n untouched too
    }
  }
}

}  // namespace
}  // namespace tessera
