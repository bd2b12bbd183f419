// Float softmax of one row as the TFLite interpreter's builtin SOFTMAX computes it, bit for
// bit: the row's maximum m in float, e_k = exp_f32((x_k - m) * beta) (the difference and the
// product each rounded to float; e^x the interpreter's own, ops/exp_f32.h), their sum in float
// from left to right, and y_k = e_k * (1 / sum) (the reciprocal rounded once). Found against
// the interpreter (tests/oracle/float_softmax_oracle_test.cpp): on its 100,000 seeded outputs
// e_k / sum differs on a fifth and the textbook form in double (the cpu's before) on three
// fifths. The cpu's float softmax without a mask computes this; its AVX2 and AVX-512 twins
// (backend/cpu/x86/unary_avx2.cpp, unary_avx512.cpp) take the maximum in any order (only
// which zero or which NaN is kept changes, and neither changes an output) and the rest in
// this order.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/exp_f32.h"

namespace tessera::ops {

// The row x[0], x[stride], ..., x[(len - 1) * stride] into y at the same offsets (len >= 1).
// y may be x.
inline void softmax_f32_row(const float* x, float* y, int64_t len, float beta, int64_t stride = 1) {
  float mx = x[0];
  for (int64_t k = 1; k < len; ++k) mx = std::max(mx, x[k * stride]);
  float sum = 0.0f;
  for (int64_t k = 0; k < len; ++k) {
    const float e = exp_f32((x[k * stride] - mx) * beta);
    y[k * stride] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int64_t k = 0; k < len; ++k) y[k * stride] *= inv;
}

}  // namespace tessera::ops
