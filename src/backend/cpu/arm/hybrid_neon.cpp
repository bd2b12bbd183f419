// aarch64 functions of the hybrid conv2d fast path (kernels/hybrid_fast.h): the 8-bit form
// with the dot-product extension (ARMv8.2 sdot: the RK3588's Cortex-A76 and A55). The codes
// are signed bytes (byte_bias 0; the padding taps hold the offset), four s8 x s8 products
// per int32 lane and step, 6 rows x 16 channels per tile (24 of the 32 registers hold sums),
// off * sum_k w subtracted per channel, then the reference's float multiply and add lane by
// lane (compiled with -ffp-contract=off; the clamps as the ordered compares of std::max /
// std::min, so NaN and the sign of zero come out as in the scalar form). CPUs without the
// extension take the portable int16 pairs.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <cstring>

#include "backend/cpu/arm/dotprod_neon.h"
#include "backend/cpu/kernels/hybrid_fast.h"

namespace tessera::cpu::hconv {

namespace {

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

constexpr int kRows = 6;

// (v < lo) ? lo : v, then (hi < v) ? hi : v: std::max(v, lo) and std::min(v, hi).
inline float32x4_t clamp4(float32x4_t v, Activation act) {
  auto at_least = [](float32x4_t x, float lo) {
    const float32x4_t l = vdupq_n_f32(lo);
    return vbslq_f32(vcltq_f32(x, l), l, x);
  };
  auto at_most = [](float32x4_t x, float hi) {
    const float32x4_t h = vdupq_n_f32(hi);
    return vbslq_f32(vcltq_f32(h, x), h, x);
  };
  switch (act) {
    case Activation::relu: return at_least(v, 0.0f);
    case Activation::relu6: return at_most(at_least(v, 0.0f), 6.0f);
    case Activation::relu_n1_to_1: return at_most(at_least(v, -1.0f), 1.0f);
    default: return v;
  }
}

template <int MR>
inline void tile(int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const int32_t* corr, const Out& o,
                 float* y) {
  int32x4_t c[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < 4; ++j) c[r][j] = vdupq_n_s32(0);
  for (int64_t q = 0; q < kquads; ++q) {
    const int8_t* wq = panel + q * kPanel * 4;
    const int8x16_t w0 = vld1q_s8(wq), w1 = vld1q_s8(wq + 16), w2 = vld1q_s8(wq + 32), w3 = vld1q_s8(wq + 48);
    for (int r = 0; r < MR; ++r) {
      int32_t v;
      std::memcpy(&v, a + r * lda + 4 * q, 4);
      const int8x16_t av = vreinterpretq_s8_s32(vdupq_n_s32(v));
      c[r][0] = vdotq_s32(c[r][0], w0, av);
      c[r][1] = vdotq_s32(c[r][1], w1, av);
      c[r][2] = vdotq_s32(c[r][2], w2, av);
      c[r][3] = vdotq_s32(c[r][3], w3, av);
    }
  }
  for (int r = 0; r < MR; ++r) {
    float out[kPanel];
    for (int j = 0; j < 4; ++j) {
      const int32x4_t s = vsubq_s32(c[r][j], vld1q_s32(corr + 4 * j));
      float32x4_t v = vmulq_f32(vcvtq_f32_s32(s), vld1q_f32(o.scale + 4 * j));
      if (o.bias) v = vaddq_f32(v, vld1q_f32(o.bias + 4 * j));
      vst1q_f32(out + 4 * j, clamp4(v, o.act));
    }
    std::memcpy(y + r * o.ldy, out, static_cast<size_t>(o.nvalid) * sizeof(float));
  }
}

void panel_u8_dot(int64_t rows, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const int32_t* corr,
                  const Out& o) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) tile<kRows>(kquads, a + r * lda, lda, panel, corr, o, o.y + r * o.ldy);
  const uint8_t* ar = a + r * lda;
  float* yr = o.y + r * o.ldy;
  switch (rows - r) {
    case 5: tile<5>(kquads, ar, lda, panel, corr, o, yr); break;
    case 4: tile<4>(kquads, ar, lda, panel, corr, o, yr); break;
    case 3: tile<3>(kquads, ar, lda, panel, corr, o, yr); break;
    case 2: tile<2>(kquads, ar, lda, panel, corr, o, yr); break;
    case 1: tile<1>(kquads, ar, lda, panel, corr, o, yr); break;
    default: break;
  }
}

#pragma GCC pop_options

}  // namespace

bool neon_dot_available() {
  static const bool has = arm::has_dotprod();
  return has;
}

const Fns& neon_dot_fns() {
  const Fns& g = generic_fns();
  static const Fns f{g.panel, g.min_max, g.codes, "neon+dotprod", panel_u8_dot, codes_s8_generic, 0};
  return f;
}

}  // namespace tessera::cpu::hconv

#endif  // __aarch64__
