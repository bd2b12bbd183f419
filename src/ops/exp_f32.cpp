// ops/exp_f32.h. Compiled with -ffp-contract=off (cmake/components.cmake): each product and
// sum rounds on its own, as in the vector twins.
#include "ops/exp_f32.h"

#include <cstring>
#include <limits>

namespace tessera::ops {

float exp_f32(float x) {
  using namespace expf32;
  constexpr uint32_t kTop88 = 0x42b, kTopInf = 0x7f8;  // (bits >> 20) & 0x7ff of 88.0f and of inf
  uint32_t xb;
  std::memcpy(&xb, &x, 4);
  const uint32_t abstop = (xb >> 20) & 0x7ff;  // exponent and top mantissa bits, the sign cleared
  if (abstop >= kTop88) {  // |x| >= 88, infinities and NaNs included
    if (xb == 0xff800000u) return 0.0f;  // -inf
    if (abstop >= kTopInf) return x + x;  // NaN, +inf
    if (x > kHigh) return std::numeric_limits<float>::infinity();
    if (x < kLow) return 0.0f;
  }
  const double z = kInvLn2N * static_cast<double>(x);
  double kd = z + kShift;
  uint64_t ki;
  std::memcpy(&ki, &kd, 8);
  kd -= kShift;
  const double r = z - kd;
  const uint64_t tb = kTable[ki % 32] + (ki << 47);
  double s;
  std::memcpy(&s, &tb, 8);
  const double p = kC0 * r + kC1;
  const double r2 = r * r;
  double y = kC2 * r + 1.0;
  y = p * r2 + y;
  y = y * s;
  return static_cast<float>(y);
}

}  // namespace tessera::ops
