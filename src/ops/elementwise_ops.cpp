// Shape inference: elementwise binary and unary ops, casts and quantization.
#include "ops/op_infer.h"

namespace tessera::ops {

static InferResult binary(const Graph& g, const Node& n) {
  const Tensor& a = in(g, n, 0);
  const Tensor& b = in(g, n, 1);
  auto s = broadcast_shapes(a.shape, b.shape);
  if (!s.ok()) return fail(n, "inputs '" + a.name + "' and '" + b.name + "': " + s.status().message());
  if (dtype_is_block(a.dtype) || dtype_is_block(b.dtype)) return fail(n, "block dtypes are not elementwise operands");
  if (a.dtype != b.dtype)
    return fail(n, "inputs '" + a.name + "' (" + dtype_name(a.dtype) + ") and '" + b.name + "' (" + dtype_name(b.dtype) +
                       ") have different dtypes");
  return one(*s, a.dtype);
}
InferResult infer_add(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_sub(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_mul(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_div(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_floor_div(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_maximum(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_minimum(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_squared_difference(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_pow(const Graph& g, const Node& n) { return binary(g, n); }
InferResult infer_prelu(const Graph& g, const Node& n) { return binary(g, n); }

// Comparisons: the operands' broadcast shape, boolean.
static InferResult compare(const Graph& g, const Node& n) {
  InferResult r = binary(g, n);
  if (r.ok())
    for (auto& o : *r) o.dtype = DType::boolean;
  return r;
}
InferResult infer_equal(const Graph& g, const Node& n) { return compare(g, n); }
InferResult infer_not_equal(const Graph& g, const Node& n) { return compare(g, n); }
InferResult infer_less(const Graph& g, const Node& n) { return compare(g, n); }
InferResult infer_less_equal(const Graph& g, const Node& n) { return compare(g, n); }
InferResult infer_greater(const Graph& g, const Node& n) { return compare(g, n); }
InferResult infer_greater_equal(const Graph& g, const Node& n) { return compare(g, n); }

InferResult infer_select(const Graph& g, const Node& n) {
  const Tensor& c = in(g, n, 0);
  if (c.dtype != DType::boolean) return fail(n, "condition '" + c.name + "' must be boolean, got " + dtype_name(c.dtype));
  const Tensor& a = in(g, n, 1);
  const Tensor& b = in(g, n, 2);
  if (a.dtype != b.dtype || dtype_is_block(a.dtype))
    return fail(n, "inputs '" + a.name + "' (" + dtype_name(a.dtype) + ") and '" + b.name + "' (" + dtype_name(b.dtype) +
                       ") must share one elementwise dtype");
  auto ab = broadcast_shapes(a.shape, b.shape);
  if (!ab.ok()) return fail(n, "inputs '" + a.name + "' and '" + b.name + "': " + ab.status().message());
  auto s = broadcast_shapes(c.shape, *ab);
  if (!s.ok()) return fail(n, "condition '" + c.name + "': " + s.status().message());
  return one(*s, a.dtype);
}

static InferResult unary(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (dtype_is_block(x.dtype)) return fail(n, "block dtype input '" + x.name + "'");
  return one(x.shape, x.dtype);
}
InferResult infer_relu(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_relu6(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_leaky_relu(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_logistic(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_tanh(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_hard_swish(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_silu(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_gelu(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_elu(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_exp(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_rsqrt(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_sqrt(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_abs(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_neg(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_square(const Graph& g, const Node& n) { return unary(g, n); }
InferResult infer_log(const Graph& g, const Node& n) { return unary(g, n); }

InferResult infer_cast(const Graph& g, const Node& n) { return one(in(g, n, 0).shape, out_dtype(g, n)); }

InferResult infer_quantize(const Graph& g, const Node& n) {
  DType t = out_dtype(g, n);
  if (t != DType::u8 && t != DType::i8 && t != DType::i16)
    return fail(n, std::string("output dtype must be u8, i8 or i16, got ") + dtype_name(t));
  if (g.tensor(n.outputs[0]).quant.empty()) return fail(n, "output has no quantization parameters");
  return one(in(g, n, 0).shape, t);
}

InferResult infer_dequantize(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (!dtype_is_block(x.dtype) && x.dtype != DType::f16 && x.dtype != DType::bf16 && x.quant.empty())
    return fail(n, "input '" + x.name + "' has no quantization parameters");
  return one(x.shape, DType::f32);
}

InferResult infer_requantize(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (x.quant.empty() || g.tensor(n.outputs[0]).quant.empty())
    return fail(n, "input and output need quantization parameters");
  return one(x.shape, out_dtype(g, n));
}

}  // namespace tessera::ops
