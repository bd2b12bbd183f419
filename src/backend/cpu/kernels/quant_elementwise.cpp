// TFLite-exact quantized elementwise ops: add, sub, mul, maximum, minimum (numpy
// broadcasting), the activations relu, relu6, leaky_relu, logistic, tanh, hard_swish, and
// abs, rsqrt, squared_difference.
//
// Formulas follow TFLite's kernels (add.cc / sub.cc / mul.cc / activations.cc Prepare and
// the reference_ops / reference_integer_ops they call); where TFLite computes a multiplier
// in float before widening to double, so does this file, since it changes the bits.
#include <functional>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"
#include "backend/cpu/ukernels/lut8.h"
#include "backend/cpu/ukernels/qconv.h"

namespace tessera::cpu {

namespace q {

Status require_per_tensor(const Node& n, const Tensor& t, bool allow_i16) {
  bool ok_dtype = t.dtype == DType::u8 || t.dtype == DType::i8 || (allow_i16 && t.dtype == DType::i16);
  if (!ok_dtype || t.quant.empty())
    return kernel_error(n, "tensor '" + t.name + "' must be " + (allow_i16 ? "u8/i8/i16" : "u8/i8") +
                               " with quantization parameters, got " + dtype_name(t.dtype));
  if (t.quant.per_axis()) return kernel_error(n, "tensor '" + t.name + "' has per-axis quantization");
  return Status::Ok();
}

}  // namespace q

namespace {

float scale_of(const TensorRef& r) { return r.t->quant.scale[0]; }
int32_t zp_of(const TensorRef& r) { return static_cast<int32_t>(r.t->quant.zero_point_at(0)); }

Status check_binary(const KernelContext& c, bool allow_i16 = false) {
  for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]})
    TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *r->t, allow_i16));
  if (c.in[0].dtype() != c.out[0].dtype() || c.in[1].dtype() != c.out[0].dtype())
    return kernel_error(c.n, "inputs and output must have the same dtype");
  return Status::Ok();
}

// An 8-bit binary op as a table of all 256 x 256 operand pairs, made at compile time from
// the kernel's own per-element function: the same bytes, one load per element.
struct PairTable : PreparedKernel {
  std::vector<uint8_t> out;  // [a code + 128 * is_i8][b code ...] as stored bytes
  bool i8 = false;
  // ADD / SUB: the arithmetic itself, which the SIMD micro-kernel computes for operands of
  // the output's shape faster than the table's scattered loads (uk::QConvKernels::add).
  bool has_add = false;
  uk::QAdd add;
  // MUL of x by LOGISTIC(x) (SiLU as TFLite graphs hold it, x * sigmoid(x)): the product is
  // a function of x alone, so it is one byte table over the input `unary_input` (the other
  // operand's codes are LOGISTIC's own table of x): the same bytes as the pair table.
  int unary_input = -1;
  uint8_t unary[256] = {};
  int index(uint8_t a, uint8_t b) const { return (i8 ? (a ^ 0x80) : a) * 256 + (i8 ? (b ^ 0x80) : b); }
};

Status run_pair_table(KernelContext& c) {
  const auto& t = static_cast<const PairTable&>(*c.prepared);
  const uint8_t *a = c.in[0].data, *b = c.in[1].data;
  uint8_t* y = c.out[0].data;
  const uint8_t* tab = t.out.data();
  const int64_t n = c.out[0].elements();
  if (c.in[0].shape() == c.out[0].shape() && c.in[1].shape() == c.out[0].shape()) {
    if (t.unary_input >= 0) {
      const uint8_t* x = c.in[static_cast<size_t>(t.unary_input)].data;
      const uk::Lut8Fn lut = uk::lut8_kernel();
      parallel_rows(c, n, [&](int64_t i0, int64_t i1) { lut(x + i0, i1 - i0, t.unary, y + i0); }, 1 << 14);
      return Status::Ok();
    }
    if (const uk::AddFn simd = uk::qconv_kernels().add; simd && t.has_add) {
      parallel_rows(c, n, [&](int64_t i0, int64_t i1) { simd(a + i0, b + i0, i1 - i0, t.add, y + i0); }, 1 << 14);
      return Status::Ok();
    }
    parallel_rows(c, n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] = tab[t.index(a[i], b[i])];
    }, 1 << 14);
  } else {
    for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(),
                       [&](int64_t ia, int64_t ib, int64_t iy) { y[iy] = tab[t.index(a[ia], b[ib])]; });
  }
  return Status::Ok();
}

