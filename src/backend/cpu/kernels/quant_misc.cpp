// TFLite-exact quantized concat (requantizing inputs whose parameters differ from the
// output's), resize_bilinear (align_corners / half_pixel_centers) and requantize
// (TFLite QUANTIZE of an integer tensor).
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"
#include "backend/cpu/ukernels/lut8.h"

namespace tessera::cpu {

namespace {

// CONCATENATION (reference_ops::ConcatenationWithScaling): an input with the output's
// parameters is copied; others are rescaled in float and rounded half away from zero.
Status concat(KernelContext& c) {
  const Tensor& yt = *c.out[0].t;
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, yt));
  const DType t = yt.dtype;
  const int64_t rank = static_cast<int64_t>(yt.shape.size());
  int64_t axis = c.n.get(attr::axis);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= yt.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= yt.shape[d];
  const float so = yt.quant.scale[0];
  const int32_t zo = static_cast<int32_t>(yt.quant.zero_point_at(0));
  const q::Range r = q::activation_range(c.n.get(attr::activation), t, so, zo);
  const float inverse_output_scale = 1.f / so;
  const int es = dtype_size(t);
  int64_t out_offset = 0;
  const int64_t out_row = yt.shape[axis] * inner;
  for (const TensorRef& in : c.in) {
    TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *in.t));
    if (in.dtype() != t) return kernel_error(c.n, "input '" + in.t->name + "' dtype differs from the output's");
    const int64_t len = in.shape()[axis] * inner;
    const float si = in.t->quant.scale[0];
    const int32_t zi = static_cast<int32_t>(in.t->quant.zero_point_at(0));
    const bool same = si == so && zi == zo;
    const float scale = si * inverse_output_scale;
    const float bias = -zi * scale;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t src = o * len, dst = o * out_row + out_offset;
      if (same && r.lo == q::qmin(t) && r.hi == q::qmax(t)) {
        std::memcpy(c.out[0].data + dst * es, in.data + src * es, static_cast<size_t>(len * es));
        continue;
      }
      for (int64_t i = 0; i < len; ++i) {
        const int32_t v = q::load(in.data, t, src + i);
        const int32_t out = same ? v : static_cast<int32_t>(std::round(v * scale + bias)) + zo;
        q::store(c.out[0].data, t, dst + i, q::clamp(out, r.lo, r.hi));
      }
    }
    out_offset += len;
  }
  return Status::Ok();
}

// RESIZE_BILINEAR on quantized values (input and output share parameters).
//  - i8 / i16: reference_ops::ResizeBilinearInteger, 10-bit fixed-point positions and a
//    rounded 20-bit product;
//  - u8: the interpreter's builtin float path (optimized ResizeBilinearGenericSmallChannel):
//    the four corner weights are multiplied out first, the weighted values summed in the
//    order (y0,x0), (y0,x1), (y1,x0), (y1,x1), and 0.5 added before truncation. (The float
//    reference kernel, which truncates without the offset, differs by one step on about
//    half of DeepLab's upsampled scores: measured with the TFLite oracle.)
constexpr float kRoundingOffset = 0.5f;

