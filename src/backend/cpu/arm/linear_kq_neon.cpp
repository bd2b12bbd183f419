// NEON kernels of linear_kq.h for aarch64 CPUs with the dot-product extension (ARMv8.2
// dotprod: the RK3588's Cortex-A76 and A55 have it; a CPU without it takes the scalar
// kernel): q2_K ... q6_K and iq4_xs against Q8_K activations, bit-identical to the scalar
// kernels there.
//
// Each weight super-block is decoded once into sixteen int8x16 vectors of codes (16-value
// group g: values 16g .. 16g + 15) as the signed values the scalar definition multiplies:
// q4_K / q5_K / q2_K their unsigned codes (< 32), q3_K code - 4 .. 3, q6_K code - 32,
// iq4_xs the table values. sdot sums four products per int32 lane exactly; the group's
// four lanes are multiplied by its scale (mla by a scalar) into one int32x4 and summed by
// addv to the super-block's S_i; the mins M_i = sum_g min_g * bsums_g by widening
// multiplies of int16 vectors. The float chain per output is the scalar one (std::fma). A
// decoded block serves kActRows activation rows; the weight stream is prefetched ahead, as
// on x86.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/arm/dotprod_neon.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/linear_kq.h"
#include "convert/gguf_kquants.h"

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace tessera::cpu::kq::neon {

namespace {

constexpr int kActRows = 4;
constexpr int64_t kBsums = kSuper / kGroup;
constexpr int64_t kAheadBytes = 2048;

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// One decoded super-block.
struct Block {
  int8x16_t code[16];
  int32_t sc[16];       // scale of 16-value group g
  int16_t minf[16];     // q2_K, q4_K, q5_K: the min factor of group g (against bsums_g)
  bool mins = false;
  float d = 0, dmin = 0;
};

// Bits `shift`, `shift` + 1 (and so on, under mask) of each byte.
inline uint8x16_t bits(uint8x16_t v, int shift, uint8_t mask) {
  return vandq_u8(vshlq_u8(v, vdupq_n_s8(static_cast<int8_t>(-shift))), vdupq_n_u8(mask));
}

void decode(DType t, const uint8_t* b, Block& k) {
  namespace kd = convert::kquant_detail;
  if (t == DType::q4_k || t == DType::q5_k) {
    const bool q5 = t == DType::q5_k;
    k.d = f16_at(b), k.dmin = f16_at(b + 2), k.mins = true;
    for (int c = 0; c < 8; ++c) {
      int s, m;
      kd::scale_min_k4(b + 4, c, s, m);
      k.sc[2 * c] = k.sc[2 * c + 1] = s;
      k.minf[2 * c] = k.minf[2 * c + 1] = static_cast<int16_t>(m);
    }
    const uint8_t* qs = b + (q5 ? 48 : 16);
    for (int j = 0; j < 4; ++j)  // 32 bytes: chunk 2j in the low nibbles, 2j + 1 in the high
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t v = vld1q_u8(qs + 32 * j + 16 * h);
        uint8x16_t lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
        if (q5) {  // bit c of the fifth-bit bytes (l = 16h .. 16h + 15) to bit 4
          const uint8x16_t qh = vld1q_u8(b + 16 + 16 * h);
          lo = vorrq_u8(lo, vshlq_n_u8(bits(qh, 2 * j, 1), 4));
          hi = vorrq_u8(hi, vshlq_n_u8(bits(qh, 2 * j + 1, 1), 4));
        }
        k.code[4 * j + h] = vreinterpretq_s8_u8(lo);       // group 2 (2j) + h
        k.code[4 * j + 2 + h] = vreinterpretq_s8_u8(hi);   // group 2 (2j + 1) + h
      }
  } else if (t == DType::q6_k) {
    k.d = f16_at(b + 208), k.mins = false;
    for (int g = 0; g < 16; ++g) k.sc[g] = static_cast<int8_t>(b[192 + g]);
    for (int c = 0; c < 8; ++c) {  // chunk c = 4 half + kk (linear_kq.cpp q6_k_block)
      const int half = c / 4, kk = c % 4;
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t ql = vld1q_u8(b + 64 * half + 32 * (kk & 1) + 16 * h);
        const uint8x16_t qh = vld1q_u8(b + 128 + 32 * half + 16 * h);
        const uint8x16_t lo = kk < 2 ? vandq_u8(ql, vdupq_n_u8(15)) : vshrq_n_u8(ql, 4);
        const uint8x16_t code = vorrq_u8(lo, vshlq_n_u8(bits(qh, 2 * kk, 3), 4));
        k.code[2 * c + h] = vsubq_s8(vreinterpretq_s8_u8(code), vdupq_n_s8(32));
      }
    }
  } else if (t == DType::q2_k || t == DType::q3_k) {
    const bool q3 = t == DType::q3_k;
    k.mins = !q3;
    if (q3) {
      k.d = f16_at(b + 108);
      for (int g = 0; g < 16; ++g) k.sc[g] = kd::scale_q3_k(b + 96, g) - 32;
    } else {
      k.d = f16_at(b + 80), k.dmin = f16_at(b + 82);
      for (int g = 0; g < 16; ++g) k.sc[g] = b[g] & 15, k.minf[g] = static_cast<int16_t>(b[g] >> 4);
    }
    for (int c = 0; c < 8; ++c)
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t qs = vld1q_u8(b + (q3 ? 32 : 16) + 32 * (c / 4) + 16 * h);
        int8x16_t code = vreinterpretq_s8_u8(bits(qs, 2 * (c % 4), 3));
        if (q3) {  // - 4 where bit c of the hmask byte is clear
          const uint8x16_t set = bits(vld1q_u8(b + 16 * h), c, 1);
          code = vsubq_s8(code, vreinterpretq_s8_u8(vshlq_n_u8(veorq_u8(set, vdupq_n_u8(1)), 2)));
        }
        k.code[2 * c + h] = code;
      }
  } else {  // iq4_xs
    k.d = f16_at(b), k.mins = false;
    const int8x16_t table = vld1q_s8(convert::kIQ4Values);
    for (int c = 0; c < 8; ++c) {
      k.sc[2 * c] = k.sc[2 * c + 1] = convert::iq4_xs_scale(b, c);
      const uint8x16_t qs = vld1q_u8(b + 8 + 16 * c);
      k.code[2 * c] = vqtbl1q_s8(table, vandq_u8(qs, vdupq_n_u8(15)));
      k.code[2 * c + 1] = vqtbl1q_s8(table, vshrq_n_u8(qs, 4));
    }
  }
}

