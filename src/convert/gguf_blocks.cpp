// GGUF q8_0 / q4_0 rows -> f32 (exact). The block -> bfp tile path lives in bfp_impl.h.
#include "convert/gguf_blocks.h"

#include "convert/simd.h"

namespace tessera::convert {

void dequant_q8_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
  if (use_avx2()) return avx2::dequant_q8_0_n(src, dst, n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q8_0_block(src + b * kQ8_0BlockBytes, dst + b * kQBlock);
}

void dequant_q4_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
  if (use_avx2()) return avx2::dequant_q4_0_n(src, dst, n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q4_0_block(src + b * kQ4_0BlockBytes, dst + b * kQBlock);
}

}  // namespace tessera::convert
