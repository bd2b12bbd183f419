// The AVX2 layer of the x86-64 quantized conv micro-kernels (see ukernels/qconv.h), shared
// by qconv_avx2.cpp (the AVX2 and AVX2 + VNNI kernel sets) and qconv_avx512.cpp (the
// 512-bit set, which falls back to these where its own forms do not apply): products are
// vpmaddwd on centred int16 pairs (exact: |x|, |w| <= 255) or, in the 8-bit GEMM,
// vpmaddubsw on raw input bytes with weight parts split so no pair sum can saturate
// (vpdpwssd / vpdpbusd with VNNI); accumulated in int32; the requantization is TFLite's
// fixed-point arithmetic on 8 lanes, the same integers as q::multiply /
// q::multiply_single_round; ADD / SUB is TFLite's arithmetic on 8 lanes. The GEMM tiles'
// k loops are inline asm (gemm_loop6 says why); the rest is intrinsics.
//
// Internal: include only from those two files, after their
// `#pragma GCC target("avx2,fma,f16c")`, with the headers below included before it (so that
// the standard library is not compiled for AVX2 there). Everything is in an anonymous
// namespace, inline or a template: each of the two files gets its own copy.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/ukernels/qconv.h"

namespace tessera::cpu::uk {
namespace {


// The rounding doubling high multiply of gemmlowp, for m >= 0 and not both INT32_MIN:
// trunc((p + nudge) / 2^31) with nudge 2^30 for p >= 0 and 1 - 2^30 below, which equals
// floor((p + 2^30) / 2^31) for either sign. Its bits 31..62 are the 32-bit result, the same
// for a logical or an arithmetic 64-bit shift; `even` leaves them in the low dword of each
// 64-bit lane, odd in the high dword.
inline __m256i srdhm_even(__m256i p) { return _mm256_srli_epi64(_mm256_add_epi64(p, _mm256_set1_epi64x(int64_t{1} << 30)), 31); }
inline __m256i srdhm_odd(__m256i p) { return _mm256_slli_epi64(_mm256_add_epi64(p, _mm256_set1_epi64x(int64_t{1} << 30)), 1); }

// Requantization parameters of 8 channels, loaded once and applied to many rows.
struct Rq8 {
  __m256i bias, mult, mult_odd, lsh, rsh, mask, half_mask;
  __m256i ts_even, ts_odd, ts_rest;  // single rounding: 64-bit shifts of at most 32, then the rest on 32 bits
  __m256i round_even, round_odd;      // single rounding: 2^(total shift - 1) per 64-bit lane
  // hi32: every lane's result is floor((p + c) / 2^(32 + t)) with t >= 0, p = x * mult
  // (see rescale_hi32); c per 64-bit lane for even and odd elements, c_neg where p < 0.
  __m256i c_even, c_odd, c_even_neg, c_odd_neg, t;
  bool shift_left, hi32;
};

// The constants of rescale_hi32 where every lane allows it (else v.hi32 stays false),
// from the fields make_rq8 derived before.
//  Single rounding: (p + 2^(ts-1)) >> ts with ts = 31 - lsh + rsh >= 32: the rounding
//  constants round_even / round_odd, then the rest shift ts - 32 (ts_rest).
//  Double rounding (lsh = 0, rsh = s >= 1): the rounding doubling high multiply
//  y = floor((p + 2^30) / 2^31), then the division by 2^s rounding half away from zero,
//  floor((y + 2^(s-1) - [y < 0]) / 2^s), compose into one floor (floor(floor(u) / n) =
//  floor(u / n) for whole n): floor((p + 2^30 + 2^(30+s) - [y < 0] 2^31) / 2^(31+s)).
//  [y < 0] may be replaced by [p < 0]: for -2^30 <= p < 0, y = 0 and either constant
//  gives 0 (s >= 1). So c = 2^30 + 2^(30+s), minus 2^31 where p < 0, and t = s - 1.
inline void hi32_constants(Rq8& v, bool single_round) {
  const __m256i one = _mm256_set1_epi32(1);
  if (single_round) {
    const __m256i ts = _mm256_add_epi32(_mm256_sub_epi32(_mm256_set1_epi32(31), v.lsh), v.rsh);
    if (!_mm256_testz_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(32), ts), _mm256_set1_epi32(-1))) return;
    v.c_even = v.c_even_neg = v.round_even;
    v.c_odd = v.c_odd_neg = v.round_odd;
    v.t = v.ts_rest;
  } else {
    if (v.shift_left || !_mm256_testz_si256(_mm256_cmpgt_epi32(one, v.rsh), _mm256_set1_epi32(-1))) return;
    const __m256i base = _mm256_set1_epi64x(int64_t{1} << 30), half = _mm256_set1_epi64x(int64_t{1} << 31);
    v.c_even = _mm256_add_epi64(base, _mm256_sllv_epi64(base, _mm256_and_si256(v.rsh, _mm256_set1_epi64x(0xffffffffLL))));
    v.c_odd = _mm256_add_epi64(base, _mm256_sllv_epi64(base, _mm256_srli_epi64(v.rsh, 32)));
    v.c_even_neg = _mm256_sub_epi64(v.c_even, half);
    v.c_odd_neg = _mm256_sub_epi64(v.c_odd, half);
    v.t = _mm256_sub_epi32(v.rsh, one);
  }
  v.hi32 = true;
}

