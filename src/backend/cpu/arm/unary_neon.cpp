// NEON twins of float unary ops whose scalar definition (ops/unary_math.h) they reproduce
// bit for bit: silu (x / (1 + exp_approx(-x))), exp (ops::exp_f32) and logistic
// (ops::logistic_value, e^x / (1 + e^x) with e^x by exp_f32). Compiled with -ffp-contract=off.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <cstdint>
#include <limits>

#include "backend/cpu/arm/exp_neon.h"
#include "ops/exp_approx.h"
#include "ops/exp_f32.h"
#include "ops/unary_math.h"

namespace tessera::cpu::arm {

namespace {

// exp_f32's main path on two doubles, before the rounding to float: the same products and
// sums in the same order, the table read lane by lane.
inline float64x2_t exp_f32_core2(float64x2_t x) {
  using namespace ops::expf32;
  const float64x2_t z = vmulq_f64(vdupq_n_f64(kInvLn2N), x);
  float64x2_t kd = vaddq_f64(z, vdupq_n_f64(kShift));
  const uint64x2_t ki = vreinterpretq_u64_f64(kd);
  kd = vsubq_f64(kd, vdupq_n_f64(kShift));
  const float64x2_t r = vsubq_f64(z, kd);
  uint64x2_t t = vcombine_u64(vld1_u64(&kTable[vgetq_lane_u64(ki, 0) % 32]), vld1_u64(&kTable[vgetq_lane_u64(ki, 1) % 32]));
  t = vaddq_u64(t, vshlq_n_u64(ki, 47));
  const float64x2_t p = vaddq_f64(vmulq_f64(vdupq_n_f64(kC0), r), vdupq_n_f64(kC1));
  const float64x2_t r2 = vmulq_f64(r, r);
  float64x2_t y = vaddq_f64(vmulq_f64(vdupq_n_f64(kC2), r), vdupq_n_f64(1.0));
  y = vaddq_f64(vmulq_f64(p, r2), y);
  return vmulq_f64(y, vreinterpretq_f64_u64(t));
}

// ops::exp_f32 on four lanes: the main path for all, then the special lanes (x > kHigh: +inf,
// x < kLow: +0, NaN: x + x).
inline float32x4_t exp_f32_4(float32x4_t x) {
  using namespace ops::expf32;
  const float32x2_t lo = vcvt_f32_f64(exp_f32_core2(vcvt_f64_f32(vget_low_f32(x))));
  float32x4_t e = vcvt_high_f32_f64(lo, exp_f32_core2(vcvt_high_f64_f32(x)));
  e = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(kHigh)), vdupq_n_f32(std::numeric_limits<float>::infinity()), e);
  e = vbslq_f32(vcltq_f32(x, vdupq_n_f32(kLow)), vdupq_n_f32(0.0f), e);
  return vbslq_f32(vceqq_f32(x, x), e, vaddq_f32(x, x));
}

// ops::logistic_value on four lanes: e / (1 + e), 1 where e is +inf.
inline float32x4_t logistic4(float32x4_t x) {
  const float32x4_t e = exp_f32_4(x);
  const float32x4_t y = vdivq_f32(e, vaddq_f32(vdupq_n_f32(1.0f), e));
  return vbslq_f32(vceqq_f32(e, vdupq_n_f32(std::numeric_limits<float>::infinity())), vdupq_n_f32(1.0f), y);
}

}  // namespace

void silu_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, silu4(vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] = ops::silu_value(x[i]);
}

void exp_f32_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, exp_f32_4(vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] = ops::exp_f32(x[i]);
}

void logistic_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, logistic4(vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] = ops::logistic_value(x[i]);
}

}  // namespace tessera::cpu::arm

#endif  // __aarch64__