// Fills a PairTable for node n with f(code_a, code_b) -> stored code; nullptr unless both
// inputs and the output are per-tensor u8 or i8 of one dtype.
template <typename F>
Result<std::unique_ptr<PreparedKernel>> pair_table(const Graph& g, const Node& n, F&& f) {
  const Tensor &x0 = g.tensor(n.inputs[0]), &x1 = g.tensor(n.inputs[1]), &y = g.tensor(n.outputs[0]);
  for (const Tensor* t : {&x0, &x1, &y})
    if ((t->dtype != DType::u8 && t->dtype != DType::i8) || t->dtype != y.dtype || t->quant.empty() ||
        t->quant.per_axis())
      return std::unique_ptr<PreparedKernel>();
  auto t = std::make_unique<PairTable>();
  t->i8 = y.dtype == DType::i8;
  t->out.resize(65536);
  const int lo = t->i8 ? -128 : 0;
  for (int a = lo; a < lo + 256; ++a)
    for (int b = lo; b < lo + 256; ++b)
      t->out[t->index(static_cast<uint8_t>(a), static_cast<uint8_t>(b))] = static_cast<uint8_t>(f(a, b));
  return std::unique_ptr<PreparedKernel>(std::move(t));
}

// ADD / SUB (TFLite add.cc, sub.cc: left shift 20 for 8-bit operands, 15 for int16 ones,
// whose zero points are 0; the power-of-two-scale int16 form, attribute pot_int16, in
// quant_int16.cpp).
struct AddParams {
  q::AddRescale p;
  q::Range r;
};
AddParams add_params(const Node& n, const Tensor& x0, const Tensor& x1, const Tensor& y) {
  const int32_t zo = static_cast<int32_t>(y.quant.zero_point_at(0));
  const int shift = y.dtype == DType::i16 ? q::AddRescale::kLeftShiftInt16 : q::AddRescale::kLeftShift;
  return {q::add_rescale(x0.quant.scale[0], static_cast<int32_t>(x0.quant.zero_point_at(0)), x1.quant.scale[0],
                         static_cast<int32_t>(x1.quant.zero_point_at(0)), y.quant.scale[0], zo, shift),
          q::activation_range(n.get(attr::activation), y.dtype, y.quant.scale[0], zo)};
}

Result<std::unique_ptr<PreparedKernel>> prepare_add_sub(const Graph& g, const Node& n, bool subtract) {
  const Tensor &x0 = g.tensor(n.inputs[0]), &x1 = g.tensor(n.inputs[1]), &y = g.tensor(n.outputs[0]);
  if (x0.quant.empty() || x1.quant.empty() || y.quant.empty() || n.get(attr::pot_int16))
    return std::unique_ptr<PreparedKernel>();
  const AddParams ap = add_params(n, x0, x1, y);
  TS_ASSIGN_OR_RETURN(
      std::unique_ptr<PreparedKernel> k,
      pair_table(g, n, [&](int32_t a, int32_t b) { return q::clamp(q::add_codes(ap.p, a, b, subtract), ap.r.lo, ap.r.hi); }));
  if (!k) return k;
  auto& t = static_cast<PairTable&>(*k);
  const int32_t lo = t.i8 ? -128 : 0, hi = t.i8 ? 127 : 255;
  auto in_range = [&](int32_t z) { return z >= lo && z <= hi; };
  if (in_range(ap.p.z1) && in_range(ap.p.z2) && in_range(ap.p.zo)) {
    uk::QAdd& qa = t.add;
    qa.z1 = ap.p.z1, qa.z2 = ap.p.z2, qa.zo = ap.p.zo, qa.lo = ap.r.lo, qa.hi = ap.r.hi;
    const q::Multiplier* m[3] = {&ap.p.m1, &ap.p.m2, &ap.p.mo};
    for (int i = 0; i < 3; ++i) {
      qa.mult[i] = m[i]->multiplier;
      qa.lshift[i] = std::max(m[i]->shift, 0);
      qa.rshift[i] = std::max(-m[i]->shift, 0);
    }
    qa.subtract = subtract;
    qa.i8 = t.i8;
    t.has_add = true;
  }
  return k;
}
Result<std::unique_ptr<PreparedKernel>> prepare_add(const Graph& g, const Node& n) { return prepare_add_sub(g, n, false); }
Result<std::unique_ptr<PreparedKernel>> prepare_sub(const Graph& g, const Node& n) { return prepare_add_sub(g, n, true); }

