// AVX2 twins of float unary ops whose scalar definition (ops/unary_math.h) they reproduce
// bit for bit: silu (x / (1 + exp_approx(-x))), exp (ops::exp_f32) and logistic
// (ops::logistic_value, e^x / (1 + e^x) with e^x by exp_f32); and of the float softmax of
// rows (ops/softmax_f32.h).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "backend/cpu/x86/exp_avx2.h"
#include "ops/exp_approx.h"
#include "ops/exp_f32.h"
#include "ops/unary_math.h"

namespace tessera::cpu::x86 {

namespace {

#define TS_AVX2 __attribute__((target("avx2,fma")))

// exp_f32's main path on four doubles (x widened exactly), before its rounding to float:
// the same products and sums in the same order, the table read by a gather.
TS_AVX2 inline __m256d exp_f32_core4(__m256d x) {
  using namespace ops::expf32;
  const __m256d z = _mm256_mul_pd(_mm256_set1_pd(kInvLn2N), x);
  __m256d kd = _mm256_add_pd(z, _mm256_set1_pd(kShift));
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, _mm256_set1_pd(kShift));
  const __m256d r = _mm256_sub_pd(z, kd);
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTable), idx, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  const __m256d p = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(kC0), r), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(kC2), r), _mm256_set1_pd(1.0));
  y = _mm256_add_pd(_mm256_mul_pd(p, r2), y);
  return _mm256_mul_pd(y, _mm256_castsi256_pd(t));
}

// ops::exp_f32 on eight lanes: the main path for every lane, then the special lanes blended
// in (x > kHigh: +inf, x < kLow, -inf included: +0, NaN: x + x).
TS_AVX2 inline __m256 exp_f32_8(__m256 x) {
  using namespace ops::expf32;
  const __m128 lo = _mm256_cvtpd_ps(exp_f32_core4(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
  const __m128 hi = _mm256_cvtpd_ps(exp_f32_core4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  __m256 e = _mm256_set_m128(hi, lo);
  e = _mm256_blendv_ps(e, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(x, _mm256_set1_ps(kHigh), _CMP_GT_OQ));
  e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_LT_OQ));
  return _mm256_blendv_ps(e, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// ops::logistic_value on eight lanes: e / (1 + e), 1 where e is +inf.
TS_AVX2 inline __m256 logistic8(__m256 x) {
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 e = exp_f32_8(x);
  const __m256 y = _mm256_div_ps(e, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(y, _mm256_set1_ps(1.0f), _mm256_cmp_ps(e, inf, _CMP_EQ_OQ));
}

}  // namespace

TS_AVX2 void silu_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ops::silu_value(x[i]);
}

TS_AVX2 void exp_f32_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_f32_8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ops::exp_f32(x[i]);
}

TS_AVX2 void logistic_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, logistic8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ops::logistic_value(x[i]);
}

namespace {

// The lanes below n of eight (n <= 8 taken as 8) as a mask of whole lanes.
TS_AVX2 inline __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The maximum of the eight lanes of m, in every lane.
TS_AVX2 inline __m256 max_lanes(__m256 m) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm256_broadcastss_ps(h);
}

}  // namespace

// ops::softmax_f32_row on `rows` rows of `len` floats (len >= 1), one row at a time: the
// maximum over lanes, the exponentials eight at a time (the last, partial step masked), their
// sum from left to right in float, then the products with the rounded reciprocal.
TS_AVX2 void softmax_rows_avx2(const float* x, float* y, int64_t rows, int64_t len, float beta) {
  const __m256 vbeta = _mm256_set1_ps(beta);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t full = len / 8 * 8;
  const __m256i tail = lanes_below(len - full);
  const bool has_tail = len > full;
  for (int64_t r = 0; r < rows; ++r, x += len, y += len) {
    __m256 m = ninf;
    if (has_tail) m = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + full, tail), _mm256_castsi256_ps(tail));
    for (int64_t k = 0; k < full; k += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + k));
    const __m256 mx = max_lanes(m);
    for (int64_t k = 0; k < full; k += 8)
      _mm256_storeu_ps(y + k, exp_f32_8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + k), mx), vbeta)));
    if (has_tail) {
      const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + full, tail), mx), vbeta);
      _mm256_maskstore_ps(y + full, tail, exp_f32_8(t));
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < len; ++k) sum += y[k];
    const __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (int64_t k = 0; k < full; k += 8) _mm256_storeu_ps(y + k, _mm256_mul_ps(_mm256_loadu_ps(y + k), inv));
    if (has_tail) _mm256_maskstore_ps(y + full, tail, _mm256_mul_ps(_mm256_maskload_ps(y + full, tail), inv));
  }
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
