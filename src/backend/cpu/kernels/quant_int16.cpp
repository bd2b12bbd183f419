// TFLite's 16x8 quantization (int16 activations, zero point 0) for the element-wise ops,
// as the interpreter's builtin kernels compute them:
//  - LOGISTIC, TANH (activations.cc): gemmlowp's int16 fixed point for power-of-two input
//    scales, TFLite's interpolated sigmoid table otherwise (src/ops/quant_int16.h); the
//    output is Q0.15 (scale 1/32768, zero point 0);
//  - MUL (mul.cc -> reference_integer_ops::Mul / BroadcastMul4DSlow for int16): the product
//    of the codes rescaled by QuantizeMultiplier(s1·s2/so, the product in float), clamped to
//    the fused activation's range; to a uint8 output the legacy Q0.15 product (below).
//  - ADD, SUB with power-of-two scales (add.cc / sub.cc's pot_scale_int16 kernels,
//    reference_ops::Add / Sub16 for int16): ops/quant_int16.h's pot_add_sub_code.
//  - SOFTMAX (reference_ops::SoftmaxInt16, which the builtin kernel calls): the tables of
//    exp and 1/(1 + x) of src/ops/quant_int16.h; the output is Q0.15.
// The kernels in quant_elementwise.cpp and quant_softmax.cpp hand their int16 nodes here.
#include <bit>
#include <vector>

#include "backend/cpu/kernels/fixed_point16.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"
#include "ops/quant_int16.h"

namespace tessera::cpu::q {

namespace {

Status require_i16_zero_point(const Node& n, const Tensor& t) {
  if (t.dtype != DType::i16 || t.quant.empty() || t.quant.per_axis())
    return kernel_error(n, "tensor '" + t.name + "' must be i16 with one scale and zero point");
  if (t.quant.zero_point_at(0) != 0)
    return kernel_error(n, "int16 tensor '" + t.name + "' has zero point " + std::to_string(t.quant.zero_point_at(0)) +
                               ", TFLite's 16x8 quantization requires 0");
  return Status::Ok();
}

Status unit_activation_i16(KernelContext& c, bool is_tanh) {
  const Tensor &x = *c.in[0].t, &y = *c.out[0].t;
  TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, x));
  TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, y));
  int log2 = 0;  // LOGISTIC: exactly 1/32768; TANH: 2^-15 within CheckedLog2's tolerance
  const float so = y.quant.scale[0];
  if (is_tanh ? !(i16::checked_log2(so, &log2) && log2 == -15) : static_cast<double>(so) != i16::kUnitOutputScale)
    return kernel_error(c.n, "int16 output '" + y.name + "' must have scale 1/32768 (TFLite's Q0.15 output)");
  i16::UnitActivation p;
  const std::string err = i16::unit_activation(x.quant.scale[0], is_tanh, &p);
  if (!err.empty()) return kernel_error(c.n, err);
  const int16_t* in = c.in[0].as<int16_t>();
  int16_t* out = c.out[0].as<int16_t>();
  const int64_t n = c.in[0].elements();
  constexpr int kInputIntegerBits = 3;  // optimized_ops::Logistic / Tanh read the input as Q3.12
  for (int64_t i = 0; i < n; ++i) {
    if (!p.pot)
      out[i] = is_tanh ? i16::tanh_lut(in[i], p) : i16::logistic_lut(in[i], p);
    else if (is_tanh)  // a scale of 2^-13: SaturatingRoundingMultiplyByPOT<1> first
      out[i] = fx16::tanh(p.left_shift ? fx16::multiply_by_pot(in[i], 1) : in[i], kInputIntegerBits);
    else
      out[i] = fx16::logistic(in[i], kInputIntegerBits);
  }
  return Status::Ok();
}

// |a - b| <= eps in float, as TF_LITE_ENSURE_NEAR compares.
bool near_f(float a, float b, float eps) { return std::abs(a - b) <= eps; }

}  // namespace

Status logistic_i16(KernelContext& c) { return unit_activation_i16(c, false); }
Status tanh_i16(KernelContext& c) { return unit_activation_i16(c, true); }

// MUL int16 x int16 -> uint8 (mul.cc -> reference_ops::Mul's legacy form): the codes as
// Q0.15, their rounding doubling high product divided by 2^8 (Q0.7), clamped to the
// activation's range less the output zero point, plus that zero point. Scales unused.
Status mul_i16_to_u8(KernelContext& c) {
  for (const TensorRef* r : {&c.in[0], &c.in[1]}) TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, *r->t));
  const Tensor& yt = *c.out[0].t;
  if (yt.quant.empty() || yt.quant.per_axis()) return kernel_error(c.n, "uint8 output '" + yt.name + "' needs one scale and zero point");
  if (c.in[0].shape() != c.out[0].shape() || c.in[1].shape() != c.out[0].shape())
    return kernel_error(c.n, "int16 -> uint8 MUL takes operands of the output's shape (TFLite's kernel does not broadcast)");
  const int32_t zo = static_cast<int32_t>(yt.quant.zero_point_at(0));
  const Range r = activation_range(c.n.get(attr::activation), DType::u8, yt.quant.scale[0], zo);
  const int16_t *a = c.in[0].as<int16_t>(), *b = c.in[1].as<int16_t>();
  uint8_t* y = c.out[0].data;
  const int64_t n = c.out[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int16_t v = fx16::rounding_divide_by_pot(fx16::mul(a[i], b[i]), 8);
    const auto clamped = static_cast<int16_t>(std::max<int32_t>(r.lo - zo, std::min<int32_t>(r.hi - zo, v)));
    y[i] = static_cast<uint8_t>(zo + clamped);
  }
  return Status::Ok();
}

