// AVX2 bfp face-row packer and unpacker; bit-identical to the reference in bfp.cpp.
// One face row is two 8-lane vectors; the row exponent is a horizontal max.
#if defined(__x86_64__)  // x86-64 only (cmake/arch.cmake leaves it out elsewhere)
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "convert/bfp.h"
#include "convert/dtype.h"
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

// ---- GGUF blocks ---------------------------------------------------------------------
// The reference dequantizes a block (d * k, exact in f32) and packs the floats. Here the
// same bytes come from small-integer arithmetic. With d = M * 2^(ed - 127 - 10) (M the
// 11-bit significand of the f16 scale, ed its f32 exponent field) and v = d * k:
//   the row exponent is E = ed + S, S = bitlen(kmax * M) - 11 (kmax = max |k| of the row),
//   the spec's truncating shift of v's significand is exact (M * 2^13 has 13 zero bits
//   below and S <= 7), so the code magnitude is RNE(|k| * M / 2^(S + 11 - W)), clamped.
// A block whose scale is Inf/NaN takes the reference path (it must be reported).

inline float block_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return _cvtsh_ss(h);
}

// Horizontal max of the unsigned bytes within each 128-bit half; the result is in byte 0
// of each half.
inline __m256i hmax_epu8_per_half(__m256i v) {
  v = _mm256_max_epu8(v, _mm256_srli_si256(v, 8));
  v = _mm256_max_epu8(v, _mm256_srli_si256(v, 4));
  v = _mm256_max_epu8(v, _mm256_srli_si256(v, 2));
  return _mm256_max_epu8(v, _mm256_srli_si256(v, 1));
}

// Row exponent and rounding shift for a row with largest |k| = kmax (> 0).
template <int W>
inline void row_scale(uint32_t kmax, uint32_t m, uint32_t ed, uint8_t* e, int* shift) {
  const int s = 32 - __builtin_clz(kmax * m) - 11;
  *e = static_cast<uint8_t>(ed + s);
  *shift = s + 11 - W;
}

inline void dequant_q8_0(const uint8_t* block, float* out) {
  const __m256 d = _mm256_set1_ps(block_scale(block));
  for (int i = 0; i < 4; ++i) {
    __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * i)));
    _mm256_storeu_ps(out + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
  }
}

inline void dequant_q4_0(const uint8_t* block, float* out) {
  const __m256 d = _mm256_set1_ps(block_scale(block));
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m128i eight = _mm_set1_epi8(8), low = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);                      // values 0..15
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);  // values 16..31
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int i = 0; i < 4; ++i)
    _mm256_storeu_ps(out + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[i])), d));
}

template <int W>
void pack_q8_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e);
template <int W>
void pack_q4_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e);

// Generic: dequantize with AVX2, pack the two rows.
template <int W>
inline void pack_dequantized(const float* v, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  e[0] = pack_row<W>(v, c0);
  e[1] = pack_row<W>(v + kFaceDim, c1);
}

// Blocks whose scale is Inf/NaN: the reference arithmetic, kept out of line so the fast
// paths need no aligned stack frame.
template <int W>
[[gnu::noinline]] void pack_nonfinite_q8_0(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  alignas(32) float v[kQBlock];
  dequant_q8_0(block, v);
  pack_dequantized<W>(v, c0, c1, e);
}
template <int W>
[[gnu::noinline]] void pack_nonfinite_q4_0(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  alignas(32) float v[kQBlock];
  dequant_q4_0(block, v);
  pack_dequantized<W>(v, c0, c1, e);
}

// The scale decides the easy cases: returns false if the block needs no more work.
template <int W>
inline bool scale_parts(float d, uint32_t* m, uint32_t* ed, uint32_t* dneg, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  const uint32_t bits = f32_bits(d);
  *ed = (bits >> 23) & 0xFFu;
  if (*ed == 0) {  // d = +-0 (an f16 scale is never an f32 denormal): every value is zero
    e[0] = e[1] = 0;
    std::memset(c0, 0, W == kBfp8MantBits ? 16 : 8);
    std::memset(c1, 0, W == kBfp8MantBits ? 16 : 8);
    return false;
  }
  *m = ((bits & 0x7FFFFFu) | 0x800000u) >> 13;
  *dneg = bits >> 31;
  return true;
}

