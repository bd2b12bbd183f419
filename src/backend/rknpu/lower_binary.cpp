// Element-wise operations of two operands on the DPU (docs/rknpu.md "Arithmetic", "SUB, MUL
// and constant operands"). One operand, an activation, comes through MRDMA and BS (ALU: less
// its zero point; MUL: a signed 16-bit multiplier), the other through ERDMA and the EW
// converter (offset, unsigned 16-bit scale):
//  - ADD sums them in the EW ALU, SUB too with one operand negated (BS's negative
//    multiplier, or a constant stored complemented), each brought to a common unit;
//  - MUL multiplies them in the EW multiplier, which rounds the product right by
//    EW_TRUNCATE; OUT_CVT converts to the output.
// The 16-bit encoding is the one that agrees with TFLite on the most of the 65,536 pairs of
// input codes (every pair is checked). A constant operand with the activation's element
// count is packed into the task's cube and read by ERDMA; a one-element constant makes the
// output a function of the activation's code alone: one lookup table, exact.
#include "backend/rknpu/lower_internal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/tiling.h"
#include "convert/nc1hwc2.h"
#include "ops/quant_math.h"

namespace tessera::rknpu::detail {

namespace {

// TFLite's output code for a pair of input codes (inputs[0]'s, inputs[1]'s), clamped to the
// fused activation's range: the arithmetic the cpu kernels run (src/ops/quant_math.h).
using PairFn = std::function<int32_t(int32_t, int32_t)>;
PairFn tflite_pair(const Node& n, const Tensor& a, const Tensor& b, const Tensor& y) {
  const q::Range r = q::activation_range(n.get(attr::activation), y.dtype, quant_scale(y), quant_zp(y));
  if (n.op == OpKind::mul) {
    const q::MulRescale m = q::mul_rescale(n.get(attr::activation), quant_scale(a), quant_zp(a), quant_scale(b), quant_zp(b),
                                           quant_scale(y), quant_zp(y), y.dtype);
    return [m](int32_t x, int32_t z) { return m.code(x, z); };
  }
  const q::AddRescale p = q::add_rescale(quant_scale(a), quant_zp(a), quant_scale(b), quant_zp(b), quant_scale(y), quant_zp(y));
  const bool sub = n.op == OpKind::sub;
  return [p, r, sub](int32_t x, int32_t z) { return q::clamp(q::add_codes(p, x, z, sub), r.lo, r.hi); };
}

// Which operand takes which path: `mr` through MRDMA and BS, `er` through ERDMA and the EW
// converter, each entering with a sign (-1: subtracted; for BS a negative multiplier, for a
// constant EW operand its complemented bytes, for an activation EW operand impossible: the
// EW scale is unsigned). mr_first: mr is inputs[0].
struct Route {
  TensorId mr = kNoTensor, er = kNoTensor;
  int mr_sign = 1, er_sign = 1;
  bool mr_first = true;
};

struct PairEncoding {
  Scale16 a, b, out;  // BS multiplier (signed), EW converter scale, OUT_CVT
  bool mul = false;   // the EW multiplier (EW_TRUNCATE `truncate`) instead of the ALU's add
  int truncate = 0;
  bool relu = false, relux = false;
  int32_t relux_value = 0;
  int64_t exact_pairs = 0;  // input code pairs (of 65,536) on which it equals TFLite
  int max_error = 0;        // the largest difference in output steps over those pairs
};

// One output value (stored form) of the DPU pipeline, as the device model computes it, from
// the operands after their offsets: xm = MRDMA code - its zero point (BS ALU), xe = the EW
// converter's input (the ERDMA operand's code less its zero point, negated if subtracted).
int32_t dpu_pair(const PairEncoding& e, int32_t xm, int32_t xe, int32_t out_offset) {
  int32_t v = scale_round(xm, e.a.mantissa, e.a.shift);
  const int32_t w = scale_round(xe, e.b.mantissa, e.b.shift);
  v = e.mul ? scale_round(v, w, e.truncate) : sat32(int64_t(v) + w);
  if (e.relu) v = std::max(v, 0);
  if (e.relux) v = std::min(v, e.relux_value);
  return std::clamp<int32_t>(scale_round(v, e.out.mantissa, e.out.shift) + out_offset, -128, 127);
}

// Every pair of codes (MRDMA code, ERDMA code) with TFLite's output and the operand values
// the DPU sees for it.
struct PairTable {
  std::vector<int8_t> want;  // [mr code - lo][er code - lo]: TFLite's output, stored form
  int32_t lo = 0, zm = 0, ze = 0, mr_sign = 1, er_sign = 1, out_offset = 0;
  int32_t xm(int32_t i) const { return lo + i - zm; }
  int32_t xe(int32_t k) const { return er_sign * (lo + k - ze); }
};

PairTable pair_table(const Route& r, const Tensor& tm, const Tensor& te, const Tensor& ty, const PairFn& f) {
  PairTable t;
  t.lo = tm.dtype == DType::u8 ? 0 : -128;
  t.zm = quant_zp(tm), t.ze = quant_zp(te), t.mr_sign = r.mr_sign, t.er_sign = r.er_sign;
  t.out_offset = quant_zp(ty) - storage_offset(ty.dtype);
  const int32_t oy = storage_offset(ty.dtype);
  t.want.resize(256 * 256);
  for (int32_t i = 0; i < 256; ++i)
    for (int32_t k = 0; k < 256; ++k) {
      const int32_t cm = t.lo + i, ce = t.lo + k;
      t.want[i * 256 + k] = static_cast<int8_t>((r.mr_first ? f(cm, ce) : f(ce, cm)) - oy);
    }
  return t;
}

// Pairs on which `e` differs from TFLite, stopping once more than `stop` differ.
int64_t misses(const PairEncoding& e, const PairTable& t, int64_t stop, int* max_error = nullptr) {
  int64_t bad = 0;
  for (int32_t i = 0; i < 256 && bad <= stop; ++i)
    for (int32_t k = 0; k < 256; ++k) {
      const int32_t d = std::abs(dpu_pair(e, t.xm(i), t.xe(k), t.out_offset) - t.want[i * 256 + k]);
      bad += d != 0;
      if (max_error) *max_error = std::max(*max_error, d);
    }
  return bad;
}

// The best of `candidates` (fewest misses; the first of equals), checking those flagged
// `first` before the others so that most stop after a few rows. A later candidate must beat
// the best count, an earlier one only match it: the same choice as checking in order.
std::optional<PairEncoding> best_of(const std::vector<std::pair<PairEncoding, bool>>& candidates, const PairTable& t) {
  std::vector<size_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t c = 0; c < candidates.size(); ++c)
      if (candidates[c].second == (pass == 0)) order.push_back(c);
  std::optional<PairEncoding> best;
  int64_t best_bad = std::numeric_limits<int64_t>::max();
  size_t best_index = candidates.size();
  for (size_t c : order) {
    const int64_t stop = c < best_index ? best_bad : best_bad - 1;  // more than this loses
    const int64_t bad = misses(candidates[c].first, t, stop);
    if (bad <= stop) {
      best_bad = bad, best_index = c, best = candidates[c].first;
      best->exact_pairs = 256 * 256 - bad;
    }
  }
  if (best) misses(*best, t, 256 * 256, &best->max_error);
  return best;
}

// A 16-bit mantissa in [2^(bits-1), 2^bits), rounded `dir`, with a shift inside its field.
std::optional<Scale16> mantissa(double m, int bits, int dir, int max_shift) {
  const Scale16 s = split_mantissa(m, bits, dir);
  if (s.shift < 0 || s.shift > max_shift) return std::nullopt;
  return s;
}

// ADD / SUB: TFLite (add.cc, sub.cc) rescales both operands to 2^-20 units of twice the
// larger scale with Q31 multipliers, sums (or subtracts) and rescales to the output.
// Candidates: common units max(sm, se) / 2^j for j in [6, 24], each of the three 16-bit
// multipliers rounded down, to nearest or up (BS's negated for a subtracted MRDMA operand).
// Three 16-bit multipliers cannot reproduce three 31-bit ones on every pair; the best
// leaves a few dozen pairs (of 65,536) one step off.
std::optional<PairEncoding> search_sum(const Node& n, const Tensor& tm, const Tensor& te, const Tensor& ty, const PairTable& t) {
  const double sm = quant_scale(tm), se = quant_scale(te), so = quant_scale(ty);
  std::vector<std::pair<PairEncoding, bool>> candidates;
  for (int j = 6; j <= 24; ++j) {
    const double unit = std::max(sm, se) * std::ldexp(1.0, -j);
    PairEncoding e;
    if (!lower_activation(n, ty, unit, e.relu, e.relux, e.relux_value).ok()) continue;
    for (int da = -1; da <= 1; ++da)
      for (int db = -1; db <= 1; ++db)
        for (int dout = -1; dout <= 1; ++dout) {
          auto ma = mantissa(sm / unit, kMantissaBits, da, kBsShiftMax), mb = mantissa(se / unit, kMantissaBits + 1, db, kEwShiftMax),
               mo = mantissa(unit / so, kMantissaBits + 1, dout, kOutShiftMax);
          if (!ma || !mb || !mo) continue;
          e.a = *ma, e.b = *mb, e.out = *mo;
          e.a.mantissa *= t.mr_sign;
          candidates.push_back({e, da == 0 && db == 0 && dout == 0});
        }
  }
  return best_of(candidates, t);
}

// The fused activation of a MUL as EW-stage clamps on the product in units of 2^-right
// output steps (OUT_CVT divides by 2^right): TFLite clamps the output code to [lo, hi];
// lo can only be the zero point (ReLU at 0), hi (ReLU-X) a whole number of steps, so
// clamping before the rounding division equals clamping after it.
Status mul_clamps(const Node& n, const Tensor& y, int right, PairEncoding& e) {
  const q::Range r = q::activation_range(n.get(attr::activation), y.dtype, quant_scale(y), quant_zp(y));
  const int32_t zo = quant_zp(y);
  if (r.lo > q::qmin(y.dtype)) {
    if (r.lo != zo) return no(n, "activation '" + n.get(attr::activation) + "' clamps below zero (the DPU's ReLU clamps at 0)");
    e.relu = true;
  }
  if (r.hi < q::qmax(y.dtype)) {
    const int64_t x = int64_t(r.hi - zo) << right;
    if (x > std::numeric_limits<int32_t>::max()) return no(n, "relu6 bound does not fit the ReLU-X compare value");
    e.relux = true, e.relux_value = static_cast<int32_t>(x);
  }
  return Status::Ok();
}

// MUL: TFLite (mul.cc) computes round(round(p * M31 * 2^left / 2^31) / 2^right) for the
// product p of the operands less their zero points (both roundings half away from zero).
// The DPU's BS multiplier A (15 bits, shift 0) and EW scale B (16 bits, shift 0) keep the
// product exact, the EW multiplier rounds p * A * B right by EW_TRUNCATE t, OUT_CVT by
// 2^right: TFLite's two roundings, with A * B / 2^t in place of M31 * 2^left / 2^31.
// Candidates: for t = 31 - left and 30 - left, every A with B = round(target / A); the
// eight products closest to the target are checked on every pair.
Result<PairEncoding> search_product(const Node& n, const Tensor& ta, const Tensor& tb, const Tensor& ty, const PairTable& t) {
  const q::MulRescale m = q::mul_rescale("none", quant_scale(ta), quant_zp(ta), quant_scale(tb), quant_zp(tb), quant_scale(ty),
                                         quant_zp(ty), ty.dtype);
  const int left = std::max(m.m.shift, 0), right = std::max(-m.m.shift, 0);
  if (m.m.multiplier == 0) return no(n, "mul with a zero multiplier");
  if (right > kOutShiftMax) return no(n, "output shift " + std::to_string(right) + " exceeds OUT_CVT_SHIFT");
  PairEncoding base;
  base.mul = true;
  base.out = Scale16{1, right};
  TS_RETURN_IF_ERROR(mul_clamps(n, ty, right, base));
  struct Fit {
    double err;
    int32_t a, b;
    int truncate;
  };
  std::vector<Fit> fits;
  const int32_t a_max = (1 << kMantissaBits) - 1, b_max = (1 << (kMantissaBits + 1)) - 1;
  for (int tr = 31 - left; tr >= 30 - left; --tr) {
    if (tr < 0) continue;
    const double target = std::ldexp(double(m.m.multiplier), tr + left - 31);
    for (int32_t a = 1 << (kMantissaBits - 1); a <= a_max; ++a) {
      const int64_t b = std::llround(target / a);
      if (b < 1 || b > b_max) continue;
      fits.push_back({std::abs(double(a) * double(b) - target) / target, a, static_cast<int32_t>(b), tr});
    }
  }
  if (fits.empty()) return no(n, "mul multiplier cannot be split over the BS and EW multipliers");
  const size_t keep = std::min<size_t>(8, fits.size());
  std::partial_sort(fits.begin(), fits.begin() + keep, fits.end(), [](const Fit& x, const Fit& y) { return x.err < y.err; });
  std::vector<std::pair<PairEncoding, bool>> candidates;
  for (size_t i = 0; i < keep; ++i) {
    PairEncoding e = base;
    e.a = Scale16{fits[i].a * t.mr_sign, 0};
    e.b = Scale16{fits[i].b, 0};
    e.truncate = fits[i].truncate;
    candidates.push_back({e, i == 0});
  }
  return *best_of(candidates, t);
}

// The encoding of route `r` with the fewest pairs off TFLite; refused when it is more than
// one output step off on any pair.
Result<PairEncoding> search_pair(const Node& n, const Route& r, const Tensor& tm, const Tensor& te, const Tensor& ty) {
  const std::string act = n.get(attr::activation);
  if (act != "none" && act != "relu" && act != "relu6") return no(n, "activation '" + act + "' has no DPU form (relu and relu6 only)");
  const Tensor& ta = r.mr_first ? tm : te;
  const Tensor& tb = r.mr_first ? te : tm;
  const PairTable t = pair_table(r, tm, te, ty, tflite_pair(n, ta, tb, ty));
  PairEncoding e;
  if (n.op == OpKind::mul) {
    TS_ASSIGN_OR_RETURN(e, search_product(n, ta, tb, ty, t));
  } else {
    auto s = search_sum(n, tm, te, ty, t);
    if (!s) return no(n, "operand scales cannot be encoded (ratio out of range)");
    e = *s;
  }
  if (e.max_error > 1)
    return no(n, std::string(op_name(n.op)) + ": the best 16-bit DPU encoding is " + std::to_string(e.max_error) +
                     " output steps off TFLite on some input pairs (1 allowed)");
  return e;
}

// The search depends only on the operands' and the output's quantization, the dtypes, the
// op, the route's signs and the activation; supports() and compile() both lower every node,
// and models repeat quantizations, so its results (refusals too) are kept.
Result<PairEncoding> encode_pair(const Node& n, const Route& r, const Tensor& tm, const Tensor& te, const Tensor& ty) {
  using Key = std::tuple<int, int, int, bool, float, int64_t, float, int64_t, float, int64_t, DType, DType, std::string>;
  static std::mutex mu;
  static std::map<Key, Result<PairEncoding>> found;
  const Key key{static_cast<int>(n.op), r.mr_sign, r.er_sign, r.mr_first, tm.quant.scale_at(0), tm.quant.zero_point_at(0),
                te.quant.scale_at(0), te.quant.zero_point_at(0), ty.quant.scale_at(0), ty.quant.zero_point_at(0), tm.dtype, ty.dtype,
                n.get(attr::activation)};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = found.find(key); it != found.end()) return it->second;
  }
  Result<PairEncoding> e = search_pair(n, r, tm, te, ty);
  std::lock_guard<std::mutex> lock(mu);
  found.emplace(key, e);
  return e;
}

