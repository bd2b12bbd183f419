// transpose_conv2d (TFLite TRANSPOSE_CONV): f32, u8 / i8 (per-tensor or per-channel weights)
// and the 16x8 form (int16 activations, int8 weights, int64 bias).
//
// TFLite scatters: input pixel (iy, ix) adds x * w[oc, ky, kx, :] into output cell
// (iy * sh - pad_top + ky, ix * sw - pad_left + kx). Here each output cell gathers the
// (input pixel, tap) pairs that reach it instead, so output rows split over threads with no
// shared sums. The integer forms are exact whatever the order:
//   u8 / i8:  acc = sum (x - x_zp) * (w - w_zp) + bias (int32), then TFLite's double-rounding
//             MultiplyByQuantizedMultiplier, + y_zp, clamp (reference_ops::TransposeConv,
//             reference_integer_ops::TransposeConv; u8 takes the legacy float-product
//             multiplier, i8 the per-channel double product, as transpose_conv.cc Prepare)
//   16x8:     acc = sum x * w + bias (int64), the int64 MultiplyByQuantizedMultiplier, clamp
// f32 sums each (pixel, tap) dot product over input channels in order; TFLite's optimized
// kernel (a GEMM then col2im) adds the same products in another order.
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_conv.h"

namespace tessera::cpu {

namespace {

struct Geometry {
  int64_t N, H, W, C, OH, OW, OC, KH, KW, sh, sw, pt, pl;
};

Geometry geometry(const KernelContext& c) {
  const Shape& xs = c.in[0].shape();
  const Shape& ws = c.in[1].shape();
  const Shape& ys = c.out[0].shape();
  return {xs[0], xs[1], xs[2], xs[3], ys[1], ys[2], ys[3], ws[1], ws[2],
          c.n.get(attr::stride_h), c.n.get(attr::stride_w), c.n.get(attr::pad_top), c.n.get(attr::pad_left)};
}

// The run's output_shape input (optional) must be the shape the model was compiled for.
Status check_output_shape(const KernelContext& c) {
  if (c.in.size() < 4 || !c.in[3]) return Status::Ok();
  const int32_t* s = c.in[3].as<int32_t>();
  const Shape& ys = c.out[0].shape();
  for (int d = 0; d < 4; ++d)
    if (s[d] != ys[d])
      return kernel_error(c.n, "output_shape input '" + c.in[3].t->name + "' is [" + std::to_string(s[0]) + "," +
                                   std::to_string(s[1]) + "," + std::to_string(s[2]) + "," + std::to_string(s[3]) +
                                   "] but the model was compiled for " + shape_str(ys));
  return Status::Ok();
}

// For output cell (b, oy, ox): calls f(input pixel offset, filter tap ky * KW + kx) for every
// pair that reaches it.
template <typename F>
void for_each_source(const Geometry& g, int64_t b, int64_t oy, int64_t ox, F&& f) {
  for (int64_t ky = 0; ky < g.KH; ++ky) {
    const int64_t ty = oy + g.pt - ky;
    if (ty < 0 || ty % g.sh) continue;
    const int64_t iy = ty / g.sh;
    if (iy >= g.H) continue;
    for (int64_t kx = 0; kx < g.KW; ++kx) {
      const int64_t tx = ox + g.pl - kx;
      if (tx < 0 || tx % g.sw) continue;
      const int64_t ix = tx / g.sw;
      if (ix >= g.W) continue;
      f(((b * g.H + iy) * g.W + ix) * g.C, ky * g.KW + kx);
    }
  }
}

Status transpose_conv_f32(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_output_shape(c));
  if (c.in[1].dtype() != DType::f32) return kernel_error(c.n, "filter must be f32 for a float input");
  const Geometry g = geometry(c);
  const float* x = c.in[0].as<float>();
  const float* w = c.in[1].as<float>();
  const float* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const int64_t taps = g.KH * g.KW;
  parallel_rows(c, g.N * g.OH, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / g.OH, oy = r % g.OH;
      for (int64_t ox = 0; ox < g.OW; ++ox) {
        float* yo = y + ((b * g.OH + oy) * g.OW + ox) * g.OC;
        for (int64_t o = 0; o < g.OC; ++o) yo[o] = 0.0f;
        for_each_source(g, b, oy, ox, [&](int64_t xi, int64_t tap) {
          const float* xr = x + xi;
          for (int64_t o = 0; o < g.OC; ++o) {
            const float* wr = w + (o * taps + tap) * g.C;
            float dot = 0.0f;
            for (int64_t i = 0; i < g.C; ++i) dot += xr[i] * wr[i];
            yo[o] += dot;
          }
        });
        for (int64_t o = 0; o < g.OC; ++o) yo[o] = activate(yo[o] + (bias ? bias[o] : 0.0f), act);
      }
    }
  }, 1);
  return Status::Ok();
}

