// Element-wise lowerings through the DPU's lookup table (docs/rknpu.md "Lookup tables"):
// any 8-bit unary op whose output code is a function of the input code alone is one DPU
// task whose LUT holds TFLite's output for each of the 256 input codes: LOGISTIC, TANH,
// HARD_SWISH, SiLU (x * logistic(x), a LOGISTIC and a MUL) and QUANTIZE of an 8-bit tensor
// to 8 bits, which TFLite computes as a quantized multiplier applied to code - zi
// (Requantize, q::Requantize).
#include "backend/rknpu/lower_internal.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/tiling.h"
#include "ops/quant_math.h"

namespace tessera::rknpu::detail {

// A lookup-table op (docs/rknpu.md "Lookup tables"): y = f(x) element-wise, where `code`
// gives TFLite's output code for each input code. The DPU reads x (MRDMA), passes BS and BN,
// and the EW stage's LUT maps each stored value a = q - off in [-128, 127] to an entry:
//  - LO (257 entries, linear, start -128, index select 0): one entry per input value, so no
//    interpolation happens and the entry is TFLite's output (less the storage offset)
//    exactly; entry 256 repeats entry 255 (never indexed by int8 inputs);
//  - LE (65 entries, linear, start -128, index select 2): every fourth value, a coarse copy
//    that the hit rules never choose (both tables span [-128, 128], the hybrid priority is
//    LO); beyond both ends the LO table's zero slopes hold its end entries.
// OUT_CVT is the identity. The compiler evaluates the programmed tables through the same
// lookup the model runs (hw.h lut_lookup) on all 256 inputs and records the largest
// difference from TFLite in output steps (lut_max_error; 0 by construction).
Result<NpuOp> lower_lut(const Node& n, const Graph& g, TensorId xi, TensorId yi, const std::function<int32_t(int32_t)>& code,
                        const std::string& what) {
  const Tensor& x = g.tensor(xi);
  const Tensor& y = g.tensor(yi);
  TS_ASSIGN_OR_RETURN(Cube cx, eltwise_cube(g, n, xi, "input"));
  TS_ASSIGN_OR_RETURN(Cube cy, eltwise_cube(g, n, yi, "output"));
  if (x.shape != y.shape) return no(n, what + " changes the shape " + shape_str(x.shape) + " -> " + shape_str(y.shape));
  if (!(cx == cy)) return no(n, what + ": input and output laid out differently on the NPU");
  NpuOp op;
  op.type = NpuOpType::lut;
  op.label = n.label();
  op.lut_function = what;
  op.input = xi;
  op.output = yi;
  op.in_h = op.out_h = cx.h;
  op.in_w = op.out_w = cx.w;
  op.in_c = op.out_c = cx.c;
  const int32_t ox = storage_offset(x.dtype), oy = storage_offset(y.dtype);
  std::array<int32_t, 256> want{};
  for (int32_t a = -128; a <= 127; ++a) want[a + 128] = code(a + ox) - oy;
  op.lut_lo.resize(kLutLoEntries);
  op.lut_le.resize(kLutLeEntries);
  for (int i = 0; i < kLutLoEntries; ++i) op.lut_lo[i] = static_cast<int16_t>(want[std::min(i, 255)]);
  op.lut_lo_start = -128, op.lut_lo_select = 0;
  for (int j = 0; j < kLutLeEntries; ++j) op.lut_le[j] = static_cast<int16_t>(want[std::min(4 * j, 255)]);
  op.lut_le_start = -128, op.lut_le_select = 2;
  const LutTable le{op.lut_le.data(), kLutLeEntries, op.lut_le_start, op.lut_le_select};
  const LutTable lo{op.lut_lo.data(), kLutLoEntries, op.lut_lo_start, op.lut_lo_select};
  op.lut_max_error = 0;
  op.lut_exact_codes = 0;
  for (int32_t a = -128; a <= 127; ++a) {
    const int32_t got = std::clamp(lut_lookup(le, lo, true, true, true, a), -128, 127);
    op.lut_max_error = std::max(op.lut_max_error, std::abs(got - want[a + 128]));
    op.lut_exact_codes += got == want[a + 128] ? 1 : 0;
  }
  op.out_scale = Scale16{1, 0};
  op.out_offset = 0;
  op.macs = 0;
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

float quant_scale(const Tensor& t) { return t.quant.scale[0]; }
int32_t quant_zp(const Tensor& t) { return static_cast<int32_t>(t.quant.zero_point_at(0)); }

// A unary op whose output code is a function of the input code alone: x and y are checked
// as feature maps of one dtype before their quantization is read, then `make(x, y)` gives
// the code function (or the reason the NPU cannot hold it) for lower_lut.
Result<NpuOp> lower_code_table(const Graph& g, const Node& n, const std::string& name,
                               const std::function<Result<CodeFn>(const Tensor&, const Tensor&)>& make) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(eltwise_cube(g, n, n.inputs[0], "input").status());
  TS_RETURN_IF_ERROR(eltwise_cube(g, n, n.outputs[0], "output").status());
  if (x.dtype != y.dtype) return no(n, name + " changes the dtype");
  TS_ASSIGN_OR_RETURN(CodeFn code, make(x, y));
  return lower_lut(n, g, n.inputs[0], n.outputs[0], code, name);
}


namespace {

// The code function of a unary table node (LOGISTIC, TANH, HARD_SWISH, QUANTIZE of an 8-bit
// tensor to 8 bits), after checking x and y as element-wise operands.
struct TableFn {
  CodeFn code;
  std::string name;
};
Result<TableFn> table_fn(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(eltwise_cube(g, n, n.inputs[0], "input").status());
  TS_RETURN_IF_ERROR(eltwise_cube(g, n, n.outputs[0], "output").status());
  const float si = quant_scale(x), so = quant_scale(y);
  const int32_t zi = quant_zp(x), zo = quant_zp(y);
  const DType t = y.dtype;
  switch (n.op) {
    // LOGISTIC and TANH: TFLite's int8 / uint8 kernels are themselves 256-entry tables of the
    // float function (activations.cc LUTPopulate), which the LUT holds entry for entry.
    case OpKind::logistic:
    case OpKind::tanh: {
      if (x.dtype != y.dtype) return no(n, std::string(op_name(n.op)) + " changes the dtype");
      float (*f)(float) = n.op == OpKind::logistic ? q::logistic_f : q::tanh_f;
      return TableFn{[=](int32_t v) { return q::lut_unary_code(f, si, zi, so, zo, t, v); }, op_name(n.op)};
    }
    // HARD_SWISH: TFLite's kernel is int16 fixed point (q::HardSwish), but its output is still
    // a function of the input code alone, so the table holds it entry for entry.
    case OpKind::hard_swish: {
      if (x.dtype != y.dtype) return no(n, "hard_swish changes the dtype");
      const q::HardSwish p = q::hard_swish_params(si, zi, so, zo, t);
      if (!p.ok()) return no(n, "output scale too small for TFLite's hard_swish (exponent > 0)");
      return TableFn{[p](int32_t v) { return p.code(v); }, "hard_swish"};
    }
    // QUANTIZE of an 8-bit tensor to 8 bits: TFLite's quantized multiplier applied to
    // code - zi (q::Requantize).
    case OpKind::requantize: {
      const q::Requantize rq = q::requantize_params(si, zi, so, zo, t);
      if (rq.m.multiplier == 0) return no(n, "requantize with a zero multiplier");
      return TableFn{[rq](int32_t v) { return rq.code(v); }, "requantize"};
    }
    default: return no(n, std::string("no table for ") + op_name(n.op));
  }
}

}  // namespace


// A unary table node as one DPU lookup table; when it reads the output of another table
// node that nothing else reads (absorbed_table: YOLOv8's class LOGISTIC, then QUANTIZE),
// one table of both from the first one's input: f(g(x)) is still a function of x's code,
// and the first node's output is never written (program.cpp).
Result<NpuOp> lower_table(const Graph& g, const Node& n) {
  TS_ASSIGN_OR_RETURN(TableFn f, table_fn(g, n));
  if (const int p = absorbed_table(g, n); p >= 0) {
    const Node& first = g.nodes()[p];
    auto fp = table_fn(g, first);
    if (fp.ok()) {
      const CodeFn inner = fp->code, outer = f.code;
      auto op = lower_lut(n, g, first.inputs[0], n.outputs[0], [=](int32_t v) { return outer(inner(v)); },
                          fp->name + " + " + f.name);
      if (op.ok()) return op;
    }
  }
  return lower_lut(n, g, n.inputs[0], n.outputs[0], f.code, f.name);
}

// MUL of x and logistic(x) (SiLU): a function of x's code alone, TFLite's MUL of the code
// and TFLite's LOGISTIC of it, one table. Other MULs are element-wise tasks (lower_binary).
Result<NpuOp> lower_mul(const Graph& g, const Node& n) {
  const int li = silu_logistic(g, n);
  if (li < 0) return lower_binary(g, n);
  const Node& l = g.nodes()[li];
  const Tensor& x = g.tensor(l.inputs[0]);
  const Tensor& s = g.tensor(l.outputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  for (const Tensor* t : {&x, &s, &y}) TS_RETURN_IF_ERROR(check_feature(n, *t, "operand"));
  if (x.dtype != s.dtype || x.dtype != y.dtype) return no(n, "SiLU with mixed dtypes");
  const Tensor& a = g.tensor(n.inputs[0]);
  const Tensor& b = g.tensor(n.inputs[1]);
  const q::MulRescale m = q::mul_rescale(n.get(attr::activation), quant_scale(a), quant_zp(a), quant_scale(b), quant_zp(b),
                                         quant_scale(y), quant_zp(y), y.dtype);
  const float sx = quant_scale(x), ss = quant_scale(s);
  const int32_t zx = quant_zp(x), zs = quant_zp(s);
  const DType t = x.dtype;
  const bool x_first = n.inputs[0] == l.inputs[0];
  return lower_lut(n, g, l.inputs[0], n.outputs[0],
                   [&](int32_t v) {
                     const int32_t sig = q::lut_unary_code(q::logistic_f, sx, zx, ss, zs, t, v);
                     return x_first ? m.code(v, sig) : m.code(sig, v);
                   },
                   "silu (logistic + mul)");
}

}  // namespace tessera::rknpu::detail
