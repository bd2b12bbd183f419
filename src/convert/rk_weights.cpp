#include "convert/rk_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/checked.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {

namespace {
// Block sizes of the packed layouts (rknpu.md "Data formats").
constexpr int64_t kOcBlock = 32;
constexpr int64_t kIcBlock = 32;
constexpr int64_t kMinIc = 16;      // input channels padded to at least 16 ...
constexpr int64_t kOcMultiple = 2;  // ... output channels to an even count
constexpr int64_t kDwBlock = 64;    // depthwise: 64-channel groups
constexpr int64_t kDwMultiple = 16; // depthwise channels padded to the C2 block

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

Status check_rank4(const Shape& s, const char* what) {
  if (s.size() != 4) return error(StatusCode::invalid_argument, what, " weights need a rank-4 shape, got ", shape_str(s));
  for (int64_t d : s)
    if (d <= 0) return error(StatusCode::invalid_argument, what, " weights have an empty dim: ", shape_str(s));
  return Status::Ok();
}

Status store(std::vector<uint8_t>& out, int64_t index, int32_t v, int elem_bytes, const char* what) {
  if (elem_bytes == 1) {
    if (v < -128 || v > 127) return error(StatusCode::out_of_range, what, " weight value ", v, " does not fit int8");
    out[index] = static_cast<uint8_t>(static_cast<int8_t>(v));
  } else {
    if (v < -32768 || v > 32767) return error(StatusCode::out_of_range, what, " weight value ", v, " does not fit int16");
    int16_t s = static_cast<int16_t>(v);
    std::memcpy(&out[index * 2], &s, 2);
  }
  return Status::Ok();
}
}  // namespace

int64_t rk_conv_padded_ic(int64_t ic) { return ic <= kMinIc ? kMinIc : round_up(ic, kIcBlock); }

Result<RkConvGeometry> rk_conv_geometry(const Shape& s) {
  TS_RETURN_IF_ERROR(check_rank4(s, "conv"));
  RkConvGeometry g{s[0], s[1], s[2], s[3], round_up(s[0], kOcMultiple), rk_conv_padded_ic(s[3])};
  return g;
}

Result<RkDwGeometry> rk_dw_geometry(const Shape& s) {
  TS_RETURN_IF_ERROR(check_rank4(s, "depthwise"));
  if (s[0] != 1) return error(StatusCode::invalid_argument, "depthwise weights must be [1,KH,KW,C], got ", shape_str(s));
  RkDwGeometry g{s[1], s[2], s[3], round_up(s[3], kDwMultiple)};
  return g;
}

int64_t rk_conv_weight_index(const RkConvGeometry& g, int64_t oc, int64_t y, int64_t x, int64_t ic) {
  int64_t og = oc / kOcBlock, o = oc % kOcBlock;
  int64_t ig = ic / kIcBlock, i = ic % kIcBlock;
  int64_t ocn = std::min(kOcBlock, g.ocp - og * kOcBlock);  // kernels in this output group
  int64_t icn = std::min(kIcBlock, g.icp - ig * kIcBlock);  // channels in this input block
  // Every output group before `og` holds 32 kernels x all padded input channels.
  int64_t base = og * kOcBlock * g.kh * g.kw * g.icp;
  // Input blocks before `ig` in this output group: ocn kernels x 32 channels each.
  base += ig * kIcBlock * g.kh * g.kw * ocn;
  return base + ((y * g.kw + x) * ocn + o) * icn + i;
}

int64_t rk_dw_weight_index(const RkDwGeometry& g, int64_t y, int64_t x, int64_t c) {
  int64_t grp = c / kDwBlock, i = c % kDwBlock;
  int64_t cn = std::min(kDwBlock, g.cp - grp * kDwBlock);
  return grp * kDwBlock * g.kh * g.kw + (y * g.kw + x) * cn + i;
}

Result<std::vector<uint8_t>> pack_rk_conv_weights(const Shape& logical, const std::vector<int32_t>& d, int elem_bytes) {
  TS_ASSIGN_OR_RETURN(RkConvGeometry g, rk_conv_geometry(logical));
  if (elem_bytes != 1 && elem_bytes != 2)
    return error(StatusCode::invalid_argument, "conv weights: element size ", elem_bytes, " (1 or 2)");
  if (static_cast<int64_t>(d.size()) != g.oc * g.kh * g.kw * g.ic)
    return error(StatusCode::invalid_argument, "conv weights: ", d.size(), " values for shape ", shape_str(logical));
  std::vector<uint8_t> out(g.elements() * elem_bytes, 0);
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t y = 0; y < g.kh; ++y)
      for (int64_t x = 0; x < g.kw; ++x)
        for (int64_t i = 0; i < g.ic; ++i)
          TS_RETURN_IF_ERROR(store(out, rk_conv_weight_index(g, o, y, x, i), d[((o * g.kh + y) * g.kw + x) * g.ic + i],
                                   elem_bytes, "conv"));
  return out;
}

