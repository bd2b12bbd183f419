// AVX512-VBMI byte table lookup (ukernels/lut8.h): the table's halves in four zmm registers,
// vpermi2b looks each index's low 7 bits up in both halves, the top bit chooses.
#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/ukernels/lut8.h"
#include "convert/simd.h"

namespace tessera::cpu::uk {

namespace {

#define TS_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// table[i] for 64 indices, the table's quarters in t0..t3.
TS_VBMI inline __m512i look64(__m512i i, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  const __m512i lo = _mm512_permutex2var_epi8(t0, i, t1);  // table[i & 127]
  const __m512i hi = _mm512_permutex2var_epi8(t2, i, t3);  // table[128 + (i & 127)]
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(i), lo, hi);
}

TS_VBMI void lut8_vbmi(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, look64(_mm512_loadu_si512(x + i), t0, t1, t2, t3));
  if (i < n) {
    const __mmask64 k = (~uint64_t{0}) >> (64 - (n - i));
    _mm512_mask_storeu_epi8(y + i, k, look64(_mm512_maskz_loadu_epi8(k, x + i), t0, t1, t2, t3));
  }
}

#undef TS_VBMI

}  // namespace

Lut8Fn avx512_vbmi_lut8() { return convert::cpu_avx512_vbmi() ? lut8_vbmi : nullptr; }

}  // namespace tessera::cpu::uk

#endif  // __x86_64__