template <>
inline void pack_q8_0_block<kBfp8MantBits>(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  constexpr int W = kBfp8MantBits;
  const float d = block_scale(block);
  uint32_t m, ed, dneg;
  if (((f32_bits(d) >> 23) & 0xFFu) == 0xFFu) [[unlikely]]
    return pack_nonfinite_q8_0<W>(block, c0, c1, e);
  if (!scale_parts<W>(d, &m, &ed, &dneg, c0, c1, e)) return;
  const __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));  // row 0 | row 1
  const __m256i ak = _mm256_abs_epi8(k);  // |-128| = 0x80 read as unsigned 128
  const __m256i mx = hmax_epu8_per_half(ak);
  const uint32_t kmax[2] = {static_cast<uint32_t>(_mm256_extract_epi8(mx, 0)),
                            static_cast<uint32_t>(_mm256_extract_epi8(mx, 16))};
  // Negative codes: k < 0 xor d < 0.
  const __m256i neg = _mm256_xor_si256(_mm256_cmpgt_epi8(_mm256_setzero_si256(), k),
                                       _mm256_set1_epi8(dneg ? static_cast<char>(0xFF) : 0));
  uint8_t* out[2] = {c0, c1};
  for (int r = 0; r < 2; ++r) {
    if (kmax[r] == 0) {
      e[r] = 0;
      std::memset(out[r], 0, 16);
      continue;
    }
    int sh;
    row_scale<W>(kmax[r], m, ed, &e[r], &sh);
    const __m128i akr = r ? _mm256_extracti128_si256(ak, 1) : _mm256_castsi256_si128(ak);
    // |k| * M < 2^18: 32-bit lanes.
    const __m256i mm = _mm256_set1_epi32(static_cast<int>(m));
    const __m128i count = _mm_cvtsi32_si128(sh);
    __m256i q[2];
    for (int i = 0; i < 2; ++i) {
      __m256i x = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(i ? _mm_srli_si128(akr, 8) : akr), mm);
      __m256i odd = _mm256_and_si256(_mm256_srl_epi32(x, count), _mm256_set1_epi32(1));
      __m256i bias = _mm256_add_epi32(_mm256_set1_epi32((1 << (sh - 1)) - 1), odd);
      q[i] = _mm256_min_epu32(_mm256_srl_epi32(_mm256_add_epi32(x, bias), count), _mm256_set1_epi32(127));
    }
    __m256i p16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(q[0], q[1]), 0xD8);
    __m128i mag = _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
    const __m128i negr = r ? _mm256_extracti128_si256(neg, 1) : _mm256_castsi256_si128(neg);
    const __m128i nonzero = _mm_xor_si128(_mm_cmpeq_epi8(mag, _mm_setzero_si128()), _mm_set1_epi8(-1));
    const __m128i sign = _mm_and_si128(_mm_and_si128(negr, nonzero), _mm_set1_epi8(static_cast<char>(0x80)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[r]), _mm_or_si128(mag, sign));
  }
}

// q4_0 -> bfp4: a row's 16 codes are a function of the nibble n alone once the scale's
// significand M, the row's S (0..3, since |k| <= 8) and the scale's sign are known, so they
// come from a table of 16 codes per (M, S, sign): 1024 * 4 * 2 rows of 16 bytes (128 KiB),
// built once from the formula above.
struct Q4CodeTables {
  alignas(16) uint8_t codes[1024][4][2][16];  // [M - 1024][S][scale < 0][nibble]
  Q4CodeTables() {
    for (int mi = 0; mi < 1024; ++mi)
      for (int s = 0; s < 4; ++s)
        for (int neg_scale = 0; neg_scale < 2; ++neg_scale)
          for (int n = 0; n < 16; ++n) {
            const uint32_t x = static_cast<uint32_t>(std::abs(n - 8)) * static_cast<uint32_t>(1024 + mi);
            const int sh = s + 11 - kBfp4MantBits;
            uint32_t q = x >> sh, rem = x & ((1u << sh) - 1), half = 1u << (sh - 1);
            if (rem > half || (rem == half && (q & 1u))) ++q;
            q = q > 7u ? 7u : q;  // (no std:: templates inside the AVX2 target region)
            const bool neg = (n < 8) != (neg_scale != 0);
            codes[mi][s][neg_scale][n] = static_cast<uint8_t>(q | (neg && q ? 8u : 0u));
          }
  }
};

const Q4CodeTables* q4_code_tables() {
  static const Q4CodeTables* tables = new Q4CodeTables();  // built once, never destroyed
  return tables;
}