// The fields derived from per-lane bias, Q31 multiplier and left / right shifts.
inline Rq8 make_rq8(__m256i bias, __m256i mult, __m256i lsh, __m256i rsh, bool single_round) {
  Rq8 v;
  v.hi32 = false;
  const __m256i one = _mm256_set1_epi32(1);
  v.bias = bias;
  v.mult = mult;
  v.mult_odd = _mm256_srli_epi64(v.mult, 32);
  v.lsh = lsh;
  v.rsh = rsh;
  v.shift_left = !_mm256_testz_si256(v.lsh, v.lsh);
  v.mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, v.rsh), one);
  v.half_mask = _mm256_srai_epi32(v.mask, 1);
  // single rounding: total shift 31 - shift = 31 - lsh + rsh, per 64-bit lane
  const __m256i ts = _mm256_add_epi32(_mm256_sub_epi32(_mm256_set1_epi32(31), v.lsh), v.rsh);
  const __m256i first = _mm256_min_epi32(ts, _mm256_set1_epi32(32));
  v.ts_even = _mm256_and_si256(first, _mm256_set1_epi64x(0xffffffffLL));
  v.ts_odd = _mm256_srli_epi64(first, 32);
  v.ts_rest = _mm256_sub_epi32(ts, first);
  const __m256i one64 = _mm256_set1_epi64x(1);
  const __m256i total_even = _mm256_add_epi64(v.ts_even, _mm256_and_si256(v.ts_rest, _mm256_set1_epi64x(0xffffffffLL)));
  const __m256i total_odd = _mm256_add_epi64(v.ts_odd, _mm256_srli_epi64(v.ts_rest, 32));
  v.round_even = _mm256_sllv_epi64(one64, _mm256_sub_epi64(total_even, one64));
  v.round_odd = _mm256_sllv_epi64(one64, _mm256_sub_epi64(total_odd, one64));
  hi32_constants(v, single_round);
  return v;
}

inline Rq8 load_rq8(const Requant& rq, int64_t ch) {
  return make_rq8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.bias + ch)),
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.mult + ch)),
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.lshift + ch)),
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.rshift + ch)), rq.single_round);
}

// floor((p + c) / 2^(32 + t)) on 8 lanes, p = x * mult exactly (|p| < 2^62, |p + c| <
// 2^63): bits 32..63 of the 64-bit sum are floor((p + c) / 2^32) (the even lanes' shifted
// down, the odd lanes' already in place), then an arithmetic shift by t. kSigned: c
// follows p's sign (double rounding; blendv reads the sign bit of each 64-bit product).
// Ten instructions where the general forms below take 13 to 15.
template <bool kSigned>
inline __m256i rescale_hi32(__m256i x, const Rq8& v) {
  const __m256i pe = _mm256_mul_epi32(x, v.mult);
  const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), v.mult_odd);
  __m256i ce = v.c_even, co = v.c_odd;
  if constexpr (kSigned) {
    ce = _mm256_castpd_si256(
        _mm256_blendv_pd(_mm256_castsi256_pd(v.c_even), _mm256_castsi256_pd(v.c_even_neg), _mm256_castsi256_pd(pe)));
    co = _mm256_castpd_si256(
        _mm256_blendv_pd(_mm256_castsi256_pd(v.c_odd), _mm256_castsi256_pd(v.c_odd_neg), _mm256_castsi256_pd(po)));
  }
  const __m256i hi = _mm256_blend_epi32(_mm256_srli_epi64(_mm256_add_epi64(pe, ce), 32), _mm256_add_epi64(po, co), 0xAA);
  return _mm256_srav_epi32(hi, v.t);
}

// q::multiply on 8 lanes: shift left, rounding doubling high multiply, rounding divide by
// 2^rsh (half away from zero).
inline __m256i multiply8(__m256i x, const Rq8& v) {
  if (v.hi32) return rescale_hi32<true>(x, v);
  if (v.shift_left) x = _mm256_sllv_epi32(x, v.lsh);
  const __m256i even = srdhm_even(_mm256_mul_epi32(x, v.mult));
  const __m256i odd = srdhm_odd(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), v.mult_odd));
  const __m256i hi = _mm256_blend_epi32(even, odd, 0xAA);
  const __m256i rem = _mm256_and_si256(hi, v.mask);
  const __m256i thr = _mm256_sub_epi32(v.half_mask, _mm256_srai_epi32(hi, 31));  // + 1 where negative
  return _mm256_sub_epi32(_mm256_srav_epi32(hi, v.rsh), _mm256_cmpgt_epi32(rem, thr));
}

// The multiplier of every lane the same (an ADD's operand or output rescale).
inline Rq8 uniform_rq8(int32_t mult, int32_t lshift, int32_t rshift) {
  return make_rq8(_mm256_setzero_si256(), _mm256_set1_epi32(mult), _mm256_set1_epi32(lshift), _mm256_set1_epi32(rshift),
                  false);
}

// 8 accumulators -> requantized (int32 lanes), before the zero point; kBias: add the
// channels' bias first (false where the accumulators started from it).
template <bool kBias = true>
inline __m256i rescale8(__m256i acc, const Rq8& v, const Requant& rq) {
  const __m256i x = kBias ? _mm256_add_epi32(acc, v.bias) : acc;
  if (!rq.single_round) return multiply8(x, v);
  if (v.hi32) return rescale_hi32<false>(x, v);
  // (p + 2^(ts-1)) >> ts as ((p + 2^(ts-1)) >> min(ts, 32)) >> (ts - min(ts, 32)), floors
  // both: the first quotient keeps bits of the 64-bit lane only (so a logical shift gives
  // the arithmetic one's low dword) and fits 32 bits (|p| < 2^62).
  const __m256i even = _mm256_srlv_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, v.mult), v.round_even), v.ts_even);
  const __m256i odd =
      _mm256_srlv_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), v.mult_odd), v.round_odd), v.ts_odd);
  return _mm256_srav_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA), v.ts_rest);
}

