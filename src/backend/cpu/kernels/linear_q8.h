// Fast fully_connected for LLM weights: 8-bit activation blocks against Q8_0 / Q4_0 rows,
// and f32 activations against F16 rows.
//
// Quantized weights (q8_0, q4_0, q5_0, iq4_nl): each activation row is rounded once to 8-bit blocks of
// 32 as llama.cpp rounds matmul inputs (amax = max |x| over the block, d = amax / 127
// rounded to binary16 as its q8_0 blocks store it, q = round-half-even(x * (127 / amax)),
// q = 0 when amax = 0), then every block's dot product is an exact integer. The float
// arithmetic is fixed per output element, so the scalar, AVX2 and NEON kernels give
// identical bits whatever the tiling, weight interleaving or thread count:
//   S_b = sum_{i<32} w[32b+i] * q[32b+i]               (exact int; |S_b| < 2^24, so float(S_b) is exact)
//   acc = fma(dw_b * dx_b, float(S_b), acc)           for b = 0, 1, ... in order, from acc = 0
//   y = acc
// (w: q8_0 the int8 values, q4_0 / q5_0 code - 8 / code - 16, iq4_nl the table values.)
// q4_1 / q5_1 (value = dw code + mw): w = code, and after each block's step
//   acc = fma(mw_b, sx_b, acc)   with sx_b = binary16(amax_b / 127 * sum_i q[32b+i])
// (llama.cpp's q8_1 activation blocks store that product as binary16: their s).
// (one float sum per output, as llama.cpp's interleaved q4_0 kernels keep one per column).
// F16 weights (any row length K): with round_x, every activation is first rounded to
// binary16 (round to nearest even, as llama.cpp rounds the inputs of its f16 matmuls),
// h = f16(x); without, h = x. With fewer than kF16SeqMinRows activation rows (decode):
// four chains of eight lanes, value e < K8 = K - K % 8 going to chain q = (e / 8) % 4,
// lane l = e % 8: acc[q][l] = fma(w[e], h[e], acc[q][l]) for e in order, the K % 8 tail
// t = fma(w[k], h[k], t) in order, y = hsum8(s) + t with s[l] = (acc[0][l] + acc[1][l]) +
// (acc[2][l] + acc[3][l]). Four chains keep enough multiply-adds in flight for one weight
// row to be read start to end, one sequential stream, which decoded faster than passes
// over eight rows at once in alternating runs (docs/performance.md). With kF16SeqMinRows rows or more
// (prompts): one chain per output, acc = fma(w[k], h[k], acc) for k = 0 .. K-1 in order
// from 0, y = acc: what an outer-product tile computes without horizontal sums (about 1.3x
// the multiply-adds per second of the dot-product tile). So an f16 product's bits depend
// on the batch's row count, as llama.cpp's do; not on tiling, threads or the instruction set. The rounding halves
// the bytes the prompt kernel streams per activation row (about 10% faster prompts on the
// development VM); it moves a dot product by at most 2^-11 sum |w x| (+ 2^-25 sum |w|
// where an activation falls below 2^-14).
// hsum8(a) = (s4[0] + s4[2]) + (s4[1] + s4[3]) with s4[i] = a[i] + a[i+4].
//
// Error against exact f32 activations: |x - q d| <= amax_b / 254 + 127 |d - amax_b / 127|
// <= amax_b (1/254 + 2^-11) per value (half a step, plus the binary16 rounding of d), so a
// dot product moves by at most sum_b amax_b (1/254 + 2^-11) sum_{i in b} |w_i| plus float
// rounding (the tests check this bound).
#pragma once

#include <atomic>
#include <cstdint>

#include "tessera/types.h"

