// TFLite-exact quantized conv2d, depthwise_conv2d and fully_connected (u8 / i8 activations,
// per-tensor or per-output-channel weights).
//
// Arithmetic (TFLite reference_ops::Conv / reference_integer_ops::ConvPerChannel):
//   acc = sum (w - w_zp) * (x - x_zp) + bias         (int32; padding contributes nothing)
//   y   = clamp(MultiplyByQuantizedMultiplier(acc, M_c) + y_zp, act_lo, act_hi)
// with M_c = in_scale * w_scale_c / out_scale. TFLite computes M in two ways, reproduced
// here: u8 models and per-tensor fully connected use double(float(in_s * w_s)) / out_s
// (GetQuantizedConvolutionMultipler); int8 conv / depthwise and per-channel weights use
// double(in_s) * double(w_s) / double(out_s) (PopulateConvolutionQuantizationParams).
//
// Work is split over output rows with the device's thread pool; each output value is
// computed by exactly one thread with the same integer sums, so results are identical for
// any thread count.
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_conv.h"

namespace tessera::cpu {

namespace {

bool is_8bit(DType t) { return t == DType::u8 || t == DType::i8; }

}  // namespace

Result<ConvQuant> conv_quant(const Node& n, const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                             int64_t oc, bool float_product) {
  for (const Tensor* t : {&x, &w, &y})
    if (!is_8bit(t->dtype) || t->quant.empty())
      return kernel_error(n, "tensor '" + t->name + "' must be u8/i8 with quantization parameters, got " +
                                 dtype_name(t->dtype));
  if (x.quant.per_axis() || y.quant.per_axis())
    return kernel_error(n, "per-axis quantization of activations is not supported");
  if (w.quant.per_axis() && static_cast<int64_t>(w.quant.scale.size()) != oc)
    return kernel_error(n, "filter '" + w.name + "' has " + std::to_string(w.quant.scale.size()) +
                               " scales for " + std::to_string(oc) + " output channels");
  if (bias && bias->dtype != DType::i32) return kernel_error(n, "bias must be i32");
  ConvQuant p;
  p.x_zp = static_cast<int32_t>(x.quant.zero_point_at(0));
  p.y_zp = static_cast<int32_t>(y.quant.zero_point_at(0));
  const float in_s = x.quant.scale[0], out_s = y.quant.scale[0];
  bool legacy = float_product && !w.quant.per_axis();
  p.w_zp.resize(oc);
  p.mult.resize(oc);
  for (int64_t o = 0; o < oc; ++o) {
    const float w_s = w.quant.scale_at(w.quant.per_axis() ? o : 0);
    p.w_zp[o] = static_cast<int32_t>(w.quant.zero_point_at(w.quant.per_axis() ? o : 0));
    double real = legacy ? static_cast<double>(in_s * w_s) / static_cast<double>(out_s)
                         : static_cast<double>(in_s) * static_cast<double>(w_s) / static_cast<double>(out_s);
    p.mult[o] = q::quantize_multiplier(real);
  }
  p.range = q::activation_range(n.get(attr::activation), y.dtype, out_s, p.y_zp);
  // TFLite's builtin CONV_2D and FULLY_CONNECTED run int8 models through ruy, which rounds
  // the requantization once; u8 models (gemmlowp) and DEPTHWISE_CONV_2D round twice.
  p.single_round = n.op != OpKind::depthwise_conv2d && x.dtype == DType::i8;
  return p;
}

namespace {

// The context's operands as conv_quant takes them.
Result<ConvQuant> conv_quant_of(const KernelContext& c, int64_t oc, bool float_product) {
  const Tensor* bias = c.in.size() > 2 && c.in[2] ? c.in[2].t : nullptr;
  return conv_quant(c.n, *c.in[0].t, *c.in[1].t, bias, *c.out[0].t, oc, float_product);
}

// Weights minus their zero point as int16: [rows, k] row-major (rows = output channels,
// or the filter's taps for depthwise).
std::vector<int16_t> centred_weights(const TensorRef& w, int64_t rows, int64_t k, const ConvQuant& p, bool zp_by_col) {
  std::vector<int16_t> out(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) {
      int32_t zp = zp_by_col ? p.w_zp[i] : p.w_zp[r];
      out[r * k + i] = static_cast<int16_t>(q::load(w.data, w.dtype(), r * k + i) - zp);
    }
  return out;
}

// The input minus its zero point as int16, same shape and layout (NHWC).
std::vector<int16_t> centred_input(const KernelContext& c, int32_t zp) {
  const int64_t n = c.in[0].elements();
  std::vector<int16_t> out(static_cast<size_t>(n));
  const uint8_t* x = c.in[0].data;
  const DType t = c.in[0].dtype();
  parallel_rows(c, n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = static_cast<int16_t>(q::load(x, t, i) - zp);
  }, 4096);
  return out;
}

Status conv2d(KernelContext& c) {
  if (c.in[0].dtype() == DType::i16) return conv2d_16x8(c);
  if (c.prepared) return run_packed_conv(c);
  const Shape& xs = c.in[0].shape();
  const Shape& ws = c.in[1].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3];
  const int64_t OC = ws[0], KH = ws[1], KW = ws[2], IC = ws[3];
  const int64_t OH = ys[1], OW = ys[2];
  if (IC != C) return kernel_error(c.n, "grouped convolution is not supported by the quantized kernel");
  TS_ASSIGN_OR_RETURN(ConvQuant p, conv_quant_of(c, OC, c.in[0].dtype() == DType::u8));
  const Window win = window_of(c.n, KH, KW);
  const int64_t K = KH * KW * IC;
  std::vector<int16_t> wc = centred_weights(c.in[1], OC, K, p, false);
  const int32_t* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<int32_t>() : nullptr;
  const std::vector<int16_t> xc = centred_input(c, p.x_zp);
  const DType yt = c.out[0].dtype();
  uint8_t* y = c.out[0].data;
  parallel_rows(c, N * OH, [&](int64_t r0, int64_t r1) {
    std::vector<int16_t> patch(static_cast<size_t>(K));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox) {
        // The receptive field minus the input zero point; padding taps stay 0.
        int16_t* pp = patch.data();
        for (int64_t ky = 0; ky < KH; ++ky) {
          const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
          for (int64_t kx = 0; kx < KW; ++kx, pp += IC) {
            const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) {
              std::memset(pp, 0, IC * sizeof(int16_t));
              continue;
            }
            std::memcpy(pp, xc.data() + ((b * H + iy) * W + ix) * C, IC * sizeof(int16_t));
          }
        }
        const int64_t out_base = ((b * OH + oy) * OW + ox) * OC;
        for (int64_t o = 0; o < OC; ++o) {
          const int16_t* wr = wc.data() + o * K;
          int32_t acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += static_cast<int32_t>(wr[k]) * patch[k];
          q::store(y, yt, out_base + o, conv_requantize(acc, o, bias, p));
        }
      }
    }
  }, 1);
  return Status::Ok();
}

