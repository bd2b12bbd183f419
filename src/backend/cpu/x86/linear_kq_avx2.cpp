// AVX2 kernels of linear_kq.h (q2_K ... q6_K, iq4_xs); bit-identical to the scalar ones there.
//
// One weight row at a time, read start to end (one sequential stream). Each super-block's
// codes are unpacked once into eight registers of 32 unsigned bytes (chunk c = values
// 32c .. 32c + 31) and used for up to kActRows activation rows: maddubs multiplies the
// unsigned codes by the signed activations into int16 pairs (at most 63 * 127 * 2, so it
// never saturates), madd by the scales into int32 lanes, and the lanes are summed to the
// super-block's exact integers S_i and M_i (q6_K's - 32 offset as - 32 sum_g sc_g bsums_g,
// also exact). The float arithmetic per output is then the scalar chain of linear_kq.h.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/linear_kq.h"
#include "convert/gguf_kquants.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::kq::avx2 {

namespace {


constexpr int kActRows = 4;  // activation rows per pass over a weight row's super-block
constexpr int64_t kBsums = kSuper / kGroup;

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// (sum of a's lanes, sum of b's lanes), exact int32.
inline void hsum2(__m256i a, __m256i b, int32_t& sa, int32_t& sb) {
  const __m256i h = _mm256_hadd_epi32(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  t = _mm_hadd_epi32(t, t);
  sa = _mm_cvtsi128_si32(t);
  sb = _mm_extract_epi32(t, 1);
}

// A binary16 at p as f32 (F16C: exact, as convert::f16_to_f32).
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// q4_K (kFifth = false) and q5_K (true): the same scales, mins and integer sums; q5_K's
// codes take bit c of its 32 fifth-bit bytes as bit 4.
template <bool kFifth>
struct Q45K {
  __m256i code[8];
  __m256i sc;    // int16 lane c of each 128-bit half: scale c
  __m128i mins;  // int16 lane c: min c (against bsums 2c and 2c + 1)
  float d, dmin;

  void load_block(const uint8_t* b) {
    d = f16_at(b), dmin = f16_at(b + 2);
    // The eight 6-bit scales and mins (gguf_kquants.h scale_min_k4), four at a time in the
    // bytes of a 32-bit word: words a0, a1, a2 = scale bytes 0-3, 4-7, 8-11.
    uint32_t a[3];
    std::memcpy(a, b + 4, 12);
    const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
    const uint32_t s03 = a[0] & lo6, m03 = a[1] & lo6;
    const uint32_t s47 = (a[2] & lo4) | (((a[0] >> 6) & lo2) << 4);
    const uint32_t m47 = ((a[2] >> 4) & lo4) | (((a[1] >> 6) & lo2) << 4);
    sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(s47), static_cast<int>(s03))));
    mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(m47), static_cast<int>(m03)));
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t* codes = b + (kFifth ? 48 : 16);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // 32 bytes: chunk 2j in the low nibbles, 2j + 1 in the high
      const __m256i qs = load(codes + 32 * j);
      code[2 * j] = _mm256_and_si256(qs, m4);
      code[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
    }
    if constexpr (kFifth) {
      const __m256i qh = load(b + 16), bit4 = _mm256_set1_epi8(16);
      // Bit c of each byte moved to bit 4 (16-bit shifts: the bits crossing between the bytes
      // of a lane land away from bit 4 and are masked off).
      code[0] = _mm256_or_si256(code[0], _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4));
      code[1] = _mm256_or_si256(code[1], _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4));
      code[2] = _mm256_or_si256(code[2], _mm256_and_si256(_mm256_slli_epi16(qh, 2), bit4));
      code[3] = _mm256_or_si256(code[3], _mm256_and_si256(_mm256_slli_epi16(qh, 1), bit4));
      code[4] = _mm256_or_si256(code[4], _mm256_and_si256(qh, bit4));
      code[5] = _mm256_or_si256(code[5], _mm256_and_si256(_mm256_srli_epi16(qh, 1), bit4));
      code[6] = _mm256_or_si256(code[6], _mm256_and_si256(_mm256_srli_epi16(qh, 2), bit4));
      code[7] = _mm256_or_si256(code[7], _mm256_and_si256(_mm256_srli_epi16(qh, 3), bit4));
    }
  }

  float dot(const int8_t* q, float dx, const int16_t* bsums, float acc) const {
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      // Scale c in every int16 lane: bytes 2c, 2c + 1 of each 128-bit half.
      const __m256i scale = _mm256_shuffle_epi8(sc, _mm256_set1_epi16(static_cast<int16_t>((2 * c + 1) << 8 | 2 * c)));
      const __m256i p = _mm256_maddubs_epi16(code[c], load(q + 32 * c));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scale));
    }
    // Pairs of bsums (16 values each) summed to the eight 32-value sums, times the mins.
    const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums)),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8)));
    const __m128i mv = _mm_madd_epi16(bs, mins);
    int32_t si, mi;
    hsum2(s, _mm256_setr_m128i(mv, _mm_setzero_si128()), si, mi);
    acc = std::fma(d * dx, static_cast<float>(si), acc);
    return std::fma(-(dmin * dx), static_cast<float>(mi), acc);
  }
};

