// AVX2 + FMA + F16C kernels of linear_q8.h; bit-identical to the scalar ones there.
//
// Integer block dot products: q8_0 uses the sign trick, maddubs(|w|, sign(x, w)) multiplies
// unsigned |w| <= 128 by signed x (|x| <= 127) into exact 16-bit pair sums (at most
// 2 * 128 * 127 = 32512); q4_0 multiplies its unsigned nibbles by x (pairs at most
// 2 * 15 * 127) and subtracts 8 sum x. madd with ones adds pairs into the 8 lanes of 4
// values that linear_q8.h defines. Output elements are computed in tiles of MR activation rows by NR
// weight rows so each decoded weight block serves MR rows; a tile changes nothing in the
// arithmetic of an element.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/linear_q8.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::q8::avx2 {

namespace {

inline float hsum8(__m256 a) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // (s4[0] + s4[2]), (s4[1] + s4[3])
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

inline float f16_scale(const uint8_t* blk) {
  uint16_t dh;
  std::memcpy(&dh, blk, 2);
  return _cvtsh_ss(dh);
}

// Weight block b of a row as 32 bytes in element order, and its scale: q8_0 signed
// values; q4_0 the unsigned nibbles 0..15 (the value is nibble - 8).
template <bool kQ4>
inline __m256i weight_block(const uint8_t* row, int64_t b, float& d) {
  if constexpr (kQ4) {
    const uint8_t* blk = row + b * kQ4_0BlockBytes;
    d = f16_scale(blk);
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0f));
  } else {
    const uint8_t* blk = row + b * kQ8_0BlockBytes;
    d = f16_scale(blk);
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  }
}

template <bool kQ4, int MR, int NR>
void quant_tile(const QuantGemm& g, int64_t m0, int64_t o0) {
  const int64_t blocks = g.x.k / kBlock;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_setzero_ps();
  const uint8_t* rows[NR];
  for (int n = 0; n < NR; ++n) rows[n] = g.w + (o0 + n) * g.w_row_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    // Scales stay scalar (dw * dx is one float multiply either way): fewer live vector
    // registers, so a 4 x 2 tile's accumulators are not spilled.
    __m256i w[NR], aw[NR];
    float dw[NR];
    for (int n = 0; n < NR; ++n) {
      w[n] = weight_block<kQ4>(rows[n], b, dw[n]);
      if constexpr (!kQ4) aw[n] = _mm256_sign_epi8(w[n], w[n]);
    }
    for (int m = 0; m < MR; ++m) {
      const int64_t r = m0 + m;
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.x.q + r * g.x.k + b * kBlock));
      const float dx = g.x.d[r * blocks + b];
      // q4_0: sum (nib - 8) x = sum nib x - 8 sum x, the same integers; nib <= 15 is the
      // unsigned operand directly, and 8 sum x per lane is shared by the NR weight rows.
      __m256i x8;
      if constexpr (kQ4) x8 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), xv), ones);
      for (int n = 0; n < NR; ++n) {
        __m256i si;
        if constexpr (kQ4) {
          si = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w[n], xv), ones), x8);
        } else {
          si = _mm256_madd_epi16(_mm256_maddubs_epi16(aw[n], _mm256_sign_epi8(xv, w[n])), ones);
        }
        acc[m][n] = _mm256_fmadd_ps(_mm256_set1_ps(dw[n] * dx), _mm256_cvtepi32_ps(si), acc[m][n]);
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) g.y[(m0 + m) * g.ldy + o0 + n] = hsum8(acc[m][n]);
}

