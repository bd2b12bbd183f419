// Registration of the TFLite-exact quantized kernels (u8/i8/i16 with QuantParams).
// Each quantized family file adds its kernels here.
#include "backend/cpu/kernel.h"

namespace tessera::cpu {

void register_quant_kernels(KernelTable& t) {
  (void)t;
}

}  // namespace tessera::cpu
