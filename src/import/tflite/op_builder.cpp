// TFLite operators -> Tessera nodes: convolution, pooling, linear, elementwise, activation,
// softmax, reductions and quantization. Shape and data-movement operators live in
// op_builder_shape.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "convert/dtype.h"
#include "import/tflite/import_context.h"
#include "ops/quant_math.h"

namespace tessera::tflite {

namespace T = ::tflite;

std::string activation_name(T::ActivationFunctionType a, bool* ok) {
  *ok = true;
  switch (a) {
    case T::ActivationFunctionType_NONE: return "none";
    case T::ActivationFunctionType_RELU: return "relu";
    case T::ActivationFunctionType_RELU6: return "relu6";
    case T::ActivationFunctionType_RELU_N1_TO_1: return "relu_n1_to_1";
    default: *ok = false; return T::EnumNameActivationFunctionType(a);
  }
}

void same_or_valid_padding(T::Padding p, int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                           int64_t* before, int64_t* after) {
  int64_t eff = (filter - 1) * dilation + 1;
  int64_t out = p == T::Padding_SAME ? (in + stride - 1) / stride : (in - eff + stride) / stride;
  int64_t total = std::max<int64_t>((out - 1) * stride + eff - in, 0);
  *before = total / 2;  // TFLite puts the odd pixel after (ComputePaddingWithOffset)
  *after = total - total / 2;
}

namespace {

// Operator versions accepted: the versions whose features the kernels implement (TFLite's
// op_version.cc: e.g. CONV_2D v3 = int8 per-channel; v4+ add hybrid, int16 and int4 forms,
// which are rejected here or by the dtype checks below).
struct VersionEntry {
  T::BuiltinOperator code;
  int max_version;
};
constexpr VersionEntry kVersions[] = {
    {T::BuiltinOperator_CONV_2D, 5},          {T::BuiltinOperator_DEPTHWISE_CONV_2D, 6},
    {T::BuiltinOperator_FULLY_CONNECTED, 9},  {T::BuiltinOperator_ADD, 4},
    {T::BuiltinOperator_SUB, 3},              {T::BuiltinOperator_MUL, 4},
    {T::BuiltinOperator_DIV, 2},              {T::BuiltinOperator_MAXIMUM, 4},
    {T::BuiltinOperator_MINIMUM, 4},          {T::BuiltinOperator_AVERAGE_POOL_2D, 3},
    {T::BuiltinOperator_MAX_POOL_2D, 3},      {T::BuiltinOperator_MEAN, 3},  // v3: int16
    // LOGISTIC / TANH / SOFTMAX v3: int16 (op_builder_int16.cpp).
    {T::BuiltinOperator_SOFTMAX, 3},          {T::BuiltinOperator_LOGISTIC, 3},
    {T::BuiltinOperator_TANH, 3},             {T::BuiltinOperator_RELU, 2},
    {T::BuiltinOperator_RELU6, 2},            {T::BuiltinOperator_LEAKY_RELU, 2},
    {T::BuiltinOperator_HARD_SWISH, 1},       {T::BuiltinOperator_QUANTIZE, 2},
    {T::BuiltinOperator_DEQUANTIZE, 4},       {T::BuiltinOperator_RESHAPE, 1},
    {T::BuiltinOperator_SQUEEZE, 1},          {T::BuiltinOperator_TRANSPOSE, 4},
    {T::BuiltinOperator_CONCATENATION, 3},    {T::BuiltinOperator_PAD, 2},
    {T::BuiltinOperator_PADV2, 2},            {T::BuiltinOperator_STRIDED_SLICE, 4},
    {T::BuiltinOperator_RESIZE_BILINEAR, 3},  {T::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, 3},
    {T::BuiltinOperator_ARG_MAX, 2},          {T::BuiltinOperator_CAST, 1},
    {T::BuiltinOperator_GATHER, 3},           {T::BuiltinOperator_PACK, 2},
    {T::BuiltinOperator_UNPACK, 2},           {T::BuiltinOperator_SLICE, 2},
    {T::BuiltinOperator_FLOOR_DIV, 2},        {T::BuiltinOperator_SQRT, 1},
    {T::BuiltinOperator_CUSTOM, 1},  // by custom code: op_builder_custom.cpp
    {T::BuiltinOperator_GATHER_ND, 3},        {T::BuiltinOperator_EXPAND_DIMS, 1},
    // v2 int8, v3 int32 (SPLIT) / int16 (SPLIT_V), v4 int16 (SPLIT): the split copies bytes.
    {T::BuiltinOperator_SPLIT, 4},            {T::BuiltinOperator_SPLIT_V, 3},
    // v2 int8 / uint8, v3 bias input and int16x8, v4 fused activation.
    {T::BuiltinOperator_TRANSPOSE_CONV, 4},
    // v1 f32, v2 hybrid, v3 int8, v4 asymmetric hybrid inputs.
    {T::BuiltinOperator_SVDF, 4},
    // v1 f32 and integer 8x8_16; v2-3 hybrid (refused by dtype); v4 diagonal recurrent weights.
    {T::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM, 3},
    // v1 f32; v2 hybrid (refused by dtype), v3 asymmetric hybrid inputs.
    {T::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM, 3},
    // Math builtins (op_builder_math.cpp): v2 adds int8 (ABS, RSQRT), v3 int16 (ABS).
    {T::BuiltinOperator_ABS, 3},              {T::BuiltinOperator_NEG, 1},
    {T::BuiltinOperator_SQUARE, 1},           {T::BuiltinOperator_RSQRT, 2},
    {T::BuiltinOperator_EXP, 1},              {T::BuiltinOperator_LOG, 1},
    // v2 int8 (SQUARED_DIFFERENCE; the comparisons, whose v3 adds strings, refused by dtype).
    {T::BuiltinOperator_SQUARED_DIFFERENCE, 2}, {T::BuiltinOperator_POW, 1},
    {T::BuiltinOperator_EQUAL, 3},            {T::BuiltinOperator_NOT_EQUAL, 3},
    {T::BuiltinOperator_LESS, 2},             {T::BuiltinOperator_LESS_EQUAL, 2},
    {T::BuiltinOperator_GREATER, 2},          {T::BuiltinOperator_GREATER_EQUAL, 2},
    // v1 takes every dtype (the interpreter's select.cc copies values); v2 only marks int8,
    // uint8 and int16 models for newer runtimes.
    {T::BuiltinOperator_SELECT_V2, 2},
    // v1 f32 (and u8 for the max / min), v2 int8, v3 int16 (REDUCE_MAX / REDUCE_MIN); SUM
    // v2 int8 / uint8; REDUCE_PROD v2 int8 / int16.
    {T::BuiltinOperator_SUM, 2},              {T::BuiltinOperator_REDUCE_MAX, 3},
    {T::BuiltinOperator_REDUCE_MIN, 3},       {T::BuiltinOperator_REDUCE_PROD, 2},
    // v1 f32 / u8, v2 int8 (the data is moved, not rescaled).
    {T::BuiltinOperator_DEPTH_TO_SPACE, 2},   {T::BuiltinOperator_SPACE_TO_DEPTH, 2},
    // v1 f32 / u8, v2 int8 (values are copied).
    {T::BuiltinOperator_MIRROR_PAD, 2},
    // TILE v2 int8; BROADCAST_TO v2 int8, v3 int16 (values are copied).
    {T::BuiltinOperator_TILE, 2},             {T::BuiltinOperator_BROADCAST_TO, 3},
    // f32 / i32 / i64 forms (FILL v1, ZEROS_LIKE v1); SHAPE v1 (i32 / i64 output).
    {T::BuiltinOperator_FILL, 1},             {T::BuiltinOperator_ZEROS_LIKE, 1},
    {T::BuiltinOperator_SHAPE, 1},
    // op_builder_activation.cpp: PRELU v1 (f32, u8, i8); ELU v2 int8; GELU v2 int8 / uint8;
    // LOG_SOFTMAX, L2_NORMALIZATION v2 int8; ARG_MIN v2 int8; CUMSUM v1 (f32, i32, i64).
    {T::BuiltinOperator_PRELU, 1},            {T::BuiltinOperator_ELU, 2},
    {T::BuiltinOperator_GELU, 2},             {T::BuiltinOperator_LOG_SOFTMAX, 2},
    {T::BuiltinOperator_L2_NORMALIZATION, 2}, {T::BuiltinOperator_ARG_MIN, 2},
    {T::BuiltinOperator_CUMSUM, 1},
    // op_builder_matmul.cpp: BATCH_MATMUL v1 f32, v2 int8, v3 int16, v4 hybrid.
    {T::BuiltinOperator_BATCH_MATMUL, 4},
};

bool is_quant(const Tensor& t) { return dtype_is_quantized_int(t.dtype) && !t.quant.empty(); }

// Quantized ops need quantization parameters on their data inputs and outputs.
Status check_quant_io(OpSite& s, const std::vector<TensorId>& ins, const std::vector<TensorId>& outs) {
  const Graph& g = s.cx.graph;
  bool any = false;
  for (TensorId id : ins)
    if (id != kNoTensor && is_quant(g.tensor(id))) any = true;
  if (!any) return Status::Ok();
  for (TensorId id : outs) {
    const Tensor& t = g.tensor(id);
    if (dtype_is_quantized_int(t.dtype) && t.quant.empty())
      return s.fail("quantized output '" + t.name + "' has no quantization parameters");
  }
  for (TensorId id : ins) {
    if (id == kNoTensor) continue;
    const Tensor& t = g.tensor(id);
    if ((t.dtype == DType::u8 || t.dtype == DType::i8) && t.quant.empty())
      return s.fail("input '" + t.name + "' of a quantized operator has no quantization parameters");
  }
  return Status::Ok();
}

Result<std::string> activation(OpSite& s, T::ActivationFunctionType a) {
  bool ok;
  std::string name = activation_name(a, &ok);
  if (!ok) return s.fail("fused activation " + name + " is not supported");
  return name;
}

// Hybrid (dynamic-range) weights: a float input with int8 weights, zero points 0, one scale
// or one per output channel (along `channel_axis`), a float bias and output.
Status check_hybrid_weights(OpSite& s, TensorId w, TensorId bias, TensorId y, int channel_axis) {
  const Graph& g = s.cx.graph;
  const Tensor& wt = g.tensor(w);
  if (wt.dtype != DType::i8 || !is_quant(wt))
    return s.fail(std::string("hybrid weights (float input) must be int8 with quantization parameters; filter '") +
                  wt.name + "' is " + dtype_name(wt.dtype) + (is_quant(wt) ? "" : " without them"));
  if (!wt.data) return s.fail("hybrid filter '" + wt.name + "' must be constant");
  for (int64_t z : wt.quant.zero_point)
    if (z != 0) return s.fail("hybrid filter '" + wt.name + "' has a non-zero zero point");
  const int64_t channels = wt.shape[static_cast<size_t>(channel_axis)];
  if (wt.quant.per_axis()) {
    if (wt.quant.axis != channel_axis)
      return s.fail("filter '" + wt.name + "' is quantized along axis " + std::to_string(wt.quant.axis) +
                    ", expected the output-channel axis " + std::to_string(channel_axis));
    if (static_cast<int64_t>(wt.quant.scale.size()) != channels)
      return s.fail("filter '" + wt.name + "' has " + std::to_string(wt.quant.scale.size()) + " scales for " +
                    std::to_string(channels) + " output channels");
  }
  for (float sc : wt.quant.scale)
    if (!(sc > 0) || !std::isfinite(sc)) return s.fail("filter '" + wt.name + "' has scale " + std::to_string(sc));
  if (bias != kNoTensor && g.tensor(bias).dtype != DType::f32)
    return s.fail("bias '" + g.tensor(bias).name + "' must be f32 for a float input");
  if (g.tensor(y).dtype != DType::f32) return s.fail("output '" + g.tensor(y).name + "' must be f32 for a float input");
  return Status::Ok();
}

// TFLite's 16x8 quantization: int16 activations with zero point 0, int8 weights with zero
// points 0 (per-tensor or along the output-channel axis), an int64 (or int32) bias, an int16
// output. The int64 accumulator's rescale takes |acc| < 2^47 (common.h): refuse depths and
// biases that could pass it.
Status check_16x8_weights(OpSite& s, TensorId x, TensorId w, TensorId bias, TensorId y, int channel_axis) {
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& wt = g.tensor(w);
  const Tensor& yt = g.tensor(y);
  if (yt.dtype != DType::i16 || !is_quant(yt))
    return s.fail("int16 input '" + xt.name + "' needs an int16 output with quantization parameters, '" + yt.name +
                  "' is " + dtype_name(yt.dtype));
  for (const Tensor* t : {&xt, &yt})
    if (t->quant.per_axis() || t->quant.zero_point_at(0) != 0)
      return s.fail("int16 tensor '" + t->name + "' must have one scale and zero point 0 (TFLite's 16x8 form)");
  if (wt.dtype != DType::i8 || !is_quant(wt))
    return s.fail("filter '" + wt.name + "' of an int16 input must be i8 with quantization parameters, got " +
                  dtype_name(wt.dtype));
  for (int64_t z : wt.quant.zero_point)
    if (z != 0) return s.fail("filter '" + wt.name + "' of an int16 input has a non-zero zero point");
  if (wt.quant.per_axis() && wt.quant.axis != channel_axis)
    return s.fail("filter '" + wt.name + "' is quantized along axis " + std::to_string(wt.quant.axis) +
                  ", expected the output-channel axis " + std::to_string(channel_axis));
  // What TFLite's builtin kernels refuse for this form: CONV_2D without a bias, and
  // DEPTHWISE_CONV_2D with other than an int64 one.
  if (bias == kNoTensor && s.code == T::BuiltinOperator_CONV_2D)
    return s.fail("CONV_2D with an int16 input needs a bias, as TFLite's kernel does");
  if (s.code == T::BuiltinOperator_DEPTHWISE_CONV_2D && (bias == kNoTensor || g.tensor(bias).dtype != DType::i64))
    return s.fail("DEPTHWISE_CONV_2D with an int16 input needs an i64 bias, as TFLite's kernel does");
  double bias_max = 0;
  if (bias != kNoTensor) {
    const Tensor& bt = g.tensor(bias);
    if (bt.dtype != DType::i64 && bt.dtype != DType::i32)
      return s.fail("bias '" + bt.name + "' of an int16 input must be i64 or i32, got " + dtype_name(bt.dtype));
    if (!bt.data) return s.fail("the bias of a quantized operator must be constant, '" + bt.name + "' is not");
    const int64_t width = bt.dtype == DType::i64 ? 8 : 4;
    for (int64_t i = 0; i + width <= bt.data->size; i += width) {
      int64_t v = 0;
      if (width == 8) std::memcpy(&v, bt.data->data + i, 8);
      else {
        int32_t v32;
        std::memcpy(&v32, bt.data->data + i, 4);
        v = v32;
      }
      bias_max = std::max(bias_max, std::fabs(static_cast<double>(v)));
    }
  }
  double depth = 1;
  for (size_t d = 1; d < wt.shape.size(); ++d) depth *= static_cast<double>(wt.shape[d]);
  if (!(depth * 32768.0 * 128.0 + bias_max < 140737488355328.0))  // 2^47
    return s.fail("filter '" + wt.name + "' and its bias can exceed the 2^47 accumulator range of the 16x8 form");
  return Status::Ok();
}

// Conv / depthwise / FC weights: quantized activations need quantized weights and an i32
// bias; float activations take float weights, or int8 ones (TFLite's "hybrid" mode).
Status check_weights(OpSite& s, TensorId x, TensorId w, TensorId bias, TensorId y, int channel_axis) {
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& wt = g.tensor(w);
  if (xt.dtype == DType::f32) {
    if (wt.dtype != DType::f32) return check_hybrid_weights(s, w, bias, y, channel_axis);
    return Status::Ok();
  }
  if (!is_quant(xt)) return s.fail(std::string("input dtype ") + dtype_name(xt.dtype) + " is not supported");
  if (xt.dtype == DType::i16) return check_16x8_weights(s, x, w, bias, y, channel_axis);
  if (!is_quant(wt) || (wt.dtype != DType::u8 && wt.dtype != DType::i8))
    return s.fail("filter '" + wt.name + "' must be u8/i8 with quantization parameters");
  if (wt.quant.per_axis()) {
    if (wt.quant.axis != channel_axis)
      return s.fail("filter '" + wt.name + "' is quantized along axis " + std::to_string(wt.quant.axis) +
                    ", expected the output-channel axis " + std::to_string(channel_axis));
    for (int64_t z : wt.quant.zero_point)
      if (z != 0) return s.fail("per-channel filter '" + wt.name + "' has a non-zero zero point");
  }
  if (bias != kNoTensor && g.tensor(bias).dtype != DType::i32)
    return s.fail("bias '" + g.tensor(bias).name + "' must be i32 for quantized inputs");
  return Status::Ok();
}

// The quantized conv / depthwise / FC kernels follow TFLite's reference arithmetic: an int32
// accumulator plus the bias, rescaled by in_scale * w_scale / out_scale (shifted left first
// when that exceeds 0.5), plus the output zero point. Refuse scales and biases (a corrupted
// file's) for which the worst-case inputs would overflow int32 there, so no kernel sees them.
// `depth` is the number of products per output value.
Status check_accumulator_range(OpSite& s, TensorId x, TensorId w, TensorId bias, TensorId y, double depth) {
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& wt = g.tensor(w);
  const Tensor& yt = g.tensor(y);
  if (!is_quant(xt) || !is_quant(wt) || !is_quant(yt)) return Status::Ok();
  if (xt.dtype == DType::i16) return Status::Ok();  // int64 accumulators: check_16x8_weights
  double bias_max = 0;
  if (bias != kNoTensor) {
    const Tensor& bt = g.tensor(bias);
    if (!bt.data) return s.fail("the bias of a quantized operator must be constant, '" + bt.name + "' is not");
    for (int64_t i = 0; i + 4 <= bt.data->size; i += 4) {
      int32_t v;
      std::memcpy(&v, bt.data->data + i, 4);
      bias_max = std::max(bias_max, std::fabs(static_cast<double>(v)));
    }
  }
  // |x - zx| and |w - zw| are at most 255 for u8 / i8 codes.
  const double worst = depth * 255.0 * 255.0 + bias_max;
  double eff = 0;
  for (float ws : wt.quant.scale)
    eff = std::max(eff, static_cast<double>(xt.quant.scale[0]) * ws / static_cast<double>(yt.quant.scale[0]));
  constexpr double kInt32Room = 2147483647.0 - 256;  // leaves room for the output zero point
  if (!(worst * std::max(1.0, 2 * eff) <= kInt32Room))
    return s.fail("scales and bias can overflow the int32 accumulator: up to " + std::to_string(worst) +
                  " rescaled by " + std::to_string(eff) + " (input '" + xt.name + "', filter '" + wt.name + "')");
  return Status::Ok();
}

Status window_attrs(OpSite& s, TensorId x, T::Padding pad, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                    int64_t dw, AttrMap& a) {
  const Tensor& xt = s.cx.graph.tensor(x);
  if (xt.shape.size() != 4) return s.fail("input '" + xt.name + "' must be rank 4 NHWC, got " + shape_str(xt.shape));
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || kh < 1 || kw < 1)
    return s.fail("filter sizes, strides and dilations must be >= 1");
  if (pad != T::Padding_SAME && pad != T::Padding_VALID) return s.fail("unknown padding mode");
  int64_t pt, pb, pl, pr;
  same_or_valid_padding(pad, xt.shape[1], kh, sh, dh, &pt, &pb);
  same_or_valid_padding(pad, xt.shape[2], kw, sw, dw, &pl, &pr);
  a["stride_h"] = sh;
  a["stride_w"] = sw;
  a["dilation_h"] = dh;
  a["dilation_w"] = dw;
  a["pad_top"] = pt;
  a["pad_bottom"] = pb;
  a["pad_left"] = pl;
  a["pad_right"] = pr;
  return Status::Ok();
}

Status build_conv(OpSite& s, bool depthwise) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 3, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId w, s.input(1));
  TensorId b = kNoTensor;
  if (s.has_input(2)) {
    TS_ASSIGN_OR_RETURN(b, s.input(2));
  }
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor& wt = s.cx.graph.tensor(w);
  if (wt.shape.size() != 4) return s.fail("filter '" + wt.name + "' must be rank 4, got " + shape_str(wt.shape));
  TS_RETURN_IF_ERROR(check_weights(s, x, w, b, y, depthwise ? 3 : 0));
  const Tensor& xt0 = s.cx.graph.tensor(x);
  if (xt0.dtype == DType::f32 && wt.dtype != DType::f32) {
    // TFLite's hybrid depthwise kernel takes one filter scale per output channel only.
    if (depthwise && static_cast<int64_t>(wt.quant.scale.size()) != wt.shape[3])
      return s.fail("hybrid filter '" + wt.name + "' needs one scale per output channel, as TFLite's kernel does");
    if (!depthwise && xt0.shape.size() == 4 && xt0.shape[3] != wt.shape[3])
      return s.fail("grouped convolution is not supported with hybrid weights (filter '" + wt.name + "')");
  }
  TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
  const double taps = static_cast<double>(wt.shape[1]) * static_cast<double>(wt.shape[2]);
  TS_RETURN_IF_ERROR(check_accumulator_range(s, x, w, b, y, depthwise ? taps : taps * static_cast<double>(wt.shape[3])));
  AttrMap a;
  if (depthwise) {
    const auto* o = s.op->builtin_options_as_DepthwiseConv2DOptions();
    if (!o) return s.fail("DepthwiseConv2DOptions are missing");
    const Tensor& xt = s.cx.graph.tensor(x);
    if (xt.shape.size() != 4 || xt.shape[3] == 0 || wt.shape[3] % xt.shape[3] != 0)
      return s.fail("filter " + shape_str(wt.shape) + " does not match input " + shape_str(xt.shape));
    // The multiplier follows from the shapes (TFLite's own kernels do the same; some
    // converters wrote an inconsistent option value).
    int64_t m = wt.shape[3] / xt.shape[3];
    if (o->depth_multiplier() != 0 && o->depth_multiplier() != m && xt.shape[3] != 1)
      return s.fail("depth_multiplier " + std::to_string(o->depth_multiplier()) + " does not match filter " +
                    shape_str(wt.shape) + " for input " + shape_str(xt.shape));
    a["depth_multiplier"] = m;
    TS_RETURN_IF_ERROR(window_attrs(s, x, o->padding(), wt.shape[1], wt.shape[2], o->stride_h(), o->stride_w(),
                                    o->dilation_h_factor(), o->dilation_w_factor(), a));
    TS_ASSIGN_OR_RETURN(a["activation"], activation(s, o->fused_activation_function()));
  } else {
    const auto* o = s.op->builtin_options_as_Conv2DOptions();
    if (!o) return s.fail("Conv2DOptions are missing");
    TS_RETURN_IF_ERROR(window_attrs(s, x, o->padding(), wt.shape[1], wt.shape[2], o->stride_h(), o->stride_w(),
                                    o->dilation_h_factor(), o->dilation_w_factor(), a));
    TS_ASSIGN_OR_RETURN(a["activation"], activation(s, o->fused_activation_function()));
  }
  return s.add(depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d, {x, w, b}, {y}, a);
}

