// TFLite's 16x8 quantization (int16 activations with zero point 0) for the element-wise
// operators: the parameters the interpreter's Prepare functions demand, checked at import so
// that a model the interpreter refuses (or whose arithmetic would overflow) is refused here,
// naming the operator and the tensor.
//  - LOGISTIC, TANH (activations.cc): input and output zero point 0; output scale 1/32768
//    (LOGISTIC exactly, TANH a power of two within CheckedLog2's tolerance of 2^-15); an
//    input scale the int16 arithmetic can take (ops/quant_int16.h).
//  - ADD, SUB (add.cc, sub.cc): the general-scale kernel, or the shift-only kernel when
//    pot_scale_int16 is set (its default) and every scale is a power of two as CheckedLog2
//    sees it (within 1e-3 in log2): one operand at the output's scale, the other at one no
//    larger (ops/quant_int16.h; the node's pot_int16 attribute).
//  - MUL (mul.cc): both operands int16, zero points 0; the output int16 (one scale, zero
//    point 0) or uint8 (the legacy Q0.15 x Q0.15 -> Q0.7 path: same shapes, scales unused).
//  - AVERAGE_POOL_2D, MAX_POOL_2D (pooling.cc): zero points 0; the window at most 65536
//    values (the average sums int16 codes in int32).
//  - MEAN (reduce.cc): zero points 0; at most 65536 values per output (an int32 sum).
//  - SUM (reduce.cc): the input's quantization on the output (the codes are added).
//  - SOFTMAX (activations.cc): output scale 1/32768 (within 0.1%), rank 1 to 4, an input
//    scale times beta whose rescaling fits int32, rows of at most 65536 values.
#include <cmath>
#include <string>
#include <vector>

#include "convert/dtype.h"
#include "import/tflite/import_context.h"
#include "ops/quant_int16.h"

namespace tessera::tflite {

namespace {

Status require_symmetric_i16(OpSite& s, const Tensor& t) {
  if (t.dtype != DType::i16 || t.quant.empty() || t.quant.per_axis())
    return s.fail("tensor '" + t.name + "' must be int16 with one scale and zero point (TFLite's 16x8 form), got " +
                  dtype_name(t.dtype) + (t.quant.empty() ? " without quantization" : ""));
  if (t.quant.zero_point_at(0) != 0)
    return s.fail("int16 tensor '" + t.name + "' has zero point " + std::to_string(t.quant.zero_point_at(0)) +
                  ", TFLite's 16x8 quantization requires 0");
  const float sc = t.quant.scale[0];
  if (!(sc > 0) || !std::isfinite(sc)) return s.fail("int16 tensor '" + t.name + "' has scale " + std::to_string(sc));
  return Status::Ok();
}

bool pot_option(OpSite& s) {
  if (const auto* o = s.op->builtin_options_as_AddOptions()) return o->pot_scale_int16();
  if (const auto* o = s.op->builtin_options_as_SubOptions()) return o->pot_scale_int16();
  return true;  // the schema's default
}

Status check_add_sub(OpSite& s, OpKind kind, const std::vector<const Tensor*>& ts) {
  if (!q::i16::pot_add_sub_applies(pot_option(s), ts[0]->quant.scale[0], ts[1]->quant.scale[0], ts[2]->quant.scale[0]))
    return Status::Ok();
  q::i16::PotAddSub p;
  const std::string err = q::i16::pot_add_sub(ts[0]->quant.scale[0], ts[1]->quant.scale[0], ts[2]->quant.scale[0], &p);
  if (!err.empty()) return s.fail("int16 operands '" + ts[0]->name + "' and '" + ts[1]->name + "': " + err);
  // add.cc's shift-only kernel has no broadcasting form (the interpreter aborts); sub.cc's has.
  if (kind == OpKind::add) {
    if (ts[0]->shape != ts[2]->shape || ts[1]->shape != ts[2]->shape)
      return s.fail("int16 operands '" + ts[0]->name + "' " + shape_str(ts[0]->shape) + " and '" + ts[1]->name + "' " +
                    shape_str(ts[1]->shape) + " with power-of-two scales: TFLite's shift-only ADD does not broadcast");
  }
  return Status::Ok();
}

Status check_unit_activation(OpSite& s, const Tensor& x, const Tensor& y, bool is_tanh) {
  const float so = y.quant.scale[0];
  int log2 = 0;
  const bool ok = is_tanh ? q::i16::checked_log2(so, &log2) && log2 == -15
                          : static_cast<double>(so) == q::i16::kUnitOutputScale;
  if (!ok)
    return s.fail("int16 output '" + y.name + "' must have scale 1/32768 (TFLite's Q0.15 output), got " +
                  std::to_string(so));
  q::i16::UnitActivation p;
  const std::string err = q::i16::unit_activation(x.quant.scale[0], is_tanh, &p);
  if (!err.empty()) return s.fail("int16 input '" + x.name + "': " + err);
  return Status::Ok();
}

Status check_softmax(OpSite& s, const Tensor& x, const Tensor& y, float beta) {
  if (!(std::abs(y.quant.scale[0] - 1.f / 32768) <= 0.001f * 1.f / 32768))
    return s.fail("int16 output '" + y.name + "' must have scale 1/32768 (TFLite's int16 softmax), got " +
                  std::to_string(y.quant.scale[0]));
  if (x.shape.empty() || x.shape.size() > 4)
    return s.fail("int16 input '" + x.name + "' has rank " + std::to_string(x.shape.size()) +
                  "; TFLite's int16 softmax takes ranks 1 to 4");
  if (x.shape.back() > 65536)
    return s.fail("int16 input '" + x.name + "' has rows of " + std::to_string(x.shape.back()) +
                  " values; the int32 sum of TFLite's int16 softmax takes at most 65536");
  q::Multiplier m;
  const std::string err = q::i16::softmax_rescale(x.quant.scale[0], beta, &m);
  if (!err.empty()) return s.fail("int16 input '" + x.name + "': " + err);
  return Status::Ok();
}

Status check_mean(OpSite& s, const Tensor& x) {
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axes, s.const_input(1));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;  // (axes checked by the caller)
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[static_cast<size_t>(d)]) count *= x.shape[static_cast<size_t>(d)];
  if (count > 65536)
    return s.fail("int16 input '" + x.name + "' is averaged over " + std::to_string(count) +
                  " values; TFLite's int32 sum of int16 codes takes at most 65536");
  return Status::Ok();
}