Status mul_i16(KernelContext& c) {
  if (c.out[0].dtype() == DType::u8) return mul_i16_to_u8(c);
  for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]}) TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, *r->t));
  const float s1 = c.in[0].t->quant.scale[0], s2 = c.in[1].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const MulRescale p = mul_rescale(c.n.get(attr::activation), s1, 0, s2, 0, so, 0, DType::i16);
  const int16_t *a = c.in[0].as<int16_t>(), *b = c.in[1].as<int16_t>();
  int16_t* y = c.out[0].as<int16_t>();
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(),
                     [&](int64_t ia, int64_t ib, int64_t iy) { y[iy] = static_cast<int16_t>(p.code(a[ia], b[ib])); });
  return Status::Ok();
}

Status add_sub_pot_i16(KernelContext& c, bool subtract) {
  for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]}) TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, *r->t));
  const float s1 = c.in[0].t->quant.scale[0], s2 = c.in[1].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  i16::PotAddSub p;
  const std::string err = i16::pot_add_sub(s1, s2, so, &p);
  if (!err.empty()) return kernel_error(c.n, err);
  const Range r = activation_range(c.n.get(attr::activation), DType::i16, so, 0);
  const int16_t *a = c.in[0].as<int16_t>(), *b = c.in[1].as<int16_t>();
  int16_t* y = c.out[0].as<int16_t>();
  for_each_broadcast(c.out[0].shape(), c.in[0].shape(), c.in[1].shape(), [&](int64_t ia, int64_t ib, int64_t iy) {
    y[iy] = static_cast<int16_t>(clamp(i16::pot_add_sub_code(p, a[ia], b[ib], subtract), r.lo, r.hi));
  });
  return Status::Ok();
}

Status softmax_i16(KernelContext& c) {
  const Tensor &x = *c.in[0].t, &y = *c.out[0].t;
  TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, x));
  TS_RETURN_IF_ERROR(require_i16_zero_point(c.n, y));
  if (!near_f(y.quant.scale[0], 1.f / 32768, 0.001f * 1.f / 32768))
    return kernel_error(c.n, "int16 output '" + y.name + "' must have scale 1/32768 (TFLite's int16 softmax)");
  const size_t rank = c.in[0].shape().size();
  if (rank < 1 || rank > 4) return kernel_error(c.n, "int16 softmax takes ranks 1 to 4 (TFLite's kernel), got " + std::to_string(rank));
  const int64_t axis = c.n.get(attr::axis);
  if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return kernel_error(c.n, "quantized softmax runs along the last axis only");
  Multiplier m;
  const std::string err = i16::softmax_rescale(x.quant.scale[0], static_cast<float>(c.n.get(attr::beta)), &m);
  if (!err.empty()) return kernel_error(c.n, err);
  static const i16::SoftmaxLuts luts = i16::softmax_luts();
  const int64_t depth = c.in[0].shape().back();
  if (depth > 65536) return kernel_error(c.n, "int16 softmax rows are limited to 65536 values (an int32 sum of Q0.15 terms)");
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const int16_t* in = c.in[0].as<int16_t>();
  int16_t* out = c.out[0].as<int16_t>();
  thread_local std::vector<int16_t> e;  // a row's exponentials (Q0.15); grows once, then reused
  e.resize(static_cast<size_t>(depth));
  for (int64_t r = 0; r < rows; ++r) {
    const int16_t* xr = in + r * depth;
    int16_t* yr = out + r * depth;
    int32_t max_in_row = -32768;
    for (int64_t i = 0; i < depth; ++i) max_in_row = std::max<int32_t>(max_in_row, xr[i]);
    int32_t sum = 0;  // Q16.15
    for (int64_t i = 0; i < depth; ++i) {
      // [-65535, 0] ~ [-10, 0], recentred to the table's symmetric input.
      const int32_t scaled = multiply(xr[i] - max_in_row, m) + 32767;
      e[static_cast<size_t>(i)] = i16::lut16_lookup(static_cast<int16_t>(clamp(scaled, -32768, 32767)), luts.exp);
      sum += e[static_cast<size_t>(i)];
    }
    // 1 / sum: the sum normalised to [1, 2) in Q1.15 (x = sum - 1, recentred), then 1/(1 + x).
    const int headroom_plus_one = std::countl_zero(static_cast<uint32_t>(sum));
    const int32_t shifted_sum =
        static_cast<int32_t>(((static_cast<int64_t>(sum) << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
    const int32_t sym = clamp(shifted_sum - ((1 << 15) + (1 << 16)), -32768, 32767);
    const int16_t recip = i16::lut16_lookup(static_cast<int16_t>(sym), luts.one_over_one_plus_x);
    const int right_shift = 31 - headroom_plus_one;
    const int64_t round = int64_t{1} << (right_shift - 1);
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t v = static_cast<int32_t>((int64_t{e[static_cast<size_t>(i)]} * recip + round) >> right_shift);
      yr[i] = static_cast<int16_t>(clamp(v, 0, 32767));
    }
  }
  return Status::Ok();
}

}  // namespace tessera::cpu::q