// TRANSPOSE_CONV: inputs output_shape (i32 [4]), filter [OC,KH,KW,IC], input [N,H,W,IC],
// bias (optional). TFLite pads as the forward convolution of the output would
// (ComputePaddingHeightWidth on the output size). An output_shape computed at run time
// (a model input) runs at the output tensor's declared shape and is checked at each run.
Status build_transpose_conv(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(3, 4, 1));
  TS_ASSIGN_OR_RETURN(TensorId w, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(2));
  TensorId b = kNoTensor;
  if (s.has_input(3)) {
    TS_ASSIGN_OR_RETURN(b, s.input(3));
  }
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(TensorId shape_in, s.input(0));
  const auto* o = s.op->builtin_options_as_TransposeConvOptions();
  if (!o) return s.fail("TransposeConvOptions are missing");
  const Graph& g = s.cx.graph;
  const Tensor& wt = g.tensor(w);
  const Tensor& xt = g.tensor(x);
  const Tensor& st = g.tensor(shape_in);
  if (wt.shape.size() != 4) return s.fail("filter '" + wt.name + "' must be rank 4 [OC,KH,KW,IC], got " + shape_str(wt.shape));
  if (xt.shape.size() != 4) return s.fail("input '" + xt.name + "' must be rank 4 NHWC, got " + shape_str(xt.shape));
  if (st.dtype != DType::i32 || st.shape != Shape{4})
    return s.fail("output shape '" + st.name + "' must be i32 [4], got " + dtype_name(st.dtype) + " " + shape_str(st.shape));
  Shape out;
  TensorId runtime_shape = kNoTensor;
  if (st.data) {
    TS_ASSIGN_OR_RETURN(std::vector<int64_t> v, s.const_input(0));
    out = Shape(v.begin(), v.end());
  } else {
    out = g.tensor(y).shape;  // checked against the input at every run
    runtime_shape = shape_in;
  }
  if (out.size() != 4 || *std::min_element(out.begin(), out.end()) < 1)
    return s.fail("output shape " + shape_str(out) + " must be 4 positive sizes");
  if (out[0] != xt.shape[0] || out[3] != wt.shape[0] || wt.shape[3] != xt.shape[3])
    return s.fail("output shape " + shape_str(out) + " disagrees with input '" + xt.name + "' " + shape_str(xt.shape) +
                  " and filter '" + wt.name + "' " + shape_str(wt.shape) +
                  " (batch must match the input's, channels the filter's first dimension)");
  const int64_t sh = o->stride_h(), sw = o->stride_w();
  if (sh < 1 || sw < 1) return s.fail("strides must be >= 1");
  if (o->padding() != T::Padding_SAME && o->padding() != T::Padding_VALID) return s.fail("unknown padding mode");
  // The forward convolution of the output must give the input's size back.
  auto forward = [&](int64_t size, int64_t k, int64_t stride) {
    return o->padding() == T::Padding_SAME ? (size + stride - 1) / stride : (size - k + stride) / stride;
  };
  if (forward(out[1], wt.shape[1], sh) != xt.shape[1] || forward(out[2], wt.shape[2], sw) != xt.shape[2])
    return s.fail("output shape " + shape_str(out) + " disagrees with input " + shape_str(xt.shape) + ", filter " +
                  shape_str(wt.shape) + ", strides " + std::to_string(sh) + "x" + std::to_string(sw) + " and " +
                  (o->padding() == T::Padding_SAME ? "SAME" : "VALID") + " padding");
  int64_t pt, pb, pl, pr;
  same_or_valid_padding(o->padding(), out[1], wt.shape[1], sh, 1, &pt, &pb);
  same_or_valid_padding(o->padding(), out[2], wt.shape[2], sw, 1, &pl, &pr);
  if (xt.dtype == DType::f32 && wt.dtype != DType::f32)
    return s.fail("hybrid weights (float input, " + std::string(dtype_name(wt.dtype)) + " filter '" + wt.name + "') are not supported");
  TS_RETURN_IF_ERROR(check_weights(s, x, w, b, y, 0));
  TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
  TS_RETURN_IF_ERROR(check_accumulator_range(s, x, w, b, y, static_cast<double>(wt.shape[1] * wt.shape[2] * wt.shape[3])));
  AttrMap a{{"stride_h", sh}, {"stride_w", sw}, {"pad_top", pt}, {"pad_left", pl}, {"out_h", out[1]}, {"out_w", out[2]}};
  TS_ASSIGN_OR_RETURN(a["activation"], activation(s, o->fused_activation_function()));
  std::vector<TensorId> ins{x, w, b};
  if (runtime_shape != kNoTensor) ins.push_back(runtime_shape);
  return s.add(OpKind::transpose_conv2d, ins, {y}, a);
}

