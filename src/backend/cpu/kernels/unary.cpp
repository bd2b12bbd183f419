// Reference kernels: elementwise unary ops on f32 (relu, relu6, leaky_relu, logistic, tanh,
// hard_swish, silu, gelu, elu, exp, rsqrt, abs, neg, square, log). Each is the textbook formula
// in float, defined once in ops/unary_math.h. silu, exp and logistic take vector twins of
// their formulas where the CPU has them (the same bits).
#include "backend/cpu/kernels/kernel_util.h"
#include "convert/simd.h"
#include "ops/unary_math.h"

namespace tessera::cpu {

#if defined(__x86_64__)
namespace x86 {
// x86/unary_avx2.cpp and x86/unary_avx512.cpp: the same bits as the scalar formulas
void silu_avx2(const float* x, float* y, int64_t n);
void exp_f32_avx2(const float* x, float* y, int64_t n);
void logistic_avx2(const float* x, float* y, int64_t n);
void exp_f32_avx512(const float* x, float* y, int64_t n);
void logistic_avx512(const float* x, float* y, int64_t n);
}
#elif defined(__aarch64__)
namespace arm {
// arm/unary_neon.cpp: the same bits as the scalar formulas
void silu_neon(const float* x, float* y, int64_t n);
void exp_f32_neon(const float* x, float* y, int64_t n);
void logistic_neon(const float* x, float* y, int64_t n);
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

using RowsFn = void (*)(const float* x, float* y, int64_t n);

// The vector rows of op on this CPU at the current SIMD level, or null: silu, exp and logistic
// (exp and logistic on AVX-512 where the CPU has it, else AVX2; NEON on aarch64).
RowsFn vector_rows(OpKind op) {
#if defined(__x86_64__)
  if (!convert::use_avx2()) return nullptr;
  static const bool zmm = convert::cpu_avx512();
  switch (op) {
    case OpKind::silu: return x86::silu_avx2;
    case OpKind::exp: return zmm ? x86::exp_f32_avx512 : x86::exp_f32_avx2;
    case OpKind::logistic: return zmm ? x86::logistic_avx512 : x86::logistic_avx2;
    default: return nullptr;
  }
#elif defined(__aarch64__)
  if (!convert::use_neon()) return nullptr;
  switch (op) {
    case OpKind::silu: return arm::silu_neon;
    case OpKind::exp: return arm::exp_f32_neon;
    case OpKind::logistic: return arm::logistic_neon;
    default: return nullptr;
  }
#else
  (void)op;
  return nullptr;
#endif
}

// Every float unary op: the scalar formula comes from ops/unary_math.h.
Status unary_op(KernelContext& c) {
  if (RowsFn rows = vector_rows(c.n.op)) {
    TS_RETURN_IF_ERROR(require_f32(c, {0}));
    const float* x = c.in[0].as<float>();
    float* y = c.out[0].as<float>();
    parallel_rows(c, c.in[0].elements(), [&](int64_t i0, int64_t i1) { rows(x + i0, y + i0, i1 - i0); },
                  int64_t{1} << 14);
    return Status::Ok();
  }
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
