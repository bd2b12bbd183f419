// NEON kernels of linear_q8.h for aarch64: the 8-bit activation rounding and the q8_0 /
// q4_0 block dot products; bit-identical to the scalar ones there (F16 weights:
// arm/linear_f16_neon.cpp).
//
// A block's exact integer sum: smull of the int8 weights and activations gives exact int16
// products (|w x| <= 128 * 127), pairwise additions (saddlp, addp) and addv sum them in
// int32, and the block's float step is the scalar definition's fma. Output elements are
// computed in tiles of MR activation rows so each decoded weight block serves MR rows; a
// tile changes nothing in an element's arithmetic.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/linear_q8.h"

namespace tessera::cpu::q8::neon {

namespace {

// Weight block b of a row as 32 signed values (two int8x16) and its scale.
template <bool kQ4>
inline float weight_block(const uint8_t* row, int64_t b, int8x16_t& w0, int8x16_t& w1) {
  const uint8_t* blk = row + b * (kQ4 ? kQ4_0BlockBytes : kQ8_0BlockBytes);
  uint16_t dh;
  std::memcpy(&dh, blk, 2);
  if constexpr (kQ4) {
    const uint8x16_t t = vld1q_u8(blk + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(t, vdupq_n_u8(0x0f))), eight);  // values 0..15
    w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(t, 4)), eight);                // values 16..31
  } else {
    w0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    w1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  }
  return f16_to_f32(dh);
}

// The exact block sum S_b = w . x of one block (linear_q8.h).
inline int32_t block_dot(int8x16_t w0, int8x16_t w1, const int8_t* xq) {
  const int8x16_t x0 = vld1q_s8(xq), x1 = vld1q_s8(xq + 16);
  const int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), p1 = vmull_high_s8(w0, x0);
  const int16x8_t p2 = vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), p3 = vmull_high_s8(w1, x1);
  const int32x4_t s = vaddq_s32(vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)), vpaddq_s32(vpaddlq_s16(p2), vpaddlq_s16(p3)));
  return vaddvq_s32(s);
}

template <bool kQ4, int MR>
void quant_rows(const QuantGemm& g, int64_t o, int64_t m0) {
  const int64_t blocks = g.x.k / kBlock;
  const uint8_t* row = g.w + o * g.w_row_bytes;
  float acc[MR] = {};
  for (int64_t b = 0; b < blocks; ++b) {
    int8x16_t w0, w1;
    const float dw = weight_block<kQ4>(row, b, w0, w1);
    for (int r = 0; r < MR; ++r) {
      const int64_t m = m0 + r;
      const int32_t s = block_dot(w0, w1, g.x.q + m * g.x.k + b * kBlock);
      acc[r] = std::fma(dw * g.x.d[m * blocks + b], static_cast<float>(s), acc[r]);
    }
  }
  for (int r = 0; r < MR; ++r) g.y[(m0 + r) * g.ldy + o] = acc[r];
}

template <bool kQ4>
void gemm_quant_t(const QuantGemm& g, int64_t o0, int64_t o1) {
  constexpr int kRows = 4;
  for (int64_t o = o0; o < o1; ++o) {
    int64_t m = 0;
    for (; m + kRows <= g.x.m; m += kRows) quant_rows<kQ4, kRows>(g, o, m);
    for (; m < g.x.m; ++m) quant_rows<kQ4, 1>(g, o, m);
  }
}

}  // namespace

void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    float32x4_t v[8];
    for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(xb + 4 * i);
    float32x4_t m = vabsq_f32(v[0]);
    for (int i = 1; i < 8; ++i) m = vmaxq_f32(m, vabsq_f32(v[i]));
    const float amax = vmaxvq_f32(m);
    d[b] = f16_to_f32(f32_to_f16(amax / 127.0f));  // as the scalar kernel stores it
    const float32x4_t id = vdupq_n_f32(amax != 0.0f ? 127.0f / amax : 0.0f);
    int16x8_t h[4];
    for (int i = 0; i < 4; ++i)  // fcvtns: round half to even, as nearbyint
      h[i] = vcombine_s16(vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * i], id))),
                          vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * i + 1], id))));
    vst1q_s8(q + b * kBlock, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
    vst1q_s8(q + b * kBlock + 16, vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
  }
}

void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  if (g.wt == DType::q4_0) return gemm_quant_t<true>(g, o0, o1);
  gemm_quant_t<false>(g, o0, o1);
}

}  // namespace tessera::cpu::q8::neon

#endif  // __aarch64__
