#include "backend/cpu/ukernels/lut8.h"

#include "convert/simd.h"

namespace tessera::cpu::uk {

void lut8_scalar(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

Lut8Fn lut8_kernel() {
#if defined(__x86_64__)
  if (convert::use_avx2()) {
    static const Lut8Fn vbmi = avx512_vbmi_lut8();
    if (vbmi) return vbmi;
  }
#endif
  return lut8_scalar;
}

}  // namespace tessera::cpu::uk
