// Element-wise operations of two maps on the DPU (docs/rknpu.md "Arithmetic"): ADD brings
// both operands to a common unit (BS scales the MRDMA operand, the EW converter the ERDMA
// one), sums them and converts to the output, with the 16-bit encoding that agrees with
// TFLite's ADD on the most input code pairs.
#include "backend/rknpu/lower_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/tiling.h"
#include "ops/quant_math.h"

namespace tessera::rknpu::detail {

namespace {

struct AddEncoding {
  Scale16 a, b, out;
  bool relu = false, relux = false;
  int32_t relux_value = 0;
  int64_t exact_pairs = 0;  // input code pairs (of 65,536) on which it equals TFLite's ADD
};

// One output code of the DPU pipeline for an add (as the device model computes it), from the
// operands after their ALU offsets: BS scales the first, the EW converter the second, then
// ReLU / ReLU-X, OUT_CVT and the output offset, saturated to int8.
int32_t dpu_add(const AddEncoding& e, int32_t a_in, int32_t b_in, int32_t out_offset) {
  int32_t v = sat32(int64_t(scale_round(a_in, e.a.mantissa, e.a.shift)) + scale_round(b_in, e.b.mantissa, e.b.shift));
  if (e.relu) v = std::max(v, 0);
  if (e.relux) v = std::min(v, e.relux_value);
  return std::clamp<int32_t>(scale_round(v, e.out.mantissa, e.out.shift) + out_offset, -128, 127);
}

// Chooses the encoding that agrees with TFLite's ADD (add.cc: both operands rescaled to
// 2^-20 units of twice the larger scale with Q31 multipliers, summed, rescaled to the
// output, clamped to the activation range) on the most of the 65,536 pairs of input codes,
// checking every pair. Candidates: common units max(sa, sb) / 2^j for j in [6, 24], each of
// the three 16-bit multipliers rounded down, to nearest or up. Three 16-bit multipliers
// cannot reproduce TFLite's 31-bit ones on every pair; the best leaves a few dozen pairs
// (of 65,536) one step off, two to five times fewer than the plain nearest encoding.
Result<AddEncoding> search_add_encoding(const Node& n, const Tensor& ta, const Tensor& tb, const Tensor& ty) {
  const float sa = ta.quant.scale_at(0), sb = tb.quant.scale_at(0), so = ty.quant.scale_at(0);
  const int32_t za = static_cast<int32_t>(ta.quant.zero_point_at(0)), zb = static_cast<int32_t>(tb.quant.zero_point_at(0)),
                zo = static_cast<int32_t>(ty.quant.zero_point_at(0));
  const q::AddRescale tflite = q::add_rescale(sa, za, sb, zb, so, zo);
  const q::Range range = q::activation_range(n.get(attr::activation), ty.dtype, so, zo);
  const int32_t off = storage_offset(ta.dtype), lo = ta.dtype == DType::u8 ? 0 : -128;
  // TFLite's output code (stored form) for every pair of input codes.
  std::vector<int8_t> want(256 * 256);
  for (int32_t i = 0; i < 256; ++i)
    for (int32_t k = 0; k < 256; ++k)
      want[i * 256 + k] = static_cast<int8_t>(q::clamp(q::add_codes(tflite, lo + i, lo + k), range.lo, range.hi) - off);
  // A 16-bit unsigned mantissa in [2^15, 2^16) (signed [2^14, 2^15) for BS), rounded `dir`,
  // with no bits given up to the shift field.
  auto mantissa = [](double m, int bits, int dir, int max_shift) -> std::optional<Scale16> {
    const Scale16 s = split_mantissa(m, bits, dir);
    if (s.shift < 0 || s.shift > max_shift) return std::nullopt;
    return s;
  };
  const int32_t a_off = off - za, b_off = off - zb, out_off = zo - storage_offset(ty.dtype);
  // The candidates in their order of preference (the first of the best wins)...
  struct Candidate {
    AddEncoding e;
    bool nearest;  // all three multipliers rounded to nearest
  };
  std::vector<Candidate> candidates;
  for (int j = 6; j <= 24; ++j) {
    const double unit = std::max(sa, sb) * std::ldexp(1.0, -j);
    AddEncoding e;
    if (!lower_activation(n, ty, unit, e.relu, e.relux, e.relux_value).ok()) continue;
    for (int da = -1; da <= 1; ++da)
      for (int db = -1; db <= 1; ++db)
        for (int dout = -1; dout <= 1; ++dout) {
          auto ma = mantissa(sa / unit, kMantissaBits, da, kBsShiftMax), mb = mantissa(sb / unit, kMantissaBits + 1, db, kEwShiftMax),
               mo16 = mantissa(unit / so, kMantissaBits + 1, dout, kOutShiftMax);
          if (!ma || !mb || !mo16) continue;
          e.a = *ma, e.b = *mb, e.out = *mo16;
          candidates.push_back({e, da == 0 && db == 0 && dout == 0});
        }
  }
  // ...checked nearest-rounded first, so that a good count is known early and most of the
  // others stop after a few rows; a later-preferred candidate must beat the best count, an
  // earlier-preferred one only match it, which picks the same encoding as checking in order.
  std::vector<size_t> order;
  for (size_t c = 0; c < candidates.size(); ++c)
    if (candidates[c].nearest) order.push_back(c);
  for (size_t c = 0; c < candidates.size(); ++c)
    if (!candidates[c].nearest) order.push_back(c);
  AddEncoding best;
  int64_t best_bad = std::numeric_limits<int64_t>::max();
  size_t best_index = candidates.size();
  for (size_t c : order) {
    const AddEncoding& e = candidates[c].e;
    const int64_t stop = c < best_index ? best_bad : best_bad - 1;  // more than this loses
    int64_t bad = 0;
    for (int32_t i = 0; i < 256 && bad <= stop; ++i)
      for (int32_t k = 0; k < 256; ++k)
        bad += dpu_add(e, lo + i - off + a_off, lo + k - off + b_off, out_off) != want[i * 256 + k];
    if (bad <= stop) {
      best_bad = bad;
      best_index = c;
      best = e;
      best.exact_pairs = 256 * 256 - bad;
    }
  }
  if (best_bad == std::numeric_limits<int64_t>::max()) return no(n, "operand scales cannot be encoded (ratio out of range)");
  return best;
}

// The search above (tens of millions of DPU evaluations) depends only on the operands' and
// the output's quantization, the dtypes and the activation; supports() and compile() both
// lower every add, and models repeat the same quantization, so its results are kept.
Result<AddEncoding> encode_add(const Node& n, const Tensor& ta, const Tensor& tb, const Tensor& ty) {
  using Key = std::tuple<float, int64_t, float, int64_t, float, int64_t, DType, DType, std::string>;
  static std::mutex mu;
  static std::map<Key, AddEncoding> found;
  const Key key{ta.quant.scale_at(0), ta.quant.zero_point_at(0), tb.quant.scale_at(0), tb.quant.zero_point_at(0),
                ty.quant.scale_at(0), ty.quant.zero_point_at(0), ta.dtype, ty.dtype, n.get(attr::activation)};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = found.find(key); it != found.end()) return it->second;
  }
  TS_ASSIGN_OR_RETURN(AddEncoding e, search_add_encoding(n, ta, tb, ty));
  std::lock_guard<std::mutex> lock(mu);
  found.emplace(key, e);
  return e;
}

}  // namespace

