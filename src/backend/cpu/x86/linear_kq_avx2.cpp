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
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/linear_kq.h"
#include "backend/cpu/x86/dpbusd.h"
#include "convert/gguf_kquants.h"
#include "convert/simd.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::kq::avx2 {

namespace {


constexpr int kActRows = 4;  // activation rows per pass over a weight row's super-block
constexpr int64_t kBsums = kSuper / kGroup;
constexpr int64_t kAheadBytes = 2048;  // decode: weight bytes prefetched ahead of the block in use

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
        // Prefetch kAheadBytes ahead in the weights (rows are contiguous: one stream; past the
        // last row a prefetch never faults).
        const char* ahead = reinterpret_cast<const char*>(row + i * block_bytes) + kAheadBytes;
        for (int64_t l = 0; l < block_bytes; l += 64) _mm_prefetch(ahead + l, _MM_HINT_T0);
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

// ---------------------------------------------------------------------------------------
// Prompts (many activation rows): a panel of kPanel weight rows is unpacked once, by the
// structs above, into the layout an outer-product tile wants, and every activation row
// runs against it. Lane j of a 256-bit vector is weight row j: for each group of four
// values, the panel holds 32 bytes (row j's four codes in bytes 4j .. 4j + 3), so one
// broadcast of an activation row's four bytes and one maddubs give all eight rows' pair
// sums. Those int16 pairs are summed over as many groups as cannot saturate (the type's
// largest code: q4_K 8 groups, q5_K / q2_K / q3_K 4, q6_K 2, iq4_xs 1 with the sign
// trick), then madd by the group's scale (row j's int16 scale in both halves of lane j)
// into int32 lanes. The bsum terms (q4_K/q5_K/q2_K mins; q6_K's -32 and q3_K's -4 code
// offsets) are sum_g corr_g * bsums_g, eight madds of int16 pairs. Every S_i and M_i is
// the scalar kernel's exact integer and the float chain per output is the scalar one, now
// in eight lanes: y = fma(d_v * dx, float(S), y), then fma(-(dmin_v * dx), float(M), y).

constexpr int kPanel = 8;          // weight rows per panel (int32 lanes)
constexpr int kPanelActRows = 4;   // activation rows per pass over a panel's super-block

struct alignas(32) PanelBlock {
  uint8_t codes[64][kPanel][4];  // group of four values, weight row, the four codes
  int32_t scale[16][kPanel];     // 16-value scale group, row: int16 scale in both halves
  int32_t corr[8][kPanel];       // pair p of 16-value groups, row: (corr_2p, corr_2p+1)
  float d[kPanel], dmin[kPanel];
};
static_assert(sizeof(PanelBlock) % 32 == 0);

// Per-type constants: summable groups (above), whether the bsum term is a separate min
// term (true) or part of S (false), signed codes (iq4_xs).
template <typename Block> struct PanelTraits;
template <> struct PanelTraits<Q45K<false>> { static constexpr int kSum = 8; static constexpr bool kMins = true, kSigned = false; };
template <> struct PanelTraits<Q45K<true>> { static constexpr int kSum = 4; static constexpr bool kMins = true, kSigned = false; };
template <> struct PanelTraits<Q23K<false>> { static constexpr int kSum = 4; static constexpr bool kMins = true, kSigned = false; };
template <> struct PanelTraits<Q23K<true>> { static constexpr int kSum = 4; static constexpr bool kMins = false, kSigned = false; };
template <> struct PanelTraits<Q6K> { static constexpr int kSum = 2; static constexpr bool kMins = false, kSigned = false; };
template <> struct PanelTraits<IQ4XS> { static constexpr int kSum = 1; static constexpr bool kMins = false, kSigned = true; };

// The sixteen 16-value group scales and bsum factors of one super-block (the definitions
// of linear_kq.h) and its d, dmin.
template <typename Block>
void block_scales(const uint8_t* b, int16_t sc[16], int16_t corr[16], float& d, float& dmin) {
  namespace kd = convert::kquant_detail;
  dmin = 0;
  if constexpr (std::is_same_v<Block, Q45K<false>> || std::is_same_v<Block, Q45K<true>>) {
    for (int c = 0; c < 8; ++c) {
      int s, m;
      kd::scale_min_k4(b + 4, c, s, m);
      sc[2 * c] = sc[2 * c + 1] = static_cast<int16_t>(s);
      corr[2 * c] = corr[2 * c + 1] = static_cast<int16_t>(m);
    }
    d = f16_at(b), dmin = f16_at(b + 2);
  } else if constexpr (std::is_same_v<Block, Q23K<false>>) {
    for (int g = 0; g < 16; ++g) sc[g] = static_cast<int16_t>(b[g] & 15), corr[g] = static_cast<int16_t>(b[g] >> 4);
    d = f16_at(b + 80), dmin = f16_at(b + 82);
  } else if constexpr (std::is_same_v<Block, Q23K<true>>) {
    for (int g = 0; g < 16; ++g) {
      sc[g] = static_cast<int16_t>(kd::scale_q3_k(b + 96, g) - 32);
      corr[g] = static_cast<int16_t>(-4 * sc[g]);
    }
    d = f16_at(b + 108);
  } else if constexpr (std::is_same_v<Block, Q6K>) {
    for (int g = 0; g < 16; ++g) {
      sc[g] = static_cast<int8_t>(b[192 + g]);
      corr[g] = static_cast<int16_t>(-32 * sc[g]);
    }
    d = f16_at(b + 208);
  } else {
    for (int c = 0; c < 8; ++c) sc[2 * c] = sc[2 * c + 1] = static_cast<int16_t>(convert::iq4_xs_scale(b, c));
    for (int g = 0; g < 16; ++g) corr[g] = 0;
    d = f16_at(b);
  }
}

inline int32_t pair16(int16_t lo, int16_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) | static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

// out[j] = column j of the 8 x 8 matrix of int32 whose row i is in[i].
inline void transpose8x8(const __m256i in[8], __m256i out[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    u[4 * h] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
    u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
    u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
    u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    out[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
    out[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
  }
}

// Weight rows o .. o + kPanel unpacked into panel[blocks].
template <typename Block>
void pack_panel(const KQuantGemm& g, int64_t o, int64_t block_bytes, PanelBlock* panel) {
  const int64_t blocks = g.x.k / kSuper;
  Block w;
  for (int64_t i = 0; i < blocks; ++i) {
    PanelBlock& p = panel[i];
    alignas(32) __m256i rows[8][kPanel];  // chunk, weight row
    for (int j = 0; j < kPanel; ++j) {
      const uint8_t* b = g.w + (o + j) * g.w_row_bytes + i * block_bytes;
      // Eight streams, one per row: the next super-block of each asked for ahead.
      for (int64_t l = 0; l < block_bytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(b + block_bytes + l), _MM_HINT_T0);
      w.load_block(b);
      for (int c = 0; c < 8; ++c) {
        if constexpr (PanelTraits<Block>::kSigned) rows[c][j] = w.w[c];
        else rows[c][j] = w.code[c];
      }
      int16_t sc[16], corr[16];
      block_scales<Block>(b, sc, corr, p.d[j], p.dmin[j]);
      for (int s = 0; s < 16; ++s) p.scale[s][j] = pair16(sc[s], sc[s]);
      for (int q = 0; q < 8; ++q) p.corr[q][j] = pair16(corr[2 * q], corr[2 * q + 1]);
    }
    for (int c = 0; c < 8; ++c) {
      __m256i cols[8];
      transpose8x8(rows[c], cols);  // cols[k]: group 8c + k of every row
      for (int k = 0; k < 8; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(p.codes[8 * c + k]), cols[k]);
    }
  }
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// y[m, o .. o + 8) for activation rows m0 .. m0 + R against the panel.
using x86::Dot;
using x86::dpbusd;

template <typename Block, int R, Dot kDot>
void panel_rows(const KQuantGemm& g, const PanelBlock* panel, int64_t o, int64_t m0) {
  using T = PanelTraits<Block>;
  // Values per scale: 32 for q4_K / q5_K / iq4_xs, 16 for the others (block_scales).
  constexpr int kScaleGroups = std::is_same_v<Block, Q45K<false>> || std::is_same_v<Block, Q45K<true>> ||
                                       std::is_same_v<Block, IQ4XS> ? 8 : 4;
  const int64_t blocks = g.x.k / kSuper;
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < blocks; ++i) {
    const PanelBlock& p = panel[i];
    const int8_t* q[R];
    for (int r = 0; r < R; ++r) q[r] = g.x.q + (m0 + r) * g.x.k + i * kSuper;
    __m256i s[R];
    for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_si256();
    if constexpr (kDot != Dot::madd) {
      // VNNI: vpdpbusd adds each group's products into int32 lanes (no saturation), so a
      // whole scale group is summed before one multiply by the scale (the same integers).
      for (int g0 = 0; g0 < 64; g0 += kScaleGroups) {
        const __m256i* wp = reinterpret_cast<const __m256i*>(p.codes[g0]);
        const __m256i sc = _mm256_srai_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.scale[g0 / 4])), 16);
        for (int r = 0; r < R; ++r) {
          const int8_t* qr = q[r] + 4 * g0;
          __m256i t = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int k = 0; k < kScaleGroups; ++k) {
            const __m256i wv = _mm256_load_si256(wp + k);
            if constexpr (T::kSigned) t = dpbusd<kDot>(t, _mm256_abs_epi8(wv), _mm256_sign_epi8(bcast4(qr + 4 * k), wv));
            else t = dpbusd<kDot>(t, wv, bcast4(qr + 4 * k));
          }
          s[r] = _mm256_add_epi32(s[r], _mm256_mullo_epi32(t, sc));
        }
      }
    }
    for (int g0 = 0; kDot == Dot::madd && g0 < 64; g0 += T::kSum) {
      __m256i part[R];
      const __m256i* wp = reinterpret_cast<const __m256i*>(p.codes[g0]);
      for (int r = 0; r < R; ++r) {
        const int8_t* qr = q[r] + 4 * g0;
#pragma GCC unroll 8
        for (int k = 0; k < T::kSum; ++k) {
          const __m256i wv = _mm256_load_si256(wp + k);
          __m256i t;
          if constexpr (T::kSigned) t = _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(bcast4(qr + 4 * k), wv));
          else t = _mm256_maddubs_epi16(wv, bcast4(qr + 4 * k));
          part[r] = k == 0 ? t : _mm256_add_epi16(part[r], t);
        }
      }
      const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.scale[g0 / 4]));
      for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(part[r], sc));
    }
    const __m256 d = _mm256_load_ps(p.d);
    const __m256 dmin = _mm256_load_ps(p.dmin);
    for (int r = 0; r < R; ++r) {
      const int64_t m = m0 + r;
      __m256i t = _mm256_setzero_si256();
      if constexpr (!std::is_same_v<Block, IQ4XS>) {
        const int16_t* bs = g.x.bsums + (m * blocks + i) * kBsums;
        for (int q2 = 0; q2 < 8; ++q2) {
          int32_t pairv;
          std::memcpy(&pairv, bs + 2 * q2, 4);
          t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.corr[q2])),
                                                    _mm256_set1_epi32(pairv)));
        }
      }
      const __m256 dx = _mm256_set1_ps(g.x.d[m * blocks + i]);
      if constexpr (T::kMins) {
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(s[r]), acc[r]);
        const __m256 neg = _mm256_xor_ps(_mm256_mul_ps(dmin, dx), _mm256_set1_ps(-0.0f));
        acc[r] = _mm256_fmadd_ps(neg, _mm256_cvtepi32_ps(t), acc[r]);
      } else {
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(_mm256_add_epi32(s[r], t)), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(g.y + (m0 + r) * g.ldy + o, acc[r]);
}

