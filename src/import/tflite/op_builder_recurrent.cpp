// TFLite operators with state: SVDF (its activation_state is a variable tensor, a
// Role::state tensor here, updated in place every run).
#include "import/tflite/import_context.h"
#include "ops/quant_math.h"

namespace tessera::tflite {

namespace T = ::tflite;

// SVDF: inputs x [B, I], weights_feature [F, I], weights_time [F, M], bias [U] (optional,
// -1 when absent), activation_state [B, F*M] (a variable tensor); output [B, U]. The node
// takes the state before the bias (its optional input last); its second output is the
// updated state, which aliases the variable (ops.def `svdf`).
Status build_svdf(OpSite& s) {
  if (s.num_inputs() != 5) return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 5");
  if (s.num_outputs() != 1) return s.fail("has " + std::to_string(s.num_outputs()) + " outputs, expected 1");
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId wf, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId wt, s.input(2));
  TensorId bias = kNoTensor;
  if (s.has_input(3)) {
    TS_ASSIGN_OR_RETURN(bias, s.input(3));
  }
  TS_ASSIGN_OR_RETURN(TensorId state, s.input(4));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_SVDFOptions();
  if (!o) return s.fail("SVDFOptions are missing");
  Graph& g = s.cx.graph;
  const Tensor& xt = g.tensor(x);
  const Tensor& wft = g.tensor(wf);
  const Tensor& st = g.tensor(state);
  if (st.role != Role::state)
    return s.fail("input 4 '" + st.name + "' (activation_state) must be a variable tensor");
  bool asymmetric = false;
  if (xt.dtype == DType::f32 && wft.dtype != DType::f32) {
    // Hybrid (dynamic-range) SVDF: int8 weights, inputs quantized per batch row,
    // symmetrically or (SVDFOptions.asymmetric_quantize_inputs, v4) with a zero point each.
    if (wft.dtype != DType::i8 || g.tensor(wt).dtype != DType::i8)
      return s.fail(std::string("hybrid SVDF (f32 input) needs i8 weights_feature and weights_time, '") + wft.name +
                    "' is " + dtype_name(wft.dtype) + " and '" + g.tensor(wt).name + "' " +
                    dtype_name(g.tensor(wt).dtype));
    if (o->asymmetric_quantize_inputs()) {
      if (xt.shape.size() == 2 && xt.shape[1] > q::kAsymmetricHybridMaxDepth)
        return s.fail("input '" + xt.name + "' has " + std::to_string(xt.shape[1]) +
                      " features; with asymmetric_quantize_inputs the hybrid int32 sum holds " +
                      std::to_string(q::kAsymmetricHybridMaxDepth) + " products");
      asymmetric = true;
    }
    if (!wft.data || !g.tensor(wt).data)
      return s.fail("hybrid weights '" + wft.name + "' and '" + g.tensor(wt).name + "' must be constant");
  }
  if (o->rank() < 1) return s.fail("rank " + std::to_string(o->rank()) + " must be >= 1");
  bool ok = false;
  const std::string act = activation_name(o->fused_activation_function(), &ok);
  if (!ok) return s.fail("fused activation " + act + " is not supported");
  // The interpreter's integer SVDF refuses at Invoke any fused activation but RELU (svdf.cc),
  // and then applies none (the oracle tests show codes below the output zero point).
  if (xt.dtype != DType::f32 && act != "relu")
    return s.fail("integer SVDF needs fused activation RELU (as TFLite's kernel), got " +
                  std::string(T::EnumNameActivationFunctionType(o->fused_activation_function())));
  TensorId updated = s.cx.temp_tensor(st.name + "/updated", st.shape, st.dtype, st.quant);
  AttrMap a{{"rank", int64_t{o->rank()}}, {"activation", act}};
  if (asymmetric) a["hybrid_inputs"] = std::string("asymmetric");
  return s.add(OpKind::svdf, {x, wf, wt, state, bias}, {y, updated}, a);
}

}  // namespace tessera::tflite
