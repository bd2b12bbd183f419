// AVX-512 twins of the float exp and logistic (ops::exp_f32, ops::logistic_value), bit for bit
// as their AVX2 forms in unary_avx2.cpp: sixteen floats per step, widened to two vectors of
// eight doubles, the 32-entry table of exp_f32 held in four registers and read by two-register
// permutes. AVX512F only.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "ops/exp_f32.h"
#include "ops/unary_math.h"

namespace tessera::cpu::x86 {

namespace {

#define TS_AVX512 __attribute__((target("avx2,fma,avx512f")))
// GCC 12 reports the undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_*) as uninitialized.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The table of exp_f32 in four registers of eight entries.
struct Table {
  __m512i t0, t1, t2, t3;
};

TS_AVX512 inline Table load_table() {
  const auto* t = ops::expf32::kTable;
  return {_mm512_loadu_si512(t), _mm512_loadu_si512(t + 8), _mm512_loadu_si512(t + 16), _mm512_loadu_si512(t + 24)};
}

// exp_f32's main path on eight doubles, before the rounding to float (as exp_f32_core4 in
// unary_avx2.cpp): kTable[ki % 32] is kTable[ki & 15] of the lower or the upper half, by bit 4.
TS_AVX512 inline __m512d exp_f32_core8(__m512d x, const Table& tb) {
  using namespace ops::expf32;
  const __m512d z = _mm512_mul_pd(_mm512_set1_pd(kInvLn2N), x);
  __m512d kd = _mm512_add_pd(z, _mm512_set1_pd(kShift));
  const __m512i ki = _mm512_castpd_si512(kd);
  kd = _mm512_sub_pd(kd, _mm512_set1_pd(kShift));
  const __m512d r = _mm512_sub_pd(z, kd);
  const __m512i lo = _mm512_permutex2var_epi64(tb.t0, ki, tb.t1);  // kTable[ki & 15]
  const __m512i hi = _mm512_permutex2var_epi64(tb.t2, ki, tb.t3);  // kTable[16 + (ki & 15)]
  __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), lo, hi);
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
  const __m512d p = _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(kC0), r), _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y = _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(kC2), r), _mm512_set1_pd(1.0));
  y = _mm512_add_pd(_mm512_mul_pd(p, r2), y);
  return _mm512_mul_pd(y, _mm512_castsi512_pd(t));
}

// ops::exp_f32 on sixteen lanes: the main path for all, then the special lanes (x > kHigh:
// +inf, x < kLow: +0, NaN: x + x).
TS_AVX512 inline __m512 exp_f32_16(__m512 x, const Table& tb) {
  using namespace ops::expf32;
  const __m256 xl = _mm512_castps512_ps256(x);
  const __m256 xh = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
  const __m256 el = _mm512_cvtpd_ps(exp_f32_core8(_mm512_cvtps_pd(xl), tb));
  const __m256 eh = _mm512_cvtpd_ps(exp_f32_core8(_mm512_cvtps_pd(xh), tb));
  __m512 e = _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(el)), _mm256_castps_pd(eh), 1));
  e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kHigh), _CMP_GT_OQ),
                         _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLow), _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_add_ps(x, x));
}

// ops::logistic_value on sixteen lanes: e / (1 + e), 1 where e is +inf.
TS_AVX512 inline __m512 logistic16(__m512 x, const Table& tb) {
  const __m512 e = exp_f32_16(x, tb);
  const __m512 y = _mm512_div_ps(e, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  return _mm512_mask_mov_ps(
      y, _mm512_cmp_ps_mask(e, _mm512_set1_ps(std::numeric_limits<float>::infinity()), _CMP_EQ_OQ),
      _mm512_set1_ps(1.0f));
}

}  // namespace

TS_AVX512 void exp_f32_avx512(const float* x, float* y, int64_t n) {
  const Table tb = load_table();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp_f32_16(_mm512_loadu_ps(x + i), tb));
  for (; i < n; ++i) y[i] = ops::exp_f32(x[i]);
}

TS_AVX512 void logistic_avx512(const float* x, float* y, int64_t n) {
  const Table tb = load_table();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, logistic16(_mm512_loadu_ps(x + i), tb));
  for (; i < n; ++i) y[i] = ops::logistic_value(x[i]);
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