Status add_sub(KernelContext& c, bool subtract) {
  TS_RETURN_IF_ERROR(check_binary(c, true));
  if (c.prepared) return run_pair_table(c);
  const DType t = c.out[0].dtype();
  if (c.n.get(attr::pot_int16)) return q::add_sub_pot_i16(c, subtract);
  if (t == DType::i16)
    for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]})
      if (zp_of(*r) != 0) return kernel_error(c.n, "int16 tensor '" + r->t->name + "' has a non-zero zero point");
  const AddParams ap = add_params(c.n, *c.in[0].t, *c.in[1].t, *c.out[0].t);
  const q::AddRescale& p = ap.p;
  const q::Range& r = ap.r;
  const uint8_t *a = c.in[0].data, *b = c.in[1].data;
  uint8_t* y = c.out[0].data;
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(), [&](int64_t ia, int64_t ib, int64_t iy) {
    q::store(y, t, iy, q::clamp(q::add_codes(p, q::load(a, t, ia), q::load(b, t, ib), subtract), r.lo, r.hi));
  });
  return Status::Ok();
}
Status add(KernelContext& c) { return add_sub(c, false); }
Status sub(KernelContext& c) { return add_sub(c, true); }

// MUL (mul.cc: real multiplier in float, then QuantizeMultiplier): ops/quant_math.h.
using MulParams = q::MulRescale;
MulParams mul_params(const Node& n, float s1, int32_t z1, float s2, int32_t z2, float so, int32_t zo, DType t) {
  return q::mul_rescale(n.get(attr::activation), s1, z1, s2, z2, so, zo, t);
}

// The table of every operand pair (pair_table), as for ADD / SUB.
Result<std::unique_ptr<PreparedKernel>> prepare_mul(const Graph& g, const Node& n) {
  const Tensor &x0 = g.tensor(n.inputs[0]), &x1 = g.tensor(n.inputs[1]), &y = g.tensor(n.outputs[0]);
  if (x0.quant.empty() || x1.quant.empty() || y.quant.empty()) return std::unique_ptr<PreparedKernel>();
  const MulParams p = mul_params(n, x0.quant.scale[0], static_cast<int32_t>(x0.quant.zero_point_at(0)),
                                 x1.quant.scale[0], static_cast<int32_t>(x1.quant.zero_point_at(0)), y.quant.scale[0],
                                 static_cast<int32_t>(y.quant.zero_point_at(0)), y.dtype);
  TS_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> k, pair_table(g, n, [&](int32_t a, int32_t b) { return p.code(a, b); }));
  if (!k) return k;
  // x * LOGISTIC(x): find the operand made by an 8-bit LOGISTIC of the other one.
  auto& t = static_cast<PairTable&>(*k);
  for (int s = 0; s < 2; ++s) {
    const TensorId sig = n.inputs[static_cast<size_t>(s)], x = n.inputs[static_cast<size_t>(1 - s)];
    for (const Node& m : g.nodes()) {
      if (m.op != OpKind::logistic || m.outputs.size() != 1 || m.outputs[0] != sig || m.inputs[0] != x) continue;
      const Tensor &tx = g.tensor(x), &ts = g.tensor(sig);
      if (tx.dtype != y.dtype || ts.dtype != y.dtype || tx.quant.per_axis() || ts.quant.per_axis()) break;
      const int lo = t.i8 ? -128 : 0;
      for (int v = lo; v < lo + 256; ++v) {
        // LOGISTIC's code of v exactly as its kernel computes it (q::lut_unary), then this MUL's.
        const int32_t sv = q::lut_unary_code(q::logistic_f, tx.quant.scale[0], static_cast<int32_t>(tx.quant.zero_point_at(0)),
                                             ts.quant.scale[0], static_cast<int32_t>(ts.quant.zero_point_at(0)), y.dtype, v);
        const uint8_t xb = static_cast<uint8_t>(v), sb = static_cast<uint8_t>(sv);
        t.unary[xb] = s == 1 ? t.out[t.index(xb, sb)] : t.out[t.index(sb, xb)];
      }
      t.unary_input = 1 - s;
      // Operands of the output's shape take the byte table (run_pair_table), which never
      // reads LOGISTIC's output.
      if (x0.shape == y.shape && x1.shape == y.shape) t.unread_input = s;
      return k;
    }
  }
  return k;
}

