// GGUF quantized blocks (ggml's block_q8_0 / block_q4_0), 32 values each:
//   q8_0: f16 scale d, then 32 int8 codes q; value i = d * q[i]               (34 bytes)
//   q4_0: f16 scale d, then 16 bytes; byte j holds value j in its low nibble and value
//         j + 16 in its high nibble; value = d * (nibble - 8)                 (18 bytes)
// Dequantizing to f32 is exact: an 11-bit f16 significand times a code of at most 8 bits
// fits f32's 24 bits.
#pragma once

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
