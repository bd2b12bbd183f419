// GGUF quantized blocks (ggml's block_q8_0 / block_q4_0), 32 values each:
//   q8_0: f16 scale d, then 32 int8 codes q; value i = d * q[i]               (34 bytes)
//   q4_0: f16 scale d, then 16 bytes; byte j holds value j in its low nibble and value
//         j + 16 in its high nibble; value = d * (nibble - 8)                 (18 bytes)
// Dequantizing to f32 is exact: an 11-bit f16 significand times a code of at most 8 bits
// fits f32's 24 bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "convert/dtype.h"
#include "tessera/types.h"

namespace tessera::convert {

inline void dequant_q8_0_block(const uint8_t* block, float* out) {
  uint16_t dh;
  std::memcpy(&dh, block, 2);
  const float d = f16_to_f32(dh);
  const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
  for (int i = 0; i < kQBlock; ++i) out[i] = d * static_cast<float>(q[i]);
}

inline void dequant_q4_0_block(const uint8_t* block, float* out) {
  uint16_t dh;
  std::memcpy(&dh, block, 2);
  const float d = f16_to_f32(dh);
  const uint8_t* q = block + 2;
  for (int j = 0; j < kQBlock / 2; ++j) {
    out[j] = d * static_cast<float>((q[j] & 0x0F) - 8);
    out[j + kQBlock / 2] = d * static_cast<float>((q[j] >> 4) - 8);
  }
}

// 32 floats -> one q8_0 block, ggml's reference rounding (quantize_row_q8_0_ref):
// d = max|x| / 127, stored as f16; q = round-half-away(x / d) (0 when d is 0). Lossy: each
// value is off by at most d / 2 plus the rounding of d to f16 (relative 2^-11 of |x|).
// The q8_0 KV cache writes its rows with it.
inline void quant_q8_0_block(const float* x, uint8_t* block) {
  float amax = 0;
  for (int i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t dh = f32_to_f16(d);
  std::memcpy(block, &dh, 2);
  int8_t* q = reinterpret_cast<int8_t*>(block + 2);
  for (int i = 0; i < kQBlock; ++i) q[i] = static_cast<int8_t>(std::lround(x[i] * id));
}

// n_blocks consecutive blocks -> n_blocks * 32 floats (reference or AVX2 by simd_level(),
// identical results).
void dequant_q8_0_n(const uint8_t* src, float* dst, int64_t n_blocks);
void dequant_q4_0_n(const uint8_t* src, float* dst, int64_t n_blocks);
#if defined(__x86_64__)
namespace avx2 {  // in bfp_avx2.cpp
void dequant_q8_0_n(const uint8_t* src, float* dst, int64_t n_blocks);
void dequant_q4_0_n(const uint8_t* src, float* dst, int64_t n_blocks);
}  // namespace avx2
#endif

}  // namespace tessera::convert
