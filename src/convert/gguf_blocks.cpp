// GGUF block rows -> f32 (q8_0 / q4_0 exact; the others as their format computes them). The
// block -> bfp tile path lives in bfp_impl.h.
#include "convert/gguf_blocks.h"

#include "convert/gguf_kquants.h"

#include "convert/simd.h"

namespace tessera::convert {

void dequant_q8_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::dequant_q8_0_n(src, dst, n_blocks);
#endif
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q8_0_block(src + b * kQ8_0BlockBytes, dst + b * kQBlock);
}

void dequant_q4_0_n(const uint8_t* src, float* dst, int64_t n_blocks) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::dequant_q4_0_n(src, dst, n_blocks);
#endif
  for (int64_t b = 0; b < n_blocks; ++b) dequant_q4_0_block(src + b * kQ4_0BlockBytes, dst + b * kQBlock);
}

void dequant_gguf_n(DType t, const uint8_t* src, float* dst, int64_t n_blocks) {
  if (t == DType::q8_0) return dequant_q8_0_n(src, dst, n_blocks);
  if (t == DType::q4_0) return dequant_q4_0_n(src, dst, n_blocks);
  const int64_t bv = dtype_block_values(t), bb = dtype_block_bytes(t);
  const int chunks = static_cast<int>(bv / kQBlock);
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int c = 0; c < chunks; ++c) dequant_gguf_chunk(t, src + b * bb, c, dst + b * bv + c * kQBlock);
}

}  // namespace tessera::convert
