// The 8-bit-activation kernels of linear_q8.h for aarch64 CPUs with the dot-product
// extension (ARMv8.2 dotprod: the RK3588's Cortex-A76 and A55): every 32-value block type
// (q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl), bit-identical to the scalar kernels there. CPUs
// without it take arm/linear_q8_neon.cpp (q8_0, q4_0) or the scalar kernel.
//
// A weight block is decoded once into two int8x16 of the values w the scalar definition
// multiplies (q4_0 / q5_0: code - 8 / code - 16; q4_1 / q5_1: the code; iq4_nl: the table
// value by a table lookup), two sdot give the block's exact integer sum in four lanes and
// addv the S_b; the float steps are the scalar ones (std::fma). A decoded block serves
// kActRows activation rows; the weight stream is prefetched ahead.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/arm/dotprod_neon.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/linear_q8.h"
#include "convert/gguf_kquants.h"

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace tessera::cpu::q8::neon_dot {

namespace {

constexpr int kActRows = 4;
constexpr int64_t kAheadBytes = 1024;

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// 0x10 in byte j where bit j of the 16-bit value `bits` is set.
inline uint8x16_t fifth(uint32_t bits) {
  static const uint8_t kMask[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t v = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits)), vdup_n_u8(static_cast<uint8_t>(bits >> 8)));
  return vandq_u8(vtstq_u8(v, vld1q_u8(kMask)), vdupq_n_u8(0x10));
}

// Block b of a row: w0 (values 0..15), w1 (16..31), the scale d; q4_1 / q5_1 their min *mw.
inline float weight_block(DType wt, const uint8_t* blk, int8x16_t& w0, int8x16_t& w1, float& mw) {
  if (wt == DType::q8_0) {
    w0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    w1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
    return f16_at(blk);
  }
  const bool q5 = wt == DType::q5_0 || wt == DType::q5_1, min = wt == DType::q4_1 || wt == DType::q5_1;
  const int qs_at = wt == DType::q5_0 ? 6 : wt == DType::q4_1 ? 4 : wt == DType::q5_1 ? 8 : 2;
  const uint8x16_t t = vld1q_u8(blk + qs_at);
  uint8x16_t lo = vandq_u8(t, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(t, 4);
  if (q5) {
    uint32_t qh;
    std::memcpy(&qh, blk + (min ? 4 : 2), 4);
    lo = vorrq_u8(lo, fifth(qh & 0xffff));
    hi = vorrq_u8(hi, fifth(qh >> 16));
  }
  if (min) mw = f16_at(blk + 2);
  if (wt == DType::iq4_nl) {
    const int8x16_t table = vld1q_s8(convert::kIQ4Values);
    w0 = vqtbl1q_s8(table, lo), w1 = vqtbl1q_s8(table, hi);
  } else {
    const int8x16_t off = vdupq_n_s8(static_cast<int8_t>(wt == DType::q4_0 ? 8 : wt == DType::q5_0 ? 16 : 0));
    w0 = vsubq_s8(vreinterpretq_s8_u8(lo), off), w1 = vsubq_s8(vreinterpretq_s8_u8(hi), off);
  }
  return f16_at(blk);
}

}  // namespace

bool available() { return arm::has_dotprod(); }

void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  const int64_t blocks = g.x.k / kBlock;
  const int64_t bb = dtype_block_bytes(g.wt);
  const bool min = g.wt == DType::q4_1 || g.wt == DType::q5_1;
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = g.w + o * g.w_row_bytes;
    for (int64_t m0 = 0; m0 < g.x.m; m0 += kActRows) {
      const int n = static_cast<int>(std::min<int64_t>(kActRows, g.x.m - m0));
      float acc[kActRows] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = row + b * bb;
        __builtin_prefetch(blk + kAheadBytes);
        int8x16_t w0, w1;
        float mw = 0;
        const float dw = weight_block(g.wt, blk, w0, w1, mw);
        for (int r = 0; r < n; ++r) {
          const int64_t i = (m0 + r) * blocks + b;
          const int8_t* xq = g.x.q + i * kBlock;
          const int32x4_t s = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(xq)), w1, vld1q_s8(xq + 16));
          acc[r] = std::fma(dw * g.x.d[i], static_cast<float>(vaddvq_s32(s)), acc[r]);
          if (min) acc[r] = std::fma(mw, g.x.s1[i], acc[r]);
        }
      }
      for (int r = 0; r < n; ++r) g.y[(m0 + r) * g.ldy + o] = acc[r];
    }
  }
}

}  // namespace tessera::cpu::q8::neon_dot

#pragma GCC pop_options

#endif  // __aarch64__