Status transpose_conv_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_output_shape(c));
  const Geometry g = geometry(c);
  const int64_t taps = g.KH * g.KW;
  const DType xt = c.in[0].dtype(), wt = c.in[1].dtype(), yt = c.out[0].dtype();
  if (xt == DType::i16) {
    // The 16x8 form: the conv2d parameters (per-channel double product, int64 rescale).
    TS_ASSIGN_OR_RETURN(Quant16 p, quant16(c, g.OC, false));
    const int16_t* x = c.in[0].as<int16_t>();
    const int8_t* w = c.in[1].as<int8_t>();
    int16_t* y = c.out[0].as<int16_t>();
    parallel_rows(c, g.N * g.OH, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> acc(static_cast<size_t>(g.OC));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / g.OH, oy = r % g.OH;
        for (int64_t ox = 0; ox < g.OW; ++ox) {
          std::fill(acc.begin(), acc.end(), 0);
          for_each_source(g, b, oy, ox, [&](int64_t xi, int64_t tap) {
            for (int64_t o = 0; o < g.OC; ++o) {
              const int8_t* wr = w + (o * taps + tap) * g.C;
              int64_t dot = 0;
              for (int64_t i = 0; i < g.C; ++i) dot += static_cast<int32_t>(wr[i]) * x[xi + i];
              acc[o] += dot;
            }
          });
          int16_t* yo = y + ((b * g.OH + oy) * g.OW + ox) * g.OC;
          for (int64_t o = 0; o < g.OC; ++o) yo[o] = p.requantize(acc[o], o);
        }
      }
    }, 1);
    return Status::Ok();
  }
  if (wt != DType::u8 && wt != DType::i8) return kernel_error(c.n, "filter must be u8/i8 for a quantized input");
  const Tensor* bias_t = c.in.size() > 2 && c.in[2] ? c.in[2].t : nullptr;
  TS_ASSIGN_OR_RETURN(ConvQuant p, conv_quant(c.n, *c.in[0].t, *c.in[1].t, bias_t, *c.out[0].t, g.OC, xt == DType::u8));
  p.single_round = false;  // transpose_conv.cc requantizes with the double-rounding multiply
  const int32_t* bias = bias_t ? c.in[2].as<int32_t>() : nullptr;
  // Operands less their zero points.
  std::vector<int16_t> xc(static_cast<size_t>(c.in[0].elements()));
  for (int64_t i = 0; i < c.in[0].elements(); ++i) xc[i] = static_cast<int16_t>(q::load(c.in[0].data, xt, i) - p.x_zp);
  std::vector<int16_t> wc(static_cast<size_t>(c.in[1].elements()));
  const int64_t per_oc = taps * g.C;
  for (int64_t i = 0; i < c.in[1].elements(); ++i) wc[i] = static_cast<int16_t>(q::load(c.in[1].data, wt, i) - p.w_zp[i / per_oc]);
  uint8_t* y = c.out[0].data;
  parallel_rows(c, g.N * g.OH, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> acc(static_cast<size_t>(g.OC));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / g.OH, oy = r % g.OH;
      for (int64_t ox = 0; ox < g.OW; ++ox) {
        std::fill(acc.begin(), acc.end(), 0);
        for_each_source(g, b, oy, ox, [&](int64_t xi, int64_t tap) {
          const int16_t* xr = xc.data() + xi;
          for (int64_t o = 0; o < g.OC; ++o) {
            const int16_t* wr = wc.data() + (o * taps + tap) * g.C;
            int32_t dot = 0;
            for (int64_t i = 0; i < g.C; ++i) dot += static_cast<int32_t>(wr[i]) * xr[i];
            acc[o] += dot;
          }
        });
        const int64_t base = ((b * g.OH + oy) * g.OW + ox) * g.OC;
        for (int64_t o = 0; o < g.OC; ++o) q::store(y, yt, base + o, conv_requantize(acc[o], o, bias, p));
      }
    }
  }, 1);
  return Status::Ok();
}

}  // namespace

void register_transpose_conv_kernels(KernelTable& t) {
  t.add(OpKind::transpose_conv2d, KernelKind::plain, transpose_conv_f32);
  t.add(OpKind::transpose_conv2d, KernelKind::quant, transpose_conv_q);
}

}  // namespace tessera::cpu