// Scale 2c in the int16 lanes of the low half, 2c + 1 in the high half, from sixteen int8
// scales in both 128-bit halves of scb: each byte shuffled into its lane's high byte, then
// sign-extended by the arithmetic shift.
inline __m256i chunk_scales(__m256i scb, int c) {
  const __m256i idx = _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>((2 * c) << 8 | 0x80)),
                                        _mm_set1_epi16(static_cast<int16_t>((2 * c + 1) << 8 | 0x80)));
  return _mm256_srai_epi16(_mm256_shuffle_epi8(scb, idx), 8);
}

// q2_K and q3_K: 2-bit codes (chunk 4h + k: bits 2k of 32 bytes h); q3_K adds bit c of its
// hmask bytes as bit 2, so code + 4 (0..7) is what maddubs takes, and the 4 comes back off as
// 4 sum_g sc_g bsums_g.
template <bool kQ3>
struct Q23K {
  __m256i code[8];
  __m256i scb;   // the sixteen scales (q2_K: low nibbles; q3_K: 6-bit - 32) as int8, both halves
  __m256i sc16;  // q2_K: the sixteen mins as int16; q3_K: the scales as int16
  float d, dmin;

  void load_block(const uint8_t* b) {
    __m128i s8;
    if constexpr (kQ3) {
      d = f16_at(b + 108), dmin = 0;
      int8_t sc[16];
      for (int g = 0; g < 16; ++g) sc[g] = static_cast<int8_t>(convert::kquant_detail::scale_q3_k(b + 96, g) - 32);
      s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc));
      sc16 = _mm256_cvtepi8_epi16(s8);
    } else {
      d = f16_at(b + 80), dmin = f16_at(b + 82);
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
      s8 = _mm_and_si128(raw, _mm_set1_epi8(15));
      sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15)));
    }
    scb = _mm256_broadcastsi128_si256(s8);
    const __m256i m3 = _mm256_set1_epi8(3);
    const uint8_t* qs = b + (kQ3 ? 32 : 16);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i v = load(qs + 32 * h);
      code[4 * h] = _mm256_and_si256(v, m3);
      code[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 2), m3);
      code[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m3);
      code[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(v, 6), m3);
    }
    if constexpr (kQ3) {
      // Bit c of each hmask byte to bit 2 (the 16-bit shifts' crossing bits are masked off).
      const __m256i hm = load(b), bit2 = _mm256_set1_epi8(4);
      code[0] = _mm256_or_si256(code[0], _mm256_and_si256(_mm256_slli_epi16(hm, 2), bit2));
      code[1] = _mm256_or_si256(code[1], _mm256_and_si256(_mm256_slli_epi16(hm, 1), bit2));
      code[2] = _mm256_or_si256(code[2], _mm256_and_si256(hm, bit2));
      code[3] = _mm256_or_si256(code[3], _mm256_and_si256(_mm256_srli_epi16(hm, 1), bit2));
      code[4] = _mm256_or_si256(code[4], _mm256_and_si256(_mm256_srli_epi16(hm, 2), bit2));
      code[5] = _mm256_or_si256(code[5], _mm256_and_si256(_mm256_srli_epi16(hm, 3), bit2));
      code[6] = _mm256_or_si256(code[6], _mm256_and_si256(_mm256_srli_epi16(hm, 4), bit2));
      code[7] = _mm256_or_si256(code[7], _mm256_and_si256(_mm256_srli_epi16(hm, 5), bit2));
    }
  }

  float dot(const int8_t* q, float dx, const int16_t* bsums, float acc) const {
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i p = _mm256_maddubs_epi16(code[c], load(q + 32 * c));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(p, chunk_scales(scb, c)));
    }
    const __m256i t = _mm256_madd_epi16(load(bsums), sc16);
    if constexpr (kQ3) {
      int32_t si, unused;
      hsum2(_mm256_sub_epi32(s, _mm256_slli_epi32(t, 2)), s, si, unused);
      return std::fma(d * dx, static_cast<float>(si), acc);
    } else {
      int32_t si, mi;
      hsum2(s, t, si, mi);
      acc = std::fma(d * dx, static_cast<float>(si), acc);
      return std::fma(-(dmin * dx), static_cast<float>(mi), acc);
    }
  }
};

struct Q6K {
  __m256i code[8];
  __m256i scb;   // the sixteen int8 scales in both 128-bit halves
  __m256i sc16;  // the sixteen scales as int16 (against bsums)
  float d;

