// AVX2 + FMA + F16C version of attn::attend (kernels/attention.h), bit-identical to the
// scalar one: the same 8-lane FMA chains and hsum8 tree per score (eight rows reduced at
// once by a transpose that keeps that tree), the same exp_approx, lane maxima and lane
// sums, the same output chains. A tile of several queries over an f32 cache runs every
// query over each block of eight rows; queries over an f16 or q8_0 cache read it directly,
// one at a time. Compiled with -ffp-contract=off (cmake/components.cmake).
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/attention.h"
#include "backend/cpu/x86/exp_avx2.h"
#include "backend/cpu/x86/hsum8_avx2.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::attn::avx2 {

namespace {

using x86::hsum8;

// hmax8 of attention.cpp: each step x > y ? x : y, which is what max_ps(x, y) returns.
inline float hmax8(__m256 a) {
  const __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_max_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// Lane r = hsum8(a[r]), by the same additions: s4 of two rows side by side, then
// (s4[0] + s4[2]) and (s4[1] + s4[3]) of four rows, then their sum.
inline __m256 hsum8x8(const __m256* a) {
  __m256 s[4];
  for (int p = 0; p < 4; ++p)
    s[p] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * p], a[2 * p + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * p], a[2 * p + 1], 0x31));
  // c0: low half rows 0, 2; high half rows 1, 3 (lanes: s4[0] + s4[2], s4[1] + s4[3]).
  const __m256 c0 = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(s[0], s[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 c1 = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(s[2], s[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // Lanes: rows 0, 2, 4, 6 | 1, 3, 5, 7.
  const __m256 g = _mm256_add_ps(_mm256_shuffle_ps(c0, c1, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm256_shuffle_ps(c0, c1, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_permutevar8x32_ps(g, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

using x86::exp8;

// Lanes < n all ones.
inline __m256 first_lanes(int64_t n) {
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// Values i..i+7 of a cache row (i a multiple of 8). q8_0: d * q, exact in f32 (an 11-bit
// significand times an 8-bit code), so it equals the scalar kernel's value bit for bit.
template <Cache kC>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2)));
  if constexpr (kC == Cache::q8_0) {
    const uint8_t* block = row + (i / kQBlock) * kQ8_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, block, 2);
    const __m256 q = _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + i % kQBlock))));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)), q);
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
}

// q8_0 rows have no tail (D is a multiple of 32): only f32 and f16 come here.
template <Cache kC>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return _cvtsh_ss(h);
  }
  float f;
  std::memcpy(&f, row + i * 4, 4);
  return f;
}

// The eight rows j0..j0+7 of an f32 cache (clamped to the last row < rows, whose results
// are not used).
inline void rows_f32(const uint8_t* base, int64_t rb, int64_t j0, int64_t rows, const float** out) {
  for (int r = 0; r < 8; ++r) out[r] = reinterpret_cast<const float*>(base + std::min<int64_t>(j0 + r, rows - 1) * rb);
}

// Scores of one query against eight rows, stored to s[0, 8). kDirect: rows read from the
// cache (raw[r]); otherwise from f32 rows (f32[r]).
template <Cache kC, bool kDirect>
inline void scores8(const float* q, int64_t d, float scale, const uint8_t* const* raw, const float* const* f32,
                    float* s) {
  const int64_t d8 = d / 8 * 8;
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t i = 0; i < d8; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    for (int r = 0; r < 8; ++r)
      acc[r] = _mm256_fmadd_ps(qv, kDirect ? load8<kC>(raw[r], i) : _mm256_loadu_ps(f32[r] + i), acc[r]);
  }
  alignas(32) float t[8] = {};
  if (d8 < d)
    for (int r = 0; r < 8; ++r)
      for (int64_t i = d8; i < d; ++i) t[r] = std::fma(q[i], kDirect ? load1<kC>(raw[r], i) : f32[r][i], t[r]);
  _mm256_storeu_ps(s, _mm256_mul_ps(_mm256_add_ps(hsum8x8(acc), _mm256_load_ps(t)), _mm256_set1_ps(scale)));
}

// exp_approx(s_j - m) in place over s[0, rows) (and the padding lanes up to a multiple of
// 8, not summed); returns their sum, as attention.h defines it.
inline float softmax_row(float* s, int64_t rows) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t full = rows / 8 * 8;
  for (int64_t j = 0; j < full; j += 8) m = _mm256_max_ps(_mm256_loadu_ps(s + j), m);
  const __m256 tail = first_lanes(rows - full);
  if (full < rows)
    m = _mm256_max_ps(_mm256_blendv_ps(_mm256_set1_ps(-std::numeric_limits<float>::infinity()),
                                       _mm256_loadu_ps(s + full), tail),
                      m);
  const __m256 mv = _mm256_set1_ps(hmax8(m));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (full < rows) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + full), mv));
    _mm256_storeu_ps(s + full, e);
    sum = _mm256_add_ps(sum, _mm256_and_ps(e, tail));
  }
  return hsum8(sum);
}

