// The cpu device's view of TFLite's quantized arithmetic: the shared definitions of
// ops/quant_math.h (as cpu::q), plus the cpu kernels' own helpers.
#pragma once

#include "backend/cpu/kernel.h"
#include "ops/quant_math.h"

namespace tessera::cpu::q {

using namespace tessera::q;

// Checks that tensor `t` is a per-tensor quantized u8 / i8 (or i16 when allowed) tensor.
Status require_per_tensor(const Node& n, const Tensor& t, bool allow_i16 = false);

namespace fp {
using namespace tessera::q::fp;
// exp(a) for a <= 0: `a` has `integer_bits` integer bits; the result has 0.
int32_t exp_on_negative_values(int32_t a, int integer_bits);
// 1 / (1 + x) for x in [0, 1), both with 0 integer bits.
int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a);
}  // namespace fp

}  // namespace tessera::cpu::q
