// GGUF block types beyond q8_0 / q4_0: the 32-value q4_1, q5_0, q5_1 and the K-quant
// super-blocks of 256 values q2_K ... q6_K (ggml's block_q4_1 ... block_q6_K). All
// multi-byte fields are little-endian; "f16" is IEEE binary16.
//
//   q4_1 (20 B): f16 d, f16 m, 16 bytes: byte j = value j (low nibble), value j+16 (high);
//                value = d * nibble + m
//   q5_0 (22 B): f16 d, u32 qh, 16 nibble bytes as q4_1; bit i of qh is the fifth bit of
//                value i; value = d * (code - 16)
//   q5_1 (24 B): f16 d, f16 m, u32 qh, 16 nibble bytes; value = d * code + m
//
// A K-quant super-block is 8 chunks of 32 values (c = 0..7, values 32c .. 32c+31); the
// 2- and 3-bit types give every 16 values their own scale.
//
//   q2_K (84 B):  scales[16] (low nibble: scale, high nibble: min, one per 16 values),
//                 qs[64], f16 d, f16 dmin. Chunk c: half h = c / 4, shift 2 * (c % 4);
//                 code of value 32c + l = (qs[32h + l] >> shift) & 3;
//                 value = d * (sc & 15) * code - dmin * (sc >> 4), sc = scales[2c + l / 16]
//   q3_K (110 B): hmask[32], qs[64], scales[12] (sixteen 6-bit scales), f16 d. Chunk c:
//                 low bits as q2_K; bit c of hmask[l] set: code unchanged, clear: code - 4;
//                 value = d * (scale6[2c + l / 16] - 32) * code
//   q4_K (144 B): f16 d, f16 dmin, scales[12] (eight 6-bit scales and eight 6-bit mins),
//                 qs[128]. Chunk c reads qs[32 (c / 2) + l], low nibble for even c, high
//                 for odd; value = d * sc[c] * nibble - dmin * m[c]
//   q5_K (176 B): f16 d, f16 dmin, scales[12] as q4_K, qh[32], qs[128]; the fifth bit of
//                 value 32c + l is bit c of qh[l]
//   q6_K (210 B): ql[128], qh[64], scales[16] (int8, one per 16 values), f16 d. Chunk c:
//                 half h = c / 4, k = c % 4; low nibble from ql[64h + 32 (k & 1) + l]
//                 (low nibble for k < 2, high otherwise), two high bits
//                 (qh[32h + l] >> 2k) & 3; value = d * scales[8h + 2k + l / 16] * (code - 32)
//
// The non-linear 4-bit types map each 4-bit code through one table of 16 int8 values,
// kIQ4Values = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}:
//   iq4_nl (18 B):  f16 d, 16 code bytes as q4_1's nibbles; value = d * kIQ4Values[code]
//   iq4_xs (136 B): f16 d, u16 scales_h, scales_l[4], qs[128]; chunk c has the 6-bit scale
//                   ls = ((scales_l[c / 2] >> 4 (c % 2)) & 15) | ((scales_h >> 2c) & 3) << 4 and
//                   reads qs[16c + l] (value l: low nibble, value l + 16: high nibble);
//                   value = (d * (ls - 32)) * kIQ4Values[code]
//
// The 6-bit scales of q3_K: scale i has low four bits scales[i] & 15 (i < 8) or
// scales[i - 8] >> 4 (i >= 8), and high two bits (scales[8 + i % 4] >> 2 (i / 4)) & 3.
// The 6-bit scale / min j of q4_K and q5_K: for j < 4, sc = scales[j] & 63 and
// m = scales[j + 4] & 63; otherwise sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4
// and m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
//
// The decoders compute in f32 in the order the format's reference dequantization does
// (scale products first, then code times scale, then the min), so they give the same
// floats as llama.cpp's own dequantization.
#pragma once

#include <cstdint>
#include <cstring>

#include "convert/dtype.h"
#include "convert/gguf_blocks.h"
#include "tessera/types.h"

