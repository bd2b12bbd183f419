// ops/exp_approx.h. Compiled with -ffp-contract=off (cmake/components.cmake): every fma is
// written out, so the vector twins can match it.
#include "ops/exp_approx.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::ops {

float exp_approx(float x) {
  using namespace expc;
  if (x < kLow) return 0.0f;
  if (x > kHigh) return std::numeric_limits<float>::infinity();
  const float t = std::fma(x, kLog2e, kMagic);
  const float n = t - kMagic;
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kC[7];
  for (int i = 6; i >= 0; --i) p = std::fma(p, r, kC[i]);
  uint32_t tb;
  std::memcpy(&tb, &t, 4);
  const uint32_t pb = (tb + (127u - kMagicBits)) << 23;
  float pow2;
  std::memcpy(&pow2, &pb, 4);
  return p * pow2;
}

float silu_value(float x) { return x / (1.0f + exp_approx(-x)); }

// Eigen's generic_fast_tanh_float (Eigen/src/Core/MathFunctionsImpl.h), the coefficients as
// written there; compiled without contraction so that every a * b + c rounds twice, as the
// interpreter's build (no fma) does.
float tanh_value(float a_x) {
  constexpr float kClamp = 7.90531110763549805f;  // past it the polynomial's ratio is 1 in float
  constexpr float kTiny = 0.0004f;                 // below it tanh(x) = x in float
  constexpr float kAlpha[7] = {4.89352455891786e-03f,  6.37261928875436e-04f, 1.48572235717979e-05f,
                               5.12229709037114e-08f,  -8.60467152213735e-11f, 2.00018790482477e-13f,
                               -2.76076847742355e-16f};  // x^1, x^3, ..., x^13
  constexpr float kBeta[4] = {4.89352518554385e-03f, 2.26843463243900e-03f, 1.18534705686654e-04f,
                              1.19825839466702e-06f};  // x^0, x^2, x^4, x^6
  const float x = std::max(std::min(a_x, kClamp), -kClamp);
  if (std::fabs(a_x) < kTiny) return x;
  const float x2 = x * x;
  float p = x2 * kAlpha[6] + kAlpha[5];
  for (int i = 4; i >= 0; --i) p = x2 * p + kAlpha[i];
  p = x * p;
  float q = x2 * kBeta[3] + kBeta[2];
  q = x2 * q + kBeta[1];
  q = x2 * q + kBeta[0];
  return p / q;
}

}  // namespace tessera::ops