namespace tessera::cpu::q8 {

constexpr int64_t kBlock = 32;  // values per activation block (= GGUF q8_0 / q4_0 block)
constexpr int64_t kF16SeqMinRows = 8;  // f16: rows from which the one-chain order applies (above)

// Activation rows rounded to 8-bit blocks: row m has q[m * k .. + k) and d[m * k/32 ..].
// Every q is in [-127, 127] (quantize_row's range): the AVX2 sign trick needs -128 absent.
struct ActRows {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* s = nullptr;  // [m * k/32] sum of each block's q (block_sums); q4_0 / q5_0 weights need it
  const float* s1 = nullptr;   // [m * k/32] sx_b above; q4_1 / q5_1 weights need it (offset_sums)
  int64_t m = 0;  // rows
  int64_t k = 0;  // values per row (multiple of 32)
};

// y[m * ldy + o] = dot(activation row m, weight row o) for every m and o in [o0, o1).
struct QuantGemm {
  DType wt = DType::q8_0;      // q8_0, q4_0, q5_0, q4_1, q5_1 or iq4_nl (aarch64 without dotprod: the last four scalar)
  const uint8_t* w = nullptr;  // [OC] rows of k / 32 GGUF blocks
  int64_t w_row_bytes = 0;
  ActRows x;
  float* y = nullptr;
  int64_t ldy = 0;
};

struct F16Gemm {
  const uint16_t* w = nullptr;  // [OC, k] binary16 bits
  const float* x = nullptr;     // [m, k]
  int64_t m = 0, k = 0;
  float* y = nullptr;
  int64_t ldy = 0;
  bool round_x = false;  // activations rounded to binary16 first (see above)
};

// A prompt's f16 product (m >= kF16SeqMinRows) on several threads with the work claimed at
// run time: the activation rows in chunks, each chunk's 16-output weight panels taken one
// at a time by whichever thread asks next (an atomic counter per chunk), so a thread the
// host slows down takes fewer; a panel is transposed once, by the thread that takes it in
// the first chunk. Every output is still one thread's one chain, so the bits are
// gemm_f16's. Each thread of the region calls gemm_f16_shared(g, s) once; the caller sizes
// the arrays with f16_shared_shape and zeroes `ready` and `next` before the region.
struct F16Shared {
  int64_t oc = 0;                          // outputs (weight rows)
  int64_t npanels = 0, nchunks = 0, chunk = 0;
  int64_t panel_values = 0;                // binary16 values the panels need
  uint16_t* panels = nullptr;              // [npanels][k][16], 32-byte aligned
  std::atomic<int32_t>* ready = nullptr;   // [npanels]: 1 once the panel is transposed
  std::atomic<int64_t>* next = nullptr;    // [nchunks]: the next panel to take in each chunk
};
// False where this CPU's kernels have no such form (then gemm_f16 with a static split).
bool f16_shared_shape(const F16Gemm& g, int64_t oc, F16Shared& s);
void gemm_f16_shared(const F16Gemm& g, const F16Shared& s);

// Rounds n values (n % 32 == 0) to q[n] and d[n / 32].
void quantize_row(const float* x, int64_t n, int8_t* q, float* d);
// s[b] = sum of q[32b .. 32b + 32) for the n / 32 blocks of a rounded row (one definition, no
// arithmetic choice: the integer sum).
void block_sums(const int8_t* q, int64_t n, int32_t* s);
// s1[b] = binary16(amax_b / 127 * s[b]) for the n / 32 blocks of x (amax_b: the largest
// |x| of block b; s: the rounded row's block_sums).
void offset_sums(const float* x, int64_t n, const int32_t* s, float* s1);
// Weight types of gemm_quant.
bool quant_supported(DType wt);
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1);
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1);

// The portable kernels (the definition of the arithmetic above).
namespace scalar {
void quantize_row(const float* x, int64_t n, int8_t* q, float* d);
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1);
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1);
}  // namespace scalar

#if defined(__x86_64__)
namespace avx2 {
void quantize_row(const float* x, int64_t n, int8_t* q, float* d);
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1);
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1);
void f16_shared_shape(const F16Gemm& g, int64_t oc, F16Shared& s);
void gemm_f16_shared(const F16Gemm& g, const F16Shared& s);
}  // namespace avx2
#endif

#if defined(__aarch64__)
// NEON (arm/linear_q8_neon.cpp); F16 weights use the scalar kernel.
namespace neon {
void quantize_row(const float* x, int64_t n, int8_t* q, float* d);
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1);
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1);  // arm/linear_f16_neon.cpp
}  // namespace neon
// ARMv8.2 dot-product instructions (arm/linear_q8_dot_neon.cpp): every quantized weight type.
namespace neon_dot {
bool available();  // whether this CPU has them
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1);
}  // namespace neon_dot
#endif

}  // namespace tessera::cpu::q8
