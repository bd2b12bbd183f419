// Helpers shared by the conversion tests: seeded random data and SIMD-level switching.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "convert/simd.h"

namespace tessera::convert::testing {

// Runs fn() once with the scalar reference and once with AVX2 (when the CPU has it),
// restoring the level afterwards.
template <typename Fn>
void for_each_simd_level(Fn&& fn) {
  const SimdLevel saved = simd_level();
  for (SimdLevel l : {SimdLevel::scalar, SimdLevel::avx2}) {
    if (set_simd_level(l) != l) continue;
    fn(l);
  }
  set_simd_level(saved);
}

// Restores the SIMD level at scope exit.
struct SimdGuard {
  SimdLevel saved = simd_level();
  ~SimdGuard() { set_simd_level(saved); }
};

// Random floats spanning many exponents, with special values mixed in.
inline std::vector<float> random_floats(size_t n, uint32_t seed, bool specials = true, float lo_exp = -30,
                                        float hi_exp = 30) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f), ex(lo_exp, hi_exp);
  std::uniform_int_distribution<int> pick(0, 99), sign(0, 1);
  static const float kSpecial[] = {0.0f, -0.0f, 1e-40f, -1e-41f, 1.17549435e-38f, 0.5f, -1.0f, 65504.0f, 65520.0f};
  std::vector<float> v(n);
  for (auto& x : v) {
    int p = pick(rng);
    if (specials && p < 8) {
      x = kSpecial[p % (sizeof(kSpecial) / sizeof(kSpecial[0]))];
    } else {
      x = std::ldexp(mant(rng), static_cast<int>(ex(rng))) * (sign(rng) ? -1.0f : 1.0f);
    }
  }
  return v;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace tessera::convert::testing
