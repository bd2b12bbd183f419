// The cpu device's view of TFLite's quantized arithmetic: the shared definitions of
// ops/quant_math.h (as cpu::q), plus the cpu kernels' own helpers.
#pragma once

#include "backend/cpu/kernel.h"
#include "ops/quant_math.h"

namespace tessera::cpu::q {

using namespace tessera::q;

// Checks that tensor `t` is a per-tensor quantized u8 / i8 (or i16 when allowed) tensor.
Status require_per_tensor(const Node& n, const Tensor& t, bool allow_i16 = false);

}  // namespace tessera::cpu::q
