// ops/exp_approx.h. Compiled with -ffp-contract=off (cmake/components.cmake): every fma is
// written out, so the vector twins can match it.
#include "ops/exp_approx.h"

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

}  // namespace tessera::ops
