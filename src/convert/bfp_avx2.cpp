// AVX2 bfp face-row packer and unpacker; bit-identical to the reference in bfp.cpp.
// One face row is two 8-lane vectors; the row exponent is a horizontal max.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "convert/bfp.h"
#include "convert/gguf_blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::convert::avx2 {

namespace {

// Codes (sign << W | magnitude) of 8 values x with exponent fields e, for row exponent E.
template <int W>
inline __m256i codes8(__m256i x, __m256i e, __m256i e_row) {
  constexpr int kDrop = 24 - W;
  __m256i sig = _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFF)), _mm256_set1_epi32(0x800000));
  sig = _mm256_andnot_si256(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()), sig);  // exponent 0 -> 0
  __m256i t = _mm256_srlv_epi32(sig, _mm256_sub_epi32(e_row, e));  // counts >= 32 give 0
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(t, kDrop), _mm256_set1_epi32(1));
  __m256i q = _mm256_srli_epi32(_mm256_add_epi32(t, _mm256_add_epi32(_mm256_set1_epi32((1 << (kDrop - 1)) - 1), odd)),
                                kDrop);
  q = _mm256_min_epu32(q, _mm256_set1_epi32((1 << W) - 1));
  __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(x, 31), W);
  sign = _mm256_andnot_si256(_mm256_cmpeq_epi32(q, _mm256_setzero_si256()), sign);
  return _mm256_or_si256(q, sign);
}

}  // namespace

template <int W>
inline uint8_t pack_row(const float* v, uint8_t* codes) {
  const __m256i ff = _mm256_set1_epi32(0xFF);
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v));
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8));
  __m256i ea = _mm256_and_si256(_mm256_srli_epi32(a, 23), ff);
  __m256i eb = _mm256_and_si256(_mm256_srli_epi32(b, 23), ff);
  __m256i m = _mm256_max_epi32(ea, eb);
  m = _mm256_max_epi32(m, _mm256_permute2x128_si256(m, m, 1));
  m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, 0x4E));
  m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, 0xB1));
  __m256i ca = codes8<W>(a, ea, m), cb = codes8<W>(b, eb, m);
  // 32-bit codes -> bytes in order: packus works per 128-bit half, so fix the quarters.
  __m256i p16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(ca, cb), 0xD8);
  __m128i p8 = _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
  if constexpr (W == kBfp8MantBits) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes), p8);
  } else {
    // Byte pairs (c0, c1) -> one byte c0 | c1 << 4.
    __m128i lo = _mm_and_si128(p8, _mm_set1_epi16(0x000F));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(p8, 4), _mm_set1_epi16(0x00F0));
    __m128i nib = _mm_packus_epi16(_mm_or_si128(lo, hi), _mm_setzero_si128());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), nib);
  }
  return static_cast<uint8_t>(_mm256_cvtsi256_si32(m));
}

template <int W>
inline void unpack_row(uint8_t e, const uint8_t* codes, float* v) {
  __m128i c;
  if constexpr (W == kBfp8MantBits) {
    c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  } else {
    __m128i packed = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes));
    __m128i lo = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
    c = _mm_unpacklo_epi8(lo, hi);  // low nibble first
  }
  const __m256 step = _mm256_set1_ps(bfp_step(e, W));
  const __m256i mask = _mm256_set1_epi32((1 << W) - 1);
  for (int half = 0; half < 2; ++half) {
    __m256i ci = _mm256_cvtepu8_epi32(half ? _mm_srli_si128(c, 8) : c);
    __m256 mag = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(ci, mask)), step);
    __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(ci, W), 31);
    _mm256_storeu_ps(v + half * 8, _mm256_or_ps(mag, _mm256_castsi256_ps(sign)));
  }
}

#include "convert/bfp_impl.h"

}  // namespace tessera::convert::avx2

#pragma GCC pop_options