// out[i] = (sum over j of p[j] * v_j[i], fma in j order from 0) / sum, for i < d.
template <Cache kC>
inline void weighted_sum(const float* p, int64_t rows, const uint8_t* v, int64_t rb, int64_t d, float sum, float* out) {
  const int64_t d8 = d / 8 * 8;
  const __m256 s = _mm256_set1_ps(sum);
  int64_t i = 0;
  // Eight accumulators (64 values) in flight: four would wait on the fma latency.
  for (; i + 64 <= d8; i += 64) {
    __m256 o[8];
    for (auto& x : o) x = _mm256_setzero_ps();
    for (int64_t j = 0; j < rows; ++j) {
      const uint8_t* vr = v + j * rb;
      const __m256 pj = _mm256_set1_ps(p[j]);
      for (int u = 0; u < 8; ++u) o[u] = _mm256_fmadd_ps(pj, load8<kC>(vr, i + 8 * u), o[u]);
    }
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(out + i + 8 * u, _mm256_div_ps(o[u], s));
  }
  for (; i + 32 <= d8; i += 32) {
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int64_t j = 0; j < rows; ++j) {
      const uint8_t* vr = v + j * rb;
      const __m256 pj = _mm256_set1_ps(p[j]);
      o0 = _mm256_fmadd_ps(pj, load8<kC>(vr, i), o0);
      o1 = _mm256_fmadd_ps(pj, load8<kC>(vr, i + 8), o1);
      o2 = _mm256_fmadd_ps(pj, load8<kC>(vr, i + 16), o2);
      o3 = _mm256_fmadd_ps(pj, load8<kC>(vr, i + 24), o3);
    }
    _mm256_storeu_ps(out + i, _mm256_div_ps(o0, s));
    _mm256_storeu_ps(out + i + 8, _mm256_div_ps(o1, s));
    _mm256_storeu_ps(out + i + 16, _mm256_div_ps(o2, s));
    _mm256_storeu_ps(out + i + 24, _mm256_div_ps(o3, s));
  }
  for (; i < d8; i += 8) {
    __m256 o = _mm256_setzero_ps();
    for (int64_t j = 0; j < rows; ++j) o = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), load8<kC>(v + j * rb, i), o);
    _mm256_storeu_ps(out + i, _mm256_div_ps(o, s));
  }
  for (; i < d; ++i) {
    float o = 0;
    for (int64_t j = 0; j < rows; ++j) o = std::fma(p[j], load1<kC>(v + j * rb, i), o);
    out[i] = o / sum;
  }
}

// weighted_sum of two queries at once (d a multiple of 32), sharing each V load: 32
// values of both outputs in registers; rows both attend first, then the longer one's
// rest, so each output keeps its j order.
template <Cache kC>
inline void weighted_sum2(const float* pa, const float* pb, int64_t ra, int64_t rb_rows, const uint8_t* v, int64_t rb,
                          int64_t d, float sa, float sb, float* outa, float* outb) {
  // acc[u] += p[k] * v_k[i + 8u] over rows k in [k0, k1), u < 4.
  auto rows_of_one = [&](const float* p, int64_t k0, int64_t k1, int64_t i, __m256* acc) {
    for (int64_t k = k0; k < k1; ++k) {
      const uint8_t* vr = v + k * rb;
      const __m256 pk = _mm256_set1_ps(p[k]);
      for (int u = 0; u < 4; ++u) acc[u] = _mm256_fmadd_ps(pk, load8<kC>(vr, i + 8 * u), acc[u]);
    }
  };
  const int64_t both = std::min(ra, rb_rows);
  for (int64_t i = 0; i < d; i += 32) {
    __m256 a[4], b[4];
    for (int u = 0; u < 4; ++u) a[u] = b[u] = _mm256_setzero_ps();
    for (int64_t j = 0; j < both; ++j) {
      const uint8_t* vr = v + j * rb;
      const __m256 p = _mm256_set1_ps(pa[j]), q = _mm256_set1_ps(pb[j]);
      __m256 vu[4];
      for (int u = 0; u < 4; ++u) vu[u] = load8<kC>(vr, i + 8 * u);
      for (int u = 0; u < 4; ++u) a[u] = _mm256_fmadd_ps(p, vu[u], a[u]);
      for (int u = 0; u < 4; ++u) b[u] = _mm256_fmadd_ps(q, vu[u], b[u]);
    }
    rows_of_one(pa, both, ra, i, a);
    rows_of_one(pb, both, rb_rows, i, b);
    const __m256 ma = _mm256_set1_ps(sa), mb = _mm256_set1_ps(sb);
    for (int u = 0; u < 4; ++u) {
      _mm256_storeu_ps(outa + i + 8 * u, _mm256_div_ps(a[u], ma));
      _mm256_storeu_ps(outb + i + 8 * u, _mm256_div_ps(b[u], mb));
    }
  }
}

