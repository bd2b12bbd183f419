// Shape inference for the recurrent ops (lstm; see ops.def for its inputs and outputs).
#include <string>

#include "ops/lstm_inputs.h"
#include "ops/op_infer.h"

namespace tessera::ops {

namespace {

std::string desc(const Tensor& t) { return "'" + t.name + "' " + dtype_name(t.dtype) + shape_str(t.shape); }

}  // namespace

InferResult infer_lstm(const Graph& g, const Node& n) {
  using namespace lstm;
  const Tensor& x = in(g, n, kX);
  if (x.shape.size() != 3)
    return fail(n, "input 0 " + desc(x) + " must have rank 3 ([batch, time, features], or [time, batch, features])");
  const bool time_major = n.get(attr::time_major) != 0;
  const int64_t batch = time_major ? x.shape[1] : x.shape[0];
  const int64_t features = x.shape[2];
  const bool integer = x.dtype == DType::i8;
  if (x.dtype != DType::f32 && !integer) return fail(n, "input 0 " + desc(x) + ": only f32 and i8 inputs are supported");
  const DType weight_dtype = integer ? DType::i8 : DType::f32;
  const DType bias_dtype = integer ? DType::i32 : DType::f32;
  const int64_t cells = in(g, n, weights(kOutputGate)).shape.empty() ? 0 : in(g, n, weights(kOutputGate)).shape[0];
  const bool cifg = !has_in(n, weights(kInputGate));
  if (has_in(n, recurrent(kInputGate)) == cifg || has_in(n, bias(kInputGate)) == cifg)
    return fail(n, "the input gate's weights, recurrent weights and bias (inputs 12, 13, 14) must be all present or all absent");
  for (int gate = cifg ? 1 : 0; gate < 4; ++gate) {
    const std::string what = std::string(" (") + kGateName[gate] + " gate)";
    const size_t iw = weights(gate), ir = recurrent(gate), ib = bias(gate);
    if (!has_in(n, iw) || !has_in(n, ir) || !has_in(n, ib))
      return fail(n, std::string("the ") + kGateName[gate] + " gate's weights, recurrent weights and bias are required");
    const Tensor &w = in(g, n, iw), &r = in(g, n, ir), &b = in(g, n, ib);
    if (w.dtype != weight_dtype || w.shape != Shape{cells, features})
      return fail(n, "input " + std::to_string(iw) + " " + desc(w) + what + " must be " + dtype_name(weight_dtype) +
                         shape_str({cells, features}));
    if (r.dtype != weight_dtype || r.shape != Shape{cells, cells})
      return fail(n, "input " + std::to_string(ir) + " " + desc(r) + what + " must be " + dtype_name(weight_dtype) +
                         shape_str({cells, cells}) + " (projection is not supported, so the state has one value per cell)");
    if (b.dtype != bias_dtype || b.shape != Shape{cells})
      return fail(n, "input " + std::to_string(ib) + " " + desc(b) + what + " must be " + dtype_name(bias_dtype) +
                         shape_str({cells}));
  }
  const DType state_dtype[2] = {integer ? DType::i8 : DType::f32, integer ? DType::i16 : DType::f32};
  const char* state_name[2] = {"hidden", "cell"};
  std::vector<InferredOutput> outs = {{time_major ? Shape{x.shape[0], batch, cells} : Shape{batch, x.shape[1], cells},
                                       integer ? DType::i8 : DType::f32}};
  for (size_t k = 0; k < 2; ++k) {
    if (!has_in(n, kHidden + k)) return fail(n, std::string("the ") + state_name[k] + " state (input " + std::to_string(kHidden + k) + ") is missing");
    const Tensor& s = in(g, n, kHidden + k);
    if (s.role != Role::state)
      return fail(n, "input " + std::to_string(kHidden + k) + " " + desc(s) + ": the " + state_name[k] +
                         " state must be a state tensor (a TFLite variable tensor)");
    if (s.dtype != state_dtype[k])
      return fail(n, "input " + std::to_string(kHidden + k) + " " + desc(s) + ": the " + state_name[k] + " state must be " +
                         dtype_name(state_dtype[k]));
    if (num_elements(s.shape) != batch * cells)
      return fail(n, "input " + std::to_string(kHidden + k) + " " + desc(s) + ": the " + state_name[k] + " state must hold batch " +
                         std::to_string(batch) + " x " + std::to_string(cells) + " cells = " + std::to_string(batch * cells) +
                         " values");
    outs.push_back({s.shape, s.dtype});
  }
  return outs;
}

}  // namespace tessera::ops
