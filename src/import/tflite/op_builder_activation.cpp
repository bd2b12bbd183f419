// TFLite operators -> Tessera nodes: PRELU, ELU, GELU, LOG_SOFTMAX, L2_NORMALIZATION,
// ARG_MIN and CUMSUM. Each accepts the tensor forms TFLite's builtin kernels define for it
// (activations.cc, gelu.cc, l2norm.cc, arg_min_max.cc, cumsum.cc) and refuses the rest,
// naming the operator and the tensor.
#include <string>
#include <vector>

#include "convert/dtype.h"
#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

bool quantized(const Tensor& t) { return !t.quant.empty(); }

std::string form_of(const Tensor& t) {
  return std::string(dtype_name(t.dtype)) + (quantized(t) ? " quantized" : "");
}

// Every tensor in `ids`: one dtype, float32 plain or one of `qtypes` quantized per tensor.
Status check_same_form(OpSite& s, const std::vector<TensorId>& ids, const std::vector<DType>& qtypes,
                       const std::string& takes) {
  const Graph& g = s.cx.graph;
  const Tensor& first = g.tensor(ids[0]);
  bool ok = first.dtype == DType::f32 && !quantized(first);
  for (DType d : qtypes) ok = ok || (first.dtype == d && quantized(first));
  if (!ok) return s.fail("input '" + first.name + "' is " + form_of(first) + "; the operator takes " + takes);
  for (TensorId id : ids) {
    const Tensor& t = g.tensor(id);
    if (t.dtype != first.dtype || quantized(t) != quantized(first))
      return s.fail("tensor '" + t.name + "' is " + form_of(t) + ", input '" + first.name + "' is " + form_of(first));
    if (t.quant.per_axis()) return s.fail("tensor '" + t.name + "' has per-axis quantization");
  }
  return Status::Ok();
}

// A quantized output with the fixed parameters TFLite's kernel requires.
Status check_fixed_output(OpSite& s, TensorId y, float scale, int64_t zero_point) {
  const Tensor& yt = s.cx.graph.tensor(y);
  if (!quantized(yt)) return Status::Ok();
  if (yt.quant.scale[0] != scale || yt.quant.zero_point_at(0) != zero_point)
    return s.fail("output '" + yt.name + "' has " + quant_str(yt.quant) + "; TFLite's " + dtype_name(yt.dtype) +
                  " kernel requires scale " + std::to_string(scale) + " and zero point " + std::to_string(zero_point));
  return Status::Ok();
}

Status build_prelu(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId alpha, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_same_form(s, {x, alpha, y}, {DType::u8, DType::i8}, "f32, u8 or i8 quantized"));
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& at = g.tensor(alpha);
  // The interpreter broadcasts alpha against the input through a four-dimensional loop, and
  // the result must keep the input's shape.
  if (xt.shape.size() > 4)
    return s.fail("input '" + xt.name + "' has rank " + std::to_string(xt.shape.size()) + "; PRELU takes up to 4");
  bool fits = at.shape.size() <= xt.shape.size();
  for (size_t k = 0; fits && k < at.shape.size(); ++k) {
    const int64_t da = at.shape[at.shape.size() - 1 - k], dx = xt.shape[xt.shape.size() - 1 - k];
    fits = da == dx || da == 1;
  }
  if (!fits)
    return s.fail("alpha '" + at.name + "' " + shape_str(at.shape) + " does not broadcast to input '" + xt.name + "' " +
                  shape_str(xt.shape) + " (TFLite's PRELU keeps the input's shape)");
  return s.add(OpKind::prelu, {x, alpha}, {y});
}

Status build_unary_forms(OpSite& s, OpKind kind, const std::vector<DType>& qtypes, const std::string& takes,
                         AttrMap attrs = {}) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_same_form(s, {x, y}, qtypes, takes));
  return s.add(kind, {x}, {y}, std::move(attrs));
}

Status build_log_softmax(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_same_form(s, {x, y}, {DType::u8, DType::i8}, "f32, u8 or i8 quantized"));
  const Tensor& xt = s.cx.graph.tensor(x);
  if (xt.shape.empty()) return s.fail("input '" + xt.name + "' must have rank >= 1");
  TS_RETURN_IF_ERROR(check_fixed_output(s, y, 16.0f / 256, xt.dtype == DType::u8 ? 255 : 127));
  return s.add(OpKind::log_softmax, {x}, {y});
}

