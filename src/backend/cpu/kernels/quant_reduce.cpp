// TFLite-exact quantized reductions over attr axes: sum (u8 / i8; i16 with the input's
// quantization on the output), reduce_max and reduce_min
// (u8 / i8 / i16), reduce_prod (i8 / i16). TFLite's reduce.cc, as the oracle's interpreter
// computes them (MEAN is in quant_pool.cpp):
//  - SUM with the input's scale and zero point on the output: EvalGeneric, the raw codes
//    added in the storage type (wrapping);
//  - SUM otherwise: QuantizedMeanOrSum(compute_sum): raw codes summed in int32, then
//    round(sum * s + b) + out_zp in float with s = in_s / out_s, b = -in_zp * s * count,
//    stored with a plain cast (no clamp, as the reference does);
//  - REDUCE_MAX / REDUCE_MIN: the codes compared (input and output share quantization,
//    which the importer checks);
//  - REDUCE_PROD: QuantizedReduceProd: p = x0 - in_zp, then p = rescale(p * (x - in_zp))
//    per further element, and once more at the end, each rescale by
//    in_s / out_s^(1/count) (GetQuantProdScaling) as MultiplyByQuantizedMultiplier of an
//    int64; the result plus out_zp is clamped.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

// The reduced axes of the input (1 per reduced dim) and, for every input dim, the output
// stride it advances (0 along a reduced axis).
struct ReducePlan {
  explicit ReducePlan(size_t rank) : ostride(rank) {}
  DimList ostride;
  int64_t count = 1;  // input elements per output element
};

Result<ReducePlan> plan_of(const KernelContext& c) {
  const Shape& xs = c.in[0].shape();
  const int rank = static_cast<int>(xs.size());
  DimList red(static_cast<size_t>(rank));
  for (int64_t a : c.n.get(attr::axes)) {
    if (a < -rank || a >= rank) return kernel_error(c.n, "axis " + std::to_string(a) + " outside rank " + std::to_string(rank));
    red[static_cast<size_t>(a < 0 ? a + rank : a)] = 1;
  }
  ReducePlan p(static_cast<size_t>(rank));
  int64_t st = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (red[d]) {
      p.count *= xs[d];
    } else {
      p.ostride[d] = st;
      st *= xs[d];
    }
  }
  return p;
}

// Calls f(output index, code) for every input element in row-major order.
template <typename F>
void walk(const KernelContext& c, const ReducePlan& p, F f) {
  const Shape& xs = c.in[0].shape();
  const int rank = static_cast<int>(xs.size());
  const DType t = c.in[0].dtype();
  DimList idx(static_cast<size_t>(rank));
  for (int64_t i = 0, o = 0, n = c.in[0].elements(); i < n; ++i) {
    f(o, q::load(c.in[0].data, t, i));
    for (int d = rank - 1; d >= 0; --d) {
      o += p.ostride[d];
      if (++idx[d] < xs[d]) break;
      o -= p.ostride[d] * xs[d];
      idx[d] = 0;
    }
  }
}

Status check_io(const KernelContext& c, bool allow_i16) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t, allow_i16));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t, allow_i16));
  if (c.in[0].dtype() != c.out[0].dtype()) return kernel_error(c.n, "input and output must have the same dtype");
  return Status::Ok();
}

// The code as the storage type's two's complement wraps it (a cast to T).
int32_t wrap(int64_t v, DType t) {
  switch (t) {
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::i8: return static_cast<int8_t>(v);
    default: return static_cast<int16_t>(v);
  }
}

