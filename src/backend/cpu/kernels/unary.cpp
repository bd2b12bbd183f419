// Reference kernels: elementwise unary ops on f32 (relu, relu6, leaky_relu, logistic, tanh,
// hard_swish, silu, gelu, elu, exp, rsqrt, abs, neg, square, log). Each is the textbook formula
// in float, defined once in ops/unary_math.h.
#include "backend/cpu/kernels/kernel_util.h"
#include "convert/simd.h"
#include "ops/unary_math.h"

namespace tessera::cpu {

#if defined(__x86_64__)
namespace x86 {
void silu_avx2(const float* x, float* y, int64_t n);  // x86/unary_avx2.cpp: the same bits
}
#elif defined(__aarch64__)
namespace arm {
void silu_neon(const float* x, float* y, int64_t n);  // arm/unary_neon.cpp: the same bits
}
#endif

namespace {

template <typename F>
Status unary(KernelContext& c, F f) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  // Element by element, so any split over the pool gives the same values.
  parallel_rows(c, c.in[0].elements(), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] = f(x[i]);
  }, int64_t{1} << 14);
  return Status::Ok();
}

// Every float unary op: the scalar formula comes from ops/unary_math.h.
Status unary_op(KernelContext& c) {
#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
  const bool fast_silu = convert::use_avx2();
  auto silu_rows = x86::silu_avx2;
#else
  const bool fast_silu = convert::use_neon();
  auto silu_rows = arm::silu_neon;
#endif
  if (c.n.op == OpKind::silu && fast_silu) {
    TS_RETURN_IF_ERROR(require_f32(c, {0}));
    const float* x = c.in[0].as<float>();
    float* y = c.out[0].as<float>();
    parallel_rows(c, c.in[0].elements(), [&](int64_t i0, int64_t i1) { silu_rows(x + i0, y + i0, i1 - i0); },
                  int64_t{1} << 14);
    return Status::Ok();
  }
#endif
  return ops::with_unary_fn(c.n, [&](auto f) { return unary(c, f); });
}

}  // namespace

void register_unary_kernels(KernelTable& t) {
  for (OpKind op : {OpKind::relu, OpKind::relu6, OpKind::leaky_relu, OpKind::logistic, OpKind::tanh,
                    OpKind::hard_swish, OpKind::silu, OpKind::gelu, OpKind::elu, OpKind::exp, OpKind::rsqrt,
                    OpKind::abs, OpKind::neg, OpKind::square, OpKind::log})
    t.add(op, KernelKind::plain, unary_op);
}

}  // namespace tessera::cpu
