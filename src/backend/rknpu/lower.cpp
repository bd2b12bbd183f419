// Lowering of conv2d, depthwise_conv2d, fully connected, pooling, channel slices and
// concatenations to NPU operations (lookup tables: lower_eltwise.cpp; element-wise ADD, SUB,
// MUL: lower_binary.cpp; flat tensors' slices, reshapes and concatenations: lower_flat.cpp; nearest x2 resize: lower_resize.cpp; float matmul: lower_matmul.cpp; the requantization tables and the two-pass split: lower_requant.cpp).
//
// Arithmetic (docs/rknpu.md "Arithmetic"): feature maps hold int8 values a = q - off, where
// off = 0x80 for u8 tensors and 0 for i8 (rknpu.md: u8 is offset by 0x80). Weights are
// packed as d = w - w_zp. When every d fits int8 the MAC array runs int8: the padding value
// is the input zero point (in_zp - off) and the bias absorbs the input zero point,
// bias' = bias - (in_zp - off) * sum(d) (rknpu.md). Otherwise (uint8 models whose weights
// span more than 255 around their zero point, which is most of them) the CNA converts each
// input to int16, a + (off - in_zp) = q - in_zp, and the MAC array runs int16 with int16
// weights: exact, at half the MAC rate. The DPU then adds the bias and multiplies twice
// (BS, BN: per channel from the table), clamps (BN ReLU/ReLU-X) and divides by 2^k with
// rounding in OUT_CVT, adding the output offset: TFLite's rounding point, see lower_conv.
#include "backend/rknpu/lower.h"
#include "backend/rknpu/lower_internal.h"

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "backend/rknpu/flat.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "convert/rk_weights.h"
#include "ops/quant_math.h"