// The constant's bytes in the cube's NC1HWC2 layout (int8: u8 flipped by 0x80), its
// elements taken in row-major order as the cube's [H][W][C]; complemented (-q - 1) when the
// constant is subtracted.
std::vector<uint8_t> pack_constant(const Tensor& c, const Cube& cube, bool complement) {
  const bool u8 = c.dtype == DType::u8;
  std::vector<uint8_t> out(static_cast<size_t>((cube.c + kC2 - 1) / kC2 * cube.h * cube.w * kC2));
  const uint8_t pad = static_cast<uint8_t>(quant_zp(c));
  convert::nhwc_to_nc1hwc2(c.data->data, out.data(), convert::Nhwc{1, cube.h, cube.w, cube.c}, kC2, 1, &pad, u8);
  if (complement)
    for (uint8_t& v : out) v = static_cast<uint8_t>(~v);
  return out;
}

// `c` is `act`'s shape with leading 1s added or removed.
bool same_but_leading_ones(const Shape& c, const Shape& act) {
  auto strip = [](const Shape& s) {
    size_t i = 0;
    while (i + 1 < s.size() && s[i] == 1) ++i;
    return Shape(s.begin() + static_cast<std::ptrdiff_t>(i), s.end());
  };
  return strip(c) == strip(act);
}

