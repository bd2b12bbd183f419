// Element encodings of plain values: f32 <-> f16 / bf16 rounding, value casts between
// dtypes, and the u8 <-> i8 offset re-encoding. Rules (docs/formats.md "Element casts"):
// - float -> narrower float: round to nearest, ties to even; f32 -> bf16 NaN = 0x7FC0
//   (tile-device.md), f32 -> f16 NaN = 0x7E00; overflow gives Inf of the same sign.
// - f16 / bf16 -> f32 is exact (an f16 NaN keeps its payload with the quiet bit set).
// - float -> integer: round to nearest even, saturate to the type's range, NaN -> 0.
// - integer -> float: correctly rounded (one rounding, to nearest even).
// - integer -> integer: saturate. bool: nonzero -> 1.
// - Format-to-Format u8 <-> i8 is NOT a value cast but the 0x80 offset (q ^ 0x80): the
//   device stores the same quantized value shifted by 128 (rknpu.md).
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/format.h"

namespace tessera::convert {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// tile-device.md: "bfloat16 from float32: round to nearest even; NaN becomes 0x7FC0".
constexpr uint16_t kBf16NaN = 0x7FC0;
// IEEE binary16 canonical quiet NaN, used for every NaN (the sign and payload are dropped).
constexpr uint16_t kF16NaN = 0x7E00;

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return kBf16NaN;
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// Row kernels over n elements (scalar reference or AVX2, by simd_level(); identical bits).
void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
// q ^ 0x80 over n bytes: u8 -> i8 and i8 -> u8 alike.
void flip_sign_bit_n(const uint8_t* src, uint8_t* dst, int64_t n);

// The scalar references of the kernels above (tests compare the fast paths to these).
namespace ref {
void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
}  // namespace ref

// AVX2 versions (defined only for x86-64; callers check use_avx2()).
#if defined(__x86_64__)
namespace avx2 {
void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n);
void flip_sign_bit_n(const uint8_t* src, uint8_t* dst, int64_t n);
}  // namespace avx2
#endif

// Bytes of one element of a plain (non-block) encoding; 0 for block encodings.
int encoding_size(Encoding e);
bool encoding_is_plain(Encoding e);
bool encoding_is_float(Encoding e);  // f32, f16, bf16

// Value cast of n elements (the rules above; u8 <-> i8 saturates here).
void cast_values_n(Encoding from, const void* src, Encoding to, void* dst, int64_t n);
// The Format-to-Format element conversion: cast_values_n except that u8 <-> i8 is the
// 0x80 offset re-encoding.
void recode_n(Encoding from, const void* src, Encoding to, void* dst, int64_t n);
// Whether recode_n(from, ., to) is exact for every input (no rounding, no saturation).
bool recode_is_exact(Encoding from, Encoding to);

}  // namespace tessera::convert
