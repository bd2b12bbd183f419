// x86-64 functions of the hybrid conv2d fast path (kernels/hybrid_fast.h): the int16-pair
// panel GEMM on AVX2 (two 8-lane int32 vectors per panel row) and AVX-512 (one 16-lane
// vector), the 8-bit form with AVX512-VNNI (four u8 x s8 products per lane, vpdpbusd), and
// the quantization's min/max and codes (int16, or bytes code + 128). The
// integer sums are exact whatever the order; the conversion is the reference's separately
// rounded float multiply and add (compiled with -ffp-contract=off, and written as
// separate intrinsics), so every function gives hybrid_fast.cpp's generic results.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/hybrid_fast.h"

// GCC 12's headers fill the unused operand of the 512-bit max / min / convert with a
// self-initialised "undefined" vector, which -Wall reports in every caller.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tessera::cpu::hconv {

namespace {

#define TS_AVX2 __attribute__((target("avx2")))
#define TS_AVX512 __attribute__((target("avx2,avx512f,avx512bw")))
#define TS_AVX512_VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))

// Rows per micro-tile.
constexpr int kRows = 6;

inline int32_t pair_at(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- AVX2: 16 channels as two 8-lane halves ----

template <typename V>
TS_AVX2 inline V act8(V v, Activation act);

template <>
TS_AVX2 inline __m256 act8(__m256 v, Activation act) {
  // std::max(v, lo) is (v < lo) ? lo : v, which is maxps(lo, v); std::min(v, hi) is
  // (hi < v) ? hi : v, minps(hi, v) (NaN and the sign of zero kept as there).
  switch (act) {
    case Activation::relu: return _mm256_max_ps(_mm256_setzero_ps(), v);
    case Activation::relu6: return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
    case Activation::relu_n1_to_1: return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_set1_ps(-1.0f), v));
    default: return v;
  }
}

TS_AVX2 inline void store8(float* y, __m256 v, int n) {
  if (n >= 8) {
    _mm256_storeu_ps(y, v);
  } else if (n > 0) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    std::memcpy(y, t, static_cast<size_t>(n) * sizeof(float));
  }
}

TS_AVX2 inline void out_row8(__m256i lo, __m256i hi, const Out& o, float* y) {
  __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(lo), _mm256_loadu_ps(o.scale));
  __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(hi), _mm256_loadu_ps(o.scale + 8));
  if (o.bias) {
    v0 = _mm256_add_ps(v0, _mm256_loadu_ps(o.bias));
    v1 = _mm256_add_ps(v1, _mm256_loadu_ps(o.bias + 8));
  }
  store8(y, act8(v0, o.act), o.nvalid);
  store8(y + 8, act8(v1, o.act), o.nvalid - 8);
}

template <int MR>
TS_AVX2 inline void tile_avx2(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Out& o,
                              float* y) {
  __m256i c0[MR], c1[MR];
  for (int r = 0; r < MR; ++r) c0[r] = c1[r] = _mm256_setzero_si256();
  for (int64_t p = 0; p < kpairs; ++p) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + p * kPanel * 2));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + p * kPanel * 2 + 16));
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(pair_at(a + r * lda + 2 * p));
      c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(av, w0));
      c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(av, w1));
    }
  }
  for (int r = 0; r < MR; ++r) out_row8(c0[r], c1[r], o, y + r * o.ldy);
}

TS_AVX2 void panel_avx2(int64_t rows, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Out& o) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) tile_avx2<kRows>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy);
  switch (rows - r) {
    case 5: tile_avx2<5>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy); break;
    case 4: tile_avx2<4>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy); break;
    case 3: tile_avx2<3>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy); break;
    case 2: tile_avx2<2>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy); break;
    case 1: tile_avx2<1>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy); break;
    default: break;
  }
}

// The reference's min / max over x (finite values: any order gives them), false on a NaN.
TS_AVX2 bool min_max_avx2(const float* x, int64_t n, float* mn, float* mx) {
  __m256 lo = _mm256_set1_ps(x[0]), hi = lo, nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(nan)) return false;
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, lo);
  _mm256_store_ps(h, hi);
  float a = l[0], b = h[0];
  for (int j = 1; j < 8; ++j) a = std::min(a, l[j]), b = std::max(b, h[j]);
  for (; i < n; ++i) {
    if (std::isnan(x[i])) return false;
    a = std::min(a, x[i]), b = std::max(b, x[i]);
  }
  *mn = a, *mx = b;
  return true;
}