namespace tessera::convert {

namespace kquant_detail {
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// 6-bit scale and min j (0..7) of a q4_K / q5_K super-block's 12 scale bytes.
inline void scale_min_k4(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
// 6-bit scale i (0..15) of a q3_K super-block's 12 scale bytes, as stored (bias 32).
inline int scale_q3_k(const uint8_t* s, int i) {
  const int low = i < 8 ? (s[i] & 15) : (s[i - 8] >> 4);
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | (high << 4);
}
}  // namespace kquant_detail

inline void dequant_q4_1_block(const uint8_t* b, float* out) {
  const float d = kquant_detail::f16_at(b), m = kquant_detail::f16_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<float>(qs[j] & 15) * d + m;
    out[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

inline void dequant_q5_0_block(const uint8_t* b, float* out) {
  const float d = kquant_detail::f16_at(b);
  const uint32_t qh = kquant_detail::u32_at(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int x0 = static_cast<int>((qs[j] & 15) | (((qh >> j) & 1) << 4)) - 16;
    const int x1 = static_cast<int>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
    out[j] = static_cast<float>(x0) * d;
    out[j + 16] = static_cast<float>(x1) * d;
  }
}

inline void dequant_q5_1_block(const uint8_t* b, float* out) {
  const float d = kquant_detail::f16_at(b), m = kquant_detail::f16_at(b + 2);
  const uint32_t qh = kquant_detail::u32_at(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const uint32_t x0 = (qs[j] & 15) | (((qh >> j) & 1) << 4);
    const uint32_t x1 = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    out[j] = static_cast<float>(x0) * d + m;
    out[j + 16] = static_cast<float>(x1) * d + m;
  }
}

// Chunk c (0..7) of a K-quant super-block: values [32c, 32c + 32) into out[0..32).
inline void dequant_q2_k_chunk(const uint8_t* b, int c, float* out) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16 + 32 * (c / 4);
  const float d = kquant_detail::f16_at(b + 80), dmin = kquant_detail::f16_at(b + 82);
  const int shift = 2 * (c % 4);
  for (int half = 0; half < 2; ++half) {
    const int sc = scales[2 * c + half];
    const float dl = d * static_cast<float>(sc & 15), ml = dmin * static_cast<float>(sc >> 4);
    for (int l = 16 * half; l < 16 * half + 16; ++l) out[l] = dl * static_cast<float>((qs[l] >> shift) & 3) - ml;
  }
}

inline void dequant_q3_k_chunk(const uint8_t* b, int c, float* out) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32 + 32 * (c / 4);
  const uint8_t* scales = b + 96;
  const float d = kquant_detail::f16_at(b + 108);
  const int shift = 2 * (c % 4);
  const uint8_t bit = static_cast<uint8_t>(1u << c);
  for (int half = 0; half < 2; ++half) {
    const float dl = d * static_cast<float>(kquant_detail::scale_q3_k(scales, 2 * c + half) - 32);
    for (int l = 16 * half; l < 16 * half + 16; ++l) {
      const int code = ((qs[l] >> shift) & 3) - ((hmask[l] & bit) ? 0 : 4);
      out[l] = dl * static_cast<float>(code);
    }
  }
}

inline void dequant_q4_k_chunk(const uint8_t* b, int c, float* out) {
  const float d = kquant_detail::f16_at(b), dmin = kquant_detail::f16_at(b + 2);
  int sc, m;
  kquant_detail::scale_min_k4(b + 4, c, sc, m);
  const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
  const uint8_t* qs = b + 16 + 32 * (c / 2);
  const int shift = 4 * (c % 2);
  for (int l = 0; l < 32; ++l) out[l] = d1 * static_cast<float>((qs[l] >> shift) & 15) - m1;
}

inline void dequant_q5_k_chunk(const uint8_t* b, int c, float* out) {
  const float d = kquant_detail::f16_at(b), dmin = kquant_detail::f16_at(b + 2);
  int sc, m;
  kquant_detail::scale_min_k4(b + 4, c, sc, m);
  const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48 + 32 * (c / 2);
  const int shift = 4 * (c % 2);
  const uint8_t bit = static_cast<uint8_t>(1u << c);
  for (int l = 0; l < 32; ++l) {
    const int code = ((qs[l] >> shift) & 15) + ((qh[l] & bit) ? 16 : 0);
    out[l] = d1 * static_cast<float>(code) - m1;
  }
}

inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

inline void dequant_iq4_nl_block(const uint8_t* b, float* out) {
  const float d = kquant_detail::f16_at(b);
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>(kIQ4Values[b[2 + j] & 15]);
    out[j + 16] = d * static_cast<float>(kIQ4Values[b[2 + j] >> 4]);
  }
}

// The 6-bit scale of chunk c of an iq4_xs super-block, minus 32 (-32..31).
inline int iq4_xs_scale(const uint8_t* b, int c) {
  const int scales_h = b[2] | b[3] << 8;
  return (((b[4 + c / 2] >> 4 * (c % 2)) & 15) | ((scales_h >> 2 * c) & 3) << 4) - 32;
}

inline void dequant_iq4_xs_chunk(const uint8_t* b, int c, float* out) {
  const float dl = kquant_detail::f16_at(b) * static_cast<float>(iq4_xs_scale(b, c));
  const uint8_t* qs = b + 8 + 16 * c;
  for (int j = 0; j < 16; ++j) {
    out[j] = dl * static_cast<float>(kIQ4Values[qs[j] & 15]);
    out[j + 16] = dl * static_cast<float>(kIQ4Values[qs[j] >> 4]);
  }
}

inline void dequant_q6_k_chunk(const uint8_t* b, int c, float* out) {
  const int half = c / 4, k = c % 4;
  const uint8_t* ql = b + 64 * half + 32 * (k & 1);
  const uint8_t* qh = b + 128 + 32 * half;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192) + 8 * half + 2 * k;
  const float d = kquant_detail::f16_at(b + 208);
  const int lshift = k < 2 ? 0 : 4, hshift = 2 * k;
  for (int l = 0; l < 32; ++l) {
    const int code = (((ql[l] >> lshift) & 15) | (((qh[l] >> hshift) & 3) << 4)) - 32;
    out[l] = d * static_cast<float>(scales[l / 16]) * static_cast<float>(code);
  }
}