// The output stage after the rescale: + zero point, clamp to [lo, hi], narrow to bytes. On
// 16 lanes at once it runs after the narrowing to int16 (saturating add of the zero point,
// saturating pack to 8 bits, then the activation clamp on bytes), which gives the same
// bytes as clamping the int32 sums: a value that saturates at int16 is far outside
// [lo, hi] (a zero point within [-256, 256]; others take the int32 form).
struct OutStage {
  __m256i zp16, zp32, lo32, hi32;
  __m128i lo8, hi8;
  bool i8, narrow_first, clamp8;
  explicit OutStage(const Requant& rq) {
    i8 = rq.out_i8;
    narrow_first = rq.zp >= -256 && rq.zp <= 256;
    clamp8 = i8 ? (rq.lo > -128 || rq.hi < 127) : (rq.lo > 0 || rq.hi < 255);
    zp16 = _mm256_set1_epi16(static_cast<int16_t>(narrow_first ? rq.zp : 0));
    zp32 = _mm256_set1_epi32(rq.zp);
    lo32 = _mm256_set1_epi32(rq.lo);
    hi32 = _mm256_set1_epi32(rq.hi);
    lo8 = _mm_set1_epi8(static_cast<char>(rq.lo));
    hi8 = _mm_set1_epi8(static_cast<char>(rq.hi));
  }
  // The form of the narrowing a caller may fix at compile time: with the zero point added
  // after the narrowing, u8 or i8, with or without the activation clamp on bytes; general:
  // bytes16's own run-time choice.
  enum class Kind { general, u8, u8_clamp, i8, i8_clamp };
  Kind kind() const {
    if (!narrow_first) return Kind::general;
    return i8 ? (clamp8 ? Kind::i8_clamp : Kind::i8) : (clamp8 ? Kind::u8_clamp : Kind::u8);
  }
  // a: lanes 0-7, b: lanes 8-15 (rescaled, int32) -> 16 bytes in lane order; kInLane: the
  // lanes are interleaved as packs_epi32 leaves them (the depthwise row's order).
  template <bool kInLane, Kind kKind>
  __m128i bytes16_as(__m256i a, __m256i b) const {
    if constexpr (kKind == Kind::general) {
      return bytes16<kInLane>(a, b);
    } else {
      constexpr bool kI8 = kKind == Kind::i8 || kKind == Kind::i8_clamp;
      return narrow16<kInLane, kI8, kKind == Kind::u8_clamp || kKind == Kind::i8_clamp>(a, b);
    }
  }
  template <bool kInLane = false>
  __m128i bytes16(__m256i a, __m256i b) const {
    switch (kind()) {
      case Kind::u8: return narrow16<kInLane, false, false>(a, b);
      case Kind::u8_clamp: return narrow16<kInLane, false, true>(a, b);
      case Kind::i8: return narrow16<kInLane, true, false>(a, b);
      case Kind::i8_clamp: return narrow16<kInLane, true, true>(a, b);
      default: break;
    }
    // zero point and clamp on int32 (zp16 is 0 here), then the saturating narrowing
    a = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(a, zp32), lo32), hi32);
    b = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(b, zp32), lo32), hi32);
    return i8 ? narrow16<kInLane, true, false>(a, b) : narrow16<kInLane, false, false>(a, b);
  }

 private:
  // Saturating narrowing to int16 plus zp16, to 8 bits, then the clamp on bytes.
  template <bool kInLane, bool kI8, bool kClamp>
  __m128i narrow16(__m256i a, __m256i b) const {
    __m256i w = _mm256_adds_epi16(_mm256_packs_epi32(a, b), zp16);
    if constexpr (!kInLane) w = _mm256_permute4x64_epi64(w, 0xD8);
    const __m128i l = _mm256_castsi256_si128(w), h = _mm256_extracti128_si256(w, 1);
    __m128i r = kI8 ? _mm_packs_epi16(l, h) : _mm_packus_epi16(l, h);
    if constexpr (kClamp) r = kI8 ? _mm_min_epi8(_mm_max_epi8(r, lo8), hi8) : _mm_min_epu8(_mm_max_epu8(r, lo8), hi8);
    return r;
  }
};

// 16 values already in the 8-bit range (a: first 8, b: next 8) -> bytes.
inline __m128i pack16(__m256i a, __m256i b, bool i8) {
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
  const __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
  return i8 ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
}

inline void store_bytes(uint8_t* y, __m128i v, int n) {
  if (n == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), v);
  } else {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
    std::memcpy(y, tmp, static_cast<size_t>(n));
  }
}

inline void centre(const uint8_t* x, int64_t n, int32_t zp, bool is_i8, int16_t* out) {
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zp));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256i w = is_i8 ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_sub_epi16(w, z));
  }
  for (; i < n; ++i)
    out[i] = static_cast<int16_t>((is_i8 ? static_cast<int32_t>(static_cast<int8_t>(x[i])) : x[i]) - zp);
}

// The rounding forms a block of sums takes, chosen once per block: TFLite's double
// rounding or the single one through rescale_hi32 (every lane's total shift >= 32), or
// the general forms (rescale8's own dispatch).
enum class RqForm { hi32_double, hi32_single, general };

template <RqForm kForm, bool kBias = true>
inline __m256i rescale8_form(__m256i acc, const Rq8& v, const Requant& rq) {
  const __m256i x = kBias ? _mm256_add_epi32(acc, v.bias) : acc;
  if constexpr (kForm == RqForm::hi32_double) return rescale_hi32<true>(x, v);
  if constexpr (kForm == RqForm::hi32_single) return rescale_hi32<false>(x, v);
  return rescale8<false>(x, v, rq);
}

// n rows of 16 sums (row i at acc + i * 16; the first 8 lanes v0's channels, the next 8
// v1's) -> bytes, row i at y + i * ystep (nstore of them), in the forms of the template
// arguments. kInLane: the depthwise row's lane order; kBias: add the channels' bias first.
template <RqForm kForm, OutStage::Kind kKind, bool kInLane, bool kBias>
[[gnu::always_inline]] inline void requant_rows_as(const int32_t* acc, int n, const Rq8& v0, const Rq8& v1,
                                                   const Requant& rq, const OutStage& out, uint8_t* y, int64_t ystep,
                                                   int nstore) {
  for (int i = 0; i < n; ++i) {
    const __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + i * kPanel));
    const __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + i * kPanel + 8));
    store_bytes(y + i * ystep,
                out.bytes16_as<kInLane, kKind>(rescale8_form<kForm, kBias>(c0, v0, rq),
                                               rescale8_form<kForm, kBias>(c1, v1, rq)),
                nstore);
  }
}