// Element-wise add of two feature maps of the same shape: both operands are brought to a
// common unit (BS for the first, EW for the second), summed and converted to the output,
// with the encoding closest to TFLite's ADD (encode_add).
Result<NpuOp> lower_add(const Graph& g, const Node& n) {
  NpuOp op;
  op.type = NpuOpType::add;
  op.label = n.label();
  const Tensor& a = g.tensor(n.inputs[0]);
  const Tensor& b = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  if (a.data || b.data) return no(n, "an operand is a constant");
  TS_ASSIGN_OR_RETURN(Cube ca, eltwise_cube(g, n, n.inputs[0], "input"));
  TS_ASSIGN_OR_RETURN(Cube cb, eltwise_cube(g, n, n.inputs[1], "input"));
  TS_ASSIGN_OR_RETURN(Cube cy, eltwise_cube(g, n, n.outputs[0], "output"));
  if (a.shape != b.shape) return no(n, "broadcasting add " + shape_str(a.shape) + " + " + shape_str(b.shape) + " (same shapes only)");
  if (!(ca == cb) || !(ca == cy)) return no(n, "operands laid out differently on the NPU");
  if (a.dtype != y.dtype || b.dtype != y.dtype) return no(n, "mixed dtypes");
  op.input = n.inputs[0];
  op.ew_input = n.inputs[1];
  op.output = n.outputs[0];
  op.in_h = op.out_h = ca.h;
  op.in_w = op.out_w = ca.w;
  op.in_c = op.out_c = ca.c;
  const int32_t off = storage_offset(a.dtype);
  op.bs_alu_operand = off - static_cast<int32_t>(a.quant.zero_point_at(0));
  op.ew_offset = off - static_cast<int32_t>(b.quant.zero_point_at(0));
  op.out_offset = static_cast<int32_t>(y.quant.zero_point_at(0)) - storage_offset(y.dtype);
  TS_ASSIGN_OR_RETURN(AddEncoding e, encode_add(n, a, b, y));
  op.bs_mul = e.a;
  op.ew_scale = e.b;
  op.out_scale = e.out;
  op.ew_relu = e.relu, op.ew_relux = e.relux, op.ew_relux_value = e.relux_value;
  op.exact_pairs = e.exact_pairs;
  op.macs = 0;
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}


}  // namespace tessera::rknpu::detail