// MUL int16 x int16 -> uint8 (mul.cc's legacy path): the codes are read as Q0.15 whatever
// the scales; the interpreter has no broadcasting form of it (it aborts).
Status check_mul_to_u8(OpSite& s, const Graph& g, const std::vector<TensorId>& ins, TensorId out) {
  const Tensor &a = g.tensor(ins[0]), &b = g.tensor(ins[1]), &y = g.tensor(out);
  if (y.quant.empty() || y.quant.per_axis())
    return s.fail("uint8 output '" + y.name + "' of an int16 MUL needs one scale and zero point");
  if (a.shape != y.shape || b.shape != y.shape)
    return s.fail("int16 operands '" + a.name + "' " + shape_str(a.shape) + " and '" + b.name + "' " + shape_str(b.shape) +
                  " with a uint8 output: TFLite's int16 -> uint8 MUL does not broadcast");
  return Status::Ok();
}

}  // namespace

bool int16_add_sub_is_pot(OpSite& s, const Tensor& a, const Tensor& b, const Tensor& y) {
  return a.dtype == DType::i16 && !a.quant.empty() && !b.quant.empty() && !y.quant.empty() &&
         q::i16::pot_add_sub_applies(pot_option(s), a.quant.scale[0], b.quant.scale[0], y.quant.scale[0]);
}

Status check_int16_operator(OpSite& s, OpKind kind, const std::vector<TensorId>& ins, TensorId out) {
  const Graph& g = s.cx.graph;
  for (TensorId id : ins) TS_RETURN_IF_ERROR(require_symmetric_i16(s, g.tensor(id)));
  if (kind == OpKind::mul && g.tensor(out).dtype == DType::u8) return check_mul_to_u8(s, g, ins, out);
  TS_RETURN_IF_ERROR(require_symmetric_i16(s, g.tensor(out)));
  switch (kind) {
    case OpKind::add:
    case OpKind::sub: return check_add_sub(s, kind, {&g.tensor(ins[0]), &g.tensor(ins[1]), &g.tensor(out)});
    case OpKind::logistic: return check_unit_activation(s, g.tensor(ins[0]), g.tensor(out), false);
    case OpKind::tanh: return check_unit_activation(s, g.tensor(ins[0]), g.tensor(out), true);
    case OpKind::mean: return check_mean(s, g.tensor(ins[0]));
    case OpKind::sum:  // reduce.cc: the int16 sum keeps the input's quantization (codes added)
      if (g.tensor(ins[0]).quant != g.tensor(out).quant)
        return s.fail("int16 output '" + g.tensor(out).name + "' must have the quantization of input '" +
                      g.tensor(ins[0]).name + "' (TFLite's int16 SUM adds the codes)");
      return Status::Ok();
    case OpKind::softmax: {
      const auto* o = s.op->builtin_options_as_SoftmaxOptions();
      return check_softmax(s, g.tensor(ins[0]), g.tensor(out), o ? o->beta() : 0.0f);  // (as build_softmax)
    }
    case OpKind::avg_pool2d:
    case OpKind::max_pool2d: {
      const auto* o = s.op->builtin_options_as_Pool2DOptions();
      if (o && int64_t{o->filter_height()} * o->filter_width() > 65536)
        return s.fail("int16 pooling window " + std::to_string(o->filter_height()) + "x" +
                      std::to_string(o->filter_width()) + " exceeds 65536 values (TFLite sums int16 codes in int32)");
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

}  // namespace tessera::tflite