template <typename Block, Dot kDot>
void gemm_panels(const KQuantGemm& g, int64_t o0, int64_t o1, int64_t block_bytes) {
  const int64_t blocks = g.x.k / kSuper;
  thread_local std::vector<PanelBlock> scratch;
  if (scratch.size() < static_cast<size_t>(blocks)) scratch.resize(static_cast<size_t>(blocks));
  int64_t o = o0;
  for (; o + kPanel <= o1; o += kPanel) {
    pack_panel<Block>(g, o, block_bytes, scratch.data());
    int64_t m = 0;
    for (; m + kPanelActRows <= g.x.m; m += kPanelActRows) panel_rows<Block, kPanelActRows, kDot>(g, scratch.data(), o, m);
    for (; m < g.x.m; ++m) panel_rows<Block, 1, kDot>(g, scratch.data(), o, m);
  }
  if (o < o1) gemm_t<Block>(g, o, o1, block_bytes);
}

template <typename Block>
void gemm_any(const KQuantGemm& g, int64_t o0, int64_t o1, int64_t block_bytes) {
  // VNNI where the CPU has it (TESSERA_SIMD=avx2 keeps maddubs): the same integers.
  static const convert::Vnni vnni = convert::cpu_vnni();
  if (g.x.m >= kPanelMinRows) {
    if (vnni == convert::Vnni::evex) return gemm_panels<Block, Dot::vnni_evex>(g, o0, o1, block_bytes);
    if (vnni == convert::Vnni::vex) return gemm_panels<Block, Dot::vnni_vex>(g, o0, o1, block_bytes);
    return gemm_panels<Block, Dot::madd>(g, o0, o1, block_bytes);
  }
  gemm_t<Block>(g, o0, o1, block_bytes);
}

}  // namespace

void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  if (g.wt == DType::q4_k) return gemm_any<Q45K<false>>(g, o0, o1, kQ4_KBlockBytes);
  if (g.wt == DType::q5_k) return gemm_any<Q45K<true>>(g, o0, o1, kQ5_KBlockBytes);
  if (g.wt == DType::q2_k) return gemm_any<Q23K<false>>(g, o0, o1, kQ2_KBlockBytes);
  if (g.wt == DType::q3_k) return gemm_any<Q23K<true>>(g, o0, o1, kQ3_KBlockBytes);
  if (g.wt == DType::iq4_xs) return gemm_any<IQ4XS>(g, o0, o1, kIQ4_XSBlockBytes);
  gemm_any<Q6K>(g, o0, o1, kQ6_KBlockBytes);
}

}  // namespace tessera::cpu::kq::avx2

#pragma GCC pop_options

#endif  // __x86_64__
