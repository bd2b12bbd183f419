// AVX2 twins of ops/exp_approx.h: the same operations on eight lanes, the same bits.
#pragma once
#if defined(__x86_64__)

#include <immintrin.h>

#include <limits>

#include "ops/exp_approx.h"

namespace tessera::cpu::x86 {

__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  using namespace ops::expc;
  const __m256 low = _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_LT_OQ);
  const __m256 high = _mm256_cmp_ps(x, _mm256_set1_ps(kHigh), _CMP_GT_OQ);
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(kMagic));
  const __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(kMagic));
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kC[7]);
  for (int i = 6; i >= 0; --i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC[i]));
  const __m256i pb = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(static_cast<int>(127u - kMagicBits))), 23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(pb));
  e = _mm256_blendv_ps(e, _mm256_setzero_ps(), low);
  return _mm256_blendv_ps(e, _mm256_set1_ps(std::numeric_limits<float>::infinity()), high);
}

// ops::silu_value on eight lanes.
__attribute__((target("avx2,fma"))) inline __m256 silu8(__m256 x) {
  const __m256 e = exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));  // -x, as the scalar negation
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
