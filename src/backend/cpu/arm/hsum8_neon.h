// kernels/hsum8.h on eight lanes held as lo = lanes 0-3, hi = lanes 4-7: lo + hi is the
// tree's first step; the same additions, the same bits.
#pragma once
#if defined(__aarch64__)

#include <arm_neon.h>

namespace tessera::cpu::arm {

inline float hsum8(float32x4_t lo, float32x4_t hi) {
  const float32x4_t s4 = vaddq_f32(lo, hi);                                 // s4[i] = a[i] + a[i+4]
  const float32x2_t s2 = vadd_f32(vget_low_f32(s4), vget_high_f32(s4));  // s4[0]+s4[2], s4[1]+s4[3]
  return vget_lane_f32(s2, 0) + vget_lane_f32(s2, 1);
}

}  // namespace tessera::cpu::arm

#endif  // __aarch64__
