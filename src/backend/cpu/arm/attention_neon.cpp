// NEON version of attn::attend (kernels/attention.h) for aarch64, bit-identical to the
// scalar one: each query on its own (as the scalar kernel runs them), its 8-lane fma
// chains held as two float32x4 (lanes 0-3 and 4-7, so lo + hi is the hsum8 tree's first
// step), four cache rows scored at a time, the same exp_approx (arm/exp_neon.h), lane
// maxima and sums, the output chains in registers over all rows. Compiled with
// -ffp-contract=off (cmake/components.cmake).
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/arm/exp_neon.h"
#include "backend/cpu/arm/hsum8_neon.h"
#include "backend/cpu/kernels/attention.h"
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu::attn::neon {

namespace {

using arm::hsum8;

// The hmax8 tree (attention.cpp), each step x > y ? x : y.
inline float32x4_t vmax_gt(float32x4_t x, float32x4_t y) { return vbslq_f32(vcgtq_f32(x, y), x, y); }
inline float hmax8(float32x4_t lo, float32x4_t hi) {
  const float32x4_t s4 = vmax_gt(lo, hi);
  const float32x2_t a = vget_low_f32(s4), b = vget_high_f32(s4);
  const float32x2_t s2 = vbsl_f32(vcgt_f32(a, b), a, b);
  const float x = vget_lane_f32(s2, 0), y = vget_lane_f32(s2, 1);
  return x > y ? x : y;
}

// Values i..i+3 of a cache row (i a multiple of 4); q8_0: d * q, exact in f32.
template <Cache kC>
inline float32x4_t load4(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) {
    uint16_t h[4];
    std::memcpy(h, row + i * 2, 8);
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
  } else if constexpr (kC == Cache::q8_0) {
    const uint8_t* block = row + (i / kQBlock) * kQ8_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, block, 2);
    int8_t q[8] = {};
    std::memcpy(q, block + 2 + i % kQBlock, 4);
    const int32x4_t w = vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(q))));
    return vmulq_f32(vdupq_n_f32(f16_to_f32(dh)), vcvtq_f32_s32(w));
  } else {
    float f[4];
    std::memcpy(f, row + i * 4, 16);
    return vld1q_f32(f);
  }
}

// q8_0 rows have no tail (D is a multiple of 32): only f32 and f16 come here.
template <Cache kC>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (kC == Cache::f16) {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return f16_to_f32(h);
  }
  float f;
  std::memcpy(&f, row + i * 4, 4);
  return f;
}