template <RqForm kForm, bool kInLane, bool kBias>
[[gnu::always_inline]] inline void requant_rows_form(const int32_t* acc, int n, const Rq8& v0, const Rq8& v1,
                                                     const Requant& rq, const OutStage& out, uint8_t* y, int64_t ystep,
                                                     int nstore) {
  using K = OutStage::Kind;
  switch (out.kind()) {
    case K::u8: return requant_rows_as<kForm, K::u8, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
    case K::u8_clamp:
      return requant_rows_as<kForm, K::u8_clamp, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
    case K::i8: return requant_rows_as<kForm, K::i8, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
    case K::i8_clamp:
      return requant_rows_as<kForm, K::i8_clamp, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
    default: return requant_rows_as<kForm, K::general, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
  }
}

// The rows' rounding and output forms chosen once, then every row in those forms.
template <bool kInLane, bool kBias>
[[gnu::always_inline]] inline void requant_rows(const int32_t* acc, int n, const Rq8& v0, const Rq8& v1,
                                                const Requant& rq, const OutStage& out, uint8_t* y, int64_t ystep,
                                                int nstore) {
  if (v0.hi32 && v1.hi32) {
    if (rq.single_round)
      requant_rows_form<RqForm::hi32_single, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
    else
      requant_rows_form<RqForm::hi32_double, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
  } else {
    requant_rows_form<RqForm::general, kInLane, kBias>(acc, n, v0, v1, rq, out, y, ystep, nstore);
  }
}

template <bool kBias = true>
inline void store_tile_row(__m256i c0, __m256i c1, const Rq8& v0, const Rq8& v1, const Requant& rq,
                           const OutStage& out, int nvalid, uint8_t* y) {
  store_bytes(y, out.bytes16(rescale8<kBias>(c0, v0, rq), rescale8<kBias>(c1, v1, rq)), nvalid);
}

// How a k step multiplies and accumulates 16 int16 pairs into 8 int32 lanes: vpmaddwd then
// vpaddd (AVX2), or one vpdpwssd (VNNI: the same sums, no saturation), VEX-encoded
// (AVX-VNNI) or EVEX-encoded (AVX512-VNNI with AVX512VL; ymm registers only).
enum class Dot { madd, vnni_vex, vnni_evex };

// One row's k step: panel vectors ymm12 / ymm13 times the broadcast pair in ymm14 into
// accumulators ACC0 / ACC1 (register numbers as strings).
#define TS_DOT_MADD(ACC0, ACC1)                                                      \
  "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"                                           \
  "vpaddd %%ymm15, %%ymm" ACC0 ", %%ymm" ACC0 "\n\t"                                 \
  "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"                                           \
  "vpaddd %%ymm15, %%ymm" ACC1 ", %%ymm" ACC1 "\n\t"
#define TS_DOT_VEX(ACC0, ACC1)                                                       \
  "%{vex%} vpdpwssd %%ymm12, %%ymm14, %%ymm" ACC0 "\n\t"                                \
  "%{vex%} vpdpwssd %%ymm13, %%ymm14, %%ymm" ACC1 "\n\t"
#define TS_DOT_EVEX(ACC0, ACC1)                                                      \
  "%{evex%} vpdpwssd %%ymm12, %%ymm14, %%ymm" ACC0 "\n\t"                               \
  "%{evex%} vpdpwssd %%ymm13, %%ymm14, %%ymm" ACC1 "\n\t"

