// RK3588 NPU weight packing (the rk_conv_weight and rk_dw_weight layouts).
//
// The values packed are the signed differences d = w - weight_zero_point (int8 when they
// fit, otherwise int16; see docs/rknpu.md "Arithmetic"), so that the hardware's plain
// signed multiply-accumulate computes sum((in - in_zp) * (w - w_zp)) once the input side
// is offset too. Packing is a pure relayout of those values plus zero padding.
//
// Conv weights, logical [OC, KH, KW, IC] (rknpu.md, Mesa's layout):
//   padded IC: 16 when IC <= 16, otherwise IC rounded up to 32; padded OC: OC rounded up to 2;
//   blocks of 32 output x 32 input channels, stored
//   [ceil(OCp/32)][ceil(ICp/32)][KH][KW][oc < min(32, OCp - 32*og)][ic < min(32, ICp - 32*ig)].
// Depthwise weights, logical [1, KH, KW, C]:
//   padded C: C rounded up to 16; groups of 64 channels, stored
//   [ceil(Cp/64)][KH][KW][c < min(64, Cp - 64*g)].
// Padding elements are 0 (they multiply padded input channels and must add nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/status.h"
#include "tessera/types.h"
#include "tessera/format.h"

namespace tessera::convert {

struct RkConvGeometry {
  int64_t oc = 0, kh = 0, kw = 0, ic = 0;  // logical
  int64_t ocp = 0, icp = 0;                // padded
  int64_t elements() const { return ocp * kh * kw * icp; }
};
struct RkDwGeometry {
  int64_t kh = 0, kw = 0, c = 0;  // logical
  int64_t cp = 0;                 // padded
  int64_t elements() const { return kh * kw * cp; }
};

// Geometry of a logical conv weight shape [OC, KH, KW, IC] / depthwise [1, KH, KW, C].
Result<RkConvGeometry> rk_conv_geometry(const Shape& logical);
Result<RkDwGeometry> rk_dw_geometry(const Shape& logical);
// Padded input channels of a conv with `ic` input channels (16, or a multiple of 32).
int64_t rk_conv_padded_ic(int64_t ic);

// Element index (not bytes) of logical (oc, y, x, ic) in the packed conv buffer; also valid
// for padding positions oc < ocp, ic < icp.
int64_t rk_conv_weight_index(const RkConvGeometry& g, int64_t oc, int64_t y, int64_t x, int64_t ic);
// Element index of logical (y, x, c) in the packed depthwise buffer; valid for c < cp.
int64_t rk_dw_weight_index(const RkDwGeometry& g, int64_t y, int64_t x, int64_t c);

// Packs `d` (row-major logical values, w - zero_point) as little-endian signed elements of
// `elem_bytes` (1 or 2) bytes. Errors if a value does not fit the element type.
Result<std::vector<uint8_t>> pack_rk_conv_weights(const Shape& logical, const std::vector<int32_t>& d, int elem_bytes);
Result<std::vector<uint8_t>> pack_rk_dw_weights(const Shape& logical, const std::vector<int32_t>& d, int elem_bytes);

// Matmul weight blocks (rknpu-matmul.md "Layouts", the rk_matmul_weight layout), logical
// [N, K] (N kernels of K values, i.e. B transposed, as a GGUF weight matrix is stored):
//   [ceil(N/n)][ceil(K/32)][n][32] with n = 16 kernels for 2-byte elements (fp16) and 32 for
//   1-byte (int8); each block is 1 KiB, N-block-major then K-block. Padding is 0.
struct RkMatmulGeometry {
  int64_t n = 0, k = 0;     // logical
  int64_t np = 0, kp = 0;   // padded: N to the block's kernels, K to 32
  int64_t kernels = 16;     // kernels per block
  int64_t elements() const { return np * kp; }
};
constexpr int64_t kRkMatmulKBlock = 32;
// Geometry of [N, K] weights with `elem_bytes` (2: fp16, 1: int8) elements.
RkMatmulGeometry rk_matmul_geometry(int64_t n, int64_t k, int elem_bytes);
// Element index of logical (n, k) in the packed buffer; valid for padding positions too.
inline int64_t rk_matmul_weight_index(const RkMatmulGeometry& g, int64_t n, int64_t k) {
  return ((n / g.kernels) * (g.kp / kRkMatmulKBlock) + k / kRkMatmulKBlock) * g.kernels * kRkMatmulKBlock +
         (n % g.kernels) * kRkMatmulKBlock + k % kRkMatmulKBlock;
}
// Packs row-major [N, K] elements of `elem_bytes` bytes (raw bits: fp16 or int8) into the
// blocks; a pure relayout, exact.
std::vector<uint8_t> pack_rk_matmul_weights(const uint8_t* src, int64_t n, int64_t k, int elem_bytes);

// Symmetric int8 quantization of rows (the int8 matmul's operands, docs/rknpu.md "int8"):
// row r of `rows` x `k` f32 values gets scale s_r = max_j |x_rj| / 127 (0 for an all-zero
// row) and codes q_rj = round(x_rj / s_r) (nearest, halves away from zero; |q| <= 127), so
// that x_rj = s_r q_rj + e with |e| <= s_r / 2. Used once per weight matrix at upload (one
// scale per output channel) and per call for the activations (one scale per row of A).
struct RowQuantI8 {
  std::vector<int8_t> q;     // [rows][k]
  std::vector<float> scale;  // [rows]
};
// `ld`: the distance between rows in `x` (>= k).
void quantize_rows_i8(const float* x, int64_t rows, int64_t k, int64_t ld, int8_t* q, float* scale);
// Any registry-readable weight matrix [N, K] (F16, F32, BF16, every GGUF block type) ->
// int8 codes and one scale per output channel: dequantized exactly to f32 first, then
// requantized per row (for Q8_0 / Q4_0 / K-quants, whose block scales differ within a row,
// this is a second rounding of at most s_r / 2 per value).
Result<RowQuantI8> quantize_matrix_i8(const Format& from, const uint8_t* src);

}  // namespace tessera::convert