Status build_fully_connected(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 3, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId w, s.input(1));
  TensorId b = kNoTensor;
  if (s.has_input(2)) {
    TS_ASSIGN_OR_RETURN(b, s.input(2));
  }
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_FullyConnectedOptions();
  AttrMap a;
  a["activation"] = std::string("none");
  a["keep_dims"] = int64_t{0};
  if (o) {
    if (o->weights_format() != T::FullyConnectedOptionsWeightsFormat_DEFAULT)
      return s.fail("shuffled weights format is not supported");
    TS_ASSIGN_OR_RETURN(a["activation"], activation(s, o->fused_activation_function()));
    a["keep_dims"] = int64_t{o->keep_num_dims() ? 1 : 0};
  }
  const Tensor& wt = s.cx.graph.tensor(w);
  if (wt.shape.size() != 2) return s.fail("weights '" + wt.name + "' must be rank 2, got " + shape_str(wt.shape));
  TS_RETURN_IF_ERROR(check_weights(s, x, w, b, y, 0));
  // FullyConnectedOptions.asymmetric_quantize_inputs matters only for hybrid weights (f32
  // input): each input row then gets its own zero point (hybrid.cpp).
  if (o && o->asymmetric_quantize_inputs() &&
      s.cx.graph.tensor(x).dtype == DType::f32 && wt.dtype != DType::f32) {
    if (wt.shape[1] > q::kAsymmetricHybridMaxDepth)
      return s.fail("asymmetric_quantize_inputs with weights '" + wt.name + "' of depth " + std::to_string(wt.shape[1]) +
                    ": the int32 sums of the hybrid kernel hold " + std::to_string(q::kAsymmetricHybridMaxDepth) + " products");
    a["hybrid_inputs"] = std::string("asymmetric");
  }
  TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
  TS_RETURN_IF_ERROR(check_accumulator_range(s, x, w, b, y, static_cast<double>(wt.shape[1])));
  return s.add(OpKind::fully_connected, {x, w, b}, {y}, a);
}