  void load_block(const uint8_t* b) {
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    d = f16_at(b + 208);
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc));
    sc16 = _mm256_cvtepi8_epi16(s8);
    scb = _mm256_broadcastsi128_si256(s8);
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {  // chunks 4h .. 4h + 3 (gguf_kquants.h): high bits to bits 4-5
      const __m256i ql0 = load(b + 64 * h), ql1 = load(b + 64 * h + 32), qh = load(b + 128 + 32 * h);
      code[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
      code[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
      code[4 * h + 2] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m2));
      code[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
    }
  }

  float dot(const int8_t* q, float dx, const int16_t* bsums, float acc) const {
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i p = _mm256_maddubs_epi16(code[c], load(q + 32 * c));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(p, chunk_scales(scb, c)));
    }
    // sum_g sc_g (dot_g(code) - 32 bsums_g): the offset's lanes times 32 off the sum.
    s = _mm256_sub_epi32(s, _mm256_slli_epi32(_mm256_madd_epi16(load(bsums), sc16), 5));
    int32_t si, unused;
    hsum2(s, s, si, unused);
    return std::fma(d * dx, static_cast<float>(si), acc);
  }
};

// iq4_xs: each chunk's sixteen code bytes split into 32 nibbles (low nibbles: values 0-15,
// high: 16-31), mapped through the table by a byte shuffle to signed weights; maddubs takes
// |w| against the activations with w's sign (the table has no 0, and |w|, |q| <= 127 keep
// the int16 pairs below 2^15), madd by the signed scales ls - 32.
struct IQ4XS {
  __m256i absw[8], w[8];
  __m256i sc;  // int16 lane c of each 128-bit half: ls_c - 32
  float d;

  void load_block(const uint8_t* b) {
    d = f16_at(b);
    alignas(16) int16_t s[8];
    for (int c = 0; c < 8; ++c) s[c] = static_cast<int16_t>(convert::iq4_xs_scale(b, c));
    sc = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(s)));
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(convert::kIQ4Values)));
    const __m128i m4 = _mm_set1_epi8(15);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 8 + 16 * c));
      const __m256i idx = _mm256_setr_m128i(_mm_and_si128(qs, m4), _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
      w[c] = _mm256_shuffle_epi8(table, idx);
      absw[c] = _mm256_abs_epi8(w[c]);
    }
  }

  float dot(const int8_t* q, float dx, const int16_t*, float acc) const {
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i scale = _mm256_shuffle_epi8(sc, _mm256_set1_epi16(static_cast<int16_t>((2 * c + 1) << 8 | 2 * c)));
      const __m256i p = _mm256_maddubs_epi16(absw[c], _mm256_sign_epi8(load(q + 32 * c), w[c]));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scale));
    }
    int32_t si, unused;
    hsum2(s, s, si, unused);
    return std::fma(d * dx, static_cast<float>(si), acc);
  }
};

template <typename Block>
void gemm_t(const KQuantGemm& g, int64_t o0, int64_t o1, int64_t block_bytes) {
  const int64_t blocks = g.x.k / kSuper;
  Block w;
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = g.w + o * g.w_row_bytes;
    for (int64_t m0 = 0; m0 < g.x.m; m0 += kActRows) {
      const int n = static_cast<int>(std::min<int64_t>(kActRows, g.x.m - m0));
      float acc[kActRows] = {};
      for (int64_t i = 0; i < blocks; ++i) {
        w.load_block(row + i * block_bytes);
        for (int r = 0; r < n; ++r) {
          const int64_t m = m0 + r;
          acc[r] = w.dot(g.x.q + m * g.x.k + i * kSuper, g.x.d[m * blocks + i],
                         g.x.bsums + (m * blocks + i) * kBsums, acc[r]);
        }
      }
      for (int r = 0; r < n; ++r) g.y[(m0 + r) * g.ldy + o] = acc[r];
    }
  }
}

}  // namespace

void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  if (g.wt == DType::q4_k) return gemm_t<Q45K<false>>(g, o0, o1, kQ4_KBlockBytes);
  if (g.wt == DType::q5_k) return gemm_t<Q45K<true>>(g, o0, o1, kQ5_KBlockBytes);
  if (g.wt == DType::q2_k) return gemm_t<Q23K<false>>(g, o0, o1, kQ2_KBlockBytes);
  if (g.wt == DType::q3_k) return gemm_t<Q23K<true>>(g, o0, o1, kQ3_KBlockBytes);
  if (g.wt == DType::iq4_xs) return gemm_t<IQ4XS>(g, o0, o1, kIQ4_XSBlockBytes);
  gemm_t<Q6K>(g, o0, o1, kQ6_KBlockBytes);
}

}  // namespace tessera::cpu::kq::avx2

#pragma GCC pop_options

#endif  // __x86_64__
