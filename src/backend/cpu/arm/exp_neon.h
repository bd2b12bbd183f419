// NEON twins of ops/exp_approx.h: the same operations on four lanes, the same bits.
// Files that include it are compiled with -ffp-contract=off (cmake/components.cmake).
#pragma once
#if defined(__aarch64__)

#include <arm_neon.h>

#include <limits>

#include "ops/exp_approx.h"

namespace tessera::cpu::arm {

inline float32x4_t exp4(float32x4_t x) {
  using namespace ops::expc;
  const uint32x4_t low = vcltq_f32(x, vdupq_n_f32(kLow));
  const uint32x4_t high = vcgtq_f32(x, vdupq_n_f32(kHigh));
  const float32x4_t t = vfmaq_f32(vdupq_n_f32(kMagic), x, vdupq_n_f32(kLog2e));  // fma(x, log2e, magic)
  const float32x4_t n = vsubq_f32(t, vdupq_n_f32(kMagic));
  float32x4_t r = vfmaq_f32(x, n, vdupq_n_f32(-kLn2Hi));
  r = vfmaq_f32(r, n, vdupq_n_f32(-kLn2Lo));
  float32x4_t p = vdupq_n_f32(kC[7]);
  for (int i = 6; i >= 0; --i) p = vfmaq_f32(vdupq_n_f32(kC[i]), p, r);  // fma(p, r, c_i)
  const uint32x4_t pb = vshlq_n_u32(vaddq_u32(vreinterpretq_u32_f32(t), vdupq_n_u32(127u - kMagicBits)), 23);
  float32x4_t e = vmulq_f32(p, vreinterpretq_f32_u32(pb));
  e = vbslq_f32(low, vdupq_n_f32(0.0f), e);
  return vbslq_f32(high, vdupq_n_f32(std::numeric_limits<float>::infinity()), e);
}

// ops::silu_value on four lanes.
inline float32x4_t silu4(float32x4_t x) { return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x)))); }

}  // namespace tessera::cpu::arm

#endif  // __aarch64__