Status mul(KernelContext& c) {
  if (c.in[0].dtype() == DType::i16) return q::mul_i16(c);
  TS_RETURN_IF_ERROR(check_binary(c));
  if (c.prepared) return run_pair_table(c);
  const DType t = c.out[0].dtype();
  const MulParams p = mul_params(c.n, scale_of(c.in[0]), zp_of(c.in[0]), scale_of(c.in[1]), zp_of(c.in[1]),
                                 scale_of(c.out[0]), zp_of(c.out[0]), t);
  const uint8_t *a = c.in[0].data, *b = c.in[1].data;
  uint8_t* y = c.out[0].data;
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(), [&](int64_t ia, int64_t ib, int64_t iy) {
    q::store(y, t, iy, p.code(q::load(a, t, ia), q::load(b, t, ib)));
  });
  return Status::Ok();
}

// MAXIMUM / MINIMUM compare stored values; TFLite requires equal quantization.
Status max_min(KernelContext& c, bool is_max) {
  TS_RETURN_IF_ERROR(check_binary(c));
  if (c.in[0].t->quant != c.out[0].t->quant || c.in[1].t->quant != c.out[0].t->quant)
    return kernel_error(c.n, "inputs and output must share quantization parameters");
  const DType t = c.out[0].dtype();
  const uint8_t *a = c.in[0].data, *b = c.in[1].data;
  uint8_t* y = c.out[0].data;
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(), [&](int64_t ia, int64_t ib, int64_t iy) {
    const int32_t va = q::load(a, t, ia), vb = q::load(b, t, ib);
    q::store(y, t, iy, is_max ? std::max(va, vb) : std::min(va, vb));
  });
  return Status::Ok();
}
Status maximum(KernelContext& c) { return max_min(c, true); }
Status minimum(KernelContext& c) { return max_min(c, false); }

Status check_unary(const KernelContext& c, bool allow_i16 = false) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t, allow_i16));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t, allow_i16));
  if (c.in[0].dtype() != c.out[0].dtype()) return kernel_error(c.n, "input and output must have the same dtype");
  return Status::Ok();
}

// RELU / RELU6 (activations.cc QuantizedReluX): rescale to the output, then clamp.
Status relu_x(KernelContext& c, float lo, float hi) {
  TS_RETURN_IF_ERROR(check_unary(c));
  const float si = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const int32_t zi = zp_of(c.in[0]), zo = zp_of(c.out[0]);
  const DType t = c.out[0].dtype();
  // activations.cc ReluPrepare divides in float.
  const q::Multiplier m = q::quantize_multiplier(static_cast<double>(si / so));
  const int32_t qlo = std::max(q::qmin(t), zo + static_cast<int32_t>(std::round(lo / so)));
  const int32_t qhi = std::isinf(hi) ? q::qmax(t) : std::min(q::qmax(t), zo + static_cast<int32_t>(std::round(hi / so)));
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const int32_t v = zo + q::multiply(q::load(c.in[0].data, t, i) - zi, m);
    q::store(c.out[0].data, t, i, q::clamp(v, qlo, qhi));
  }
  return Status::Ok();
}
Status relu(KernelContext& c) { return relu_x(c, 0.0f, std::numeric_limits<float>::infinity()); }
Status relu6(KernelContext& c) { return relu_x(c, 0.0f, 6.0f); }

