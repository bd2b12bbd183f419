// Shape inference: reductions, softmax, normalisation, rope, arg max.
#include <algorithm>

#include "ops/op_infer.h"

namespace tessera::ops {

static InferResult reduce(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  std::vector<int64_t> axes = n.get(attr::axes);
  if (axes.empty()) return fail(n, "attribute 'axes' is missing");
  std::vector<bool> red(x.shape.size(), false);
  for (int64_t a : axes) {
    TS_ASSIGN_OR_RETURN(int ax, norm_axis(n, a, x.shape.size()));
    red[ax] = true;
  }
  bool keep = n.get(attr::keep_dims) != 0;
  Shape s;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (!red[i]) s.push_back(x.shape[i]);
    else if (keep) s.push_back(1);
  }
  return one(s, x.dtype);
}
InferResult infer_mean(const Graph& g, const Node& n) { return reduce(g, n); }
InferResult infer_sum(const Graph& g, const Node& n) { return reduce(g, n); }
InferResult infer_reduce_max(const Graph& g, const Node& n) { return reduce(g, n); }
InferResult infer_reduce_min(const Graph& g, const Node& n) { return reduce(g, n); }
InferResult infer_reduce_prod(const Graph& g, const Node& n) { return reduce(g, n); }

InferResult infer_softmax(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  TS_RETURN_IF_ERROR(norm_axis(n, n.get(attr::axis), x.shape.size()).status());
  if (has_in(n, 1)) {
    auto s = broadcast_shapes(x.shape, in(g, n, 1).shape);
    if (!s.ok() || *s != x.shape) return fail(n, "mask " + shape_str(in(g, n, 1).shape) + " does not broadcast to " + shape_str(x.shape));
  }
  // TFLite's quantized softmax may widen an i8 input to an i16 output.
  if (x.dtype == DType::i8 && !x.quant.empty() && n.outputs.size() == 1 && out_dtype(g, n) == DType::i16)
    return one(x.shape, DType::i16);
  return one(x.shape, x.dtype);
}

// log_softmax, l2_norm: along the last axis, the input's shape (quantized forms: the
// output's own fixed scale, checked by the kernels).
static InferResult last_axis(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (x.shape.empty()) return fail(n, "input '" + x.name + "' must have rank >= 1");
  return one(x.shape, x.dtype);
}
InferResult infer_log_softmax(const Graph& g, const Node& n) { return last_axis(g, n); }
InferResult infer_l2_norm(const Graph& g, const Node& n) { return last_axis(g, n); }

static InferResult norm(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (x.shape.empty()) return fail(n, "input must have rank >= 1");
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (has_in(n, i) && num_elements(in(g, n, i).shape) != x.shape.back())
      return fail(n, "parameter '" + in(g, n, i).name + "' " + shape_str(in(g, n, i).shape) +
                         " does not match the last dim of " + shape_str(x.shape));
  return one(x.shape, x.dtype);
}
InferResult infer_rms_norm(const Graph& g, const Node& n) { return norm(g, n); }
InferResult infer_layer_norm(const Graph& g, const Node& n) { return norm(g, n); }

InferResult infer_rope(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& p = in(g, n, 1);
  if (x.shape.size() < 3) return fail(n, "input must be [T, H, D] or [B, T, H, D], got " + shape_str(x.shape));
  int64_t t = x.shape[x.shape.size() - 3];
  if (num_elements(p.shape) != t)
    return fail(n, "positions '" + p.name + "' has " + std::to_string(num_elements(p.shape)) + " entries for " +
                       std::to_string(t) + " tokens");
  if (p.dtype != DType::i32) return fail(n, "positions must be i32");
  if (x.shape.back() % 2) return fail(n, "head dim must be even");
  return one(x.shape, x.dtype);
}

InferResult infer_attention(const Graph& g, const Node& n) {
  const Tensor &q = in(g, n, 0), &k = in(g, n, 1), &v = in(g, n, 2), &p = in(g, n, 3);
  if (q.shape.size() != 3 || q.dtype != DType::f32) return fail(n, "query must be f32 [T, H, D], got " + shape_str(q.shape));
  const int64_t t = q.shape[0], h = q.shape[1], d = q.shape[2];
  for (const Tensor* c : {&k, &v}) {
    if (c->shape.size() != 4 || c->shape[1] != 1 || c->shape[3] != d || c->shape != k.shape)
      return fail(n, "cache '" + c->name + "' " + shape_str(c->shape) + " should be [Hkv, 1, L, " + std::to_string(d) +
                         "] like the keys");
    if (c->dtype != DType::f32 && c->dtype != DType::f16 && c->dtype != DType::q8_0)
      return fail(n, "cache '" + c->name + "' must be f32, f16 or q8_0, got " + dtype_name(c->dtype));
    if (c->dtype == DType::q8_0 && d % kQBlock != 0)
      return fail(n, "a q8_0 cache '" + c->name + "' needs a head size that is a multiple of 32, got " + std::to_string(d));
  }
  if (k.shape[0] < 1 || h % k.shape[0] != 0)
    return fail(n, std::to_string(h) + " query heads are not a multiple of " + std::to_string(k.shape[0]) + " KV heads");
  if (p.dtype != DType::i32 || num_elements(p.shape) != t)
    return fail(n, "positions '" + p.name + "' must be i32 with " + std::to_string(t) + " entries");
  return one(q.shape, DType::f32);
}

InferResult infer_arg_min(const Graph& g, const Node& n) { return infer_arg_max(g, n); }

InferResult infer_cumsum(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  TS_RETURN_IF_ERROR(norm_axis(n, n.get(attr::axis), x.shape.size()).status());
  if (x.dtype != DType::f32 && x.dtype != DType::i32 && x.dtype != DType::i64)
    return fail(n, std::string("input '") + x.name + "' is " + dtype_name(x.dtype) + "; cumsum takes f32, i32 or i64");
  return one(x.shape, x.dtype);
}

InferResult infer_arg_max(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  TS_ASSIGN_OR_RETURN(int ax, norm_axis(n, n.get(attr::axis), x.shape.size()));
  Shape s;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (static_cast<int>(i) != ax) s.push_back(x.shape[i]);
  DType t = out_dtype(g, n);
  if (t != DType::i32 && t != DType::i64) t = DType::i32;
  return one(s, t);
}

}  // namespace tessera::ops