Status resize_bilinear(KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t, true));
  if (c.in[0].t->quant != c.out[0].t->quant || c.in[0].dtype() != c.out[0].dtype())
    return kernel_error(c.n, "input and output must share dtype and quantization");
  const Shape& xs = c.in[0].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2];
  const bool align = c.n.get(attr::align_corners) != 0;
  const bool half = c.n.get(attr::half_pixel_centers) != 0;
  const DType t = c.in[0].dtype();
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  auto in_at = [&](int64_t b, int64_t iy, int64_t ix, int64_t ch) { return q::load(x, t, ((b * H + iy) * W + ix) * C + ch); };
  if (t != DType::u8) {
    auto scale10 = [&](int64_t in, int64_t out) -> int32_t {
      if (align && out > 1) return static_cast<int32_t>(((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1));
      return static_cast<int32_t>(((1 << 10) * in + out / 2) / out);
    };
    const int32_t hs = scale10(H, OH), ws = scale10(W, OW);
    auto interp = [&](int64_t v, int32_t s, int64_t size, int32_t* scaled, int64_t* lo, int64_t* hi) {
      *scaled = half ? static_cast<int32_t>(v) * s + s / 2 - (1 << 9) : static_cast<int32_t>(v) * s;
      *lo = std::max<int64_t>(*scaled / (1 << 10), 0);
      *hi = std::min<int64_t>((*scaled + (1 << 10) - 1) / (1 << 10), size - 1);
    };
    for (int64_t b = 0; b < N; ++b)
      for (int64_t oy = 0; oy < OH; ++oy) {
        int32_t iy;
        int64_t y0, y1;
        interp(oy, hs, H, &iy, &y0, &y1);
        for (int64_t ox = 0; ox < OW; ++ox) {
          int32_t ix;
          int64_t x0, x1;
          interp(ox, ws, W, &ix, &x0, &x1);
          const int64_t dy = iy - (1 << 10) * y0, dx = ix - (1 << 10) * x0;
          for (int64_t ch = 0; ch < C; ++ch) {
            const int64_t v = in_at(b, y0, x0, ch) * ((1 << 10) - dy) * ((1 << 10) - dx) +
                              in_at(b, y1, x0, ch) * dy * ((1 << 10) - dx) +
                              in_at(b, y0, x1, ch) * ((1 << 10) - dy) * dx + in_at(b, y1, x1, ch) * dy * dx;
            const int64_t round = v > 0 ? (1 << 19) : -(1 << 19);
            q::store(y, t, ((b * OH + oy) * OW + ox) * C + ch, static_cast<int32_t>((v + round) / (1 << 20)));
          }
        }
      }
    return Status::Ok();
  }
  auto scale_f = [&](int64_t in, int64_t out) {
    if (align && out > 1) return static_cast<float>(in - 1) / static_cast<float>(out - 1);
    return static_cast<float>(in) / static_cast<float>(out);
  };
  const float hs = scale_f(H, OH), ws = scale_f(W, OW);
  auto interp = [&](int64_t v, float s, int64_t size, float* scaled, int64_t* lo, int64_t* hi) {
    *scaled = half ? (static_cast<float>(v) + 0.5f) * s - 0.5f : static_cast<float>(v) * s;
    *lo = std::max<int64_t>(static_cast<int64_t>(std::floor(*scaled)), 0);
    *hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(*scaled)), size - 1);
  };
  for (int64_t b = 0; b < N; ++b)
    for (int64_t oy = 0; oy < OH; ++oy) {
      float iy;
      int64_t y0, y1;
      interp(oy, hs, H, &iy, &y0, &y1);
      for (int64_t ox = 0; ox < OW; ++ox) {
        float ix;
        int64_t x0, x1;
        interp(ox, ws, W, &ix, &x0, &x1);
        const float fy = iy - y0, fx = ix - x0;
        // The four weights first, then the sum in this order, plus 0.5 and truncated.
        const float w00 = (1 - fy) * (1 - fx), w01 = (1 - fy) * fx, w10 = fy * (1 - fx), w11 = fy * fx;
        for (int64_t ch = 0; ch < C; ++ch) {
          const float v = in_at(b, y0, x0, ch) * w00 + in_at(b, y0, x1, ch) * w01 + in_at(b, y1, x0, ch) * w10 +
                          in_at(b, y1, x1, ch) * w11 + kRoundingOffset;
          q::store(y, t, ((b * OH + oy) * OW + ox) * C + ch, static_cast<int32_t>(static_cast<uint8_t>(v)));
        }
      }
    }
  return Status::Ok();
}

// REQUANTIZE (TFLite quantize.cc for integer input: multiplier in_s / out_s in double; the
// int16 <-> int32 forms as TensorFlow Lite Micro's quantize kernel, whose results TFLite's
// Requantize shares).
Status requantize(KernelContext& c) {
  for (const TensorRef* r : {&c.in[0], &c.out[0]}) {
    if (r->dtype() == DType::i32 && !r->t->quant.empty() && !r->t->quant.per_axis()) continue;
    TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *r->t, true));
  }
  const float si = c.in[0].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const int32_t zi = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t zo = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  const DType ti = c.in[0].dtype(), to = c.out[0].dtype();
  const q::Requantize rq = q::requantize_params(si, zi, so, zo, to);
  const q::Multiplier m = rq.m;
  if (ti == DType::u8 || ti == DType::i8) {  // 8-bit input: the 256 possible results first, then a lookup
    int32_t table[256];
    for (int v = 0; v < 256; ++v) table[v] = rq.code(ti == DType::u8 ? v : static_cast<int8_t>(v));
    const int64_t n = c.in[0].elements();
    const uint8_t* x = c.in[0].data;
    if (to == DType::u8 || to == DType::i8) {  // 8-bit codes: a byte table
      uint8_t bytes[256];
      for (int v = 0; v < 256; ++v) bytes[v] = static_cast<uint8_t>(table[v]);
      uk::lut8_kernel()(x, n, bytes, c.out[0].data);
      return Status::Ok();
    }
    for (int64_t i = 0; i < n; ++i) q::store(c.out[0].data, to, i, table[x[i]]);
    return Status::Ok();
  }
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const int32_t v = q::multiply(q::load(c.in[0].data, ti, i) - zi, m) + zo;
    q::store(c.out[0].data, to, i, q::clamp(v, q::qmin(to), q::qmax(to)));
  }
  return Status::Ok();
}

}  // namespace

void register_quant_misc_kernels(KernelTable& t) {
  t.add(OpKind::concat, KernelKind::quant, concat);
  t.add(OpKind::resize_bilinear, KernelKind::quant, resize_bilinear);
  t.add(OpKind::requantize, KernelKind::quant, requantize);
  t.add(OpKind::requantize, KernelKind::plain, requantize);  // int32 input (not a quantized dtype)
}

}  // namespace tessera::cpu
