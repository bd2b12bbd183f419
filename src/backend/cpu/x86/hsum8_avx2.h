// kernels/hsum8.h on one __m256 (lanes 0-7): the same additions, the same bits.
#pragma once
#if defined(__x86_64__)

#include <immintrin.h>

namespace tessera::cpu::x86 {

__attribute__((target("avx2"))) inline float hsum8(__m256 a) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // (s4[0] + s4[2]), (s4[1] + s4[3])
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