// The k loop of a full 6-row tile, written out: 12 accumulators, the panel's two vectors, the
// broadcast (a pair of int16 or four bytes per row) and a product register fill the 16 ymm
// registers exactly, and GCC (12) spills half the accumulators to the stack when the same
// loop is written with intrinsics (two stores and loads per accumulator and k step: 29-43
// GMAC/s against 64-74 here on Zen 3, `bench/vision_bench`). DOT is the k step (int16:
// TS_DOT_*; bytes: TS_U8_DOT*), FLIP what follows each broadcast (int8 input: TS_U8_FLIP_*;
// the flip constant is loaded into ymm15 first, which the vpmaddwd / vpmaddubsw forms then
// use as their product register). Rows are `stride` bytes apart; the sums start from the
// 16 channels' bias; acc[r * 16 + j] is row r, channel j of the panel.
alignas(32) const int16_t kOnes16[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
alignas(32) const uint8_t kFlip8[32] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

#define TS_LOOP6(DOT, FLIP)                                                                              \
  asm volatile(                                                                                              \
      "vmovdqu (%[bias]), %%ymm0\n\t"                                                                        \
      "vmovdqu 32(%[bias]), %%ymm1\n\t"                                                                      \
      "vmovdqa %%ymm0, %%ymm2\n\t"                                                                           \
      "vmovdqa %%ymm1, %%ymm3\n\t"                                                                           \
      "vmovdqa %%ymm0, %%ymm4\n\t"                                                                           \
      "vmovdqa %%ymm1, %%ymm5\n\t"                                                                           \
      "vmovdqa %%ymm0, %%ymm6\n\t"                                                                           \
      "vmovdqa %%ymm1, %%ymm7\n\t"                                                                           \
      "vmovdqa %%ymm0, %%ymm8\n\t"                                                                           \
      "vmovdqa %%ymm1, %%ymm9\n\t"                                                                           \
      "vmovdqa %%ymm0, %%ymm10\n\t"                                                                          \
      "vmovdqa %%ymm1, %%ymm11\n\t"                                                                          \
      "vmovdqa %[flip], %%ymm15\n\t"                                                                         \
      "test %[n], %[n]\n\t"                                                                                  \
      "jle 2f\n\t"                                                                                           \
      "1:\n\t"                                                                                               \
      "vmovdqu (%[b]), %%ymm12\n\t"                                                                          \
      "vmovdqu 32(%[b]), %%ymm13\n\t"                                                                        \
      "vpbroadcastd (%[a0]), %%ymm14\n\t" FLIP DOT("0", "1")                                                \
      "vpbroadcastd (%[a0],%[s]), %%ymm14\n\t" FLIP DOT("2", "3")                                           \
      "vpbroadcastd (%[a0],%[s],2), %%ymm14\n\t" FLIP DOT("4", "5")                                         \
      "vpbroadcastd (%[a3]), %%ymm14\n\t" FLIP DOT("6", "7")                                                \
      "vpbroadcastd (%[a3],%[s]), %%ymm14\n\t" FLIP DOT("8", "9")                                           \
      "vpbroadcastd (%[a3],%[s],2), %%ymm14\n\t" FLIP DOT("10", "11")                                       \
      "add $64, %[b]\n\t"                                                                                    \
      "add $4, %[a0]\n\t"                                                                                    \
      "add $4, %[a3]\n\t"                                                                                    \
      "dec %[n]\n\t"                                                                                         \
      "jnz 1b\n\t"                                                                                           \
      "2:\n\t"                                                                                               \
      "vmovdqu %%ymm0, (%[o])\n\t"                                                                           \
      "vmovdqu %%ymm1, 32(%[o])\n\t"                                                                         \
      "vmovdqu %%ymm2, 64(%[o])\n\t"                                                                         \
      "vmovdqu %%ymm3, 96(%[o])\n\t"                                                                         \
      "vmovdqu %%ymm4, 128(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm5, 160(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm6, 192(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm7, 224(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm8, 256(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm9, 288(%[o])\n\t"                                                                        \
      "vmovdqu %%ymm10, 320(%[o])\n\t"                                                                       \
      "vmovdqu %%ymm11, 352(%[o])\n\t"                                                                       \
      : [b] "+r"(b), [a0] "+r"(a0), [a3] "+r"(a3), [n] "+r"(n)                                               \
      : [s] "r"(stride), [o] "r"(acc), [bias] "r"(bias), [ones] "m"(*reinterpret_cast<const __m256i*>(kOnes16)), \
        [flip] "m"(*reinterpret_cast<const __m256i*>(kFlip8))                                                \
      : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",       \
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15")

template <Dot kDot>
inline void gemm_loop6(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const int32_t* bias,
                       int32_t* acc) {
  const char* a0 = reinterpret_cast<const char*>(a);
  const char* a3 = a0 + 3 * lda * 2;
  const int64_t stride = lda * 2;
  const int16_t* b = panel;
  int64_t n = kpairs;
  if constexpr (kDot == Dot::madd) TS_LOOP6(TS_DOT_MADD, "");
  if constexpr (kDot == Dot::vnni_vex) TS_LOOP6(TS_DOT_VEX, "");
  if constexpr (kDot == Dot::vnni_evex) TS_LOOP6(TS_DOT_EVEX, "");
}
#undef TS_DOT_MADD
#undef TS_DOT_VEX
#undef TS_DOT_EVEX

// The requantization of one panel's 16 channels, derived once per panel call.
struct PanelRq {
  Rq8 v0, v1;
  OutStage out;
  PanelRq(const Requant& rq, int64_t n0) : v0(load_rq8(rq, n0)), v1(load_rq8(rq, n0 + 8)), out(rq) {}
};

// Rows 0..MR-1 of the tile (MR < 6: the tails); accumulators are named variables so that
// they stay in registers.
template <int MR>
inline void gemm_tile(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                      const PanelRq& prq, int nvalid, uint8_t* y, int64_t ldy) {
  static_assert(MR >= 1 && MR <= 5);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
          c40 = c00, c41 = c00;
  const int32_t* a0 = reinterpret_cast<const int32_t*>(a);
  const int32_t* a1 = reinterpret_cast<const int32_t*>(a + (MR > 1 ? 1 : 0) * lda);
  const int32_t* a2 = reinterpret_cast<const int32_t*>(a + (MR > 2 ? 2 : 0) * lda);
  const int32_t* a3 = reinterpret_cast<const int32_t*>(a + (MR > 3 ? 3 : 0) * lda);
  const int32_t* a4 = reinterpret_cast<const int32_t*>(a + (MR > 4 ? 4 : 0) * lda);
  const __m256i* b = reinterpret_cast<const __m256i*>(panel);
  for (int64_t p = 0; p < kpairs; ++p, b += 2) {
    const __m256i b0 = _mm256_loadu_si256(b), b1 = _mm256_loadu_si256(b + 1);
    __m256i av = _mm256_set1_epi32(a0[p]);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    if constexpr (MR > 1) {
      av = _mm256_set1_epi32(a1[p]);
      c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
      c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    }
    if constexpr (MR > 2) {
      av = _mm256_set1_epi32(a2[p]);
      c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
      c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    }
    if constexpr (MR > 3) {
      av = _mm256_set1_epi32(a3[p]);
      c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
      c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    }
    if constexpr (MR > 4) {
      av = _mm256_set1_epi32(a4[p]);
      c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
      c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
    }
  }
  const Rq8 &v0 = prq.v0, &v1 = prq.v1;
  const OutStage& out = prq.out;
  store_tile_row(c00, c01, v0, v1, rq, out, nvalid, y);
  if constexpr (MR > 1) store_tile_row(c10, c11, v0, v1, rq, out, nvalid, y + ldy);
  if constexpr (MR > 2) store_tile_row(c20, c21, v0, v1, rq, out, nvalid, y + 2 * ldy);
  if constexpr (MR > 3) store_tile_row(c30, c31, v0, v1, rq, out, nvalid, y + 3 * ldy);
  if constexpr (MR > 4) store_tile_row(c40, c41, v0, v1, rq, out, nvalid, y + 4 * ldy);
}

// A full tile: the written-out k loop, then the requantization of its 6 x 16 sums.
template <Dot kDot>
inline void gemm_tile6(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                       int64_t n0, const PanelRq& prq, int nvalid, uint8_t* y, int64_t ldy) {
  alignas(32) int32_t acc[kTileRows * kPanel];
  gemm_loop6<kDot>(kpairs, a, lda, panel, rq.bias + n0, acc);
  // The sums started from the bias (gemm_loop6): no bias to add. Row by row with the
  // forms checked per row: requant_rows (the forms chosen once per tile, 4% fewer
  // instructions in the GEMM) measured no faster here, within 1-2% either way.
  const Rq8 &v0 = prq.v0, &v1 = prq.v1;
  const OutStage& out = prq.out;
  for (int r = 0; r < kTileRows; ++r) {
    const __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + r * kPanel));
    const __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + r * kPanel + 8));
    store_tile_row<false>(c0, c1, v0, v1, rq, out, nvalid, y + r * ldy);
  }
}

