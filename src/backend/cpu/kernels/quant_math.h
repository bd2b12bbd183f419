// The cpu device's view of TFLite's quantized arithmetic: the shared definitions of
// ops/quant_math.h (as cpu::q), plus the cpu kernels' own helpers.
#pragma once

#include "backend/cpu/kernel.h"
#include "ops/quant_math.h"

namespace tessera::cpu::q {

using namespace tessera::q;

// Checks that tensor `t` is a per-tensor quantized u8 / i8 (or i16 when allowed) tensor.
Status require_per_tensor(const Node& n, const Tensor& t, bool allow_i16 = false);

// y = f(x) on u8 / i8 through TFLite's 256-entry table of f over the input codes, made in
// float (quant_elementwise.cpp).
Status lut_unary(KernelContext& c, float (*f)(float));

// The int16 (16x8) forms of logistic, tanh, mul and softmax (quant_int16.cpp).
Status logistic_i16(KernelContext& c);
Status tanh_i16(KernelContext& c);
Status mul_i16(KernelContext& c);
Status add_sub_pot_i16(KernelContext& c, bool subtract);
Status softmax_i16(KernelContext& c);

}  // namespace tessera::cpu::q