Status sum(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_io(c, true));
  if (c.in[0].dtype() == DType::i16 && c.in[0].t->quant != c.out[0].t->quant)
    return kernel_error(c.n, "int16 sum needs the input's quantization on the output (TFLite's reduce.cc)");
  TS_ASSIGN_OR_RETURN(ReducePlan p, plan_of(c));
  const DType t = c.in[0].dtype();
  const int64_t outs = c.out[0].elements();
  thread_local std::vector<int64_t> acc;  // capacity kept: a run allocates nothing
  acc.assign(static_cast<size_t>(outs), 0);
  walk(c, p, [&](int64_t o, int32_t v) { acc[o] += v; });
  const float si = c.in[0].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const int32_t zi = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t zo = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  uint8_t* y = c.out[0].data;
  if (si == so && zi == zo) {  // EvalGeneric: the codes added in T
    for (int64_t o = 0; o < outs; ++o) q::store(y, t, o, wrap(acc[o], t));
    return Status::Ok();
  }
  const float scale = si / so;
  const float bias = static_cast<float>(-zi) * scale * static_cast<float>(p.count);
  for (int64_t o = 0; o < outs; ++o) {
    // temp_sum is int32 in TFLite: the sum wraps there first.
    const float s = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc[o])));
    const int32_t v = static_cast<int32_t>(std::round(s * scale + bias)) + zo;
    q::store(y, t, o, wrap(v, t));
  }
  return Status::Ok();
}

template <bool is_max>
Status extreme(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_io(c, true));
  if (c.in[0].t->quant != c.out[0].t->quant)
    return kernel_error(c.n, "input and output must share quantization parameters (TFLite compares codes)");
  TS_ASSIGN_OR_RETURN(ReducePlan p, plan_of(c));
  const DType t = c.in[0].dtype();
  const int64_t outs = c.out[0].elements();
  thread_local std::vector<int32_t> acc;  // capacity kept: a run allocates nothing
  acc.assign(static_cast<size_t>(outs), is_max ? q::qmin(t) : q::qmax(t));
  walk(c, p, [&](int64_t o, int32_t v) { acc[o] = is_max ? std::max(acc[o], v) : std::min(acc[o], v); });
  for (int64_t o = 0; o < outs; ++o) q::store(c.out[0].data, t, o, acc[o]);
  return Status::Ok();
}

Status prod(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_io(c, true));
  const DType t = c.in[0].dtype();
  if (t == DType::u8) return kernel_error(c.n, "quantized reduce_prod takes i8 or i16 (as TFLite does), got u8");
  TS_ASSIGN_OR_RETURN(ReducePlan p, plan_of(c));
  const int64_t outs = c.out[0].elements();
  const double si = c.in[0].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const int32_t zi = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t zo = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  // GetQuantProdScaling (reduce.cc): every step rescales by in_s / out_s^(1 / count).
  const q::Multiplier m = q::quantize_multiplier(si / std::pow(so, 1.0 / static_cast<double>(std::max<int64_t>(p.count, 1))));
  thread_local std::vector<int32_t> acc;    // capacity kept: a run allocates nothing
  thread_local std::vector<uint8_t> first;  // 1 until the output's first element arrived
  acc.assign(static_cast<size_t>(outs), 1);
  first.assign(static_cast<size_t>(outs), 1);
  walk(c, p, [&](int64_t o, int32_t v) {
    if (first[o]) {
      acc[o] = v - zi;
      first[o] = 0;
    } else {
      acc[o] = q::multiply_int64(static_cast<int64_t>(acc[o]) * (v - zi), m);
    }
  });
  for (int64_t o = 0; o < outs; ++o)
    q::store(c.out[0].data, t, o, q::clamp(q::multiply_int64(acc[o], m) + zo, q::qmin(t), q::qmax(t)));
  return Status::Ok();
}

}  // namespace

void register_quant_reduce_kernels(KernelTable& t) {
  t.add(OpKind::sum, KernelKind::quant, sum);
  t.add(OpKind::reduce_max, KernelKind::quant, extreme<true>);
  t.add(OpKind::reduce_min, KernelKind::quant, extreme<false>);
  t.add(OpKind::reduce_prod, KernelKind::quant, prod);
}

}  // namespace tessera::cpu
