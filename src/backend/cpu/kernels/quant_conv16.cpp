// TFLite's 16x8 quantization of conv2d, depthwise_conv2d and fully_connected: int16
// activations (zero point 0), int8 weights (zero point 0, per-tensor or per-channel), int64
// (or int32) biases, int16 output.
//
// Arithmetic (reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel /
// FullyConnected with int16 input, which TFLite's builtin kernels run for this form):
//   acc = sum w * x + bias                      (int64)
//   y   = clamp(MultiplyByQuantizedMultiplier(acc, M_c), act_lo, act_hi)   (int64 form)
// with M_c = double(in_s) * double(w_s_c) / double(out_s) for conv and depthwise; fully
// connected with per-tensor weights uses double(float(in_s * w_s)) / out_s.
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_conv.h"

namespace tessera::cpu {

Result<Quant16> quant16(const KernelContext& c, int64_t oc, bool float_product) {
  const Tensor &x = *c.in[0].t, &w = *c.in[1].t, &y = *c.out[0].t;
  if (x.dtype != DType::i16 || y.dtype != DType::i16 || w.dtype != DType::i8 || x.quant.empty() || y.quant.empty() ||
      w.quant.empty())
    return kernel_error(c.n, "16x8 form: input and output must be i16 and the filter '" + w.name +
                                 "' i8, all with quantization parameters");
  if (x.quant.per_axis() || y.quant.per_axis()) return kernel_error(c.n, "per-axis activation quantization");
  if (x.quant.zero_point_at(0) != 0 || y.quant.zero_point_at(0) != 0)
    return kernel_error(c.n, "int16 activations must have zero point 0");
  const int64_t scales = static_cast<int64_t>(w.quant.scale.size());
  if (w.quant.per_axis() && scales != oc)
    return kernel_error(c.n, "filter '" + w.name + "' has " + std::to_string(scales) + " scales for " +
                                 std::to_string(oc) + " output channels");
  for (int64_t z : w.quant.zero_point)
    if (z != 0) return kernel_error(c.n, "filter '" + w.name + "' of the 16x8 form has a non-zero zero point");
  Quant16 p;
  const float in_s = x.quant.scale[0], out_s = y.quant.scale[0];
  p.mult.resize(static_cast<size_t>(oc));
  for (int64_t o = 0; o < oc; ++o) {
    const float w_s = w.quant.scale_at(w.quant.per_axis() ? o : 0);
    const double real = float_product && !w.quant.per_axis()
                            ? static_cast<double>(in_s * w_s) / static_cast<double>(out_s)
                            : static_cast<double>(in_s) * static_cast<double>(w_s) / static_cast<double>(out_s);
    p.mult[o] = q::quantize_multiplier(real);
    // common.h's int64 MultiplyByQuantizedMultiplier takes shifts below 8 only.
    if (p.mult[o].shift > 7)
      return kernel_error(c.n, "scales give output channel " + std::to_string(o) + " a multiplier of " +
                                   std::to_string(real) + ", above TFLite's 2^7 for the 16x8 form");
  }
  p.range = q::activation_range(c.n.get(attr::activation), DType::i16, out_s, 0);
  if (c.in.size() > 2 && c.in[2]) {
    const TensorRef& b = c.in[2];
    if (b.elements() != oc) return kernel_error(c.n, "bias '" + b.t->name + "' has the wrong number of values");
    if (b.dtype() == DType::i64) p.bias64 = b.as<int64_t>();
    else if (b.dtype() == DType::i32) p.bias32 = b.as<int32_t>();
    else return kernel_error(c.n, std::string("bias of the 16x8 form must be i64 or i32, got ") + dtype_name(b.dtype()));
  }
  return p;
}

Status conv2d_16x8(KernelContext& c) {
  const Shape& xs = c.in[0].shape();
  const Shape& ws = c.in[1].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3];
  const int64_t OC = ws[0], KH = ws[1], KW = ws[2], IC = ws[3];
  const int64_t OH = ys[1], OW = ys[2];
  if (IC != C) return kernel_error(c.n, "grouped convolution is not supported by the 16x8 kernel");
  TS_ASSIGN_OR_RETURN(Quant16 p, quant16(c, OC, false));
  const Window win = window_of(c.n, KH, KW);
  const int16_t* x = c.in[0].as<int16_t>();
  const int8_t* w = c.in[1].as<int8_t>();
  int16_t* y = c.out[0].as<int16_t>();
  parallel_rows(c, N * OH, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < OC; ++o) {
          int64_t acc = 0;
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
              if (ix < 0 || ix >= W) continue;
              const int16_t* xr = x + ((b * H + iy) * W + ix) * C;
              const int8_t* wr = w + ((o * KH + ky) * KW + kx) * IC;
              int64_t dot = 0;
              for (int64_t i = 0; i < C; ++i) dot += static_cast<int32_t>(wr[i]) * xr[i];
              acc += dot;
            }
          }
          y[((b * OH + oy) * OW + ox) * OC + o] = p.requantize(acc, o);
        }
    }
  }, 1);
  return Status::Ok();
}

Status depthwise_conv2d_16x8(KernelContext& c) {
  const Shape& xs = c.in[0].shape();
  const Shape& ws = c.in[1].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3];
  const int64_t KH = ws[1], KW = ws[2], OC = ws[3];
  const int64_t M = OC / C;
  const int64_t OH = ys[1], OW = ys[2];
  TS_ASSIGN_OR_RETURN(Quant16 p, quant16(c, OC, false));
  const Window win = window_of(c.n, KH, KW);
  const int16_t* x = c.in[0].as<int16_t>();
  const int8_t* w = c.in[1].as<int8_t>();
  int16_t* y = c.out[0].as<int16_t>();
  parallel_rows(c, N * OH, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < OC; ++o) {
          int64_t acc = 0;
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
              if (ix < 0 || ix >= W) continue;
              acc += static_cast<int64_t>(w[(ky * KW + kx) * OC + o]) * x[((b * H + iy) * W + ix) * C + o / M];
            }
          }
          y[((b * OH + oy) * OW + ox) * OC + o] = p.requantize(acc, o);
        }
    }
  }, 1);
  return Status::Ok();
}

Status fully_connected_16x8(KernelContext& c) {
  const int64_t OC = c.in[1].shape()[0], IC = c.in[1].shape()[1];
  const int64_t rows = c.in[0].elements() / IC;
  TS_ASSIGN_OR_RETURN(Quant16 p, quant16(c, OC, true));
  const int16_t* x = c.in[0].as<int16_t>();
  const int8_t* w = c.in[1].as<int8_t>();
  int16_t* y = c.out[0].as<int16_t>();
  parallel_rows(c, OC, [&](int64_t o0, int64_t o1) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = o0; o < o1; ++o) {
        int64_t acc = 0;
        for (int64_t k = 0; k < IC; ++k) acc += static_cast<int32_t>(w[o * IC + k]) * x[r * IC + k];
        y[r * OC + o] = p.requantize(acc, o);
      }
  }, 16);
  return Status::Ok();
}

}  // namespace tessera::cpu
