// TFLite operators -> Tessera nodes: elementwise math builtins (ABS, NEG, SQUARE, RSQRT,
// EXP, LOG, SQUARED_DIFFERENCE, POW), the comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL,
// GREATER, GREATER_EQUAL) and SELECT_V2. Each accepts only the tensor forms TFLite's own kernels define (elementwise.cc,
// neg.cc, exp.cc), so a model the interpreter would refuse is refused here, naming the
// operator and the tensor.
#include <algorithm>
#include <string>
#include <vector>

#include "convert/dtype.h"
#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

// A form an operator takes: a dtype, and whether it is quantized (per-tensor scale and zero
// point) or plain; `zero_zp` requires zero points 0 (TFLite's int16 forms).
struct Form {
  DType dtype;
  bool quantized;
  bool zero_zp = false;
};

std::string form_list(const std::vector<Form>& forms) {
  std::string r;
  for (const Form& f : forms) {
    if (!r.empty()) r += ", ";
    r += std::string(dtype_name(f.dtype)) + (f.quantized ? " quantized" : "");
  }
  return r;
}

// Checks that every tensor in `ids` has one of `forms`, all the same one, with per-tensor
// quantization when quantized.
Status check_forms(OpSite& s, const std::vector<TensorId>& ids, const std::vector<Form>& forms) {
  const Graph& g = s.cx.graph;
  const Tensor& first = g.tensor(ids[0]);
  const Form* form = nullptr;
  for (const Form& f : forms)
    if (f.dtype == first.dtype && f.quantized == !first.quant.empty()) form = &f;
  if (!form)
    return s.fail("input '" + first.name + "' is " + dtype_name(first.dtype) + (first.quant.empty() ? "" : " quantized") +
                  "; the operator takes " + form_list(forms));
  for (TensorId id : ids) {
    const Tensor& t = g.tensor(id);
    if (t.dtype != first.dtype || t.quant.empty() != first.quant.empty())
      return s.fail("tensor '" + t.name + "' is " + dtype_name(t.dtype) + (t.quant.empty() ? "" : " quantized") +
                    ", input '" + first.name + "' is " + dtype_name(first.dtype) + (first.quant.empty() ? "" : " quantized"));
    if (!form->quantized) continue;
    if (t.quant.per_axis()) return s.fail("tensor '" + t.name + "' has per-axis quantization");
    if (form->zero_zp && t.quant.zero_point_at(0) != 0)
      return s.fail("tensor '" + t.name + "' has zero point " + std::to_string(t.quant.zero_point_at(0)) + ", " +
                    dtype_name(t.dtype) + " needs 0");
  }
  return Status::Ok();
}

Status build_math_unary(OpSite& s, OpKind kind, const std::vector<Form>& forms) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_forms(s, {x, y}, forms));
  return s.add(kind, {x}, {y});
}

Status build_math_binary(OpSite& s, OpKind kind, const std::vector<Form>& forms) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId a, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId b, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_forms(s, {a, b, y}, forms));
  return s.add(kind, {a, b}, {y});
}

// Comparisons: operands of one form (quantized ones may differ in scale and zero point),
// a boolean output.
Status build_compare(OpSite& s, OpKind kind, const std::vector<Form>& forms) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId a, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId b, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_RETURN_IF_ERROR(check_forms(s, {a, b}, forms));
  const Graph& g = s.cx.graph;
  if (g.tensor(y).dtype != DType::boolean)
    return s.fail("output '" + g.tensor(y).name + "' is " + dtype_name(g.tensor(y).dtype) + ", a comparison gives bool");
  for (TensorId id : {a, b}) {  // comparisons.cc rescales by the scale as a multiplier below one
    const Tensor& t = g.tensor(id);
    if (!t.quant.empty() && t.dtype != DType::i16 && !(t.quant.scale[0] < 1.0f))
      return s.fail("input '" + t.name + "' has scale " + std::to_string(t.quant.scale[0]) + "; TFLite compares scales below 1");
  }
  return s.add(kind, {a, b}, {y});
}

// SELECT_V2: a bool condition; both values and the output of one form and quantization
// (the interpreter copies stored values, so differing quantization would change meaning).
Status build_select(OpSite& s, const std::vector<Form>& forms) {
  TS_RETURN_IF_ERROR(s.expect_io(3, 3, 1));
  TS_ASSIGN_OR_RETURN(TensorId c, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId a, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId b, s.input(2));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Graph& g = s.cx.graph;
  if (g.tensor(c).dtype != DType::boolean)
    return s.fail("condition '" + g.tensor(c).name + "' is " + dtype_name(g.tensor(c).dtype) + ", expected bool");
  TS_RETURN_IF_ERROR(check_forms(s, {a, b, y}, forms));
  for (TensorId id : {a, b})
    if (g.tensor(id).quant != g.tensor(y).quant)
      return s.fail("input '" + g.tensor(id).name + "' and output '" + g.tensor(y).name + "' have different quantization");
  return s.add(OpKind::select, {c, a, b}, {y});
}

const Form kF32{DType::f32, false};
const Form kI32{DType::i32, false};
const Form kU8q{DType::u8, true};
const Form kI8q{DType::i8, true};
const Form kI16q{DType::i16, true, true};

}  // namespace

Status build_math_operator(OpSite& s) {
  switch (s.code) {
    case T::BuiltinOperator_ABS: return build_math_unary(s, OpKind::abs, {kF32, kI8q, kI16q});
    case T::BuiltinOperator_NEG: return build_math_unary(s, OpKind::neg, {kF32});
    case T::BuiltinOperator_SQUARE: return build_math_unary(s, OpKind::square, {kF32});
    case T::BuiltinOperator_RSQRT: return build_math_unary(s, OpKind::rsqrt, {kF32, kI8q});
    // EXP v2 (int8 through a table) is newer than the interpreter the tests judge by: f32 only.
    case T::BuiltinOperator_EXP: return build_math_unary(s, OpKind::exp, {kF32});
    case T::BuiltinOperator_LOG: return build_math_unary(s, OpKind::log, {kF32});
    case T::BuiltinOperator_SQUARED_DIFFERENCE: return build_math_binary(s, OpKind::squared_difference, {kF32, kI32, kI8q});
    case T::BuiltinOperator_POW: return build_math_binary(s, OpKind::pow, {kF32});
    case T::BuiltinOperator_EQUAL: return build_compare(s, OpKind::equal, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_NOT_EQUAL: return build_compare(s, OpKind::not_equal, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_LESS: return build_compare(s, OpKind::less, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_LESS_EQUAL: return build_compare(s, OpKind::less_equal, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_GREATER: return build_compare(s, OpKind::greater, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_GREATER_EQUAL: return build_compare(s, OpKind::greater_equal, {kF32, kI32, kU8q, kI8q});
    case T::BuiltinOperator_SELECT_V2: return build_select(s, {kF32, kI32, kU8q, kI8q, kI16q});
    default: return s.fail("is not a math operator");
  }
}

}  // namespace tessera::tflite