template <Dot kDot>
void gemm_panel(int64_t m, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  const PanelRq prq(rq, n0);
  int64_t r = 0;
  for (; r + kTileRows <= m; r += kTileRows)
    gemm_tile6<kDot>(kpairs, a + r * lda, lda, panel, rq, n0, prq, nvalid, y + r * ldy, ldy);
  static_assert(kTileRows == 6, "gemm_loop6 is written for six rows");
  switch (m - r) {
    case 1: gemm_tile<1>(kpairs, a + r * lda, lda, panel, rq, prq, nvalid, y + r * ldy, ldy); break;
    case 2: gemm_tile<2>(kpairs, a + r * lda, lda, panel, rq, prq, nvalid, y + r * ldy, ldy); break;
    case 3: gemm_tile<3>(kpairs, a + r * lda, lda, panel, rq, prq, nvalid, y + r * ldy, ldy); break;
    case 4: gemm_tile<4>(kpairs, a + r * lda, lda, panel, rq, prq, nvalid, y + r * ldy, ldy); break;
    case 5: gemm_tile<5>(kpairs, a + r * lda, lda, panel, rq, prq, nvalid, y + r * ldy, ldy); break;
    default: break;
  }
}

// ---- u8 x s8 GEMM (qconv.h, GemmU8Fn) ----
//
// Each k step takes four k values: vpmaddubsw multiplies the broadcast four input bytes of a
// row (unsigned) by the panel's four weight parts of 8 channels (signed) and adds pairs into
// int16 (never saturating: split_u8s8), vpmaddwd by ones adds the two pairs into int32,
// vpaddd accumulates: three instructions per 32 multiply-adds where the int16 form takes
// four per 32 (vpmaddwd + vpaddd per 16). In L1 on Zen 3 the 6 x 16 tile measured 71-84
// G multiply-adds/s against 58-62 for the int16 tile.
#define TS_U8_DOT(ACC0, ACC1)                                                          \
  "vpmaddubsw %%ymm12, %%ymm14, %%ymm15\n\t"                                           \
  "vpmaddwd %[ones], %%ymm15, %%ymm15\n\t"                                             \
  "vpaddd %%ymm15, %%ymm" ACC0 ", %%ymm" ACC0 "\n\t"                                 \
  "vpmaddubsw %%ymm13, %%ymm14, %%ymm15\n\t"                                           \
  "vpmaddwd %[ones], %%ymm15, %%ymm15\n\t"                                             \
  "vpaddd %%ymm15, %%ymm" ACC1 ", %%ymm" ACC1 "\n\t"
// VNNI: one vpdpbusd per vector adds the four u8 x s8 products of each lane straight into
// its int32 sum (exact: nothing is saturated on the way), VEX- or EVEX-encoded as Dot says.
#define TS_U8_DOT_VEX(ACC0, ACC1)                                                      \
  "%{vex%} vpdpbusd %%ymm12, %%ymm14, %%ymm" ACC0 "\n\t"                                \
  "%{vex%} vpdpbusd %%ymm13, %%ymm14, %%ymm" ACC1 "\n\t"
#define TS_U8_DOT_EVEX(ACC0, ACC1)                                                     \
  "%{evex%} vpdpbusd %%ymm12, %%ymm14, %%ymm" ACC0 "\n\t"                               \
  "%{evex%} vpdpbusd %%ymm13, %%ymm14, %%ymm" ACC1 "\n\t"
// int8 input: the broadcast bytes' top bits flipped (x + 128 as u8), from memory where the
// AVX2 form needs all 16 registers, from ymm15 in the VNNI forms (which need no product
// register).
#define TS_U8_FLIP_NONE ""
#define TS_U8_FLIP_MEM "vpxor %[flip], %%ymm14, %%ymm14\n\t"
#define TS_U8_FLIP_REG "vpxor %%ymm15, %%ymm14, %%ymm14\n\t"