// Values [32c, 32c + 32) of one block of the GGUF block dtype t, for
// 0 <= c < dtype_block_values(t) / 32 (c = 0 for the 32-value types).
inline void dequant_gguf_chunk(DType t, const uint8_t* block, int c, float* out) {
  switch (t) {
    case DType::q8_0: dequant_q8_0_block(block, out); break;
    case DType::q4_0: dequant_q4_0_block(block, out); break;
    case DType::q4_1: dequant_q4_1_block(block, out); break;
    case DType::q5_0: dequant_q5_0_block(block, out); break;
    case DType::q5_1: dequant_q5_1_block(block, out); break;
    case DType::q2_k: dequant_q2_k_chunk(block, c, out); break;
    case DType::q3_k: dequant_q3_k_chunk(block, c, out); break;
    case DType::q4_k: dequant_q4_k_chunk(block, c, out); break;
    case DType::q5_k: dequant_q5_k_chunk(block, c, out); break;
    case DType::q6_k: dequant_q6_k_chunk(block, c, out); break;
    case DType::iq4_nl: dequant_iq4_nl_block(block, out); break;
    case DType::iq4_xs: dequant_iq4_xs_chunk(block, c, out); break;
    default: break;
  }
}

// n_blocks consecutive blocks of the GGUF block dtype t -> n_blocks * dtype_block_values(t)
// floats.
void dequant_gguf_n(DType t, const uint8_t* src, float* dst, int64_t n_blocks);

}  // namespace tessera::convert
