// NEON twins of float unary ops whose scalar definition (ops/unary_math.h) they reproduce
// bit for bit: silu (x / (1 + exp_approx(-x))). Compiled with -ffp-contract=off.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <cstdint>

#include "backend/cpu/arm/exp_neon.h"
#include "ops/exp_approx.h"

namespace tessera::cpu::arm {

void silu_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, silu4(vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] = ops::silu_value(x[i]);
}

}  // namespace tessera::cpu::arm

#endif  // __aarch64__
