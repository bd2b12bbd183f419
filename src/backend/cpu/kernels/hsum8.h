// The eight-lane horizontal sum that the cpu's float kernels share (linear_q8.h's F16
// order, attention.h's scores and sums), defined once per instruction set with the same
// additions: hsum8(a) = (s4[0] + s4[2]) + (s4[1] + s4[3]) with s4[i] = a[i] + a[i+4].
// The scalar form here; x86/hsum8_avx2.h and arm/hsum8_neon.h give the same bits.
#pragma once

namespace tessera::cpu {

inline float hsum8(const float* a) {
  float s4[4];
  for (int i = 0; i < 4; ++i) s4[i] = a[i] + a[i + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

}  // namespace tessera::cpu