template <Cache kC>
void attend_one(const Tile& tl, const Query& qy) {
  const int64_t d = tl.d, d8 = d / 8 * 8, rb = row_bytes(kC, d), rows = qy.rows;
  float* s = tl.scratch;
  // Scores, four rows at a time (eight independent chains of fmas).
  int64_t j = 0;
  for (; j < rows; j += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, rows - j));
    const uint8_t* kr[4];
    for (int r = 0; r < 4; ++r) kr[r] = tl.k + (j + std::min(r, nr - 1)) * rb;
    float32x4_t lo[4], hi[4];
    for (int r = 0; r < 4; ++r) lo[r] = hi[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < d8; i += 8) {
      const float32x4_t q0 = vld1q_f32(qy.q + i), q1 = vld1q_f32(qy.q + i + 4);
      for (int r = 0; r < 4; ++r) {
        lo[r] = vfmaq_f32(lo[r], q0, load4<kC>(kr[r], i));
        hi[r] = vfmaq_f32(hi[r], q1, load4<kC>(kr[r], i + 4));
      }
    }
    for (int r = 0; r < nr; ++r) {
      float t = 0;
      for (int64_t i = d8; i < d; ++i) t = std::fma(qy.q[i], load1<kC>(kr[r], i), t);
      s[j + r] = (hsum8(lo[r], hi[r]) + t) * tl.scale;
    }
  }
  if (tl.softcap > 0) cap_scores(s, rows, tl.softcap);
  // Lane maxima (lane l takes j = l mod 8), then exp_approx and lane sums.
  const float32x4_t ninf = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  float32x4_t mlo = ninf, mhi = ninf;
  const int64_t full = rows / 8 * 8;
  for (j = 0; j < full; j += 8) {
    mlo = vmax_gt(vld1q_f32(s + j), mlo);
    mhi = vmax_gt(vld1q_f32(s + j + 4), mhi);
  }
  alignas(16) float tail[8];
  for (int l = 0; l < 8; ++l) tail[l] = full + l < rows ? s[full + l] : -std::numeric_limits<float>::infinity();
  if (full < rows) {
    mlo = vmax_gt(vld1q_f32(tail), mlo);
    mhi = vmax_gt(vld1q_f32(tail + 4), mhi);
  }
  const float32x4_t mv = vdupq_n_f32(hmax8(mlo, mhi));
  float32x4_t slo = vdupq_n_f32(0.0f), shi = slo;
  for (j = 0; j < full; j += 8) {
    const float32x4_t e0 = arm::exp4(vsubq_f32(vld1q_f32(s + j), mv));
    const float32x4_t e1 = arm::exp4(vsubq_f32(vld1q_f32(s + j + 4), mv));
    vst1q_f32(s + j, e0);
    vst1q_f32(s + j + 4, e1);
    slo = vaddq_f32(slo, e0);
    shi = vaddq_f32(shi, e1);
  }
  if (full < rows) {
    // Lanes past the rows hold -inf - m: exp_approx gives 0, and adding +0 changes no sum.
    const float32x4_t e0 = arm::exp4(vsubq_f32(vld1q_f32(tail), mv));
    const float32x4_t e1 = arm::exp4(vsubq_f32(vld1q_f32(tail + 4), mv));
    vst1q_f32(tail, e0);
    vst1q_f32(tail + 4, e1);
    for (int64_t l = 0; full + l < rows; ++l) s[full + l] = tail[l];
    slo = vaddq_f32(slo, e0);
    shi = vaddq_f32(shi, e1);
  }
  const float sum = hsum8(slo, shi);
  // Output chains over all rows, 16 values at a time in registers.
  const float32x4_t sv = vdupq_n_f32(sum);
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    float32x4_t o0 = vdupq_n_f32(0.0f), o1 = o0, o2 = o0, o3 = o0;
    for (j = 0; j < rows; ++j) {
      const uint8_t* vr = tl.v + j * rb;
      const float32x4_t p = vdupq_n_f32(s[j]);
      o0 = vfmaq_f32(o0, p, load4<kC>(vr, i));
      o1 = vfmaq_f32(o1, p, load4<kC>(vr, i + 4));
      o2 = vfmaq_f32(o2, p, load4<kC>(vr, i + 8));
      o3 = vfmaq_f32(o3, p, load4<kC>(vr, i + 12));
    }
    vst1q_f32(qy.out + i, vdivq_f32(o0, sv));
    vst1q_f32(qy.out + i + 4, vdivq_f32(o1, sv));
    vst1q_f32(qy.out + i + 8, vdivq_f32(o2, sv));
    vst1q_f32(qy.out + i + 12, vdivq_f32(o3, sv));
  }
  for (; i + 4 <= d; i += 4) {
    float32x4_t o = vdupq_n_f32(0.0f);
    for (j = 0; j < rows; ++j) o = vfmaq_f32(o, vdupq_n_f32(s[j]), load4<kC>(tl.v + j * rb, i));
    vst1q_f32(qy.out + i, vdivq_f32(o, sv));
  }
  for (; i < d; ++i) {
    float o = 0;
    for (j = 0; j < rows; ++j) o = std::fma(s[j], load1<kC>(tl.v + j * rb, i), o);
    qy.out[i] = o / sum;
  }
}

}  // namespace

void attend(const Tile& t) {
  for (int q = 0; q < t.nq; ++q) {
    switch (t.cache) {
      case Cache::f16: attend_one<Cache::f16>(t, t.query[q]); break;
      case Cache::q8_0: attend_one<Cache::q8_0>(t, t.query[q]); break;
      case Cache::f32: attend_one<Cache::f32>(t, t.query[q]); break;
    }
  }
}

}  // namespace tessera::cpu::attn::neon

#endif  // __aarch64__