Status build_pool(OpSite& s, OpKind kind) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_Pool2DOptions();
  if (!o) return s.fail("Pool2DOptions are missing");
  AttrMap a;
  TS_RETURN_IF_ERROR(
      window_attrs(s, x, o->padding(), o->filter_height(), o->filter_width(), o->stride_h(), o->stride_w(), 1, 1, a));
  a.erase("dilation_h");
  a.erase("dilation_w");
  a["filter_h"] = int64_t{o->filter_height()};
  a["filter_w"] = int64_t{o->filter_width()};
  TS_ASSIGN_OR_RETURN(a["activation"], activation(s, o->fused_activation_function()));
  TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
  if (s.cx.graph.tensor(x).dtype == DType::i16 && is_quant(s.cx.graph.tensor(x)))
    TS_RETURN_IF_ERROR(check_int16_operator(s, kind, {x}, y));
  return s.add(kind, {x}, {y}, a);
}

Status build_binary(OpSite& s, OpKind kind) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId a0, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId a1, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  if (const auto* o = s.op->builtin_options_as_AddOptions()) act = o->fused_activation_function();
  if (const auto* o = s.op->builtin_options_as_SubOptions()) act = o->fused_activation_function();
  if (const auto* o = s.op->builtin_options_as_MulOptions()) act = o->fused_activation_function();
  if (const auto* o = s.op->builtin_options_as_DivOptions()) act = o->fused_activation_function();
  const Graph& g = s.cx.graph;
  if (g.tensor(a0).dtype != g.tensor(a1).dtype)
    return s.fail(std::string("operand dtypes differ: ") + dtype_name(g.tensor(a0).dtype) + " and " +
                  dtype_name(g.tensor(a1).dtype));
  TS_RETURN_IF_ERROR(check_quant_io(s, {a0, a1}, {y}));
  if (g.tensor(a0).dtype == DType::i16 && is_quant(g.tensor(a0)) &&
      (kind == OpKind::add || kind == OpKind::sub || kind == OpKind::mul))  // (the kernels report the rest)
    TS_RETURN_IF_ERROR(check_int16_operator(s, kind, {a0, a1}, y));
  AttrMap a;
  TS_ASSIGN_OR_RETURN(a["activation"], activation(s, act));
  if ((kind == OpKind::add || kind == OpKind::sub) && int16_add_sub_is_pot(s, g.tensor(a0), g.tensor(a1), g.tensor(y)))
    a["pot_int16"] = int64_t{1};
  return s.add(kind, {a0, a1}, {y}, a);
}

