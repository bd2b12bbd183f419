// The cpu attention kernel's inner loop, one (token, head) at a time, in a fixed float
// order so the scalar and AVX2 versions give identical bits:
//   s_j = (hsum8(acc) + t) * scale, acc[l] = fma(q[8i+l], k_j[8i+l], acc[l]) over i in
//         order, t = fma(q[i], k_j[i], t) over the D % 8 tail in order (hsum8 as in
//         linear_q8.h)
//   m = max_j s_j;  p_j = std::exp(s_j - m);  sum = p_0 + p_1 + ... in order
//   o[d] = fma(p_j, v_j[d], o[d]) over j in order;  out[d] = o[d] / sum
#pragma once

#include <cstdint>

#include "tessera/types.h"

namespace tessera::cpu::attn {

// The cache's element type. q8_0 rows are D / 32 blocks (D a multiple of 32); a value
// is d * q computed in f32, which is exact, so every path reads the same floats.
enum class Cache : uint8_t { f32, f16, q8_0 };

// Bytes of one cache row of `d` values.
inline int64_t row_bytes(Cache c, int64_t d) {
  return c == Cache::f32 ? d * 4 : c == Cache::f16 ? d * 2 : d / kQBlock * kQ8_0BlockBytes;
}

struct Item {
  const float* q = nullptr;     // [D]
  const uint8_t* k = nullptr;   // rows [rows, D] of the KV head, in `cache`'s layout
  const uint8_t* v = nullptr;   // likewise
  Cache cache = Cache::f32;
  int64_t rows = 0;             // rows 0..rows-1 are attended
  int64_t d = 0;                // head size
  float scale = 1.0f;
  float* scores = nullptr;      // scratch [rows]
  float* out = nullptr;         // [D]
};

void attend(const Item& it);  // the level convert::use_avx2() picks

namespace scalar {
void attend(const Item& it);
}
#if defined(__x86_64__)
namespace avx2 {
void attend(const Item& it);
}
#endif

}  // namespace tessera::cpu::attn