// kFlip: int8 input bytes read as x + 128 (GemmU8Fn's flip form).
template <Dot kDot, bool kFlip>
inline void gemm_u8_loop6(int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const int32_t* bias,
                          int32_t* acc) {
  const uint8_t* a0 = a;
  const uint8_t* a3 = a + 3 * lda;
  const int8_t* b = panel;
  int64_t n = kquads;
  const int64_t stride = lda;
  if constexpr (kDot == Dot::madd && !kFlip) TS_LOOP6(TS_U8_DOT, TS_U8_FLIP_NONE);
  if constexpr (kDot == Dot::madd && kFlip) TS_LOOP6(TS_U8_DOT, TS_U8_FLIP_MEM);
  if constexpr (kDot == Dot::vnni_vex && !kFlip) TS_LOOP6(TS_U8_DOT_VEX, TS_U8_FLIP_NONE);
  if constexpr (kDot == Dot::vnni_vex && kFlip) TS_LOOP6(TS_U8_DOT_VEX, TS_U8_FLIP_REG);
  if constexpr (kDot == Dot::vnni_evex && !kFlip) TS_LOOP6(TS_U8_DOT_EVEX, TS_U8_FLIP_NONE);
  if constexpr (kDot == Dot::vnni_evex && kFlip) TS_LOOP6(TS_U8_DOT_EVEX, TS_U8_FLIP_REG);
}

#undef TS_LOOP6
#undef TS_U8_DOT
#undef TS_U8_DOT_VEX
#undef TS_U8_DOT_EVEX
#undef TS_U8_FLIP_NONE
#undef TS_U8_FLIP_MEM
#undef TS_U8_FLIP_REG

// acc + the four u8 x s8 products of each lane of a and w (the k step of the tails).
template <Dot kDot>
inline __m256i dot_u8s8(__m256i acc, __m256i a, __m256i w) {
  if constexpr (kDot == Dot::madd) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), _mm256_set1_epi16(1)));
  } else if constexpr (kDot == Dot::vnni_vex) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(w));
    return acc;
  } else {
    asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(w));
    return acc;
  }
}

// Rows 0..MR-1 (MR < 6: the tails) with intrinsics, sums from the bias into acc.
template <Dot kDot, bool kFlip, int MR>
inline void gemm_u8_rows(int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const int32_t* bias,
                         int32_t* acc) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i bias0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias));
  const __m256i bias1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + 8));
  __m256i c[MR][2];
#pragma GCC unroll 5
  for (int r = 0; r < MR; ++r) c[r][0] = bias0, c[r][1] = bias1;
  for (int64_t q = 0; q < kquads; ++q) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + q * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + q * 64 + 32));
#pragma GCC unroll 5
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * lda + q * 4, 4);
      __m256i av = _mm256_set1_epi32(four);
      if constexpr (kFlip) av = _mm256_xor_si256(av, flip);
      c[r][0] = dot_u8s8<kDot>(c[r][0], av, w0);
      c[r][1] = dot_u8s8<kDot>(c[r][1], av, w1);
    }
  }
#pragma GCC unroll 5
  for (int r = 0; r < MR; ++r) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(acc + r * kPanel), c[r][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(acc + r * kPanel + 8), c[r][1]);
  }
}

// The panel's fixes on `rows` rows of sums, then their requantization (y nullptr: the fixes
// only).
template <bool kFlip>
inline void gemm_u8_finish(int32_t* acc, int rows, const uint8_t* a, int64_t lda, const U8Fix* fix, int64_t nfix,
                           const Requant& rq, const PanelRq& prq, int nvalid, uint8_t* y, int64_t ldy) {
  for (int64_t f = 0; f < nfix; ++f) {
    const U8Fix& fx = fix[f];
    for (int r = 0; r < rows; ++r) {  // int32 modulo 2^32, as the vector lanes
      const int32_t in = kFlip ? a[r * lda + fx.k] ^ 0x80 : a[r * lda + fx.k];
      acc[r * kPanel + fx.lane] =
          static_cast<int32_t>(static_cast<uint32_t>(acc[r * kPanel + fx.lane]) + static_cast<uint32_t>(in * fx.r));
    }
  }
  if (!y) return;  // the caller requantizes
  for (int r = 0; r < rows; ++r) {
    const __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + r * kPanel));
    const __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + r * kPanel + 8));
    store_tile_row<false>(c0, c1, prq.v0, prq.v1, rq, prq.out, nvalid, y + r * ldy);
  }
}

template <Dot kDot, bool kFlip>
void gemm_u8(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
             int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  const PanelRq prq(rq, n0);
  const int32_t* bias = rq.bias + n0;
  alignas(32) int32_t acc[kTileRows * kPanel];
  int64_t r = 0;
  for (; r + kTileRows <= m; r += kTileRows) {
    gemm_u8_loop6<kDot, kFlip>(kquads, a + r * lda, lda, panel, bias, acc);
    gemm_u8_finish<kFlip>(acc, kTileRows, a + r * lda, lda, fix, nfix, rq, prq, nvalid, y + r * ldy, ldy);
  }
  const int rest = static_cast<int>(m - r);
  switch (rest) {
    case 1: gemm_u8_rows<kDot, kFlip, 1>(kquads, a + r * lda, lda, panel, bias, acc); break;
    case 2: gemm_u8_rows<kDot, kFlip, 2>(kquads, a + r * lda, lda, panel, bias, acc); break;
    case 3: gemm_u8_rows<kDot, kFlip, 3>(kquads, a + r * lda, lda, panel, bias, acc); break;
    case 4: gemm_u8_rows<kDot, kFlip, 4>(kquads, a + r * lda, lda, panel, bias, acc); break;
    case 5: gemm_u8_rows<kDot, kFlip, 5>(kquads, a + r * lda, lda, panel, bias, acc); break;
    default: return;
  }
  gemm_u8_finish<kFlip>(acc, rest, a + r * lda, lda, fix, nfix, rq, prq, nvalid, y + r * ldy, ldy);
}