Status build_unary(OpSite& s, OpKind kind, AttrMap a = {}) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
  if ((kind == OpKind::logistic || kind == OpKind::tanh) && s.cx.graph.tensor(x).dtype == DType::i16 &&
      is_quant(s.cx.graph.tensor(x)))
    TS_RETURN_IF_ERROR(check_int16_operator(s, kind, {x}, y));
  return s.add(kind, {x}, {y}, std::move(a));
}

// TFLite's int8 -> int16 softmax (activations.cc SoftmaxPrepare) demands the output
// parameters of a probability in [0, 1) spread over the int16 range.
constexpr int64_t kSoftmaxI16ZeroPoint = -32768;
constexpr double kSoftmaxI16Scale = 1.0 / 65536;

Status build_softmax(OpSite& s) {
  // Without SoftmaxOptions the interpreter's parser leaves beta at 0 (every row uniform).
  const auto* o = s.op->builtin_options_as_SoftmaxOptions();
  double beta = o ? o->beta() : 0.0;
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor& xt = s.cx.graph.tensor(x);
  const Tensor& yt = s.cx.graph.tensor(y);
  if (xt.dtype == DType::i16 && is_quant(xt)) TS_RETURN_IF_ERROR(check_int16_operator(s, OpKind::softmax, {x}, y));
  if (is_quant(xt) && yt.dtype != xt.dtype) {
    if (xt.dtype != DType::i8 || yt.dtype != DType::i16)
      return s.fail(std::string("a ") + dtype_name(xt.dtype) + " input needs an output of the same dtype (or i16 for "
                    "i8), output '" + yt.name + "' is " + dtype_name(yt.dtype));
    if (!is_quant(yt) || yt.quant.per_axis() || yt.quant.zero_point_at(0) != kSoftmaxI16ZeroPoint ||
        std::fabs(yt.quant.scale[0] - kSoftmaxI16Scale) > 0.001 * kSoftmaxI16Scale)
      return s.fail("i16 output '" + yt.name + "' must have scale 1/65536 and zero point -32768, got " +
                    quant_str(yt.quant));
  }
  return build_unary(s, OpKind::softmax, {{"axis", int64_t{-1}}, {"beta", beta}});
}

// MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD: constant axes (input 1, int32) within the
// input's rank, ReducerOptions.keep_dims. Quantized forms as TFLite's reduce.cc takes them:
// MEAN u8 / i8 / i16, SUM u8 / i8 (i16 keeping the input's quantization); REDUCE_MAX / REDUCE_MIN u8 / i8 / i16 with the input's quantization
// on the output (the codes are compared); REDUCE_PROD i8 / i16.
Status build_reduce(OpSite& s, OpKind kind) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axes, s.const_input(1));
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& yt = g.tensor(y);
  if (axes.empty()) return s.fail("no reduction axes");
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  for (int64_t a : axes)
    if (a < -rank || a >= rank)
      return s.fail("axis " + std::to_string(a) + " is outside input '" + xt.name + "' of rank " + std::to_string(rank));
  if (xt.dtype != yt.dtype)
    return s.fail(std::string("input '") + xt.name + "' is " + dtype_name(xt.dtype) + " but output '" + yt.name + "' is " +
                  dtype_name(yt.dtype));
  if (xt.dtype != DType::f32) {
    const bool max_min = kind == OpKind::reduce_max || kind == OpKind::reduce_min;
    const bool ok = is_quant(xt) && !xt.quant.per_axis() &&
                    (xt.dtype == DType::i16 ? max_min || kind == OpKind::reduce_prod || kind == OpKind::mean ||
                                                  kind == OpKind::sum
                                            : xt.dtype == DType::i8 || kind != OpKind::reduce_prod);
    if (!ok)
      return s.fail(std::string("input '") + xt.name + "' of dtype " + dtype_name(xt.dtype) +
                    (is_quant(xt) ? "" : " without quantization parameters") +
                    " is not supported (f32; " +
                    (kind == OpKind::reduce_prod ? "i8 or i16" : "u8, i8 or i16") +
                    " quantized per tensor)");
    TS_RETURN_IF_ERROR(check_quant_io(s, {x}, {y}));
    if (yt.quant.per_axis()) return s.fail("output '" + yt.name + "' has per-axis quantization");
    if (max_min && xt.quant != yt.quant)
      return s.fail("output '" + yt.name + "' must have the quantization of input '" + xt.name +
                    "' (TFLite compares codes)");
    if ((kind == OpKind::mean || kind == OpKind::sum) && xt.dtype == DType::i16)
      TS_RETURN_IF_ERROR(check_int16_operator(s, kind, {x}, y));
  }
  const auto* o = s.op->builtin_options_as_ReducerOptions();
  return s.add(kind, {x}, {y}, {{"axes", axes}, {"keep_dims", int64_t{o && o->keep_dims() ? 1 : 0}}});
}