namespace tessera::rknpu {

using namespace detail;

namespace detail {

Status no(const Node& n, const std::string& why) {
  return error(StatusCode::unsupported, why);
}

int32_t storage_offset(DType t) { return t == DType::u8 ? kU8Offset : 0; }

bool quantized8(const Tensor& t) { return (t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty(); }

std::string dt(const Tensor& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

// Reads a u8/i8 constant as int32 values.
std::vector<int32_t> const_values(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.elements()));
  const uint8_t* p = t.data->data;
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.dtype == DType::u8 ? p[i] : static_cast<int8_t>(p[i]);
  return v;
}

int32_t read_bias(const std::vector<uint8_t>& table, int64_t c) {
  int32_t b;
  std::memcpy(&b, table.data() + c * kBsEntryBytes, 4);
  return b;
}

void put_bs_entry(std::vector<uint8_t>& table, int64_t c, int32_t bias, Scale16 mul) {
  uint8_t* e = table.data() + c * kBsEntryBytes;
  int16_t m = static_cast<int16_t>(mul.mantissa);
  std::memcpy(e, &bias, 4);
  std::memcpy(e + 4, &m, 2);
  e[6] = static_cast<uint8_t>(mul.shift);
  e[7] = 0;
}

// Activation: a TFLite fused activation becomes output saturation when the output's
// quantized range already ends at the activation's bounds, otherwise a ReLU / ReLU-X clamp
// in the DPU at `unit` (the real value of one unit where the clamp is applied).
Status lower_activation(const Node& n, const Tensor& out, double unit, bool& relu, bool& relux, int32_t& relux_value) {
  std::string act = n.get(attr::activation);
  if (act == "none") return Status::Ok();
  if (act != "relu" && act != "relu6")
    return no(n, "activation '" + act + "' has no DPU form (relu and relu6 only)");
  const int64_t zp = out.quant.zero_point_at(0);
  const double so = out.quant.scale_at(0);
  const int64_t qmin = out.dtype == DType::u8 ? 0 : -128, qmax = out.dtype == DType::u8 ? 255 : 127;
  if (zp > qmin) relu = true;  // 0.0 is inside the range: clamp at 0
  if (act == "relu6" && zp + std::lround(6.0 / so) < qmax) {
    relux = true;
    double t = std::round(6.0 / unit);
    if (t > std::numeric_limits<int32_t>::max()) return no(n, "relu6 bound does not fit the ReLU-X compare value");
    relux_value = static_cast<int32_t>(t);
    relu = true;
  }
  return Status::Ok();
}

Status check_feature(const Node& n, const Tensor& t, const char* what) {
  if (!quantized8(t)) return no(n, std::string(what) + " '" + t.name + "' is " + dt(t) + ", the NPU runs u8/i8 quantized tensors only");
  if (t.quant.per_axis()) return no(n, std::string(what) + " '" + t.name + "' is quantized per channel; feature maps must be per tensor");
  if (t.shape.size() != 4) return no(n, std::string(what) + " '" + t.name + "' " + dt(t) + " is not a 4-D NHWC feature map");
  if (t.data) return no(n, std::string(what) + " '" + t.name + "' is a constant, not a feature map");
  const int64_t zp = t.quant.zero_point_at(0);
  if (zp < (t.dtype == DType::u8 ? 0 : -128) || zp > (t.dtype == DType::u8 ? 255 : 127))
    return no(n, std::string(what) + " '" + t.name + "' has zero point " + std::to_string(zp) + " outside its dtype");
  if (t.shape[0] != 1) return no(n, std::string(what) + " '" + t.name + "' has batch " + std::to_string(t.shape[0]) + "; the NPU path runs batch 1");
  // Field limits (register database): CNA DATAIN_WIDTH/HEIGHT 11 bits, DPU cube channel 13 bits.
  if (!fits(regs::CNA::DATA_SIZE0__DATAIN_WIDTH, t.shape[2]) || !fits(regs::CNA::DATA_SIZE0__DATAIN_HEIGHT, t.shape[1]))
    return no(n, std::string(what) + " '" + t.name + "' is " + std::to_string(t.shape[1]) + "x" + std::to_string(t.shape[2]) +
                     "; width and height must be <= " + std::to_string(regs::CNA::DATA_SIZE0__DATAIN_WIDTH.max()));
  if (!fits(regs::DPU::DATA_CUBE_CHANNEL__CHANNEL, t.shape[3] - 1))
    return no(n, std::string(what) + " '" + t.name + "' has " + std::to_string(t.shape[3]) + " channels, above the DPU's " +
                     std::to_string(regs::DPU::DATA_CUBE_CHANNEL__CHANNEL.max() + 1));
  return Status::Ok();
}

// Channel copies: whole 16-channel surfaces of NC1HWC2 move unchanged (same H and W, so the
// same surface stride on both sides) when the quantization does not change. A
// requantizing concat or slice stays on the cpu.
NpuOp copy_op(const Node& n, TensorId x, TensorId y, const Shape& s, int64_t src_c0, int64_t dst_c0, int64_t channels) {
  NpuOp op;
  op.type = NpuOpType::copy;
  op.label = n.label();
  op.input = x;
  op.output = y;
  op.in_h = op.out_h = s[1];
  op.in_w = op.out_w = s[2];
  op.in_c = op.out_c = channels;
  op.src_c0 = src_c0;
  op.dst_c0 = dst_c0;
  op.out_scale = Scale16{1, 0};
  return op;
}

Result<Cube> eltwise_cube(const Graph& g, const Node& n, TensorId id, const char* what) {
  const Tensor& t = g.tensor(id);
  if (is_flat(g, id)) {
    const int64_t zp = t.quant.zero_point_at(0);
    if (zp < (t.dtype == DType::u8 ? 0 : -128) || zp > (t.dtype == DType::u8 ? 255 : 127))
      return no(n, std::string(what) + " '" + t.name + "' has zero point " + std::to_string(zp) + " outside its dtype");
    auto c = flat_cube(t.elements() / kC2);
    if (!c.ok()) return no(n, std::string(what) + " '" + t.name + "' " + dt(t) + ": " + c.status().message());
    return Cube{c->h, c->w, kC2};
  }
  TS_RETURN_IF_ERROR(check_feature(n, t, what));
  return Cube{t.shape[1], t.shape[2], t.shape[3]};
}

}  // namespace detail

namespace {

// The tensors of a convolution as the NPU sees them: x [1,H,W,IC], w [OC,KH,KW,IC] (conv) or
// [1,KH,KW,C] (depthwise), y [1,OH,OW,OC]; a fully connected node passes 4-D views of its
// rank-2 tensors. `fc`: TFLite's fully connected, whose per-tensor multiplier is always the
// legacy float product.
struct ConvTensors {
  const Tensor& x;
  const Tensor& w;
  const Tensor* b;  // i32 [OC] or null
  const Tensor& y;
  bool depthwise = false;
  bool fc = false;
};

// Weights [A, KH, KW, B] (conv: A = OC, B = IC; depthwise: A = 1, B = C) dilated by
// (dh, dw) -> the kernel they span, [A, (KH-1)*dh+1, (KW-1)*dw+1, B], zero between taps.
std::vector<int32_t> expand_dilated(const std::vector<int32_t>& d, const Shape& s, int64_t dh, int64_t dw) {
  const int64_t a = s[0], kh = s[1], kw = s[2], b = s[3];
  const int64_t eh = (kh - 1) * dh + 1, ew = (kw - 1) * dw + 1;
  std::vector<int32_t> e(static_cast<size_t>(a * eh * ew * b), 0);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        std::copy_n(d.begin() + ((i * kh + y) * kw + x) * b, b, e.begin() + ((i * eh + y * dh) * ew + x * dw) * b);
  return e;
}

Result<NpuOp> lower_conv_tensors(const Node& n, const ConvTensors& t, const LowerOptions& opts) {
  const bool dw = t.depthwise;
  NpuOp op;
  op.type = dw ? NpuOpType::depthwise : NpuOpType::conv;
  op.nodes = {};
  op.label = n.label();
  const Tensor& x = t.x;
  const Tensor& w = t.w;
  const Tensor& y = t.y;
  TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  if (x.dtype != y.dtype) return no(n, "input and output dtypes differ");
  if (!quantized8(w) || !w.data) return no(n, "weights '" + w.name + "' are not constant u8/i8 quantized (" + dt(w) + ")");
  if (w.dtype != x.dtype && !(x.dtype == DType::i8)) return no(n, "u8 input with " + std::string(dtype_name(w.dtype)) + " weights");
  const bool has_bias = t.b != nullptr;
  if (has_bias) {
    const Tensor& b = *t.b;
    if (b.dtype != DType::i32 || !b.data) return no(n, "bias '" + b.name + "' is not a constant i32 tensor");
  }
  // fully_connected lowers as a 1x1 convolution: no window attributes (stride 1, no
  // dilation or padding).
  const bool window = attr::declares(n.op, attr::dilation_h);
  const int64_t dil_h = window ? n.get(attr::dilation_h) : 1, dil_w = window ? n.get(attr::dilation_w) : 1;
  if (dil_h < 1 || dil_w < 1) return no(n, "dilation " + std::to_string(dil_h) + "x" + std::to_string(dil_w));

  op.input = n.inputs[0];
  op.output = n.outputs[0];
  op.in_h = x.shape[1], op.in_w = x.shape[2], op.in_c = x.shape[3];
  op.out_h = y.shape[1], op.out_w = y.shape[2], op.out_c = y.shape[3];
  // A dilated kernel runs as the kernel it spans, (k - 1) * dilation + 1, with zero weights
  // between the taps (expand_dilated): the same sums, exactly, for the MACs of the span.
  // The CNA's atrous fields are not used: their encoding is not documented.
  op.kh = (w.shape[1] - 1) * dil_h + 1, op.kw = (w.shape[2] - 1) * dil_w + 1;
  op.stride_h = window ? n.get(attr::stride_h) : 1, op.stride_w = window ? n.get(attr::stride_w) : 1;
  op.pad_top = window ? n.get(attr::pad_top) : 0, op.pad_left = window ? n.get(attr::pad_left) : 0;
  // Field limits (register database; rknpu.md): kernel <= 31, stride <= 7, top/left pad <= 15.
  if (!fits(regs::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH, op.kw) || !fits(regs::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT, op.kh))
    return no(n, "kernel " + std::to_string(op.kh) + "x" + std::to_string(op.kw) +
                     (dil_h > 1 || dil_w > 1 ? " (" + std::to_string(w.shape[1]) + "x" + std::to_string(w.shape[2]) + " dilated " +
                                                   std::to_string(dil_h) + "x" + std::to_string(dil_w) + ")"
                                             : std::string()) +
                     " exceeds the CNA's " + std::to_string(regs::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH.max()));
  if (!fits(regs::CNA::CONV_CON3__CONV_X_STRIDE, op.stride_w) || !fits(regs::CNA::CONV_CON3__CONV_Y_STRIDE, op.stride_h) ||
      op.stride_w < 1 || op.stride_h < 1)
    return no(n, "stride " + std::to_string(op.stride_h) + "x" + std::to_string(op.stride_w) + " outside 1.." +
                     std::to_string(regs::CNA::CONV_CON3__CONV_X_STRIDE.max()));
  if (!fits(regs::CNA::PAD_CON0__PAD_TOP, op.pad_top) || !fits(regs::CNA::PAD_CON0__PAD_LEFT, op.pad_left))
    return no(n, "padding top " + std::to_string(op.pad_top) + " / left " + std::to_string(op.pad_left) + " exceeds the CNA's " +
                     std::to_string(regs::CNA::PAD_CON0__PAD_TOP.max()));
  if (!fits(regs::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS, op.out_c))
    return no(n, std::to_string(op.out_c) + " output channels exceed WEIGHT_KERNELS");
  if (dw && op.out_c != op.in_c) return no(n, "depthwise with different input and output channels");

  // Quantization.
  const int32_t off_in = storage_offset(x.dtype), off_out = storage_offset(y.dtype);
  const int64_t in_zp = x.quant.zero_point_at(0), out_zp = y.quant.zero_point_at(0);
  const double si = x.quant.scale_at(0), so = y.quant.scale_at(0);
  const int64_t oc = op.out_c;
  const int64_t per_oc = dw ? op.kh * op.kw : op.kh * op.kw * op.in_c;  // weights per output channel (spanned kernel)
  const int64_t taps = w.shape[1] * w.shape[2] * (dw ? 1 : op.in_c);     // the same, as stored (before dilation)
  if (w.quant.per_axis() && static_cast<int64_t>(w.quant.scale.size()) != oc)
    return no(n, "weights quantized along an axis with " + std::to_string(w.quant.scale.size()) + " scales for " +
                     std::to_string(oc) + " channels");
  op.per_channel = w.quant.per_axis();
  // d = w - w_zp; the channel of element i is i / taps (conv, [OC,KH,KW,IC]) or i % C (dw).
  std::vector<int32_t> d = const_values(w);
  std::vector<int64_t> dsum(oc, 0);
  bool fits8 = true;
  op.req_zero_weights.assign(static_cast<size_t>(oc), true);
  for (size_t i = 0; i < d.size(); ++i) {
    int64_t c = dw ? static_cast<int64_t>(i) % oc : static_cast<int64_t>(i) / taps;
    d[i] -= static_cast<int32_t>(w.quant.zero_point_at(op.per_channel ? c : 0));
    fits8 = fits8 && d[i] >= -128 && d[i] <= 127;
    dsum[c] += d[i];
    if (d[i] != 0) op.req_zero_weights[c] = false;
  }
  op.int16 = !fits8;
  const int eb = op.int16 ? 2 : 1;
  const Shape wshape = dil_h > 1 || dil_w > 1 ? Shape{w.shape[0], op.kh, op.kw, w.shape[3]} : w.shape;
  if (wshape != w.shape) d = expand_dilated(d, w.shape, dil_h, dil_w);
  if (op.int16) {
    op.cvt_offset = off_in - static_cast<int32_t>(in_zp);  // a + cvt_offset = q - in_zp
    op.pad_value = 0;                                      // padding applies after the conversion
  } else {
    op.pad_value = static_cast<int32_t>(in_zp) - off_in;   // padding holds the input zero point
  }
  if (dw) {
    TS_ASSIGN_OR_RETURN(auto geo, convert::rk_dw_geometry(wshape));
    op.weight_bytes = geo.elements() * eb;
    if (opts.pack) {
      TS_ASSIGN_OR_RETURN(op.weights, convert::pack_rk_dw_weights(wshape, d, eb));
    }
  } else {
    if (w.shape[3] != op.in_c) return no(n, "weights input channels differ from the input's");
    TS_ASSIGN_OR_RETURN(auto geo, convert::rk_conv_geometry(wshape));
    op.weight_bytes = geo.elements() * eb;
    if (opts.pack) {
      TS_ASSIGN_OR_RETURN(op.weights, convert::pack_rk_conv_weights(wshape, d, eb));
    }
  }
  op.macs = op.out_h * op.out_w * oc * per_oc;

  // Bias table and requantization, in three DPU stages that reproduce TFLite's rounding
  // structure (docs/rknpu.md "Requantization"): with M = in_scale * w_scale / out_scale and
  // k its TFLite shift, BS multiplies by A * 2^-s1 and BN by B * 2^-s2 so that the BN result
  // is round(acc * M * 2^k) (A searched so that A*B represents M * 2^k to ~26 bits, beyond
  // one 16-bit mantissa), and OUT_CVT divides by 2^k rounding half away from zero. ReLU and
  // ReLU6 clamp at the BN stage (units of out_scale / 2^k). Per-channel models take A, B
  // from the table (per channel) with one common k, the largest of the channels', and the
  // BN ALU moves each channel's rounding threshold to TFLite's (encode_requant).
  op.bs_table_used = true;
  op.bn_mul = true;
  op.bs_table.assign(static_cast<size_t>(2 * oc * kBsEntryBytes), 0);  // BS entries, then BN entries
  const int32_t* bias = has_bias ? reinterpret_cast<const int32_t*>(t.b->data->data) : nullptr;
  const double amax = op.int16 ? 255.0 : 128.0;  // largest |input| the MAC array sees
  std::vector<int32_t> folded(oc);
  std::vector<double> abs_w(oc, 0.0);
  for (size_t i = 0; i < d.size(); ++i) abs_w[dw ? static_cast<int64_t>(i) % oc : static_cast<int64_t>(i) / per_oc] += std::abs(d[i]);
  for (int64_t c = 0; c < oc; ++c) {
    int64_t b = bias ? bias[c] : 0;
    if (!op.int16) b -= (in_zp - off_in) * dsum[c];
    if (b < std::numeric_limits<int32_t>::min() || b > std::numeric_limits<int32_t>::max())
      return no(n, "bias of channel " + std::to_string(c) + " with the zero point folded in overflows int32");
    folded[c] = static_cast<int32_t>(b);
  }
  auto multiplier = [&](int64_t c) {
    const float ws = w.quant.scale_at(op.per_channel ? c : 0);
    // TFLite's GetQuantizedConvolutionMultipler: u8 convs and every per-tensor fully connected.
    const bool legacy = (x.dtype == DType::u8 || t.fc) && !op.per_channel;
    return legacy ? double(float(si) * ws) / double(float(so)) : double(float(si)) * double(ws) / double(float(so));
  };
  // The common output shift: the largest channel shift, over the channels with weights.
  // A channel whose weights are all zero outputs a constant (its bias requantized), often
  // with a placeholder scale (TFLite converters write 1e-6) whose shift would push the other
  // channels' M * 2^k past the 16-bit multipliers; encode_requant checks its constant.
  int k = 0, k_all = 0;
  for (int64_t c = 0; c < (op.per_channel ? oc : 1); ++c) {
    auto s1 = encode_scale16(multiplier(c), kOutShiftMax);
    if (!s1.ok()) return no(n, "scale of channel " + std::to_string(c) + ": " + s1.status().message());
    k_all = std::max(k_all, tflite_shift(multiplier(c)));
    if (!op.per_channel || !op.req_zero_weights[c]) k = std::max(k, tflite_shift(multiplier(c)));
  }
  if (std::all_of(op.req_zero_weights.begin(), op.req_zero_weights.end(), [](bool z) { return z; })) k = k_all;
  if (!fits(regs::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT, k)) return no(n, "output shift " + std::to_string(k) + " exceeds OUT_CVT_SHIFT");
  // BN's output is in 2^-k output steps: with k >= 24 an output of 128 steps or more from
  // the zero point would saturate its 32 bits (a multiplier below 2^-23).
  if (k >= 24)
    return no(n, "output shift " + std::to_string(k) + ": BN's 32-bit result (in 2^-" + std::to_string(k) +
                     " output steps) would saturate within the output's range (multiplier below 2^-23)");
  for (int64_t c = 0; c < oc; ++c) {
    op.req_m.push_back(multiplier(c));
    op.req_shift.push_back(tflite_shift(multiplier(c)));
    op.req_vmax.push_back(abs_w[c] * amax + std::abs(double(folded[c])));
    op.req_bias.push_back(folded[c]);
    put_bs_entry(op.bs_table, c, folded[c], Scale16{});
  }
  {
    const std::string act = n.get(attr::activation);
    op.negatives_clamped = act == "relu" || act == "relu6" || out_zp == (y.dtype == DType::u8 ? 0 : -128);
  }
  // As the cpu device (quant_conv.cpp): int8 conv and fully connected round once.
  op.single_round = n.op != OpKind::depthwise_conv2d && x.dtype == DType::i8;
  op.out_scale = {1, k};
  TS_RETURN_IF_ERROR(lower_activation(n, y, so * std::ldexp(1.0, -k), op.bn_relu, op.bn_relux, op.bn_relux_value));
  // Encoded whether or not packing is asked: supports() must refuse what compile() would.
  // When packing, each channel's scale pair is searched for one that gives TFLite's code for
  // every accumulator the channel can reach (RequantTarget; the search never refuses).
  RequantTarget target;
  target.out_zp = static_cast<int32_t>(out_zp);
  target.off_out = off_out;
  const q::Range act = q::activation_range(n.get(attr::activation), y.dtype, static_cast<float>(so), target.out_zp);
  target.act_lo = act.lo, target.act_hi = act.hi;
  TS_RETURN_IF_ERROR(encode_requant(op, k, opts.pack ? &target : nullptr));
  op.ew_unit = op.per_channel ? 0.0 : so * std::ldexp(1.0, -k);
  op.out_offset = static_cast<int32_t>(out_zp) - off_out - op.req_lift;
  if (!opts.pack) op.bs_table.clear();
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

// The largest input channel count for which a depthwise conv with a depth multiplier runs
// as a regular conv: its block-diagonal weights cost C times the depthwise MACs, which the
// regular conv's full MAC array (depthwise uses 1/16 of it, kDepthwiseMacEfficiency) repays
// up to 16 channels.
constexpr int64_t kMultiplierMaxChannels = 16;

// A depthwise conv with depth multiplier m over C channels (weights [1, KH, KW, C*m], output
// channel c*m + j reading input channel c) as the regular conv with weights
// [C*m, KH, KW, C] that are zero (the zero point) off the block diagonal. Exact.
Result<Tensor> multiplier_as_conv(const Node& n, const Tensor& x, const Tensor& w, int64_t m) {
  const int64_t c = x.shape[3], kh = w.shape[1], kw = w.shape[2], oc = c * m;
  if (c > kMultiplierMaxChannels)
    return no(n, "depth multiplier " + std::to_string(m) + " on " + std::to_string(c) + " channels (as a conv up to " +
                     std::to_string(kMultiplierMaxChannels) + ")");
  if (!quantized8(w) || !w.data || w.data->size != oc * kh * kw) return no(n, "weights '" + w.name + "' are not constant u8/i8");
  Tensor e = w;
  e.shape = {oc, kh, kw, c};
  std::vector<uint8_t> bytes(static_cast<size_t>(oc * kh * kw * c));
  for (int64_t o = 0; o < oc; ++o) {
    const auto zp = static_cast<uint8_t>(w.quant.zero_point_at(w.quant.per_axis() ? o : 0));
    for (int64_t t = 0; t < kh * kw; ++t)
      for (int64_t i = 0; i < c; ++i) bytes[static_cast<size_t>((o * kh * kw + t) * c + i)] = i == o / m ? w.data->data[t * oc + o] : zp;
  }
  e.data = ConstData::from_vector(std::move(bytes));
  if (e.quant.per_axis()) e.quant.axis = 0;
  return e;
}

Result<NpuOp> lower_conv(const Graph& g, const Node& n, const LowerOptions& opts) {
  const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoTensor;
  const Tensor* b = has_bias ? &g.tensor(n.inputs[2]) : nullptr;
  const Tensor &x = g.tensor(n.inputs[0]), &w = g.tensor(n.inputs[1]), &y = g.tensor(n.outputs[0]);
  const int64_t m = n.op == OpKind::depthwise_conv2d ? n.get(attr::depth_multiplier) : 1;
  if (m != 1) {
    if (m < 1 || x.shape.size() != 4 || w.shape.size() != 4) return no(n, "depth multiplier " + std::to_string(m));
    TS_ASSIGN_OR_RETURN(Tensor e, multiplier_as_conv(n, x, w, m));
    return lower_conv_tensors(n, ConvTensors{x, e, b, y, false, false}, opts);
  }
  return lower_conv_tensors(n, ConvTensors{x, w, b, y, n.op == OpKind::depthwise_conv2d, false}, opts);
}

// Fully connected, x [N, IC] -> y [N, OC], as a 1x1 conv over the line of N pixels
// [1, 1, N, IC]: rank-2 activations are stored in NC1HWC2 as that line (format.h
// nc1hwc2_nhwc), so the rows become the conv's width.
Result<NpuOp> lower_fc(const Graph& g, const Node& n, const LowerOptions& opts) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  if (w.shape.size() != 2) return no(n, "weights " + dt(w) + " are not [OC, IC]");
  const int64_t oc = w.shape[0], ic = w.shape[1];
  if (x.shape.size() != 2 || x.shape[1] != ic)
    return no(n, "input " + dt(x) + " is not rows [N, " + std::to_string(ic) + "] (TFLite flattens; the NPU path takes rank 2)");
  const int64_t rows = x.shape[0];
  if (y.shape != Shape{rows, oc}) return no(n, "output " + dt(y) + " is not [" + std::to_string(rows) + ", " + std::to_string(oc) + "]");
  Tensor xv = x, wv = w, yv = y;
  xv.shape = nc1hwc2_nhwc(x.shape);
  wv.shape = {oc, 1, 1, ic};
  yv.shape = nc1hwc2_nhwc(y.shape);
  const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoTensor;
  return lower_conv_tensors(n, ConvTensors{xv, wv, has_bias ? &g.tensor(n.inputs[2]) : nullptr, yv, false, true}, opts);
}

// The DPU encoding of a quantized element-wise add: BS scales the first operand, EW the
// second, OUT_CVT the sum, all in a common unit; ReLU / ReLU-X clamp the sum.
// Pooling on the PPU. Average pooling is exact only without padding (the PPU divides by
// the full kernel size through fixed reciprocals), and TFLite's quantized pooling keeps the
// input's quantization, which the PPU also does.
Result<NpuOp> lower_pool(const Graph& g, const Node& n) {
  NpuOp op;
  op.type = n.op == OpKind::avg_pool2d ? NpuOpType::avg_pool : NpuOpType::max_pool;
  op.label = n.label();
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  if (x.dtype != y.dtype || x.quant != y.quant) return no(n, "pooling that changes the quantization");
  if (n.get(attr::activation) != "none") return no(n, "pooling with a fused activation");
  op.input = n.inputs[0];
  op.output = n.outputs[0];
  op.in_h = x.shape[1], op.in_w = x.shape[2], op.in_c = x.shape[3];
  op.out_h = y.shape[1], op.out_w = y.shape[2], op.out_c = y.shape[3];
  op.kh = n.get(attr::filter_h), op.kw = n.get(attr::filter_w);
  op.stride_h = n.get(attr::stride_h), op.stride_w = n.get(attr::stride_w);
  op.pad_top = n.get(attr::pad_top), op.pad_left = n.get(attr::pad_left);
  int64_t pad_b = n.get(attr::pad_bottom), pad_r = n.get(attr::pad_right);
  // Field limits (register database): PPU kernel and stride 4 bits, padding 3 bits.
  if (!fits(regs::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH, op.kw) || !fits(regs::PPU::POOLING_KERNEL_CFG__KERNEL_HEIGHT, op.kh) ||
      op.kh < 1 || op.kw < 1)
    return no(n, "pooling kernel " + std::to_string(op.kh) + "x" + std::to_string(op.kw) + " exceeds the PPU's " +
                     std::to_string(regs::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH.max()));
  if (!fits(regs::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH, op.stride_w) ||
      !fits(regs::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_HEIGHT, op.stride_h))
    return no(n, "pooling stride exceeds the PPU's " + std::to_string(regs::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH.max()));
  if (!fits(regs::PPU::POOLING_PADDING_CFG__PAD_TOP, op.pad_top) || !fits(regs::PPU::POOLING_PADDING_CFG__PAD_LEFT, op.pad_left) ||
      !fits(regs::PPU::POOLING_PADDING_CFG__PAD_BOTTOM, pad_b) || !fits(regs::PPU::POOLING_PADDING_CFG__PAD_RIGHT, pad_r))
    return no(n, "pooling padding exceeds the PPU's " + std::to_string(regs::PPU::POOLING_PADDING_CFG__PAD_TOP.max()));
  if (op.type == NpuOpType::avg_pool) {
    if (op.pad_top || op.pad_left || pad_b || pad_r)
      return no(n, "padded average pooling (the PPU divides by the whole kernel; TFLite excludes padding)");
    op.recip_w = static_cast<int32_t>(std::lround(double(1 << kRecipFractionBits) / double(op.kw)));
    op.recip_h = static_cast<int32_t>(std::lround(double(1 << kRecipFractionBits) / double(op.kh)));
  }
  op.out_offset = 0;
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

std::string blocks_note(int64_t c0, int64_t c) {
  return "channels [" + std::to_string(c0) + ", " + std::to_string(c0 + c) + ") are not whole 16-channel blocks (the NPU copies NC1HWC2 surfaces)";
}

Result<NpuOp> lower_strided_slice(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  if (is_flat(g, n.inputs[0]) || is_flat(g, n.outputs[0])) return lower_flat_slice(g, n);
  TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  if (x.dtype != y.dtype || x.quant != y.quant) return no(n, "strided_slice that changes the quantization");
  const std::vector<int64_t>& b = n.get(attr::begin);
  const std::vector<int64_t>& e = n.get(attr::end);
  const std::vector<int64_t>& st = n.get(attr::strides);
  const std::vector<int64_t>& shrink = n.get(attr::shrink_axes);
  if (b.size() != 4 || e.size() != 4 || st.size() != 4 || !shrink.empty())
    return no(n, "strided_slice other than a 4-D box (shrinking axes)");
  for (int d = 0; d < 4; ++d)
    if (st[d] != 1) return no(n, "strided_slice with a stride other than 1");
  for (int d = 0; d < 3; ++d)
    if (b[d] != 0 || e[d] != x.shape[d]) return no(n, "strided_slice along N, H or W (channels only)");
  const int64_t c0 = b[3], c = e[3] - b[3];
  if (c0 % kC2 != 0 || c % kC2 != 0) return no(n, blocks_note(c0, c));
  NpuOp op = copy_op(n, n.inputs[0], n.outputs[0], y.shape, c0, 0, c);
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

}  // namespace

Status fuse_lut(const NpuOp& lut, NpuOp& conv) {
  if (conv.type != NpuOpType::conv && conv.type != NpuOpType::depthwise)
    return error(StatusCode::unsupported, "producer is not a convolution");
  if (lut.type != NpuOpType::lut || lut.input != conv.output) return error(StatusCode::internal, "the table does not read the conv");
  if (conv.ew_input != kNoTensor) return error(StatusCode::unsupported, "the conv's EW stage already adds an operand");
  if (conv.bs_relu || conv.bn_relu || conv.bn_relux) return error(StatusCode::unsupported, "the conv clamps before OUT_CVT (ReLU)");
  if (!conv.lut_lo.empty()) return error(StatusCode::unsupported, "the conv already has a table");
  if (conv.out_scale.mantissa != 1 || !fits(regs::DPU::EW_CVT_SCALE_VALUE__EW_TRUNCATE, conv.out_scale.shift))
    return error(StatusCode::unsupported, "OUT_CVT is not a power-of-two division the EW multiplier can take");
  conv.lut_le = lut.lut_le;
  conv.lut_lo = lut.lut_lo;
  conv.lut_le_select = lut.lut_le_select;
  conv.lut_lo_select = lut.lut_lo_select;
  // The LUT sees u = the conv's output in steps before the offset: stored value u + offset.
  conv.lut_le_start = lut.lut_le_start - conv.out_offset;
  conv.lut_lo_start = lut.lut_lo_start - conv.out_offset;
  conv.lut_function = lut.lut_function;
  conv.lut_max_error = lut.lut_max_error;
  conv.lut_exact_codes = lut.lut_exact_codes;
  conv.ew_truncate = conv.out_scale.shift;
  conv.out_scale = Scale16{1, 0};
  conv.out_offset = 0;
  conv.output = lut.output;
  return Status::Ok();
}


Result<std::vector<NpuOp>> lower_concat_parts(const Graph& g, const Node& n) {
  const Tensor& y = g.tensor(n.outputs[0]);
  if (is_flat(g, n.outputs[0])) return lower_flat_concat_parts(g, n);
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  int64_t axis = n.get(attr::axis);
  if (axis < 0) axis += 4;
  if (axis != 3) return no(n, "concat along axis " + std::to_string(axis) + " (channels only)");
  if (n.get(attr::activation) != "none") return no(n, "concat with a fused activation");
  std::vector<NpuOp> parts;
  int64_t c0 = 0;
  for (TensorId in : n.inputs) {
    const Tensor& x = g.tensor(in);
    TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
    if (x.dtype != y.dtype || x.quant != y.quant) return no(n, "concat that requantizes an input");
    if (x.shape[1] != y.shape[1] || x.shape[2] != y.shape[2]) return no(n, "concat inputs of different H, W");
    if (c0 % kC2 != 0 || x.shape[3] % kC2 != 0) return no(n, blocks_note(c0, x.shape[3]));
    NpuOp op = copy_op(n, in, n.outputs[0], x.shape, 0, c0, x.shape[3]);
    TS_RETURN_IF_ERROR(check_tiling(op).status());
    parts.push_back(std::move(op));
    c0 += x.shape[3];
  }
  if (parts.empty()) return no(n, "concat without inputs");
  return parts;
}

namespace {

Result<NpuOp> lower_concat(const Graph& g, const Node& n) {
  TS_ASSIGN_OR_RETURN(std::vector<NpuOp> parts, lower_concat_parts(g, n));
  NpuOp op = parts.front();
  for (const NpuOp& p : parts) op.concat_parts.push_back(p.input);
  return op;
}

}  // namespace

const char* npu_op_type_name(NpuOpType t) {
  switch (t) {
    case NpuOpType::conv: return "conv";
    case NpuOpType::depthwise: return "depthwise";
    case NpuOpType::add: return "add";
    case NpuOpType::avg_pool: return "avg_pool";
    case NpuOpType::max_pool: return "max_pool";
    case NpuOpType::matmul: return "matmul";
    case NpuOpType::lut: return "lut";
    case NpuOpType::copy: return "copy";
    case NpuOpType::resize: return "resize";
    case NpuOpType::row_copy: return "row copy";
  }
  return "?";
}

int silu_logistic(const Graph& g, const Node& mul) {
  if (mul.op != OpKind::mul || mul.inputs.size() != 2) return -1;
  for (int k = 0; k < 2; ++k) {
    const TensorId s = mul.inputs[k], x = mul.inputs[1 - k];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& l = g.nodes()[i];
      if (l.op == OpKind::logistic && !l.outputs.empty() && l.outputs[0] == s && !l.inputs.empty() && l.inputs[0] == x)
        return static_cast<int>(i);
    }
  }
  return -1;
}

bool is_table_node(OpKind k) {
  return k == OpKind::logistic || k == OpKind::tanh || k == OpKind::hard_swish || k == OpKind::requantize;
}

int absorbed_table(const Graph& g, const Node& n) {
  if (!is_table_node(n.op) || n.inputs.empty()) return -1;
  const TensorId x = n.inputs[0];
  for (TensorId o : g.outputs)
    if (o == x) return -1;
  int producer = -1, readers = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& m = g.nodes()[i];
    for (TensorId in : m.inputs) readers += in == x;
    for (TensorId o : m.outputs)
      if (o == x) producer = static_cast<int>(i);
  }
  if (producer < 0 || readers != 1 || !is_table_node(g.nodes()[producer].op)) return -1;
  return producer;
}

TensorId silu_conv_input(const Graph& g, const Node& mul) {
  const int li = silu_logistic(g, mul);
  if (li < 0) return kNoTensor;
  const TensorId x = g.nodes()[li].inputs[0];
  for (const Node& c : g.nodes())
    if ((c.op == OpKind::conv2d || c.op == OpKind::depthwise_conv2d) && !c.outputs.empty() && c.outputs[0] == x && !c.inputs.empty())
      return c.inputs[0];
  return kNoTensor;
}

Result<NpuOp> lower_node(const Graph& g, const Node& n, const LowerOptions& opts) {
  // Hybrid nodes (a float input with int8 weights, TFLite's dynamic-range quantization)
  // quantize their input per run: the cpu runs them.
  if ((n.op == OpKind::conv2d || n.op == OpKind::depthwise_conv2d || n.op == OpKind::fully_connected) &&
      n.inputs.size() > 1 && g.tensor(n.inputs[0]).dtype == DType::f32 && g.tensor(n.inputs[1]).dtype == DType::i8)
    return error(StatusCode::unsupported, "hybrid ", op_name(n.op), " (float input, int8 weights) runs on the cpu");
  Result<NpuOp> r = [&]() -> Result<NpuOp> {
    switch (n.op) {
      case OpKind::conv2d:
      case OpKind::depthwise_conv2d: return lower_conv(g, n, opts);
      case OpKind::add:
      case OpKind::sub: return lower_binary(g, n);
      case OpKind::avg_pool2d:
      case OpKind::max_pool2d: return lower_pool(g, n);
      case OpKind::logistic:
      case OpKind::tanh:
      case OpKind::hard_swish:
      case OpKind::requantize: return lower_table(g, n);
      case OpKind::mul: return lower_mul(g, n);
      case OpKind::strided_slice: return lower_strided_slice(g, n);
      case OpKind::concat: return lower_concat(g, n);
      case OpKind::reshape: return lower_reshape(g, n);
      case OpKind::resize_nearest: return lower_resize_nearest(g, n);
      case OpKind::fully_connected: return is_float_matmul(g, n) ? lower_matmul(g, n, opts) : lower_fc(g, n, opts);
      default: return error(StatusCode::unsupported, std::string("no NPU lowering for ") + op_name(n.op));
    }
  }();
  return r;
}

Status fuse_add(const Graph& g, const Node& add, int add_index, NpuOp& op) {
  if (op.type != NpuOpType::conv && op.type != NpuOpType::depthwise) return error(StatusCode::unsupported, "producer is not a convolution");
  if (op.per_channel) return error(StatusCode::unsupported, "per-channel convolution (its channels leave BN in different units)");
  if (op.ew_input != kNoTensor) return error(StatusCode::unsupported, "already fused");
  const Tensor& conv_out = g.tensor(op.output);
  TensorId other = add.inputs[0] == op.output ? add.inputs[1] : add.inputs[0];
  const Tensor& b = g.tensor(other);
  const Tensor& y = g.tensor(add.outputs[0]);
  if (b.shape != conv_out.shape || y.shape != conv_out.shape) return error(StatusCode::unsupported, "shapes differ");
  if (b.dtype != y.dtype || y.dtype != conv_out.dtype || b.data || !quantized8(b) || !quantized8(y) || b.quant.per_axis() ||
      y.quant.per_axis())
    return error(StatusCode::unsupported, "operand types");
  // The accumulator unit of the conv: in_scale * weight_scale (per tensor).
  const Tensor& x = g.tensor(op.input);
  const Node* conv = nullptr;
  for (const Node& nd : g.nodes())
    if (!nd.outputs.empty() && nd.outputs[0] == op.output) conv = &nd;
  if (!conv) return error(StatusCode::internal, "conv node not found");
  // TFLite rounds the conv's output to its own quantization before the add: re-encode the
  // BS/BN multipliers so that BN yields round(acc * M), the conv output less its zero point,
  // and add the other operand in those units.
  // BS rounds acc * M to whole conv-output steps (one 16-bit multiplier); BN scales that
  // exactly by 2^f so that the EW operand can be added with f fractional bits.
  if (op.bs_table.empty()) return error(StatusCode::internal, "conv tables not packed");
  (void)x;
  const double sb = b.quant.scale_at(0), so = y.quant.scale_at(0);
  const double conv_scale = conv_out.quant.scale_at(0);
  const int f = std::clamp(kMantissaBits - 1 - static_cast<int>(std::ceil(std::log2(std::max(sb / conv_scale, 1.0)))), 0,
                           kMantissaBits - 1);
  for (int64_t c = 0; c < op.out_c; ++c) {
    auto m = encode_scale16(op.req_m[c], kBsShiftMax);
    if (!m.ok()) return error(StatusCode::unsupported, "conv scale: ", m.status().message());
    put_bs_entry(op.bs_table, c, read_bias(op.bs_table, c), *m);
    put_bs_entry(op.bs_table, op.out_c + c, 0, Scale16{1 << f, 0});
  }
  const double unit = conv_scale * std::ldexp(1.0, -f);
  auto mb = encode_scale16(sb / unit, kEwShiftMax);
  auto mo = encode_scale16(unit / so, kOutShiftMax);
  if (!mb.ok() || !mo.ok()) return error(StatusCode::unsupported, "scale ratios do not fit the EW/OUT converters");
  // The conv's activation can no longer come from saturating its (now unwritten) output:
  // clamp explicitly in the BS stage, before the add (TFLite order).
  std::string act = conv->get(attr::activation);
  if (act == "relu" || act == "relu6") op.bn_relu = true;
  if (act == "relu6") {
    op.bn_relux = true;
    op.bn_relux_value = static_cast<int32_t>(std::lround(6.0 / unit));
  }
  // The conv output's own saturation: its upper bound as a ReLU-X clamp (the lower bound
  // has no DPU clamp besides 0; it is exact when the conv's zero point is its minimum).
  const int64_t conv_qmax = conv_out.dtype == DType::u8 ? 255 : 127;
  const int32_t upper = static_cast<int32_t>((conv_qmax - conv_out.quant.zero_point_at(0)) << f);
  if (conv_out.quant.zero_point_at(0) == (conv_out.dtype == DType::u8 ? 0 : -128)) op.bn_relu = true;
  if (!op.bn_relux || upper < op.bn_relux_value) {
    op.bn_relux = true;
    op.bn_relux_value = upper;
  }
  op.ew_input = other;
  op.ew_offset = storage_offset(b.dtype) - static_cast<int32_t>(b.quant.zero_point_at(0));
  op.ew_scale = *mb;
  op.out_scale = *mo;
  op.out_offset = static_cast<int32_t>(y.quant.zero_point_at(0)) - storage_offset(y.dtype);
  op.req_lift = 0;  // the BN entries above replace a single-rounding layer's lift
  TS_RETURN_IF_ERROR(lower_activation(add, y, unit, op.ew_relu, op.ew_relux, op.ew_relux_value));
  op.output = add.outputs[0];
  op.nodes.push_back(add_index);
  op.label += " + " + add.label();
  return Status::Ok();
}

}  // namespace tessera::rknpu