// weighted_sum of four queries at once (d a multiple of 16), sharing each V load among
// all four: 16 values of every output in registers (eight accumulators), half the V
// traffic per output of weighted_sum2 (whose rows come from L2 for a prompt's long rows).
// Rows all four attend first, then each query's rest, so each output keeps its j order.
template <Cache kC>
inline void weighted_sum4(const float* const* p, const int64_t* rows, const uint8_t* v, int64_t rb, int64_t d,
                          const float* sums, float* const* out) {
  const int64_t all = std::min(std::min(rows[0], rows[1]), std::min(rows[2], rows[3]));
  for (int64_t i = 0; i < d; i += 16) {
    __m256 a[4][2];
    for (auto& aq : a) aq[0] = aq[1] = _mm256_setzero_ps();
    for (int64_t j = 0; j < all; ++j) {
      const uint8_t* vr = v + j * rb;
      const __m256 v0 = load8<kC>(vr, i), v1 = load8<kC>(vr, i + 8);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m256 pq = _mm256_set1_ps(p[q][j]);
        a[q][0] = _mm256_fmadd_ps(pq, v0, a[q][0]);
        a[q][1] = _mm256_fmadd_ps(pq, v1, a[q][1]);
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      for (int64_t j = all; j < rows[q]; ++j) {
        const uint8_t* vr = v + j * rb;
        const __m256 pq = _mm256_set1_ps(p[q][j]);
        a[q][0] = _mm256_fmadd_ps(pq, load8<kC>(vr, i), a[q][0]);
        a[q][1] = _mm256_fmadd_ps(pq, load8<kC>(vr, i + 8), a[q][1]);
      }
      const __m256 m = _mm256_set1_ps(sums[q]);
      _mm256_storeu_ps(out[q] + i, _mm256_div_ps(a[q][0], m));
      _mm256_storeu_ps(out[q] + i + 8, _mm256_div_ps(a[q][1], m));
    }
  }
}

template <Cache kC>
void attend_t(const Tile& tl) {
  // Several queries over an f16 or q8_0 cache: each alone, reading the cache directly
  // (converting blocks of rows once per tile measured slower than that; the op converts a
  // prompt's rows to f32 once instead, attention.cpp).
  if (kC != Cache::f32 && tl.nq > 1) {
    Tile one = tl;
    one.nq = 1;
    for (int q = 0; q < tl.nq; ++q) {
      one.query[0] = tl.query[q];
      attend_t<kC>(one);
    }
    return;
  }
  const int64_t d = tl.d, rb = row_bytes(kC, d);
  int64_t R = 0;
  for (int q = 0; q < tl.nq; ++q) R = std::max(R, tl.query[q].rows);
  const int64_t R8 = (R + 7) / 8 * 8;
  float* S = tl.scratch;  // [kTile][R8] scores, then probabilities
  const bool direct = kC != Cache::f32;  // one query: straight from the cache
  const uint8_t* raw[8];
  const float* f32[8];

  for (int64_t j0 = 0; j0 < R; j0 += 8) {
    if (direct) {
      for (int r = 0; r < 8; ++r) raw[r] = tl.k + std::min<int64_t>(j0 + r, R - 1) * rb;
    } else {
      rows_f32(tl.k, rb, j0, R, f32);
    }
    for (int q = 0; q < tl.nq; ++q) {
      if (tl.query[q].rows <= j0) continue;
      float* s = S + q * R8 + j0;
      if (direct) scores8<kC, true>(tl.query[q].q, d, tl.scale, raw, f32, s);
      else scores8<kC, false>(tl.query[q].q, d, tl.scale, raw, f32, s);
    }
  }
  if (tl.softcap > 0)
    for (int q = 0; q < tl.nq; ++q) cap_scores(S + q * R8, tl.query[q].rows, tl.softcap);
  float sums[kTile];
  for (int q = 0; q < tl.nq; ++q) sums[q] = softmax_row(S + q * R8, tl.query[q].rows);

  // Each query's output in registers, 64 values at a time, over all its rows (the
  // probabilities of every row are known by now): no partial sums stored between blocks
  // of rows. V rows are read once per query (from L1 / L2 for a tile's queries).
  int q = 0;
  if (tl.nq == 4 && d % 16 == 0) {
    static_assert(kTile == 4);
    const float* p[4];
    int64_t rows[4];
    float* out[4];
    for (int u = 0; u < 4; ++u) p[u] = S + u * R8, rows[u] = tl.query[u].rows, out[u] = tl.query[u].out;
    weighted_sum4<kC>(p, rows, tl.v, rb, d, sums, out);
    q = 4;
  }
  if (d % 32 == 0)
    for (; q + 2 <= tl.nq; q += 2)
      weighted_sum2<kC>(S + q * R8, S + (q + 1) * R8, tl.query[q].rows, tl.query[q + 1].rows, tl.v, rb, d, sums[q],
                        sums[q + 1], tl.query[q].out, tl.query[q + 1].out);
  for (; q < tl.nq; ++q) weighted_sum<kC>(S + q * R8, tl.query[q].rows, tl.v, rb, d, sums[q], tl.query[q].out);
}
}  // namespace

void attend(const Tile& t) {
  switch (t.cache) {
    case Cache::f16: return attend_t<Cache::f16>(t);
    case Cache::q8_0: return attend_t<Cache::q8_0>(t);
    case Cache::f32: return attend_t<Cache::f32>(t);
  }
}

}  // namespace tessera::cpu::attn::avx2

#pragma GCC pop_options

#endif  // __x86_64__
