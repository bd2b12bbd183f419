// AVX2 twins of float unary ops whose scalar definition (ops/unary_math.h) they reproduce
// bit for bit: silu (x / (1 + exp_approx(-x))).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/x86/exp_avx2.h"
#include "ops/exp_approx.h"

namespace tessera::cpu::x86 {

__attribute__((target("avx2,fma"))) void silu_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ops::silu_value(x[i]);
}

}  // namespace tessera::cpu::x86

#endif  // __x86_64__