// LEAKY_RELU (activations.cc LeakyReluPrepare: alpha multiplier in float; the same
// arithmetic for int16, leaky_relu.cc QuantizeLeakyRelu<int16_t>).
Status leaky_relu(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_unary(c, true));
  const float si = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const float alpha = static_cast<float>(c.n.get(attr::alpha));
  const q::Multiplier ma = q::quantize_multiplier(static_cast<double>(si * alpha / so));
  const q::Multiplier mi = q::quantize_multiplier(static_cast<double>(si / so));
  const int32_t zi = zp_of(c.in[0]), zo = zp_of(c.out[0]);
  const DType t = c.out[0].dtype();
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const int32_t v = q::load(c.in[0].data, t, i) - zi;
    const int32_t o = zo + q::multiply(v, v >= 0 ? mi : ma);
    q::store(c.out[0].data, t, i, q::clamp(o, q::qmin(t), q::qmax(t)));
  }
  return Status::Ok();
}

}  // namespace

// LOGISTIC / TANH (and ELU, GELU: quant_activation_norm.cpp) on u8 / i8: TFLite's path is a
// 256-entry table computed in float (activations.cc PopulateLookupTable / LUTPopulate).
Status q::lut_unary(KernelContext& c, float (*f)(float)) {
  TS_RETURN_IF_ERROR(check_unary(c));
  const DType t = c.out[0].dtype();
  if (t == DType::i16) return kernel_error(c.n, "i16 is not supported");
  const float si = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const int32_t zi = zp_of(c.in[0]), zo = zp_of(c.out[0]);
  int32_t table[256];
  for (int32_t v = q::qmin(t); v <= q::qmax(t); ++v) table[v & 0xff] = q::lut_unary_code(f, si, zi, so, zo, t, v);
  uint8_t bytes[256];  // the 8-bit codes' bytes
  for (int v = 0; v < 256; ++v) bytes[v] = static_cast<uint8_t>(table[v]);
  uk::lut8_kernel()(c.in[0].data, c.in[0].elements(), bytes, c.out[0].data);
  return Status::Ok();
}
namespace {

Status logistic(KernelContext& c) {
  return c.in[0].dtype() == DType::i16 ? q::logistic_i16(c) : q::lut_unary(c, q::logistic_f);
}
Status tanh_q(KernelContext& c) { return c.in[0].dtype() == DType::i16 ? q::tanh_i16(c) : q::lut_unary(c, q::tanh_f); }

// HARD_SWISH (reference_ops::HardSwish with HardSwishParams from activations.cc): int16
// fixed point with a "reluish" ramp, per input code (q::HardSwish in src/ops/quant_math.h).
Status hard_swish(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_unary(c));
  const DType t = c.out[0].dtype();
  if (t == DType::i16) return kernel_error(c.n, "i16 is not supported");
  const q::HardSwish p = q::hard_swish_params(scale_of(c.in[0]), zp_of(c.in[0]), scale_of(c.out[0]), zp_of(c.out[0]), t);
  if (!p.ok()) return kernel_error(c.n, "output scale too small for TFLite's hard_swish (exponent > 0)");
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i)
    q::store(c.out[0].data, t, i, p.code(q::load(c.in[0].data, t, i)));
  return Status::Ok();
}

// ABS (elementwise.cc AbsEvalQuantized; i8, and i16 with zero points 0): |x - zi| as is
// when the scales are equal, else rescaled by input / output scale (divided in float).
Status abs_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_unary(c, true));
  const DType t = c.out[0].dtype();
  if (t == DType::u8) return kernel_error(c.n, "u8 is not supported (TFLite's ABS takes i8 and i16)");
  const float si = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const int32_t zi = zp_of(c.in[0]), zo = zp_of(c.out[0]);
  if (t == DType::i16 && (zi != 0 || zo != 0)) return kernel_error(c.n, "i16 tensors need zero point 0");
  const bool rescale = si != so;
  const q::Multiplier m = rescale ? q::quantize_multiplier(static_cast<double>(si / so)) : q::Multiplier{};
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const int32_t v = std::abs(q::load(c.in[0].data, t, i) - zi);
    q::store(c.out[0].data, t, i, q::clamp((rescale ? q::multiply(v, m) : v) + zo, q::qmin(t), q::qmax(t)));
  }
  return Status::Ok();
}