// round half away from zero of 8 floats: t = trunc(v), plus sign(v) where |v - t| >= 0.5
// (v - t is exact; floats of magnitude 2^23 and more are integers, t = v).
TS_AVX2 inline __m256 round_away8(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
  const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
  const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), _mm256_or_ps(sign, _mm256_set1_ps(1.0f)));
  return _mm256_add_ps(t, step);
}

TS_AVX2 inline __m256i codes8(__m256 x, __m256 inv, __m256 add, __m256 flo, __m256 fhi, __m256i off) {
  const __m256 v = _mm256_add_ps(add, _mm256_mul_ps(x, inv));
  __m256 r = _mm256_min_ps(fhi, _mm256_max_ps(flo, round_away8(v)));
  r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));  // NaN: 0
  return _mm256_sub_epi32(_mm256_cvtps_epi32(r), off);
}

TS_AVX2 void codes_avx2(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, int32_t offset,
                        int16_t* out) {
  const __m256 vinv = _mm256_set1_ps(inv), vadd = _mm256_set1_ps(add);
  const __m256 flo = _mm256_set1_ps(static_cast<float>(lo)), fhi = _mm256_set1_ps(static_cast<float>(hi));
  const __m256i off = _mm256_set1_epi32(offset);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = codes8(_mm256_loadu_ps(x + i), vinv, vadd, flo, fhi, off);
    const __m256i b = codes8(_mm256_loadu_ps(x + i + 8), vinv, vadd, flo, fhi, off);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8));
  }
  if (i < n) generic_fns().codes(x + i, n - i, inv, add, lo, hi, offset, out + i);
}

// The same codes as bytes code + 128 (the 8-bit form's A): the offset -128, then packed.
TS_AVX2 void codes_u8_avx2(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, uint8_t* out) {
  const __m256 vinv = _mm256_set1_ps(inv), vadd = _mm256_set1_ps(add);
  const __m256 flo = _mm256_set1_ps(static_cast<float>(lo)), fhi = _mm256_set1_ps(static_cast<float>(hi));
  const __m256i off = _mm256_set1_epi32(-128);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = codes8(_mm256_loadu_ps(x + i), vinv, vadd, flo, fhi, off);
    const __m256i b = codes8(_mm256_loadu_ps(x + i + 8), vinv, vadd, flo, fhi, off);
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);  // 16 x int16 in order
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  if (i < n) {
    int16_t tail[16];
    generic_fns().codes(x + i, n - i, inv, add, lo, hi, -128, tail);
    for (int64_t j = 0; j < n - i; ++j) out[i + j] = static_cast<uint8_t>(tail[j]);
  }
}

// ---- AVX-512: 16 channels in one vector ----

TS_AVX512 inline __m512 act16(__m512 v, Activation act) {
  switch (act) {
    case Activation::relu: return _mm512_max_ps(_mm512_setzero_ps(), v);
    case Activation::relu6: return _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(_mm512_setzero_ps(), v));
    case Activation::relu_n1_to_1: return _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(_mm512_set1_ps(-1.0f), v));
    default: return v;
  }
}

TS_AVX512 inline void out_rows16(const __m512i* c, int rows, const Out& o, float* y) {
  const __mmask16 keep = o.nvalid >= kPanel ? __mmask16(0xFFFF) : __mmask16((1u << o.nvalid) - 1);
  const __m512 sc = _mm512_loadu_ps(o.scale);
  const __m512 bs = o.bias ? _mm512_loadu_ps(o.bias) : _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(c[r]), sc);
    if (o.bias) v = _mm512_add_ps(v, bs);
    _mm512_mask_storeu_ps(y + r * o.ldy, keep, act16(v, o.act));
  }
}

// 12 rows per tile: 12 of the 32 zmm registers hold sums.
constexpr int kRows512 = 12;

