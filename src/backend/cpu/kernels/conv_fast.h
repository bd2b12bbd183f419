// The fast path of the float conv2d kernel (conv.cpp), bit-identical to it.
//
// The reference adds each output's products in the order of TFLite's float GEMM
// (gemm_sum.h). That order depends only on the depth index k (and on whether the output
// pixel is one of the GEMM's last, one-by-one columns), never on the output channel, so
// here every SIMD lane is one output channel and all lanes run the reference's sequence of
// separately rounded multiplies and adds for their channel: the filter packed once at
// compile time as [k][oc] (channels contiguous, padded), the input pixel's k values
// broadcast. Padding taps enter as zero products: a zero term changes at most the sign of a
// zero partial sum, and the blocks' sum starts from +0, so the outputs' bits are the
// reference's (the packing refuses filters with an infinity or NaN, whose products with a
// zero are NaN). Compiled with -ffp-contract=off (cmake/components.cmake): no fma.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/kernels/gemm_sum.h"
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace fconv {

// Output channels are padded to a multiple of this (the widest vector's lanes).
constexpr int64_t kOcAlign = 16;

struct Args {
  const float* x = nullptr;     // [N, H, W, C]
  const float* wp = nullptr;    // packed filter [depth][ocpad]
  const float* bias = nullptr;  // [OC] or nullptr
  float* y = nullptr;           // [N, OH, OW, OC]
  const float* zeros = nullptr; // C zeros (a pointwise pixel's padding tap)
  int64_t H = 0, W = 0, C = 0, OH = 0, OW = 0, OC = 0, ocpad = 0, KH = 1, KW = 1;
  Window win;
  int64_t depth = 0;
  int64_t pixels = 0;  // N * OH * OW: the GEMM's columns
  GemmDepthBlocks blocks{0};
  Activation act = Activation::none;
};

// Scratch of one call: `rows` pointers and the input rows of up to `chunk` pixels.
struct Scratch {
  const float** rows = nullptr;
  float* cols = nullptr;  // [chunk][depth] (windows larger than 1x1)
  int64_t chunk = 0;
};

// Computes output rows [r0, r1) (r = b * OH + oy).
using RowsFn = void (*)(const Args& a, int64_t r0, int64_t r1, const Scratch& s);

RowsFn rows_generic();  // portable vectors (SSE2 / NEON)
#if defined(__x86_64__)
RowsFn rows_avx2();
RowsFn rows_avx512();
#endif

}  // namespace fconv

// PrepareFn of the float conv2d: the packed filter, or nullptr where the fast path does not
// apply (grouped, non-constant or non-f32 filter, a filter value not finite).
Result<std::unique_ptr<PreparedKernel>> prepare_float_conv2d(const Graph& g, const Node& n);
// Runs a prepared float conv2d.
Status run_float_conv2d(KernelContext& c);

}  // namespace tessera::cpu