inline float dot(const Block& k, const int8_t* q, float dx, const int16_t* bsums, float acc) {
  int32x4_t s = vdupq_n_s32(0);
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) s = vmlaq_n_s32(s, vdotq_s32(vdupq_n_s32(0), k.code[g], vld1q_s8(q + 16 * g)), k.sc[g]);
  acc = std::fma(k.d * dx, static_cast<float>(vaddvq_s32(s)), acc);
  if (!k.mins) return acc;
  const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
  const int16x8_t m0 = vld1q_s16(k.minf), m1 = vld1q_s16(k.minf + 8);
  int32x4_t mv = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
  mv = vmlal_high_s16(mv, b0, m0);
  mv = vmlal_s16(mv, vget_low_s16(b1), vget_low_s16(m1));
  mv = vmlal_high_s16(mv, b1, m1);
  return std::fma(-(k.dmin * dx), static_cast<float>(vaddvq_s32(mv)), acc);
}

}  // namespace

bool available() { return arm::has_dotprod(); }

void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  const int64_t blocks = g.x.k / kSuper;
  const int64_t block_bytes = dtype_block_bytes(g.wt);
  Block k;
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = g.w + o * g.w_row_bytes;
    for (int64_t m0 = 0; m0 < g.x.m; m0 += kActRows) {
      const int n = static_cast<int>(std::min<int64_t>(kActRows, g.x.m - m0));
      float acc[kActRows] = {};
      for (int64_t i = 0; i < blocks; ++i) {
        const uint8_t* b = row + i * block_bytes;
        for (int64_t l = 0; l < block_bytes; l += 64) __builtin_prefetch(b + kAheadBytes + l);
        decode(g.wt, b, k);
        for (int r = 0; r < n; ++r) {
          const int64_t m = m0 + r;
          acc[r] = dot(k, g.x.q + m * g.x.k + i * kSuper, g.x.d[m * blocks + i], g.x.bsums + (m * blocks + i) * kBsums,
                       acc[r]);
        }
      }
      for (int r = 0; r < n; ++r) g.y[(m0 + r) * g.ldy + o] = acc[r];
    }
  }
}

}  // namespace tessera::cpu::kq::neon

#pragma GCC pop_options

#endif  // __aarch64__