Status depthwise_conv2d(KernelContext& c) {
  if (c.in[0].dtype() == DType::i16) return depthwise_conv2d_16x8(c);
  if (c.prepared) return run_packed_conv(c);
  const Shape& xs = c.in[0].shape();
  const Shape& ws = c.in[1].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3];
  const int64_t KH = ws[1], KW = ws[2], OC = ws[3];
  const int64_t M = OC / C;
  const int64_t OH = ys[1], OW = ys[2];
  TS_ASSIGN_OR_RETURN(ConvQuant p, conv_quant_of(c, OC, c.in[0].dtype() == DType::u8));
  const Window win = window_of(c.n, KH, KW);
  // Filter [1, KH, KW, OC]: row per tap, zero point per output channel (column).
  std::vector<int16_t> wc = centred_weights(c.in[1], KH * KW, OC, p, true);
  const int32_t* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<int32_t>() : nullptr;
  const std::vector<int16_t> xc = centred_input(c, p.x_zp);
  const DType yt = c.out[0].dtype();
  uint8_t* y = c.out[0].data;
  parallel_rows(c, N * OH, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> acc(static_cast<size_t>(OC));
    std::vector<int16_t> xin(static_cast<size_t>(M > 1 ? OC : 0));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t ky = 0; ky < KH; ++ky) {
          const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
          if (iy < 0 || iy >= H) continue;
          for (int64_t kx = 0; kx < KW; ++kx) {
            const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
            if (ix < 0 || ix >= W) continue;
            const int16_t* xr = xc.data() + ((b * H + iy) * W + ix) * C;
            if (M > 1) {  // input channel ic feeds output channels ic*M .. ic*M + M-1
              for (int64_t ic = 0; ic < C; ++ic)
                for (int64_t m = 0; m < M; ++m) xin[ic * M + m] = xr[ic];
              xr = xin.data();
            }
            const int16_t* wr = wc.data() + (ky * KW + kx) * OC;
            int32_t* ap = acc.data();
            for (int64_t o = 0; o < OC; ++o) ap[o] += static_cast<int32_t>(wr[o]) * xr[o];
          }
        }
        const int64_t out_base = ((b * OH + oy) * OW + ox) * OC;
        for (int64_t o = 0; o < OC; ++o) q::store(y, yt, out_base + o, conv_requantize(acc[o], o, bias, p));
      }
    }
  }, 1);
  return Status::Ok();
}