// The DPU task for route `r` with encoding `e` over cube `cube`.
NpuOp pair_op(const Node& n, const Route& r, const Tensor& tm, const Tensor& te, const Tensor& ty, const Cube& cube,
              const PairEncoding& e) {
  NpuOp op;
  op.type = NpuOpType::add;  // an element-wise two-operand DPU task
  op.eltwise = op_name(n.op);
  op.label = n.label();
  op.input = r.mr;
  op.output = n.outputs[0];
  op.in_h = op.out_h = cube.h;
  op.in_w = op.out_w = cube.w;
  op.in_c = op.out_c = cube.c;
  const int32_t off = storage_offset(tm.dtype);
  op.bs_alu_operand = off - quant_zp(tm);
  // The converter's input is stored + offset: the code less its zero point, or for a
  // complemented constant (stored -s - 1) its negation, zp - code = -s - 1 + (zp + 1 - off).
  op.ew_offset = r.er_sign > 0 ? off - quant_zp(te) : quant_zp(te) + 1 - off;
  op.out_offset = quant_zp(ty) - storage_offset(ty.dtype);
  op.bs_mul = e.a;
  op.ew_scale = e.b;
  op.ew_mul = e.mul;
  op.ew_truncate = e.truncate;
  op.out_scale = e.out;
  op.ew_relu = e.relu, op.ew_relux = e.relux, op.ew_relux_value = e.relux_value;
  op.exact_pairs = e.exact_pairs;
  op.macs = 0;
  return op;
}

