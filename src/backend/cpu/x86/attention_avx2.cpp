// AVX2 + FMA + F16C version of attn::attend (kernels/attention.h), bit-identical to the
// scalar one: the same 8-lane FMA chains, the same std::exp, the same summation order.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/attention.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::attn::avx2 {

namespace {

inline float hsum8(__m256 a) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// Values i..i+7 of a cache row (i a multiple of 8). q8_0: d * q, exact in f32 (an 11-bit
// significand times an 8-bit code), so it equals the scalar kernel's value bit for bit.
template <Cache kC>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2)));
  if constexpr (kC == Cache::q8_0) {
    const uint8_t* block = row + (i / kQBlock) * kQ8_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, block, 2);
    const __m256 q = _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + i % kQBlock))));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)), q);
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
}

// q8_0 rows have no tail (D is a multiple of 32): only f32 and f16 come here.
template <Cache kC>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return _cvtsh_ss(h);
  }
  float f;
  std::memcpy(&f, row + i * 4, 4);
  return f;
}

template <Cache kC>
void attend_t(const Item& it) {
  const int64_t d = it.d, d8 = d / 8 * 8, rb = row_bytes(kC, d);
  float m = -INFINITY;
  for (int64_t j = 0; j < it.rows; ++j) {
    const uint8_t* kr = it.k + j * rb;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < d8; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(it.q + i), load8<kC>(kr, i), acc);
    float t = 0;
    for (int64_t i = d8; i < d; ++i) t = std::fma(it.q[i], load1<kC>(kr, i), t);
    it.scores[j] = (hsum8(acc) + t) * it.scale;
    m = std::max(m, it.scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j < it.rows; ++j) {
    it.scores[j] = std::exp(it.scores[j] - m);
    sum += it.scores[j];
  }
  int64_t i = 0;
  // Output in registers, 32 values at a time, over all rows.
  for (; i + 32 <= d8; i += 32) {
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int64_t j = 0; j < it.rows; ++j) {
      const uint8_t* vr = it.v + j * rb;
      const __m256 p = _mm256_set1_ps(it.scores[j]);
      o0 = _mm256_fmadd_ps(p, load8<kC>(vr, i), o0);
      o1 = _mm256_fmadd_ps(p, load8<kC>(vr, i + 8), o1);
      o2 = _mm256_fmadd_ps(p, load8<kC>(vr, i + 16), o2);
      o3 = _mm256_fmadd_ps(p, load8<kC>(vr, i + 24), o3);
    }
    const __m256 s = _mm256_set1_ps(sum);
    _mm256_storeu_ps(it.out + i, _mm256_div_ps(o0, s));
    _mm256_storeu_ps(it.out + i + 8, _mm256_div_ps(o1, s));
    _mm256_storeu_ps(it.out + i + 16, _mm256_div_ps(o2, s));
    _mm256_storeu_ps(it.out + i + 24, _mm256_div_ps(o3, s));
  }
  for (; i < d8; i += 8) {
    __m256 o = _mm256_setzero_ps();
    for (int64_t j = 0; j < it.rows; ++j)
      o = _mm256_fmadd_ps(_mm256_set1_ps(it.scores[j]), load8<kC>(it.v + j * rb, i), o);
    _mm256_storeu_ps(it.out + i, _mm256_div_ps(o, _mm256_set1_ps(sum)));
  }
  for (; i < d; ++i) {
    float o = 0;
    for (int64_t j = 0; j < it.rows; ++j) o = std::fma(it.scores[j], load1<kC>(it.v + j * rb, i), o);
    it.out[i] = o / sum;
  }
}

}  // namespace

void attend(const Item& it) {
  switch (it.cache) {
    case Cache::f16: return attend_t<Cache::f16>(it);
    case Cache::q8_0: return attend_t<Cache::q8_0>(it);
    case Cache::f32: return attend_t<Cache::f32>(it);
  }
}

}  // namespace tessera::cpu::attn::avx2

#pragma GCC pop_options

#endif  // __x86_64__