// The int16 pairs on AVX-512 (CPUs without VNNI; with it the 8-bit form below runs): one
// vpmaddwd + vpaddd per row and step, 12 rows x 16 channels per tile.
template <int MR>
TS_AVX512 inline void pairs_tile(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Out& o,
                                 float* y) {
  __m512i c[MR];
  for (int r = 0; r < MR; ++r) c[r] = _mm512_setzero_si512();
  for (int64_t p = 0; p < kpairs; ++p) {
    const __m512i w = _mm512_loadu_si512(panel + p * kPanel * 2);
    for (int r = 0; r < MR; ++r)
      c[r] = _mm512_add_epi32(c[r], _mm512_madd_epi16(_mm512_set1_epi32(pair_at(a + r * lda + 2 * p)), w));
  }
  out_rows16(c, MR, o, y);
}

TS_AVX512 void panel_avx512(int64_t rows, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel,
                            const Out& o) {
  int64_t r = 0;
  for (; r + kRows512 <= rows; r += kRows512) pairs_tile<kRows512>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy);
  for (; r + kRows <= rows; r += kRows) pairs_tile<kRows>(kpairs, a + r * lda, lda, panel, o, o.y + r * o.ldy);
  const int16_t* ar = a + r * lda;
  float* yr = o.y + r * o.ldy;
  switch (rows - r) {
    case 5: pairs_tile<5>(kpairs, ar, lda, panel, o, yr); break;
    case 4: pairs_tile<4>(kpairs, ar, lda, panel, o, yr); break;
    case 3: pairs_tile<3>(kpairs, ar, lda, panel, o, yr); break;
    case 2: pairs_tile<2>(kpairs, ar, lda, panel, o, yr); break;
    case 1: pairs_tile<1>(kpairs, ar, lda, panel, o, yr); break;
    default: break;
  }
}

// The 8-bit form with AVX512-VNNI: four u8 x s8 products per int32 lane and step
// (vpdpbusd), 12 rows x 16 channels per tile; the correction subtracted before the conversion.
template <int MR>
TS_AVX512_VNNI inline void u8_tile(int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                                   const int32_t* corr, const Out& o, float* y) {
  __m512i c[MR];
  for (int r = 0; r < MR; ++r) c[r] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kquads; ++q) {
    const __m512i w = _mm512_loadu_si512(panel + q * kPanel * 4);
    for (int r = 0; r < MR; ++r) {
      int32_t v;
      std::memcpy(&v, a + r * lda + 4 * q, 4);
      c[r] = _mm512_dpbusd_epi32(c[r], _mm512_set1_epi32(v), w);
    }
  }
  const __m512i k = _mm512_loadu_si512(corr);
  for (int r = 0; r < MR; ++r) c[r] = _mm512_sub_epi32(c[r], k);
  out_rows16(c, MR, o, y);
}

TS_AVX512_VNNI void panel_u8_avx512_vnni(int64_t rows, int64_t kquads, const uint8_t* a, int64_t lda,
                                         const int8_t* panel, const int32_t* corr, const Out& o) {
  int64_t r = 0;
  for (; r + kRows512 <= rows; r += kRows512) u8_tile<kRows512>(kquads, a + r * lda, lda, panel, corr, o, o.y + r * o.ldy);
  for (; r + kRows <= rows; r += kRows) u8_tile<kRows>(kquads, a + r * lda, lda, panel, corr, o, o.y + r * o.ldy);
  const uint8_t* ar = a + r * lda;
  float* yr = o.y + r * o.ldy;
  switch (rows - r) {
    case 5: u8_tile<5>(kquads, ar, lda, panel, corr, o, yr); break;
    case 4: u8_tile<4>(kquads, ar, lda, panel, corr, o, yr); break;
    case 3: u8_tile<3>(kquads, ar, lda, panel, corr, o, yr); break;
    case 2: u8_tile<2>(kquads, ar, lda, panel, corr, o, yr); break;
    case 1: u8_tile<1>(kquads, ar, lda, panel, corr, o, yr); break;
    default: break;
  }
}

}  // namespace

const Fns& avx2_fns() {
  static const Fns f{panel_avx2, min_max_avx2, codes_avx2, "avx2"};
  return f;
}
const Fns& avx512_fns() {
  static const Fns f{panel_avx512, min_max_avx2, codes_avx2, "avx512"};
  return f;
}
const Fns& avx512_vnni_fns() {
  // The 8-bit form takes every layer; the pairs' slot holds the AVX-512 ones (not dispatched).
  static const Fns f{panel_avx512, min_max_avx2, codes_avx2, "avx512-vnni", panel_u8_avx512_vnni, codes_u8_avx2};
  return f;
}

}  // namespace tessera::cpu::hconv

#endif  // __x86_64__