Status check_dtypes(const Node& n, const Tensor& a, const Tensor& b, const Tensor& y) {
  for (const Tensor* t : {&a, &b})
    if (!quantized8(*t) || t->quant.per_axis()) return no(n, "operand '" + t->name + "' is " + dt(*t) + ", not u8/i8 per tensor");
  if (a.dtype != y.dtype || b.dtype != y.dtype) return no(n, "mixed dtypes");
  return Status::Ok();
}

// Both operands activations of the same shape. SUB: the subtrahend through BS with a
// negative multiplier (the EW scale is unsigned), the minuend through ERDMA.
Result<NpuOp> lower_two_maps(const Graph& g, const Node& n) {
  const Tensor& a = g.tensor(n.inputs[0]);
  const Tensor& b = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_ASSIGN_OR_RETURN(Cube ca, eltwise_cube(g, n, n.inputs[0], "input"));
  TS_ASSIGN_OR_RETURN(Cube cb, eltwise_cube(g, n, n.inputs[1], "input"));
  TS_ASSIGN_OR_RETURN(Cube cy, eltwise_cube(g, n, n.outputs[0], "output"));
  if (a.shape != b.shape)
    return no(n, std::string("broadcasting ") + op_name(n.op) + " " + shape_str(a.shape) + ", " + shape_str(b.shape) + " (same shapes only)");
  if (!(ca == cb) || !(ca == cy)) return no(n, "operands laid out differently on the NPU");
  TS_RETURN_IF_ERROR(check_dtypes(n, a, b, y));
  Route r{n.inputs[0], n.inputs[1], 1, 1, true};
  if (n.op == OpKind::sub) r = Route{n.inputs[1], n.inputs[0], -1, 1, false};
  const Tensor& tm = g.tensor(r.mr);
  const Tensor& te = g.tensor(r.er);
  TS_ASSIGN_OR_RETURN(PairEncoding e, encode_pair(n, r, tm, te, y));
  NpuOp op = pair_op(n, r, tm, te, y, ca, e);
  op.ew_input = r.er;
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

// One operand a constant with the activation's element count: the constant is the ERDMA
// operand, packed into the activation's cube. SUB(const, act) subtracts the activation with
// BS's negative multiplier; SUB(act, const) stores the constant complemented, so that the
// converter sees its negation exactly.
Result<NpuOp> lower_with_constant(const Graph& g, const Node& n, int k) {
  const TensorId act = n.inputs[1 - k], cst = n.inputs[k];
  const Tensor& x = g.tensor(act);
  const Tensor& c = g.tensor(cst);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_ASSIGN_OR_RETURN(Cube cx, eltwise_cube(g, n, act, "input"));
  TS_ASSIGN_OR_RETURN(Cube cy, eltwise_cube(g, n, n.outputs[0], "output"));
  if (!same_but_leading_ones(c.shape, x.shape))
    return no(n, std::string("broadcasting ") + op_name(n.op) + " " + shape_str(x.shape) + " with constant " + shape_str(c.shape) +
                     " (same element count only)");
  if (!(cx == cy)) return no(n, "operands laid out differently on the NPU");
  TS_RETURN_IF_ERROR(check_dtypes(n, x, c, y));
  Route r{act, cst, 1, 1, k == 1};
  if (n.op == OpKind::sub) (k == 0 ? r.mr_sign : r.er_sign) = -1;
  TS_ASSIGN_OR_RETURN(PairEncoding e, encode_pair(n, r, x, c, y));
  NpuOp op = pair_op(n, r, x, c, y, cx, e);
  op.ew_constant = cst;
  op.ew_constant_data = pack_constant(c, cx, r.er_sign < 0);
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

// One operand a one-element constant: the output is a function of the activation's code,
// TFLite's op of that code and the constant's, one lookup table (exact by construction).
Result<NpuOp> lower_scalar(const Graph& g, const Node& n, int k) {
  const Tensor& x = g.tensor(n.inputs[1 - k]);
  const Tensor& c = g.tensor(n.inputs[k]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(eltwise_cube(g, n, n.inputs[1 - k], "input").status());
  TS_RETURN_IF_ERROR(check_dtypes(n, x, c, y));
  const int32_t code = c.dtype == DType::u8 ? c.data->data[0] : static_cast<int8_t>(c.data->data[0]);
  const PairFn f = k == 1 ? tflite_pair(n, x, c, y) : tflite_pair(n, c, x, y);
  return lower_lut(n, g, n.inputs[1 - k], n.outputs[0],
                   [f, code, k](int32_t v) { return k == 1 ? f(v, code) : f(code, v); },
                   std::string(op_name(n.op)) + " with a constant scalar");
}

}  // namespace

// Element-wise ADD, SUB and MUL of two u8/i8 operands (the SiLU MUL is a table, lower_mul).
Result<NpuOp> lower_binary(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return no(n, "not a two-operand node");
  const bool c0 = g.tensor(n.inputs[0]).data.has_value(), c1 = g.tensor(n.inputs[1]).data.has_value();
  if (c0 && c1) return no(n, "both operands are constants");
  if (!c0 && !c1) return lower_two_maps(g, n);
  const int k = c0 ? 0 : 1;
  if (g.tensor(n.inputs[k]).elements() == 1) return lower_scalar(g, n, k);
  return lower_with_constant(g, n, k);
}

}  // namespace tessera::rknpu::detail
