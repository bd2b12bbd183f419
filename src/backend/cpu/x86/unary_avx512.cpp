// AVX-512 twins of the float exp, logistic and softmax (ops::exp_f32, ops::logistic_value,
// ops::softmax_f32_row), bit for bit as their AVX2 forms in unary_avx2.cpp: sixteen floats per
// step, widened to two vectors of eight doubles, the 32-entry table of exp_f32 held in four
// registers and read by two-register permutes. AVX512F only.
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
#pragma GCC diagnostic ignored "-Wuninitialized"
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

namespace {

// Transposes the 16 x 16 floats of v in place (v[i] lane k <-> v[k] lane i): pairs of rows
// interleaved, then pairs of pairs, then 128-bit lanes exchanged twice.
TS_AVX512 inline void transpose16(__m512* v) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
  // u[4g + j], in each 128-bit lane L: element 4L + j of rows 4g to 4g + 3.
  __m512 u[16];
  for (int g = 0; g < 16; g += 4) {
    const __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 1]);
    const __m512d c = _mm512_castps_pd(t[g + 2]), d = _mm512_castps_pd(t[g + 3]);
    u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 w0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), w1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
    const __m512 w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
    v[j] = _mm512_shuffle_f32x4(w0, w2, 0x88);
    v[4 + j] = _mm512_shuffle_f32x4(w1, w3, 0x88);
    v[8 + j] = _mm512_shuffle_f32x4(w0, w2, 0xdd);
    v[12 + j] = _mm512_shuffle_f32x4(w1, w3, 0xdd);
  }
}

// ops::softmax_f32_row on sixteen rows of len <= 16 floats, transposed so that lane i holds
// row i: the maximum, the exponentials, the sum from left to right and the products are then
// lane by lane, each row's operations in the scalar definition's order, and the result is
// transposed back.
TS_AVX512 inline void softmax_16_rows(const float* x, float* y, int64_t len, __m512 vbeta, const Table& tb) {
  const __mmask16 row = static_cast<__mmask16>((1u << len) - 1);
  __m512 v[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm512_maskz_loadu_ps(row, x + i * len);
  transpose16(v);
  __m512 mx = v[0];
  for (int64_t k = 1; k < len; ++k) mx = _mm512_max_ps(mx, v[k]);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t k = 0; k < len; ++k) {
    v[k] = exp_f32_16(_mm512_mul_ps(_mm512_sub_ps(v[k], mx), vbeta), tb);
    sum = _mm512_add_ps(sum, v[k]);
  }
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
  for (int64_t k = 0; k < len; ++k) v[k] = _mm512_mul_ps(v[k], inv);
  transpose16(v);
  for (int i = 0; i < 16; ++i) _mm512_mask_storeu_ps(y + i * len, row, v[i]);
}

}  // namespace

// ops::softmax_f32_row on `rows` rows of `len` floats (len >= 1): rows of up to 16 sixteen at a
// time (softmax_16_rows); longer rows, and the last rows, one at a time: the maximum over
// lanes, the exponentials sixteen at a time, the sum from left to right, the products.
TS_AVX512 void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t len, float beta) {
  const Table tb = load_table();
  const __m512 vbeta = _mm512_set1_ps(beta);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t full = len / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (len - full)) - 1);
  int64_t r = 0;
  if (len <= 16)
    for (; r + 16 <= rows; r += 16) softmax_16_rows(x + r * len, y + r * len, len, vbeta, tb);
  x += r * len;
  y += r * len;
  for (; r < rows; ++r, x += len, y += len) {
    __m512 m = _mm512_mask_loadu_ps(ninf, tail, x + full);
    for (int64_t k = 0; k < full; k += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + k));
    const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(m));
    for (int64_t k = 0; k < full; k += 16)
      _mm512_storeu_ps(y + k, exp_f32_16(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + k), mx), vbeta), tb));
    if (tail) {
      const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mx), vbeta);
      _mm512_mask_storeu_ps(y + full, tail, exp_f32_16(t, tb));
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < len; ++k) sum += y[k];
    const __m512 inv = _mm512_set1_ps(1.0f / sum);
    for (int64_t k = 0; k < full; k += 16) _mm512_storeu_ps(y + k, _mm512_mul_ps(_mm512_loadu_ps(y + k), inv));
    if (tail) _mm512_mask_storeu_ps(y + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + full), inv));
  }
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
