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
  // Hybrid: f32 x with i8 weights (TFLite's dynamic-range quantization).
  const bool hybrid = !integer && in(g, n, weights(kOutputGate)).dtype == DType::i8;
  const DType weight_dtype = integer || hybrid ? DType::i8 : DType::f32;
  const DType bias_dtype = integer ? DType::i32 : DType::f32;
  const int64_t cells = in(g, n, weights(kOutputGate)).shape.empty() ? 0 : in(g, n, weights(kOutputGate)).shape[0];
  const bool cifg = !has_in(n, weights(kInputGate));
  if (has_in(n, recurrent(kInputGate)) == cifg || has_in(n, bias(kInputGate)) == cifg)
    return fail(n, "the input gate's weights, recurrent weights and bias (inputs 12, 13, 14) must be all present or all absent");
  // Projection: P outputs per step (the hidden state's width), else P = C.
  const bool projection = has_in(n, kProjectionWeights);
  if (has_in(n, kProjectionBias) && !projection)
    return fail(n, "input 19 " + desc(in(g, n, kProjectionBias)) + ": a projection bias needs projection weights (input 18)");
  int64_t outputs = cells;
  if (projection) {
    const Tensor& wp = in(g, n, kProjectionWeights);
    if (wp.dtype != weight_dtype || wp.shape.size() != 2 || wp.shape[1] != cells || wp.shape[0] < 1)
      return fail(n, "input 18 " + desc(wp) + " (projection weights) must be " + dtype_name(weight_dtype) + "[P, " +
                         std::to_string(cells) + "]");
    outputs = wp.shape[0];
    if (has_in(n, kProjectionBias)) {
      const Tensor& bp = in(g, n, kProjectionBias);
      if (bp.dtype != bias_dtype || bp.shape != Shape{outputs})
        return fail(n, "input 19 " + desc(bp) + " (projection bias) must be " + dtype_name(bias_dtype) + shape_str({outputs}));
    }
  }
  // Peephole weights: the forget and output gates' together, the input gate's with them
  // when there is an input gate.
  const bool has_peephole = has_in(n, peephole(kForgetGate));
  const DType diag_dtype = integer ? DType::i16 : hybrid ? DType::i8 : DType::f32;
  const DType norm_dtype = integer ? DType::i16 : DType::f32;
  for (int gate : {kInputGate, kForgetGate, kOutputGate}) {
    const bool want = has_peephole && !(gate == kInputGate && cifg);
    const size_t k = lstm::peephole(gate);
    if (has_in(n, k) != want)
      return fail(n, std::string("the peephole weights (inputs 15-17) must be given for every gate or none (the input gate's only with an input gate); the ") +
                         kGateName[gate] + " gate's (input " + std::to_string(k) + ") is " + (want ? "missing" : "extra"));
    if (want && (in(g, n, k).dtype != diag_dtype || in(g, n, k).shape != Shape{cells}))
      return fail(n, "input " + std::to_string(k) + " " + desc(in(g, n, k)) + " (" + kGateName[gate] +
                         " gate's peephole weights) must be " + dtype_name(diag_dtype) + shape_str({cells}));
  }
  const bool norm = has_in(n, layer_norm(kForgetGate));
  for (int gate = 0; gate < 4; ++gate) {
    const bool want = norm && !(gate == kInputGate && cifg);
    const size_t k = layer_norm(gate);
    if (has_in(n, k) != want)
      return fail(n, std::string("the layer-norm coefficients (inputs 20-23) must be given for every gate or none; the ") +
                         kGateName[gate] + " gate's (input " + std::to_string(k) + ") is " + (want ? "missing" : "extra"));
    if (want && (in(g, n, k).dtype != norm_dtype || in(g, n, k).shape != Shape{cells}))
      return fail(n, "input " + std::to_string(k) + " " + desc(in(g, n, k)) + " (" + kGateName[gate] +
                         " gate's layer-norm coefficients) must be " + dtype_name(norm_dtype) + shape_str({cells}));
  }
  for (int gate = cifg ? 1 : 0; gate < 4; ++gate) {
    const std::string what = std::string(" (") + kGateName[gate] + " gate)";
    const size_t iw = weights(gate), ir = recurrent(gate), ib = bias(gate);
    if (!has_in(n, iw) || !has_in(n, ir) || !has_in(n, ib))
      return fail(n, std::string("the ") + kGateName[gate] + " gate's weights, recurrent weights and bias are required");
    const Tensor &w = in(g, n, iw), &r = in(g, n, ir), &b = in(g, n, ib);
    if (w.dtype != weight_dtype || w.shape != Shape{cells, features})
      return fail(n, "input " + std::to_string(iw) + " " + desc(w) + what + " must be " + dtype_name(weight_dtype) +
                         shape_str({cells, features}));
    if (r.dtype != weight_dtype || r.shape != Shape{cells, outputs})
      return fail(n, "input " + std::to_string(ir) + " " + desc(r) + what + " must be " + dtype_name(weight_dtype) +
                         shape_str({cells, outputs}) + " (cells x outputs: " +
                         (projection ? "the projection's rows" : "no projection, so one output per cell") + ")");
    if (b.dtype != bias_dtype || b.shape != Shape{cells})
      return fail(n, "input " + std::to_string(ib) + " " + desc(b) + what + " must be " + dtype_name(bias_dtype) +
                         shape_str({cells}));
  }
  const DType state_dtype[2] = {integer ? DType::i8 : DType::f32, integer ? DType::i16 : DType::f32};
  const char* state_name[2] = {"hidden", "cell"};
  std::vector<InferredOutput> outs = {{time_major ? Shape{x.shape[0], batch, outputs} : Shape{batch, x.shape[1], outputs},
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
    const int64_t width = k == 0 ? outputs : cells;
    if (num_elements(s.shape) != batch * width)
      return fail(n, "input " + std::to_string(kHidden + k) + " " + desc(s) + ": the " + state_name[k] + " state must hold batch " +
                         std::to_string(batch) + " x " + std::to_string(width) + (k == 0 ? " outputs = " : " cells = ") +
                         std::to_string(batch * width) + " values");
    outs.push_back({s.shape, s.dtype});
  }
  return outs;
}

}  // namespace tessera::ops
