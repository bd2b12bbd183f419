// The cpu attention kernel's inner loops, in a fixed float order so the scalar and AVX2
// versions give identical bits. A tile is up to kTile queries that read the same KV head
// (consecutive tokens of one head, or the query heads of one group under GQA); each
// query q attends rows 0..rows_q-1. Per query, independently of the tiling:
//   s_j = (hsum8(acc) + t) * scale, acc[l] = fma(q[8i+l], k_j[8i+l], acc[l]) over i in
//         order, t = fma(q[i], k_j[i], t) over the D % 8 tail in order (hsum8 as in
//         linear_q8.h); with a soft cap c > 0 then s_j = c * tanh(s_j / c) (cap_scores)
//   m_l = max over j = l mod 8 of s_j, as m_l = s_j > m_l ? s_j : m_l from -inf in j
//         order; m = the same max over the lanes in the hsum8 tree
//   p_j = ops::exp_approx(s_j - m);  sum_l = p_l + p_{l+8} + ... in order, sum = hsum8
//   o[d] = fma(p_j, v_j[d], o[d]) over j in order from 0;  out[d] = o[d] / sum
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/exp_approx.h"
#include "tessera/types.h"

namespace tessera::cpu::attn {

// The cache's element type. q8_0 rows are D / 32 blocks (D a multiple of 32); a value
// is d * q computed in f32, which is exact, so every path reads the same floats.
enum class Cache : uint8_t { f32, f16, q8_0 };

// Bytes of one cache row of `d` values.
inline int64_t row_bytes(Cache c, int64_t d) {
  return c == Cache::f32 ? d * 4 : c == Cache::f16 ? d * 2 : d / kQBlock * kQ8_0BlockBytes;
}

constexpr int kTile = 4;  // queries per tile

struct Query {
  const float* q = nullptr;  // [D]
  int64_t rows = 0;          // rows 0..rows-1 are attended (>= 1)
  float* out = nullptr;      // [D]
};

struct Tile {
  Query query[kTile];
  int nq = 0;                   // 1..kTile
  const uint8_t* k = nullptr;   // rows of the KV head, in `cache`'s layout
  const uint8_t* v = nullptr;   // likewise
  Cache cache = Cache::f32;
  int64_t d = 0;                // head size
  float scale = 1.0f;
  float softcap = 0.0f;         // > 0: scores are soft-capped (cap_scores)
  float* scratch = nullptr;     // scratch_floats(max rows) floats
};

// Logit soft-capping of n scores in place, s = c * tanh(s / c): one scalar definition that
// every kernel level calls between its scores and its softmax (so the bits agree).
inline void cap_scores(float* s, int64_t n, float c) {
  for (int64_t j = 0; j < n; ++j) s[j] = c * std::tanh(s[j] / c);
}

// Scratch a tile needs: kTile score rows padded to 8 (the outputs are summed in registers).
inline int64_t scratch_floats(int64_t rows) { return kTile * ((rows + 7) / 8 * 8); }


// n values of consecutive cache rows as f32 (exact: the values every kernel reads).
void rows_to_f32(Cache c, const uint8_t* rows, int64_t n, float* out);

void attend(const Tile& t);  // the level convert::use_avx2() picks

namespace scalar {
void attend(const Tile& t);
}
#if defined(__x86_64__)
namespace avx2 {
void attend(const Tile& t);
}
#endif
#if defined(__aarch64__)
namespace neon {
void attend(const Tile& t);
}
#endif

}  // namespace tessera::cpu::attn
