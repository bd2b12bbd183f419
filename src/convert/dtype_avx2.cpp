// AVX2 + F16C kernels for the element casts of dtype.h; bit-identical to the references.
#if defined(__x86_64__)  // x86-64 only (cmake/arch.cmake leaves it out elsewhere)
#include <immintrin.h>

#include <cstdint>

#include "convert/dtype.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::convert::avx2 {

namespace {
// 8 f32 -> 8 bf16 in the low halves of 32-bit lanes (round to nearest even, NaN -> 0x7FC0).
inline __m256i bf16_lanes(__m256i x) {
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), odd), 16);
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(kBf16NaN), nan);
}
}  // namespace

void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = bf16_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    __m256i b = bf16_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
    // packus works per 128-bit lane: [a0 b0 a1 b1] -> reorder the 64-bit quarters.
    __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), p);
  }
  for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  const __m128i nan16 = _mm_set1_epi16(static_cast<short>(kF16NaN));
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    __m128i nan_lanes = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_blendv_epi8(h, nan16, nan_lanes));
  }
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void flip_sign_bit_n(const uint8_t* src, uint8_t* dst, int64_t n) {
  int64_t i = 0;
  const __m256i k = _mm256_set1_epi8(static_cast<char>(0x80));
  for (; i + 32 <= n; i += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_xor_si256(v, k));
  }
  for (; i < n; ++i) dst[i] = src[i] ^ 0x80u;
}

}  // namespace tessera::convert::avx2

#pragma GCC pop_options
#endif  // __x86_64__