Status build_l2_normalization(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  if (const auto* o = s.op->builtin_options_as_L2NormOptions())
    if (o->fused_activation_function() != T::ActivationFunctionType_NONE)
      return s.fail(std::string("fused activation ") + T::EnumNameActivationFunctionType(o->fused_activation_function()) +
                    " is not supported (TFLite's L2_NORMALIZATION takes NONE)");
  TS_RETURN_IF_ERROR(check_same_form(s, {x, y}, {DType::u8, DType::i8}, "f32, u8 or i8 quantized"));
  const Tensor& xt = s.cx.graph.tensor(x);
  if (xt.shape.empty() || xt.shape.size() > 4)
    return s.fail("input '" + xt.name + "' has rank " + std::to_string(xt.shape.size()) + "; L2_NORMALIZATION takes 1 to 4");
  if (quantized(xt)) {
    // The squared offsets are summed in int32: at most 255^2 each.
    if (xt.shape.back() > 33025)
      return s.fail("input '" + xt.name + "' has " + std::to_string(xt.shape.back()) +
                    " values per row; the quantized sum of squares holds 33025");
    TS_RETURN_IF_ERROR(check_fixed_output(s, y, 1.0f / 128, xt.dtype == DType::u8 ? 128 : 0));
  }
  return s.add(OpKind::l2_norm, {x}, {y});
}

Status build_arg_min(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(1));
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const DType t = xt.dtype;
  if (t != DType::f32 && t != DType::u8 && t != DType::i8 && t != DType::i32)
    return s.fail(std::string("input '") + xt.name + "' is " + dtype_name(t) + "; ARG_MIN takes f32, u8, i8 or i32");
  if (quantized(xt) && xt.quant.per_axis()) return s.fail("input '" + xt.name + "' has per-axis quantization");
  if (axis.size() != 1) return s.fail("axis must be one value, got " + std::to_string(axis.size()));
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (axis[0] < -rank || axis[0] >= rank)
    return s.fail("axis " + std::to_string(axis[0]) + " is outside input '" + xt.name + "' of rank " + std::to_string(rank));
  const DType ot = g.tensor(y).dtype;
  if (ot != DType::i32 && ot != DType::i64) return s.fail("output must be i32 or i64");
  if (const auto* o = s.op->builtin_options_as_ArgMinOptions()) {
    const bool i64 = o->output_type() == T::TensorType_INT64;
    if (i64 != (ot == DType::i64))
      return s.fail(std::string("ArgMinOptions.output_type ") + T::EnumNameTensorType(o->output_type()) +
                    " does not match output '" + g.tensor(y).name + "' (" + dtype_name(ot) + ")");
  }
  return s.add(OpKind::arg_min, {x}, {y}, {{"axis", axis[0] < 0 ? axis[0] + rank : axis[0]}});
}

Status build_cumsum(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(1));
  const Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  if ((xt.dtype != DType::f32 && xt.dtype != DType::i32 && xt.dtype != DType::i64) || quantized(xt))
    return s.fail("input '" + xt.name + "' is " + form_of(xt) + "; CUMSUM takes f32, i32 or i64");
  if (g.tensor(y).dtype != xt.dtype)
    return s.fail(std::string("output '") + g.tensor(y).name + "' is " + dtype_name(g.tensor(y).dtype) + ", input is " +
                  dtype_name(xt.dtype));
  if (axis.size() != 1) return s.fail("axis must be one value, got " + std::to_string(axis.size()));
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (axis[0] < -rank || axis[0] >= rank)
    return s.fail("axis " + std::to_string(axis[0]) + " is outside input '" + xt.name + "' of rank " + std::to_string(rank));
  const auto* o = s.op->builtin_options_as_CumsumOptions();
  return s.add(OpKind::cumsum, {x}, {y},
               {{"axis", axis[0] < 0 ? axis[0] + rank : axis[0]},
                {"exclusive", int64_t{o && o->exclusive() ? 1 : 0}},
                {"reverse", int64_t{o && o->reverse() ? 1 : 0}}});
}

}  // namespace

Status build_activation_operator(OpSite& s) {
  switch (s.code) {
    case T::BuiltinOperator_PRELU: return build_prelu(s);
    case T::BuiltinOperator_ELU: return build_unary_forms(s, OpKind::elu, {DType::i8}, "f32 or i8 quantized");
    case T::BuiltinOperator_GELU: {
      const auto* o = s.op->builtin_options_as_GeluOptions();
      return build_unary_forms(s, OpKind::gelu, {DType::u8, DType::i8}, "f32, u8 or i8 quantized",
                               {{"approximate", int64_t{o && o->approximate() ? 1 : 0}}});
    }
    case T::BuiltinOperator_LOG_SOFTMAX: return build_log_softmax(s);
    case T::BuiltinOperator_L2_NORMALIZATION: return build_l2_normalization(s);
    case T::BuiltinOperator_ARG_MIN: return build_arg_min(s);
    case T::BuiltinOperator_CUMSUM: return build_cumsum(s);
    default: return s.fail("is not an activation operator");
  }
}

}  // namespace tessera::tflite