Status fully_connected(KernelContext& c) {
  if (c.in[0].dtype() == DType::i16) return fully_connected_16x8(c);
  if (c.prepared) return run_packed_conv(c);
  const Shape& ws = c.in[1].shape();
  const int64_t OC = ws[0], IC = ws[1];
  const int64_t rows = c.in[0].elements() / IC;
  // TFLite's fully connected takes the legacy float product for per-tensor weights of
  // both u8 and int8 models.
  TS_ASSIGN_OR_RETURN(ConvQuant p, conv_quant_of(c, OC, true));
  std::vector<int16_t> wc = centred_weights(c.in[1], OC, IC, p, false);
  const int32_t* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<int32_t>() : nullptr;
  const uint8_t* x = c.in[0].data;
  const DType xt = c.in[0].dtype(), yt = c.out[0].dtype();
  uint8_t* y = c.out[0].data;
  // Centred input rows, then one thread per block of output channels (a single-row FC,
  // the common case, still spreads over the pool).
  std::vector<int16_t> xc(static_cast<size_t>(rows * IC));
  for (int64_t i = 0; i < rows * IC; ++i) xc[i] = static_cast<int16_t>(q::load(x, xt, i) - p.x_zp);
  parallel_rows(c, OC, [&](int64_t o0, int64_t o1) {
    for (int64_t r = 0; r < rows; ++r) {
      const int16_t* xr = xc.data() + r * IC;
      for (int64_t o = o0; o < o1; ++o) {
        const int16_t* wr = wc.data() + o * IC;
        int32_t acc = 0;
        for (int64_t k = 0; k < IC; ++k) acc += static_cast<int32_t>(wr[k]) * xr[k];
        q::store(y, yt, r * OC + o, conv_requantize(acc, o, bias, p));
      }
    }
  }, 16);
  return Status::Ok();
}

}  // namespace

void register_quant_conv_kernels(KernelTable& t) {
  t.add(OpKind::conv2d, KernelKind::quant, conv2d, prepare_packed_conv2d);
  t.add(OpKind::depthwise_conv2d, KernelKind::quant, depthwise_conv2d, prepare_packed_depthwise);
  t.add(OpKind::fully_connected, KernelKind::quant, fully_connected, prepare_packed_fully_connected);
}

}  // namespace tessera::cpu