// TAPS: the kernel's taps when known at compile time (9: every 3x3 depthwise layer of the
// MobileNets), 0 for any count; the tap loop is then unrolled with its offsets in registers.
template <int TAPS>
void dw_row_t(const DwRow& r) {
  const int taps = TAPS > 0 ? TAPS : r.taps;
  const int pairs = (taps + 1) / 2;
  const int64_t groups = r.cpad / kPanel;
  const OutStage out(*r.rq);
  int64_t off[TAPS > 0 ? TAPS + 1 : 1];
  if constexpr (TAPS > 0) {
    for (int t = 0; t < TAPS; ++t) off[t] = r.tap_off[t];
    off[TAPS] = 0;
  }
  // Blocks of output pixels, every channel group within a block: the block's input lines
  // (a few KiB) stay in L1 while the groups pass over them, where a group-by-group sweep
  // of the whole row re-read each line once per group from L2. The requantization
  // constants are derived once per row for every group (1.2 KiB per group, read again per
  // block), not once per group and block. (Bytes aligned by hand: std::vector<Rq8> got
  // 16-byte aligned storage here.)
  thread_local std::vector<unsigned char> rq_bytes;
  const size_t need = static_cast<size_t>(2 * groups) * sizeof(Rq8) + alignof(Rq8);
  if (rq_bytes.size() < need) rq_bytes.resize(need);
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(rq_bytes.data()) % alignof(Rq8);
  Rq8* rq_groups = reinterpret_cast<Rq8*>(rq_bytes.data() + (misalign ? alignof(Rq8) - misalign : 0));
  if (!r.same_op)
    for (int64_t g = 0; g < groups; ++g) {
      rq_groups[2 * g] = load_rq8(*r.rq, g * kPanel);
      rq_groups[2 * g + 1] = load_rq8(*r.rq, g * kPanel + 8);
    }
  // Per block: the taps of every pixel into acc (no requantization code between the
  // loads, so the tap loop keeps its registers), then the block's requantization with its
  // rounding and output forms chosen once (requant_rows) instead of per pixel.
  constexpr int64_t kPixels = 8;
  alignas(32) int32_t acc[kPixels][kPanel];
  for (int64_t ox0 = 0; ox0 < r.ow; ox0 += kPixels) {
    const int64_t ox1 = std::min(r.ow, ox0 + kPixels);
    for (int64_t g = 0; g < groups; ++g) {
      const int16_t* wg = r.w + g * pairs * 32;
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const int16_t* xg = r.x + ox * r.xstep + g * kPanel;
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        auto pair = [&](int p, __m256i xa, __m256i xb) {
          const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + p * 32));
          const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + p * 32 + 16));
          lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), w0));
          hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), w1));
        };
        auto load = [&](int64_t o) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg + o)); };
        if constexpr (TAPS > 0) {
#pragma GCC unroll 16
          for (int p = 0; p < TAPS / 2; ++p) pair(p, load(off[2 * p]), load(off[2 * p + 1]));
          if constexpr (TAPS % 2 == 1) pair(TAPS / 2, load(off[TAPS - 1]), _mm256_setzero_si256());
        } else {
          for (int p = 0; p < pairs; ++p) {
            const int t0 = 2 * p, t1 = 2 * p + 1;
            pair(p, load(r.tap_off[t0]), t1 < taps ? load(r.tap_off[t1]) : _mm256_setzero_si256());
          }
        }
        _mm256_store_si256(reinterpret_cast<__m256i*>(acc[ox - ox0]), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(acc[ox - ox0] + 8), hi);
      }
      const int64_t left = r.channels - g * kPanel;
      const int nstore = left >= kPanel ? kPanel : static_cast<int>(left);
      // packs_epi32 in-lane undoes the unpack interleave: channels come out in order.
      requant_rows<true, true>(acc[0], static_cast<int>(ox1 - ox0), rq_groups[2 * g], rq_groups[2 * g + 1], *r.rq, out,
                               r.y + ox0 * r.channels + g * kPanel, r.channels, nstore);
    }
  }
}

inline void dw_row(const DwRow& r) {
  if (r.taps == 9)
    dw_row_t<9>(r);
  else
    dw_row_t<0>(r);
}

// 8 operand codes at p (u8 or i8) as int32 lanes.
inline __m256i load8_i32(const uint8_t* p, bool i8) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return i8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

inline void add(const uint8_t* a, const uint8_t* b, int64_t n, const QAdd& p, uint8_t* y) {
  const Rq8 m1 = uniform_rq8(p.mult[0], p.lshift[0], p.rshift[0]);
  const Rq8 m2 = uniform_rq8(p.mult[1], p.lshift[1], p.rshift[1]);
  const Rq8 mo = uniform_rq8(p.mult[2], p.lshift[2], p.rshift[2]);
  const __m256i z1 = _mm256_set1_epi32(p.z1), z2 = _mm256_set1_epi32(p.z2), zo = _mm256_set1_epi32(p.zo);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  auto eight = [&](const uint8_t* pa, const uint8_t* pb) {
    constexpr int kShift = 20;  // TFLite add.cc's left shift for 8-bit operands
    const __m256i v1 = multiply8(_mm256_slli_epi32(_mm256_sub_epi32(load8_i32(pa, p.i8), z1), kShift), m1);
    const __m256i v2 = multiply8(_mm256_slli_epi32(_mm256_sub_epi32(load8_i32(pb, p.i8), z2), kShift), m2);
    const __m256i s = p.subtract ? _mm256_sub_epi32(v1, v2) : _mm256_add_epi32(v1, v2);
    const __m256i r = _mm256_add_epi32(multiply8(s, mo), zo);
    return _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), pack16(eight(a + i, b + i), eight(a + i + 8, b + i + 8), p.i8));
  if (i < n) {
    alignas(16) uint8_t ta[16] = {}, tb[16] = {}, ty[16];
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(ta, a + i, rest);
    std::memcpy(tb, b + i, rest);
    _mm_store_si128(reinterpret_cast<__m128i*>(ty), pack16(eight(ta, tb), eight(ta + 8, tb + 8), p.i8));
    std::memcpy(y + i, ty, rest);
  }
}

}  // namespace
}  // namespace tessera::cpu::uk

#endif  // __x86_64__