Status build_quantize(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor& xt = s.cx.graph.tensor(x);
  const Tensor& yt = s.cx.graph.tensor(y);
  // Integer inputs requantize; int32 (with quantization parameters) only to or from int16,
  // as TFLite's int16 pipelines use it.
  auto quantized = [](const Tensor& t) { return is_quant(t) || (t.dtype == DType::i32 && !t.quant.empty()); };
  if (!quantized(yt)) return s.fail("output '" + yt.name + "' must be an integer tensor with quantization parameters");
  if (yt.quant.per_axis()) return s.fail("per-axis output quantization is not supported");
  if (xt.dtype == DType::f32) {
    if (yt.dtype == DType::i32) return s.fail("float input to an int32 output '" + yt.name + "' is not supported");
    return s.add(OpKind::quantize, {x}, {y});
  }
  if (!quantized(xt)) return s.fail(std::string("input dtype ") + dtype_name(xt.dtype) + " is not supported");
  if (xt.quant.per_axis()) return s.fail("per-axis input quantization is not supported");
  if ((xt.dtype == DType::i32 || yt.dtype == DType::i32) && xt.dtype != DType::i16 && yt.dtype != DType::i16)
    return s.fail(std::string("requantizing ") + dtype_name(xt.dtype) + " to " + dtype_name(yt.dtype) +
                  " is not supported (int32 only to or from int16)");
  return s.add(OpKind::requantize, {x}, {y});
}

// DEQUANTIZE of a constant f16 tensor (float16 weights): folded at import into an f32
// constant, exactly (every f16 value is an f32), so no node runs before each convolution.
Status fold_f16_constant(OpSite& s, TensorId x, TensorId y) {
  Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  Tensor& yt = g.tensor(y);
  if (yt.role != Role::activation)
    return s.fail("output '" + yt.name + "' of a constant f16 DEQUANTIZE must be an intermediate tensor, it is " +
                  role_name(yt.role));
  const int64_t n = xt.elements();
  if (!xt.data || n < 0 || xt.data->size != n * 2)  // the reader checked size == 2 * elements
    return s.fail("constant '" + xt.name + "' has " + std::to_string(xt.data ? xt.data->size : 0) + " bytes for " +
                  std::to_string(n) + " f16 values");
  if (yt.shape != xt.shape && (!yt.shape.empty() || n != 1))
    return s.fail("output '" + yt.name + "' is declared " + shape_str(yt.shape) + " but input '" + xt.name + "' is " +
                  shape_str(xt.shape));
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 4);  // n * 2 bytes were in the file
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, xt.data->data + 2 * i, 2);
    const float f = convert::f16_to_f32(h);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  yt.shape = xt.shape;
  yt.quant = QuantParams{};
  yt.role = Role::weight;
  yt.data = ConstData::from_vector(std::move(bytes));
  return Status::Ok();
}

