// Fast fully_connected for K-quant weight rows (q2_K ... q6_K, iq4_xs): 8-bit activation super-blocks
// (Q8_K) against the weights' own codes, every super-block's dot product an exact integer.
//
// Activations (Q8_K, as llama.cpp rounds the inputs of its K-quant matmuls): each row is
// cut into super-blocks of 256 values. Per super-block, `max` is the value of largest
// magnitude (the first such value when several tie); max = 0 gives d = 0 and q = 0.
// Otherwise, in f32: iscale = -127 / max, q[i] = min(127, round-half-even(iscale * x[i])),
// d = 1 / iscale (so d has the opposite sign of max and q ranges over [-127, 127]), and
// bsums[g] = sum of q[16g .. 16g + 16) (sixteen int16 per super-block).
//
// Weights, super-block i of a row (the layouts of src/convert/gguf_kquants.h), against the
// activation super-block (dx_i = its d, q, bsums); every S_i and M_i is an exact int32:
//   q2_K: S_i = sum_{g<16} (scales[g] & 15) * sum_{l<16} code[16g + l] * q[16g + l]
//         M_i = sum_{g<16} (scales[g] >> 4) * bsums[g]
//         acc = fma(d_i * dx_i, float(S_i), acc); acc = fma(-(dmin_i * dx_i), float(M_i), acc)
//   q3_K: S_i = sum_{g<16} (scale6[g] - 32) * sum_{l<16} code[16g + l] * q[16g + l]  (code -4..3)
//         acc = fma(d_i * dx_i, float(S_i), acc)
//   q4_K: S_i = sum_{c<8} sc[c] * sum_{l<32} nibble[32c + l] * q[32c + l]
//         M_i = sum_{c<8} m[c] * (bsums[2c] + bsums[2c + 1])
//         acc = fma(d_i * dx_i, float(S_i), acc); acc = fma(-(dmin_i * dx_i), float(M_i), acc)
//   q5_K: as q4_K with code[32c + l] = nibble | fifth bit << 4 (0..31) in place of the nibble
//   q6_K: S_i = sum_{g<16} scales[g] * sum_{l<16} (code[16g + l] - 32) * q[16g + l]
//         acc = fma(d_i * dx_i, float(S_i), acc)
//   iq4_xs: S_i = sum_{c<8} (ls[c] - 32) * sum_{l<32} kIQ4Values[code[32c + l]] * q[32c + l]
//         acc = fma(d_i * dx_i, float(S_i), acc)
// for i = 0, 1, ... in order from acc = 0, and y = acc. (|S_i| < 2^27 and |M_i| < 2^21 for
// every type, so int32 never overflows; float() rounds to nearest even, the same in every
// kernel.) Each output is one float chain whose terms do not depend on how the integers
// were summed, so the scalar and AVX2 kernels give identical bits for any tiling,
// activation-row grouping or thread count.
//
// Error against exact f32 activations: |x - q d| <= |d| / 2 per value (half a step; the
// f32 rounding of iscale and d adds a relative 2^-23 or so), so a dot product moves by at
// most sum_i |dx_i| / 2 * sum_{j in i} |w_j| plus float rounding (the tests check this).
#pragma once

#include <cstdint>

#include "tessera/types.h"

namespace tessera::cpu::kq {

constexpr int64_t kSuper = 256;  // values per super-block (GGUF K-quants, ggml's QK_K)
constexpr int64_t kGroup = 16;   // values per activation bsum
// From this many activation rows (prompts), the x86 kernel unpacks eight weight rows at a
// time into a panel and runs every activation row against it (x86/linear_kq_avx2.cpp); the
// integers and the float chain per output are the same, so the bits are too.
constexpr int64_t kPanelMinRows = 8;

// Activation rows rounded to Q8_K: row r has q[r * k .. + k), d[r * k/256 ..] and
// bsums[r * k/16 ..].
struct Q8KRows {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int16_t* bsums = nullptr;
  int64_t m = 0;  // rows
  int64_t k = 0;  // values per row (multiple of 256)
};

// y[r * ldy + o] = dot(activation row r, weight row o) for every r and o in [o0, o1).
struct KQuantGemm {
  DType wt = DType::q4_k;      // q2_k ... q6_k (supported())
  const uint8_t* w = nullptr;  // [OC] rows of k / 256 GGUF super-blocks
  int64_t w_row_bytes = 0;
  Q8KRows x;
  float* y = nullptr;
  int64_t ldy = 0;
};

// Weight types these kernels take.
bool supported(DType wt);

// Rounds n values (n % 256 == 0) to q[n], d[n / 256] and bsums[n / 16] (the rule above).
// One portable definition: this is a small part of a decode step.
void quantize_row_q8k(const float* x, int64_t n, int8_t* q, float* d, int16_t* bsums);

void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1);

// The portable kernel (the definition of the arithmetic above).
namespace scalar {
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1);
}  // namespace scalar

#if defined(__x86_64__)
namespace avx2 {  // x86/linear_kq_avx2.cpp
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1);
}  // namespace avx2
#endif

#if defined(__aarch64__)
namespace neon {  // arm/linear_kq_neon.cpp: ARMv8.2 dot-product instructions
bool available();  // whether this CPU has them (else the scalar kernel runs)
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1);
}  // namespace neon
#endif

}  // namespace tessera::cpu::kq