Result<std::vector<uint8_t>> pack_rk_dw_weights(const Shape& logical, const std::vector<int32_t>& d, int elem_bytes) {
  TS_ASSIGN_OR_RETURN(RkDwGeometry g, rk_dw_geometry(logical));
  if (elem_bytes != 1 && elem_bytes != 2)
    return error(StatusCode::invalid_argument, "depthwise weights: element size ", elem_bytes, " (1 or 2)");
  if (static_cast<int64_t>(d.size()) != g.kh * g.kw * g.c)
    return error(StatusCode::invalid_argument, "depthwise weights: ", d.size(), " values for shape ", shape_str(logical));
  std::vector<uint8_t> out(g.elements() * elem_bytes, 0);
  for (int64_t y = 0; y < g.kh; ++y)
    for (int64_t x = 0; x < g.kw; ++x)
      for (int64_t c = 0; c < g.c; ++c)
        TS_RETURN_IF_ERROR(store(out, rk_dw_weight_index(g, y, x, c), d[(y * g.kw + x) * g.c + c], elem_bytes, "depthwise"));
  return out;
}

RkMatmulGeometry rk_matmul_geometry(int64_t n, int64_t k, int elem_bytes) {
  RkMatmulGeometry g;
  g.n = n;
  g.k = k;
  g.kernels = elem_bytes == 1 ? 32 : 16;
  g.np = (n + g.kernels - 1) / g.kernels * g.kernels;
  g.kp = (k + kRkMatmulKBlock - 1) / kRkMatmulKBlock * kRkMatmulKBlock;
  return g;
}

std::vector<uint8_t> pack_rk_matmul_weights(const uint8_t* src, int64_t n, int64_t k, int elem_bytes) {
  const RkMatmulGeometry g = rk_matmul_geometry(n, k, elem_bytes);
  std::vector<uint8_t> out(static_cast<size_t>(g.elements() * elem_bytes), 0);
  // Each kernel's 32-value K runs are contiguous in both layouts: copy them whole.
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k0 = 0; k0 < k; k0 += kRkMatmulKBlock) {
      const int64_t len = std::min<int64_t>(kRkMatmulKBlock, k - k0);
      std::memcpy(out.data() + rk_matmul_weight_index(g, r, k0) * elem_bytes, src + (r * k + k0) * elem_bytes,
                  static_cast<size_t>(len * elem_bytes));
    }
  return out;
}

void quantize_rows_i8(const float* x, int64_t rows, int64_t k, int64_t ld, int8_t* q, float* scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    float amax = 0.0f;
    for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(xr[j]));
    const float s = amax / 127.0f;
    scale[r] = s;
    int8_t* qr = q + r * k;
    if (!(s > 0.0f) || !std::isfinite(s)) {
      // All zero (or not finite: the caller's data is broken; zeros keep the sums defined).
      std::fill(qr, qr + k, int8_t{0});
      if (!std::isfinite(s)) scale[r] = 0.0f;
      continue;
    }
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < k; ++j) {
      const float v = std::round(xr[j] * inv);  // nearest, halves away from zero
      qr[j] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

Result<RowQuantI8> quantize_matrix_i8(const Format& from, const uint8_t* src) {
  if (from.shape.size() != 2)
    return error(StatusCode::invalid_argument, "int8 matmul weights must be [N, K], got ", shape_str(from.shape));
  const int64_t n = from.shape[0], k = from.shape[1];
  TS_ASSIGN_OR_RETURN(int64_t nk, checked_mul(n, k, "int8 matmul weight elements"));
  std::vector<float> f(static_cast<size_t>(nk));
  TS_RETURN_IF_ERROR(convert(from, src, Format{Encoding::f32, Layout::row_major, {n, k}}, f.data())
                         .with_context("int8 matmul weights: dequantizing " + from.to_string()));
  RowQuantI8 r;
  r.q.resize(static_cast<size_t>(nk));
  r.scale.resize(static_cast<size_t>(n));
  quantize_rows_i8(f.data(), n, k, k, r.q.data(), r.scale.data());
  return r;
}

}  // namespace tessera::convert