Status build_dequantize(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor& xt = s.cx.graph.tensor(x);
  if (s.cx.graph.tensor(y).dtype != DType::f32) return s.fail("output must be f32");
  if (xt.dtype == DType::f16 && xt.data) return fold_f16_constant(s, x, y);
  if (xt.dtype != DType::f16 && !is_quant(xt))
    return s.fail("input '" + xt.name + "' must be f16 or quantized integer");
  return s.add(OpKind::dequantize, {x}, {y});
}

}  // namespace

int max_supported_version(T::BuiltinOperator code) {
  for (const auto& e : kVersions)
    if (e.code == code) return e.max_version;
  return 0;
}

// Implemented in op_builder_shape.cpp.
Status build_shape_operator(OpSite& s);
// Implemented in op_builder_custom.cpp.
Status build_custom_operator(OpSite& s);
// Implemented in op_builder_recurrent.cpp.
Status build_svdf(OpSite& s);
// Implemented in op_builder_rnn.cpp.
Status build_unidirectional_sequence_lstm(OpSite& s);
Status build_bidirectional_sequence_lstm(OpSite& s);
// Implemented in op_builder_math.cpp.
Status build_math_operator(OpSite& s);
// Implemented in op_builder_activation.cpp.
Status build_activation_operator(OpSite& s);
// Implemented in op_builder_matmul.cpp.
Status build_batch_matmul(OpSite& s);

Status build_operator(OpSite& s) {
  switch (s.code) {
    case T::BuiltinOperator_CONV_2D: return build_conv(s, false);
    case T::BuiltinOperator_DEPTHWISE_CONV_2D: return build_conv(s, true);
    case T::BuiltinOperator_FULLY_CONNECTED: return build_fully_connected(s);
    case T::BuiltinOperator_AVERAGE_POOL_2D: return build_pool(s, OpKind::avg_pool2d);
    case T::BuiltinOperator_MAX_POOL_2D: return build_pool(s, OpKind::max_pool2d);
    case T::BuiltinOperator_ADD: return build_binary(s, OpKind::add);
    case T::BuiltinOperator_SUB: return build_binary(s, OpKind::sub);
    case T::BuiltinOperator_MUL: return build_binary(s, OpKind::mul);
    case T::BuiltinOperator_DIV: return build_binary(s, OpKind::div);
    case T::BuiltinOperator_FLOOR_DIV: return build_binary(s, OpKind::floor_div);
    case T::BuiltinOperator_SQRT: return build_unary(s, OpKind::sqrt);
    case T::BuiltinOperator_ABS:
    case T::BuiltinOperator_NEG:
    case T::BuiltinOperator_SQUARE:
    case T::BuiltinOperator_RSQRT:
    case T::BuiltinOperator_EXP:
    case T::BuiltinOperator_LOG:
    case T::BuiltinOperator_SQUARED_DIFFERENCE:
    case T::BuiltinOperator_POW:
    case T::BuiltinOperator_EQUAL:
    case T::BuiltinOperator_NOT_EQUAL:
    case T::BuiltinOperator_LESS:
    case T::BuiltinOperator_LESS_EQUAL:
    case T::BuiltinOperator_GREATER:
    case T::BuiltinOperator_GREATER_EQUAL:
    case T::BuiltinOperator_SELECT_V2: return build_math_operator(s);
    case T::BuiltinOperator_PRELU:
    case T::BuiltinOperator_ELU:
    case T::BuiltinOperator_GELU:
    case T::BuiltinOperator_LOG_SOFTMAX:
    case T::BuiltinOperator_L2_NORMALIZATION:
    case T::BuiltinOperator_ARG_MIN:
    case T::BuiltinOperator_CUMSUM: return build_activation_operator(s);
    case T::BuiltinOperator_BATCH_MATMUL: return build_batch_matmul(s);
    case T::BuiltinOperator_MAXIMUM: return build_binary(s, OpKind::maximum);
    case T::BuiltinOperator_MINIMUM: return build_binary(s, OpKind::minimum);
    case T::BuiltinOperator_SOFTMAX: return build_softmax(s);
    case T::BuiltinOperator_SVDF: return build_svdf(s);
    case T::BuiltinOperator_LOGISTIC: return build_unary(s, OpKind::logistic);
    case T::BuiltinOperator_TANH: return build_unary(s, OpKind::tanh);
    case T::BuiltinOperator_RELU: return build_unary(s, OpKind::relu);
    case T::BuiltinOperator_RELU6: return build_unary(s, OpKind::relu6);
    case T::BuiltinOperator_HARD_SWISH: return build_unary(s, OpKind::hard_swish);
    case T::BuiltinOperator_LEAKY_RELU: {
      const auto* o = s.op->builtin_options_as_LeakyReluOptions();
      return build_unary(s, OpKind::leaky_relu, {{"alpha", double{o ? o->alpha() : 0.0f}}});
    }
    case T::BuiltinOperator_MEAN: return build_reduce(s, OpKind::mean);
    case T::BuiltinOperator_SUM: return build_reduce(s, OpKind::sum);
    case T::BuiltinOperator_REDUCE_MAX: return build_reduce(s, OpKind::reduce_max);
    case T::BuiltinOperator_REDUCE_MIN: return build_reduce(s, OpKind::reduce_min);
    case T::BuiltinOperator_REDUCE_PROD: return build_reduce(s, OpKind::reduce_prod);
    case T::BuiltinOperator_QUANTIZE: return build_quantize(s);
    case T::BuiltinOperator_TRANSPOSE_CONV: return build_transpose_conv(s);
    case T::BuiltinOperator_DEQUANTIZE: return build_dequantize(s);
    case T::BuiltinOperator_CUSTOM: return build_custom_operator(s);
    case T::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM: return build_unidirectional_sequence_lstm(s);
    case T::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM: return build_bidirectional_sequence_lstm(s);
    default: return build_shape_operator(s);
  }
}

}  // namespace tessera::tflite
