// TFLite BATCH_MATMUL -> Tessera `matmul`: lhs [..., M, K] times rhs [..., K, N], batch dims
// broadcast (ranks 2 to 5). adj_y becomes transpose_b; adj_x a `transpose` of the lhs's last
// two dims first. Forms as TFLite's kernel defines them: f32; i8 (per tensor, any zero
// points); i16 (zero points 0); hybrid: an f32 lhs with a constant int8 rhs (one scale,
// zero point 0), the lhs rows quantized symmetrically, or asymmetrically with
// asymmetric_quantize_inputs (version 4; the node's hybrid_inputs = "asymmetric").
#include <numeric>
#include <string>
#include <vector>

#include "convert/dtype.h"
#include "import/tflite/import_context.h"
#include "ops/quant_math.h"

namespace tessera::tflite {

namespace T = ::tflite;

Status build_batch_matmul(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId a, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId b, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_BatchMatMulOptions();
  const bool adj_x = o && o->adj_x(), adj_y = o && o->adj_y();
  Graph& g = s.cx.graph;
  const Tensor& at = g.tensor(a);
  const Tensor& bt = g.tensor(b);
  const Tensor& yt = g.tensor(y);
  for (const Tensor* t : {&at, &bt})
    if (t->shape.size() < 2 || t->shape.size() > 5)
      return s.fail("operand '" + t->name + "' has rank " + std::to_string(t->shape.size()) + "; BATCH_MATMUL takes 2 to 5");
  auto form = [](const Tensor& t) { return std::string(dtype_name(t.dtype)) + (t.quant.empty() ? "" : " quantized"); };
  bool asymmetric = false;
  if (at.dtype == DType::f32 && bt.dtype != DType::f32) {
    // Hybrid: a constant int8 rhs with one scale and zero point 0; each lhs row is quantized
    // at run time, symmetrically or (asymmetric_quantize_inputs) with its own zero point.
    if (bt.dtype != DType::i8 || bt.quant.empty() || bt.quant.per_axis() || bt.quant.zero_point_at(0) != 0)
      return s.fail("rhs '" + bt.name + "' is " + form(bt) +
                    " with an f32 lhs: hybrid BATCH_MATMUL takes int8 with one scale and zero point 0");
    if (!bt.data) return s.fail("hybrid rhs '" + bt.name + "' must be constant");
    if (yt.dtype != DType::f32) return s.fail("output '" + yt.name + "' of a hybrid BATCH_MATMUL must be f32");
    const int64_t depth = adj_x ? at.shape[at.shape.size() - 2] : at.shape.back();
    if (depth > 132104)  // at most 127 * 128 per product in an int32 sum
      return s.fail("lhs '" + at.name + "' has depth " + std::to_string(depth) + "; the hybrid int32 sum holds 132104 products");
    if (o && o->asymmetric_quantize_inputs()) {
      if (depth > q::kAsymmetricHybridMaxDepth)
        return s.fail("lhs '" + at.name + "' has depth " + std::to_string(depth) +
                      "; with asymmetric_quantize_inputs the hybrid int32 sum holds " +
                      std::to_string(q::kAsymmetricHybridMaxDepth) + " products");
      asymmetric = true;
    }
  } else {
    for (const Tensor* t : {&bt, &yt})
      if (t->dtype != at.dtype || t->quant.empty() != at.quant.empty())
        return s.fail("tensor '" + t->name + "' is " + form(*t) + ", lhs '" + at.name + "' is " + form(at));
  }
  if (at.dtype != DType::f32) {
    if ((at.dtype != DType::i8 && at.dtype != DType::i16) || at.quant.empty())
      return s.fail("lhs '" + at.name + "' is " + form(at) + "; BATCH_MATMUL takes f32, i8 or i16 quantized");
    for (const Tensor* t : {&at, &bt, &yt}) {
      if (t->quant.per_axis()) return s.fail("tensor '" + t->name + "' has per-axis quantization");
      if (at.dtype == DType::i16 && t->quant.zero_point_at(0) != 0)
        return s.fail("int16 tensor '" + t->name + "' has zero point " + std::to_string(t->quant.zero_point_at(0)) +
                      ", TFLite's int16 BATCH_MATMUL requires 0");
    }
    // i8 products are summed in int32: at most 255^2 each.
    const int64_t depth = adj_x ? at.shape[at.shape.size() - 2] : at.shape.back();
    if (at.dtype == DType::i8 && depth > 33025)
      return s.fail("lhs '" + at.name + "' has depth " + std::to_string(depth) + "; the int8 sum holds 33025 products");
  }
  TensorId lhs = a;
  if (adj_x) {
    std::vector<int64_t> perm(at.shape.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    Shape ts = at.shape;
    std::swap(ts[ts.size() - 1], ts[ts.size() - 2]);
    lhs = s.cx.temp_tensor(at.name + "/adj_x_" + std::to_string(s.index), ts, at.dtype, at.quant);
    TS_RETURN_IF_ERROR(s.add(OpKind::transpose, {a}, {lhs}, {{"perm", perm}}, "adj_x"));
  }
  AttrMap attrs{{"transpose_b", int64_t{adj_y ? 1 : 0}}};
  if (asymmetric) attrs["hybrid_inputs"] = std::string("asymmetric");
  return s.add(OpKind::matmul, {lhs, b}, {y}, attrs);
}

}  // namespace tessera::tflite