// RSQRT (elementwise.cc RsqrtEvalQuantized, i8): 1 / sqrt(x - zi) in fixed point
// (GetInvSqrtQuantizedMultiplierExp), then rescaled by 1 / (sqrt(si) so); x == zi gives 127,
// and x < zi is an error, as in TFLite.
Status rsqrt_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_unary(c));
  if (c.out[0].dtype() != DType::i8) return kernel_error(c.n, "quantized rsqrt takes i8 (TFLite's RSQRT form)");
  constexpr int kShift = 20;  // elementwise.cc: "Shift to keep value integer."
  const float si = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const q::Multiplier m = q::quantize_multiplier(1. / (std::sqrt(si) * so));  // sqrt and product in float
  const int32_t zi = zp_of(c.in[0]), zo = zp_of(c.out[0]);
  const int8_t* x = c.in[0].as<int8_t>();
  int8_t* y = c.out[0].as<int8_t>();
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const int32_t v = x[i] - zi;
    if (v < 0) return kernel_error(c.n, "input '" + c.in[0].t->name + "' holds a negative value; rsqrt is defined for x >= 0");
    if (v == 0) {
      y[i] = 127;
      continue;
    }
    const q::Multiplier inv = q::fp::inv_sqrt_multiplier_exp(v);
    const int32_t data = q::multiply(1, inv.multiplier, inv.shift + kShift);
    y[i] = static_cast<int8_t>(q::clamp(q::multiply(data, m.multiplier, m.shift - kShift) + zo, -128, 127));
  }
  return Status::Ok();
}

// SQUARED_DIFFERENCE on i8 (squared_difference.cc): both operands (x - zp) << 7 rescaled to
// the doubled larger scale, the difference squared, then scaled to the output; every
// multiplier must be below one (TFLite's QuantizeMultiplierSmallerThanOneExp).
Status squared_difference_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_binary(c));
  if (c.out[0].dtype() != DType::i8) return kernel_error(c.n, "quantized squared_difference takes i8 (TFLite's form)");
  constexpr int kLeftShift = 7;  // squared_difference.cc: "left_shift = 7"
  const float s1 = scale_of(c.in[0]), s2 = scale_of(c.in[1]), so = scale_of(c.out[0]);
  const double twice_max = static_cast<float>(2 * std::max(s1, s2));
  const double real_out = twice_max * twice_max / ((1 << kLeftShift * 2) * static_cast<double>(so));
  if (!(real_out < 1.0))
    return kernel_error(c.n, "output '" + c.out[0].t->name + "' scale is too small for TFLite's integer squared difference");
  const q::Multiplier m1 = q::quantize_multiplier(s1 / twice_max), m2 = q::quantize_multiplier(s2 / twice_max);
  const q::Multiplier mo = q::quantize_multiplier(real_out);
  const int32_t z1 = zp_of(c.in[0]), z2 = zp_of(c.in[1]), zo = zp_of(c.out[0]);
  const int8_t *a = c.in[0].as<int8_t>(), *b = c.in[1].as<int8_t>();
  int8_t* y = c.out[0].as<int8_t>();
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(), [&](int64_t ia, int64_t ib, int64_t iy) {
    const int32_t d = q::multiply((a[ia] - z1) * (1 << kLeftShift), m1) - q::multiply((b[ib] - z2) * (1 << kLeftShift), m2);
    y[iy] = static_cast<int8_t>(q::clamp(q::multiply(d * d, mo) + zo, -128, 127));
  });
  return Status::Ok();
}

}  // namespace

void register_quant_elementwise_kernels(KernelTable& t) {
  t.add(OpKind::add, KernelKind::quant, add, prepare_add);
  t.add(OpKind::sub, KernelKind::quant, sub, prepare_sub);
  t.add(OpKind::mul, KernelKind::quant, mul, prepare_mul);
  t.add(OpKind::maximum, KernelKind::quant, maximum);
  t.add(OpKind::minimum, KernelKind::quant, minimum);
  t.add(OpKind::relu, KernelKind::quant, relu);
  t.add(OpKind::relu6, KernelKind::quant, relu6);
  t.add(OpKind::leaky_relu, KernelKind::quant, leaky_relu);
  t.add(OpKind::logistic, KernelKind::quant, logistic);
  t.add(OpKind::tanh, KernelKind::quant, tanh_q);
  t.add(OpKind::hard_swish, KernelKind::quant, hard_swish);
  t.add(OpKind::abs, KernelKind::quant, abs_q);
  t.add(OpKind::rsqrt, KernelKind::quant, rsqrt_q);
  t.add(OpKind::squared_difference, KernelKind::quant, squared_difference_q);
}

}  // namespace tessera::cpu