template <>
inline void pack_q4_0_block<kBfp4MantBits>(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  constexpr int W = kBfp4MantBits;
  const float d = block_scale(block);
  uint32_t m, ed, dneg;
  if (((f32_bits(d) >> 23) & 0xFFu) == 0xFFu) [[unlikely]]
    return pack_nonfinite_q4_0<W>(block, c0, c1, e);
  if (!scale_parts<W>(d, &m, &ed, &dneg, c0, c1, e)) return;
  static const Q4CodeTables& q4 = *q4_code_tables();
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m128i low = _mm_set1_epi8(0x0F);
  // Nibbles n of row 0 (values 0..15, low nibbles) | row 1 (values 16..31, high nibbles).
  const __m256i n = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
  const __m256i mx = hmax_epu8_per_half(_mm256_abs_epi8(_mm256_sub_epi8(n, _mm256_set1_epi8(8))));
  const uint32_t kmax[2] = {static_cast<uint32_t>(_mm256_extract_epi8(mx, 0)),
                            static_cast<uint32_t>(_mm256_extract_epi8(mx, 16))};
  const uint8_t* row_tables[2];
  for (int r = 0; r < 2; ++r) {
    int sh = 11 - W;  // S = 0: a row of zeros only looks up nibble 8, whose code is 0
    e[r] = 0;
    if (kmax[r]) row_scale<W>(kmax[r], m, ed, &e[r], &sh);
    row_tables[r] = q4.codes[m - 1024][sh - (11 - W)][dneg];
  }
  const __m256i t = _mm256_set_m128i(_mm_load_si128(reinterpret_cast<const __m128i*>(row_tables[1])),
                                     _mm_load_si128(reinterpret_cast<const __m128i*>(row_tables[0])));
  const __m256i codes = _mm256_shuffle_epi8(t, n);
  // Byte pairs (c0, c1) -> c0 | c1 << 4 (first value in the low nibble).
  const __m256i lo = _mm256_and_si256(codes, _mm256_set1_epi16(0x000F));
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), _mm256_set1_epi16(0x00F0));
  const __m256i packed = _mm256_packus_epi16(_mm256_or_si256(lo, hi), _mm256_setzero_si256());
  _mm_storel_epi64(reinterpret_cast<__m128i*>(c0), _mm256_castsi256_si128(packed));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(c1), _mm256_extracti128_si256(packed, 1));
}

// q4_0 -> bfp4_b over whole tensors, tile after tile (the generic loop of bfp_impl.h walks
// rows and recomputes positions per block; this one writes each 576-byte tile in order).
template <int W>
int64_t pack_q4_0_tiles_w(const uint8_t* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop);

template <>
int64_t pack_q4_0_tiles_w<kBfp4MantBits>(const uint8_t* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad,
                                         bool stop) {
  constexpr int64_t kRowBytes = 8, kTileBytes = kBfpExpBytes + kFaceRows * kRowBytes;
  const int64_t row_stride = g.w / kQBlock * kQ4_0BlockBytes;  // bytes of one GGUF row
  int64_t n_bad = 0;
  uint8_t* tile = dst;
  for (int64_t s = 0; s < g.outer; ++s) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      const int64_t rows = g.h - th * kTileDim < kTileDim ? g.h - th * kTileDim : kTileDim;
      const uint8_t* band = src + (s * g.h + th * kTileDim) * row_stride;
      for (int64_t tw = 0; tw < g.tiles_w; ++tw, tile += kTileBytes) {
        if (rows < kTileDim) std::memset(tile, 0, kTileBytes);
        const uint8_t* block = band + tw * kQ4_0BlockBytes;
        for (int64_t r = 0; r < rows; ++r, block += row_stride) {
          const int64_t k0 = face_row_of(r, 0), k1 = k0 + kFaceDim;
          uint8_t e[2];
          pack_q4_0_block<kBfp4MantBits>(block, tile + kBfpExpBytes + k0 * kRowBytes,
                                         tile + kBfpExpBytes + k1 * kRowBytes, e);
          tile[k0] = e[0];
          tile[k1] = e[1];
          if ((e[0] == kBfpNonFiniteExp || e[1] == kBfpNonFiniteExp)) [[unlikely]] {
            const int64_t t = g.tile_index(s, th, tw), h = th * kTileDim + r;
            for (int half = 0; half < 2; ++half)
              if (e[half] == kBfpNonFiniteExp && n_bad++ == 0)
                *bad = {t, half ? k1 : k0, s, h, tw * kTileDim + half * kFaceDim};
            if (stop) return n_bad;
          }
        }
      }
    }
  }
  return n_bad;
}

// The other pairings (q8_0 -> bfp4_b, q4_0 -> bfp8_b) dequantize and pack.
template <>
void pack_q8_0_block<kBfp4MantBits>(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  alignas(32) float v[kQBlock];
  dequant_q8_0(block, v);
  pack_dequantized<kBfp4MantBits>(v, c0, c1, e);
}
template <>
void pack_q4_0_block<kBfp8MantBits>(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  alignas(32) float v[kQBlock];
  dequant_q4_0(block, v);
  pack_dequantized<kBfp8MantBits>(v, c0, c1, e);
}

#include "convert/bfp_impl.h"

void dequant_q8_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q8_0(src + b * kQ8_0BlockBytes, dst + b * kQBlock);
}

void dequant_q4_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q4_0(src + b * kQ4_0BlockBytes, dst + b * kQBlock);
}

}  // namespace tessera::convert::avx2

#pragma GCC pop_options
#endif  // __x86_64__