template <int MR, int NR>
void f16_tile(const F16Gemm& g, int64_t m0, int64_t o0) {
  const int64_t k8 = g.k / 8 * 8;
  __m256 acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_setzero_ps();
  for (int64_t j = 0; j < k8; j += 8) {
    __m256 w[NR];
    for (int n = 0; n < NR; ++n)
      w[n] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.w + (o0 + n) * g.k + j)));
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_loadu_ps(g.x + (m0 + m) * g.k + j);
      for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_fmadd_ps(w[n], xv, acc[m][n]);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) {
      const uint16_t* w = g.w + (o0 + n) * g.k;
      const float* x = g.x + (m0 + m) * g.k;
      float t = 0;
      for (int64_t j = k8; j < g.k; ++j) t = std::fma(_cvtsh_ss(w[j]), x[j], t);
      g.y[(m0 + m) * g.ldy + o0 + n] = hsum8(acc[m][n]) + t;
    }
}

// Tiles of up to 4 x 4; [mr - 1][nr - 1] picks the instantiation for an edge tile.
template <typename G, template <int, int> class Tile>
struct TileTable {
  using Fn = void (*)(const G&, int64_t, int64_t);
  static constexpr Fn fns[4][4] = {
      {Tile<1, 1>::run, Tile<1, 2>::run, Tile<1, 3>::run, Tile<1, 4>::run},
      {Tile<2, 1>::run, Tile<2, 2>::run, Tile<2, 3>::run, Tile<2, 4>::run},
      {Tile<3, 1>::run, Tile<3, 2>::run, Tile<3, 3>::run, Tile<3, 4>::run},
      {Tile<4, 1>::run, Tile<4, 2>::run, Tile<4, 3>::run, Tile<4, 4>::run}};
};
template <int MR, int NR> struct Q8Tile { static void run(const QuantGemm& g, int64_t m, int64_t o) { quant_tile<false, MR, NR>(g, m, o); } };
template <int MR, int NR> struct Q4Tile { static void run(const QuantGemm& g, int64_t m, int64_t o) { quant_tile<true, MR, NR>(g, m, o); } };
template <int MR, int NR> struct F16Tile { static void run(const F16Gemm& g, int64_t m, int64_t o) { f16_tile<MR, NR>(g, m, o); } };

// Activation rows per pass over the weights: 64 rows of 2048 int8 values (128 KiB) stay
// in L2 while the weight tiles stream past them.
constexpr int64_t kRowChunk = 64;

// Walks [0, rows) x [o0, o1) in tiles: within a chunk of activation rows, weight rows
// outside, so a tile's weights stay in L1 while every row of the chunk passes over them.
template <typename G, typename Fns>
void walk(const G& g, int64_t rows, int64_t o0, int64_t o1, const Fns& fns, int mr, int nr) {
  for (int64_t mc = 0; mc < rows; mc += kRowChunk) {
    const int64_t mend = std::min(rows, mc + kRowChunk);
    for (int64_t o = o0; o < o1; o += nr) {
      const int64_t n = std::min<int64_t>(nr, o1 - o);
      for (int64_t m = mc; m < mend; m += mr) {
        const int64_t k = std::min<int64_t>(mr, mend - m);
        fns[k - 1][n - 1](g, m, o);
      }
    }
  }
}

}  // namespace

void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                              _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i i32[4];
    for (int i = 0; i < 4; ++i)
      i32[i] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i32[0], i32[1]), _mm256_packs_epi32(i32[2], i32[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), _mm256_permutevar8x32_epi32(p, perm));
  }
}

void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  // One activation row (decode): one weight row at a time (measured faster here than 2 or
  // 4 interleaved rows); several rows (prompt): 4 x 2 tiles reuse each decoded weight
  // block 4 times.
  const int mr = g.x.m == 1 ? 1 : 4, nr = g.x.m == 1 ? 1 : 2;
  if (g.wt == DType::q4_0)
    walk(g, g.x.m, o0, o1, TileTable<QuantGemm, Q4Tile>::fns, mr, nr);
  else
    walk(g, g.x.m, o0, o1, TileTable<QuantGemm, Q8Tile>::fns, mr, nr);
}

void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  const int mr = g.m == 1 ? 1 : 2, nr = 4;
  walk(g, g.m, o0, o1, TileTable<F16Gemm, F16Tile>::fns, mr, nr);
}

}  // namespace tessera::cpu::q8::avx2

#pragma GCC pop_options

#endif  // __x86_64__
