// The scalar definition of every float unary op, in one place: the cpu reference kernels
// and the device models' vector engines take their math from here, so a formula exists
// once. with_unary_fn(n, apply) calls apply(f) with f: float -> float for node n's op (its
// attributes read from n) and returns what apply returns.
#pragma once

#include <algorithm>
#include <cmath>

#include "ops/exp_approx.h"
#include "ops/exp_f32.h"
#include "tessera/graph.h"

namespace tessera::ops {

// sqrt(2 / pi), the constant of the tanh approximation of GELU (Hendrycks & Gimpel 2016).
constexpr float kGeluTanhScale = 0.7978845608028654f;
// The cubic coefficient of the same approximation.
constexpr float kGeluTanhCubic = 0.044715f;
// TensorFlow's default slope for tf.nn.leaky_relu, used when the attribute is absent.
constexpr double kLeakyReluDefaultAlpha = 0.2;

// e^x / (1 + e^x), 1 where e^x overflows: the form TFLite's float LOGISTIC computes (its
// builtin kernel evaluates Eigen's logistic op), bit for bit: the interpreter's outputs equal
// these on 200,000 seeded inputs in [-95, 95], where 1 / (1 + e^-x) differs on a fifth. The
// bits matter downstream: a hybrid convolution after a float SiLU quantizes its input to
// int8 codes, and one ulp can move a code. e^x is the interpreter's own (ops/exp_f32.h), not
// the host libm's. The cpu's AVX2, AVX-512 and NEON twins (backend/cpu/x86/unary_avx2.cpp,
// unary_avx512.cpp, backend/cpu/arm/unary_neon.cpp) give the same bits.
inline float logistic_value(float x) {
  const float e = exp_f32(x);
  return std::isinf(e) ? 1.0f : e / (1.0f + e);
}

template <typename Apply>
Status with_unary_fn(const Node& n, Apply&& apply) {
  switch (n.op) {
    case OpKind::relu: return apply([](float x) { return std::max(x, 0.0f); });
    case OpKind::relu6: return apply([](float x) { return std::min(std::max(x, 0.0f), 6.0f); });
    case OpKind::leaky_relu: {
      float alpha = static_cast<float>(n.get(attr::alpha));
      return apply([alpha](float x) { return x >= 0 ? x : alpha * x; });
    }
    case OpKind::logistic: return apply(logistic_value);
    case OpKind::tanh: return apply([](float x) { return tanh_value(x); });  // TFLite's (exp_approx.h)
    case OpKind::hard_swish:
      return apply([](float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; });
    case OpKind::silu: return apply(silu_value);  // x / (1 + e^-x), e^x by exp_approx
    case OpKind::gelu:
      if (n.get(attr::approximate) != 0)
        return apply([](float x) {
          return 0.5f * x * (1.0f + std::tanh(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x)));
        });
      return apply([](float x) { return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f))); });
    case OpKind::elu: return apply([](float x) { return x < 0 ? std::expm1(x) : x; });
    case OpKind::exp: return apply(exp_f32);  // the interpreter's e^x (exp_f32.h)
    case OpKind::rsqrt: return apply([](float x) { return 1.0f / std::sqrt(x); });
    case OpKind::sqrt: return apply([](float x) { return std::sqrt(x); });
    case OpKind::abs: return apply([](float x) { return std::fabs(x); });
    case OpKind::neg: return apply([](float x) { return -x; });
    case OpKind::square: return apply([](float x) { return x * x; });
    case OpKind::log: return apply([](float x) { return std::log(x); });
    default:
      return error(StatusCode::internal, "[", op_name(n.op), "] is not a float unary op");
  }
}

}  // namespace tessera::ops
