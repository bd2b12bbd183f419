// Element-wise lowerings beyond the activations (docs/rknpu.md "Lookup tables"):
// QUANTIZE of an 8-bit tensor to 8 bits, which TFLite computes as a quantized multiplier
// applied to code - zi (Requantize, q::Requantize). Its output is a function of the input
// code alone, so the DPU's lookup table holds TFLite's result for every one of the 256
// input codes: exact, one element-wise DPU task.
#include "backend/rknpu/lower_internal.h"

#include "ops/quant_math.h"

namespace tessera::rknpu::detail {

Result<NpuOp> lower_requantize(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  const q::Requantize rq = q::requantize_params(quant_scale(x), quant_zp(x), quant_scale(y), quant_zp(y), y.dtype);
  if (rq.m.multiplier == 0) return no(n, "requantize with a zero multiplier");
  return lower_lut(n, g, n.inputs[0], n.outputs[0], [rq](int32_t v) { return rq.code(v); }, "requantize");
}

}  // namespace tessera::rknpu::detail
