// The fast path of the hybrid (dynamic-range quantized) conv2d kernel (hybrid.cpp), with
// the reference kernel's bits.
//
// The reference quantizes each batch image to int8 codes (hybrid_quant, hybrid_code), sums
// w * (code - offset) over the taps inside the input in integers, and converts each sum as
// float(acc) * scale (+ bias), then the activation. Integer sums do not depend on their
// order, so here they come from a packed GEMM: the image's codes centred once (code -
// offset, int16, zero in the padding, so padding taps add nothing), the filter packed at
// compile time into panels of 16 output channels, [K / 2][16][2] int16, and each pair of
// products summed in one int32 lane (vpmaddwd; within [-2 * 255 * 128, 2 * 255 * 128]); with
// AVX512-VNNI the 8-bit form instead (PanelU8Fn: the codes as bytes code + 128, [K / 4][16][4]
// int8 panels, vpdpbusd, a per-image correction per channel).
// The conversion is the reference's float multiply and add lane by lane, never fused
// (compiled with -ffp-contract=off, cmake/components.cmake), and the quantization's codes
// are computed by the same float operations, vectorised.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/cpu/kernel.h"
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace hconv {

// Output channels per packed panel.
constexpr int kPanel = 16;

// One panel's conversion: y[r][j] = act(float(acc[r][j]) * scale[j] (+ bias[j])) for
// channels j < nvalid (scale and bias hold 16 entries from the panel's first channel;
// bias nullptr: none).
struct Out {
  const float* scale = nullptr;
  const float* bias = nullptr;
  Activation act = Activation::none;
  int nvalid = kPanel;
  float* y = nullptr;  // row r at y + r * ldy
  int64_t ldy = 0;
};

// The sums of `rows` A rows (kpairs pairs of centred int16, lda apart) with one panel
// ([kpairs][16][2] int16), converted and stored as `o` says.
using PanelFn = void (*)(int64_t rows, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel,
                         const Out& o);
// min and max of x[0 .. n) (n > 0); false, mn and mx unspecified, when a value is NaN.
using MinMaxFn = bool (*)(const float* x, int64_t n, float* mn, float* mx);
// out[i] = clamp(round_half_away(add + x[i] * inv), lo, hi) - offset as int16 (NaN: -offset).
using CodesFn = void (*)(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, int32_t offset,
                         int16_t* out);

// The 8-bit form, where the CPU has a 4-byte dot product (AVX512-VNNI's u8 x s8 vpdpbusd,
// aarch64's s8 x s8 sdot): A rows of bytes u = code + bias (Fns::byte_bias: 128 for unsigned
// bytes, 0 for signed ones; the padding taps u = offset + bias, whose centred value is zero),
// the filter packed as [K/4][16][4] int8 panels, four products per int32 lane and step:
//   sum_k w (code - offset) = sum_k w u - (bias + offset) sum_k w,
// the second term `corr` per channel (16 entries from the panel's first), subtracted before
// the conversion. Exact in int32 wherever the sum itself is (prepare_hybrid_conv2d's bound):
// the wrap-around arithmetic is exact modulo 2^32.
using PanelU8Fn = void (*)(int64_t rows, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                           const int32_t* corr, const Out& o);
// out[i] = clamp(round_half_away(add + x[i] * inv), lo, hi) + bias as a byte (NaN: bias).
using CodesU8Fn = void (*)(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, uint8_t* out);

struct Fns {
  PanelFn panel;
  MinMaxFn min_max;
  CodesFn codes;
  const char* isa;
  PanelU8Fn panel_u8 = nullptr;  // the 8-bit form, or none (the int16 pairs)
  CodesU8Fn codes_u8 = nullptr;
  int32_t byte_bias = 128;        // the 8-bit form's A bytes: code + byte_bias
};

const Fns& generic_fns();  // portable C++ (the compiler's vectors)
// The signed-byte codes of the 8-bit form (byte_bias 0), portable.
void codes_s8_generic(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, uint8_t* out);
#if defined(__x86_64__)
const Fns& avx2_fns();
const Fns& avx512_fns();         // AVX512F + BW
const Fns& avx512_vnni_fns();    // the 8-bit form (vpdpbusd)
#endif
#if defined(__aarch64__)
bool neon_dot_available();       // the CPU has the dot-product extension
const Fns& neon_dot_fns();       // the portable pairs, and the 8-bit form with sdot (signed bytes)
#endif
// This CPU's widest (TESSERA_SIMD honoured: scalar gives generic_fns()).
const Fns& pick_fns();

}  // namespace hconv

// PrepareFn of conv2d for hybrid nodes (f32 input, constant int8 filter with scales):
// the packed filter, or nullptr where the fast path does not apply (grouped, filter not
// constant, zero points not 0, a scale count other than 1 or OC) and the reference runs.
Result<std::unique_ptr<PreparedKernel>> prepare_hybrid_conv2d(const Graph& g, const Node& n);
// Whether `p` is what prepare_hybrid_conv2d made.
bool is_hybrid_conv(const PreparedKernel* p);
// Runs a prepared hybrid conv2d.
Status run_hybrid_conv2d(KernelContext& c);

}  // namespace tessera::cpu
