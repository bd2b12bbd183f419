// Reference kernels: elementwise unary ops on f32 (relu, relu6, leaky_relu, logistic, tanh,
// hard_swish, silu, gelu, exp, rsqrt). Each is the textbook formula in float.
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// sqrt(2 / pi), the constant of the tanh approximation of GELU (Hendrycks & Gimpel 2016).
constexpr float kGeluTanhScale = 0.7978845608028654f;
// The cubic coefficient of the same approximation.
constexpr float kGeluTanhCubic = 0.044715f;
// TensorFlow's default slope for tf.nn.leaky_relu, used when the attribute is absent.
constexpr double kLeakyReluDefaultAlpha = 0.2;

template <typename F>
Status unary(KernelContext& c, F f) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) y[i] = f(x[i]);
  return Status::Ok();
}

float logistic_f(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Status relu(KernelContext& c) { return unary(c, [](float x) { return std::max(x, 0.0f); }); }
Status relu6(KernelContext& c) { return unary(c, [](float x) { return std::min(std::max(x, 0.0f), 6.0f); }); }
Status leaky_relu(KernelContext& c) {
  float alpha = static_cast<float>(c.n.attr_float("alpha", kLeakyReluDefaultAlpha));
  return unary(c, [alpha](float x) { return x >= 0 ? x : alpha * x; });
}
Status logistic(KernelContext& c) { return unary(c, logistic_f); }
Status tanh_k(KernelContext& c) { return unary(c, [](float x) { return std::tanh(x); }); }
Status hard_swish(KernelContext& c) {
  return unary(c, [](float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; });
}
Status silu(KernelContext& c) { return unary(c, [](float x) { return x * logistic_f(x); }); }
Status gelu(KernelContext& c) {
  if (c.n.attr_int("approximate", 0) != 0)
    return unary(c, [](float x) {
      return 0.5f * x * (1.0f + std::tanh(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x)));
    });
  return unary(c, [](float x) { return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f))); });
}
Status exp_k(KernelContext& c) { return unary(c, [](float x) { return std::exp(x); }); }
Status rsqrt(KernelContext& c) { return unary(c, [](float x) { return 1.0f / std::sqrt(x); }); }

}  // namespace

void register_unary_kernels(KernelTable& t) {
  t.add(OpKind::relu, KernelKind::plain, relu);
  t.add(OpKind::relu6, KernelKind::plain, relu6);
  t.add(OpKind::leaky_relu, KernelKind::plain, leaky_relu);
  t.add(OpKind::logistic, KernelKind::plain, logistic);
  t.add(OpKind::tanh, KernelKind::plain, tanh_k);
  t.add(OpKind::hard_swish, KernelKind::plain, hard_swish);
  t.add(OpKind::silu, KernelKind::plain, silu);
  t.add(OpKind::gelu, KernelKind::plain, gelu);
  t.add(OpKind::exp, KernelKind::plain, exp_k);
  t.add(OpKind::rsqrt, KernelKind::plain, rsqrt);
}

}  // namespace tessera::cpu
