// Shape inference: recurrent ops that keep a state between runs (TFLite SVDF).
#include "ops/op_infer.h"

namespace tessera::ops {

namespace {

bool per_tensor_quant(const Tensor& t, DType want) { return t.dtype == want && t.quant.scale.size() == 1; }

// The integer form of TFLite's SVDF (EvalIntegerSVDF): its kernel assumes zero points of 0
// on both weights and on the state, and per-tensor scales everywhere.
Status check_integer_svdf(const Graph& g, const Node& n) {
  const Tensor &x = in(g, n, 0), &wf = in(g, n, 1), &wt = in(g, n, 2), &st = in(g, n, 3);
  const Tensor& y = g.tensor(n.outputs[0]);
  const struct {
    const Tensor* t;
    DType want;
    const char* role;
  } parts[] = {{&x, DType::i8, "input"},       {&wf, DType::i8, "weights_feature"}, {&wt, DType::i16, "weights_time"},
               {&st, DType::i16, "state"},      {&y, DType::i8, "output"}};
  for (const auto& p : parts)
    if (!per_tensor_quant(*p.t, p.want))
      return fail(n, std::string(p.role) + " '" + p.t->name + "' must be " + dtype_name(p.want) +
                         " with per-tensor quantization for an i8 input, got " + dtype_name(p.t->dtype) +
                         (p.t->quant.empty() ? " without quantization" : ""));
  for (const Tensor* t : {&wf, &wt, &st})
    if (t->quant.zero_point_at(0) != 0)
      return fail(n, "'" + t->name + "' must have zero point 0, got " + std::to_string(t->quant.zero_point_at(0)));
  if (has_in(n, 4) && in(g, n, 4).dtype != DType::i32)
    return fail(n, "bias '" + in(g, n, 4).name + "' must be i32 for an i8 input, got " + dtype_name(in(g, n, 4).dtype));
  return Status::Ok();
}

}  // namespace

InferResult infer_svdf(const Graph& g, const Node& n) {
  for (size_t k : {0, 1, 2, 3})
    if (!has_in(n, k)) return fail(n, "input " + std::to_string(k) + " is required (only the bias, input 4, is optional)");
  const Tensor &x = in(g, n, 0), &wf = in(g, n, 1), &wt = in(g, n, 2), &st = in(g, n, 3);
  if (x.shape.size() != 2) return fail(n, "input '" + x.name + "' must be [batch, input_size], got " + shape_str(x.shape));
  if (wf.shape.size() != 2)
    return fail(n, "weights_feature '" + wf.name + "' must be [filters, input_size], got " + shape_str(wf.shape));
  if (wt.shape.size() != 2)
    return fail(n, "weights_time '" + wt.name + "' must be [filters, memory_size], got " + shape_str(wt.shape));
  const int64_t batch = x.shape[0], filters = wf.shape[0], memory = wt.shape[1];
  if (wf.shape[1] != x.shape[1])
    return fail(n, "weights_feature '" + wf.name + "' " + shape_str(wf.shape) + " does not match input '" + x.name +
                       "' " + shape_str(x.shape));
  if (wt.shape[0] != filters)
    return fail(n, "weights_time '" + wt.name + "' " + shape_str(wt.shape) + " needs " + std::to_string(filters) +
                       " rows, one per filter of weights_feature '" + wf.name + "'");
  if (memory < 1) return fail(n, "weights_time '" + wt.name + "' has memory size 0");
  const int64_t rank = n.get(attr::rank);
  if (filters % rank != 0)
    return fail(n, "rank " + std::to_string(rank) + " does not divide the " + std::to_string(filters) +
                       " filters of weights_feature '" + wf.name + "'");
  const int64_t units = filters / rank;
  if (has_in(n, 4) && (in(g, n, 4).shape.size() != 1 || in(g, n, 4).shape[0] != units))
    return fail(n, "bias '" + in(g, n, 4).name + "' must be [" + std::to_string(units) + "], got " +
                       shape_str(in(g, n, 4).shape));
  if (st.role != Role::state) return fail(n, "input 3 '" + st.name + "' must be a state tensor");
  if (st.shape != Shape{batch, filters * memory})
    return fail(n, "state '" + st.name + "' must be [" + std::to_string(batch) + ", " + std::to_string(filters * memory) +
                       "] (batch, filters * memory_size), got " + shape_str(st.shape));
  if (x.dtype == DType::f32 && wf.dtype == DType::i8) {
    // Hybrid: TFLite's dynamic-range SVDF (int8 weights, float activations and state).
    for (const Tensor* t : {&wf, &wt})
      if (t->dtype != DType::i8 || t->quant.scale.size() != 1 || t->quant.zero_point_at(0) != 0)
        return fail(n, "hybrid weights '" + t->name + "' must be i8 with one scale and zero point 0, got " +
                           dtype_name(t->dtype) + " " + quant_str(t->quant));
    if (st.dtype != DType::f32) return fail(n, "state '" + st.name + "' must be f32 for an f32 input");
    if (has_in(n, 4) && in(g, n, 4).dtype != DType::f32)
      return fail(n, "bias '" + in(g, n, 4).name + "' must be f32 for an f32 input");
  } else if (x.dtype == DType::f32) {
    for (const Tensor* t : {&wf, &wt, &st})
      if (t->dtype != DType::f32) return fail(n, "'" + t->name + "' must be f32 for an f32 input, got " + dtype_name(t->dtype));
    if (has_in(n, 4) && in(g, n, 4).dtype != DType::f32)
      return fail(n, "bias '" + in(g, n, 4).name + "' must be f32 for an f32 input");
  } else if (x.dtype == DType::i8) {
    TS_RETURN_IF_ERROR(check_integer_svdf(g, n));
  } else {
    return fail(n, std::string("input '") + x.name + "' must be f32 or i8, got " + dtype_name(x.dtype));
  }
  const DType out = x.dtype;
  return std::vector<InferredOutput>{{{batch, units}, out}, {st.shape, st.dtype}};
}

}  // namespace tessera::ops
