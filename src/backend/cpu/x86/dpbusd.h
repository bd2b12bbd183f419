// vpdpbusd for the 8-bit kernels on 256-bit vectors, whichever encoding this CPU has: the
// four u8 x s8 products of each 32-bit lane added to it, exactly (the non-saturating form).
// VEX: AVX-VNNI; EVEX: AVX512-VNNI with AVX512VL (convert::cpu_vnni() says which). Written
// as asm: it needs no VNNI target attribute, so one template serves every instruction set
// (AVX2 on for the vector type).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2")

namespace tessera::cpu::x86 {

enum class Dot { madd, vnni_vex, vnni_evex };

template <Dot kDot>
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
  if constexpr (kDot == Dot::vnni_vex) asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
  if constexpr (kDot == Dot::vnni_evex) asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
  return acc;
}

}  // namespace tessera::cpu::x86

#pragma GCC pop_options

#endif  // __x86_64__
