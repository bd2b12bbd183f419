// TFLite-exact quantized kernels of the activation and normalisation builtins ELU, GELU,
// PRELU, L2_NORMALIZATION and LOG_SOFTMAX, computed the way the interpreter's builtin
// kernels compute them:
//  * elu (i8) and gelu (u8 / i8): the 256-entry table of the float function over the input
//    codes (q::lut_unary), ELU as x < 0 ? e^x - 1 : x, GELU as 0.5 x (1 + erf(x / sqrt 2))
//    or its tanh form, each in float;
//  * prelu (u8 / i8): x - zx rescaled by sx / so where it is >= 0, else (x - zx)(a - za)
//    rescaled by sx sa / so, both multipliers formed in float (activations.cc PreluPrepare);
//  * l2_norm (u8 / i8, output scale 1/128): the sum of squared offsets, its inverse square
//    root as a fixed-point multiplier (q::fp::inv_sqrt_multiplier_exp), then each offset
//    times 128 rescaled by it;
//  * log_softmax u8 (output scale 16/256, zero point 255): the interpreter's float path, a
//    table of expf(-sx d) for row-maximum differences d, summed in float;
//    log_softmax i8 (zero point 127): gemmlowp fixed point, inputs as Q5.26 differences from
//    the row maximum, exps summed in Q12.19, the log in Q5.26.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

float scale_of(const TensorRef& r) { return r.t->quant.scale[0]; }
int32_t zp_of(const TensorRef& r) { return static_cast<int32_t>(r.t->quant.zero_point_at(0)); }

// ---- elu, gelu: tables ----
float elu_value(float x) { return x < 0.0f ? std::exp(x) - 1.0f : x; }
// The float functions the tables take, as the interpreter's GELU writes them (the erf form
// in double, the tanh form in float).
float gelu_erf_value(float x) { return 0.5f * x * (1.0f + std::erf(x * M_SQRT1_2)); }
float gelu_tanh_value(float x) {
  const float k = static_cast<float>(M_2_SQRTPI * M_SQRT1_2);  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

Status elu_q(KernelContext& c) {
  if (c.out[0].dtype() != DType::i8) return kernel_error(c.n, "quantized elu takes i8 (TFLite's ELU form)");
  return q::lut_unary(c, elu_value);
}
Status gelu_q(KernelContext& c) {
  return q::lut_unary(c, c.n.get(attr::approximate) != 0 ? gelu_tanh_value : gelu_erf_value);
}

// ---- prelu ----
Status prelu_q(KernelContext& c) {
  for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]})
    TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *r->t));
  const DType t = c.out[0].dtype();
  if (c.in[0].dtype() != t || c.in[1].dtype() != t) return kernel_error(c.n, "input, alpha and output must share one dtype");
  const float sx = scale_of(c.in[0]), sa = scale_of(c.in[1]), so = scale_of(c.out[0]);
  const q::Multiplier m1 = q::quantize_multiplier(static_cast<double>(sx / so));
  const q::Multiplier m2 = q::quantize_multiplier(static_cast<double>(sx * sa / so));
  const int32_t zx = zp_of(c.in[0]), za = zp_of(c.in[1]), zo = zp_of(c.out[0]);
  const Shape& out = c.out[0].shape();
  const DimList sxs = broadcast_strides(out, c.in[0].shape()), sas = broadcast_strides(out, c.in[1].shape());
  const int rank = static_cast<int>(out.size());
  DimList idx(static_cast<size_t>(rank));
  int64_t ix = 0, ia = 0;
  for (int64_t i = 0, n = num_elements(out); i < n; ++i) {
    const int32_t v = q::load(c.in[0].data, t, ix) - zx;
    const int32_t o = v >= 0 ? q::multiply(v, m1) : q::multiply(v * (q::load(c.in[1].data, t, ia) - za), m2);
    q::store(c.out[0].data, t, i, q::clamp(o + zo, q::qmin(t), q::qmax(t)));
    for (int d = rank - 1; d >= 0; --d) {
      ix += sxs[d];
      ia += sas[d];
      if (++idx[d] < out[d]) break;
      ix -= sxs[d] * out[d];
      ia -= sas[d] * out[d];
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

// ---- l2_norm ----
Status l2_norm_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t));
  const DType t = c.out[0].dtype();
  if (c.in[0].dtype() != t) return kernel_error(c.n, "input and output must have the same dtype");
  const int32_t zero = t == DType::u8 ? 128 : 0;
  if (scale_of(c.out[0]) != 1.0f / 128 || zp_of(c.out[0]) != zero)
    return kernel_error(c.n, "output '" + c.out[0].t->name + "' must have scale 1/128 and zero point " +
                                 std::to_string(zero) + " (TFLite's quantized L2_NORMALIZATION)");
  const int32_t zx = zp_of(c.in[0]);
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * depth;
    int32_t sum = 0;  // at most 255^2 per value: the importer bounds the depth
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t d = q::load(c.in[0].data, t, base + i) - zx;
      sum += d * d;
    }
    const q::Multiplier inv = q::fp::inv_sqrt_multiplier_exp(sum);
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t d = q::load(c.in[0].data, t, base + i) - zx;
      int32_t o;
      if (t == DType::u8)  // 128 d, times the inverse norm (a multiplier below one)
        o = 128 + q::rounding_divide_by_pot(q::srdhm(128 * d, inv.multiplier), -inv.shift);
      else  // d times the inverse norm times 2^7
        o = q::multiply(d, inv.multiplier, inv.shift + 7);
      q::store(c.out[0].data, t, base + i, q::clamp(o, q::qmin(t), q::qmax(t)));
    }
  }
  return Status::Ok();
}

// ---- log_softmax ----
Status log_softmax_u8(KernelContext& c) {
  const float sx = scale_of(c.in[0]), so = scale_of(c.out[0]);
  const int32_t zo = zp_of(c.out[0]);
  float exp_of[256];  // exp_of[d] = expf(-sx d)
  for (int32_t d = 0; d < 256; ++d) exp_of[d] = std::exp(-sx * static_cast<float>(d));
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * depth;
    uint8_t mx = 0;
    for (int64_t i = 0; i < depth; ++i) mx = std::max(mx, xr[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < depth; ++i) sum += exp_of[mx - xr[i]];
    const float log_sum = std::log(sum);
    const float scale = sx / so;
    const float offset = (sx * static_cast<float>(mx) + log_sum) / so;
    for (int64_t i = 0; i < depth; ++i) {
      const float v = scale * static_cast<float>(xr[i]) - offset;
      const int32_t code = static_cast<int32_t>(std::rint(v)) + zo;
      y[r * depth + i] = static_cast<uint8_t>(q::clamp(code, 0, 255));
    }
  }
  return Status::Ok();
}

// TFLite's int8 LOG_SOFTMAX (its reference integer kernel, with LogSoftmaxPrepare's
// parameters): differences from the row maximum scaled to Q5.26 by sx 2^26 (a multiplier
// with a left shift), exps in Q0.31 summed in Q12.19, log of the sum in Q5.26; outputs
// (d - log sum) in steps of 1/16 from 127, and -128 below the range the rescale can hold.
Status log_softmax_i8(KernelContext& c) {
  constexpr int kInputBits = 5, kSumBits = 12, kOutputBits = 4;
  const double real = std::min<double>(static_cast<double>(scale_of(c.in[0])) * (1 << (31 - kInputBits)),
                                       2147483647.0);
  if (!(real > 1.0)) return kernel_error(c.n, "input '" + c.in[0].t->name + "' scale is too small for TFLite's log_softmax");
  const q::Multiplier in_m = q::quantize_multiplier(real);
  const q::Multiplier rev = q::quantize_multiplier((1 << (31 - in_m.shift)) / static_cast<double>(in_m.multiplier));
  const int32_t diff_min = -static_cast<int32_t>(
      std::floor(1.0 * ((1 << kInputBits) - 1) * static_cast<double>(int64_t{1} << (31 - kInputBits)) /
                 static_cast<double>(int64_t{1} << in_m.shift)));
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const int8_t* x = c.in[0].as<int8_t>();
  int8_t* y = c.out[0].as<int8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* xr = x + r * depth;
    int8_t* yr = y + r * depth;
    int32_t mx = -128;
    for (int64_t i = 0; i < depth; ++i) mx = std::max<int32_t>(mx, xr[i]);
    int32_t sum = 0;  // Q12.19
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t d = xr[i] - mx;
      if (d >= diff_min)
        sum = q::fp::wrap_add(sum, q::fp::rescale(q::fp::exp_on_negative_values(q::multiply(d, in_m), kInputBits), 0, kSumBits));
    }
    const int32_t log_sum = q::fp::log_x_for_x_greater_than_or_equal_to_1(sum, kSumBits, kInputBits);
    const int32_t shifted = q::fp::wrap_add(log_sum, std::numeric_limits<int32_t>::min());
    const int32_t adjusted_diff_min = std::max(diff_min - 1, q::multiply(shifted, rev));
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t d = xr[i] - mx;
      if (d > adjusted_diff_min) {
        const int32_t o = q::rounding_divide_by_pot(q::fp::wrap_sub(q::multiply(d, in_m), log_sum), 31 - kInputBits - kOutputBits) + 127;
        yr[i] = static_cast<int8_t>(q::clamp(o, -128, 127));
      } else {
        yr[i] = -128;
      }
    }
  }
  return Status::Ok();
}

Status log_softmax_q(KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t));
  const DType t = c.out[0].dtype();
  if (c.in[0].dtype() != t) return kernel_error(c.n, "input and output must have the same dtype");
  const int32_t zero = t == DType::u8 ? 255 : 127;
  if (scale_of(c.out[0]) != 16.0f / 256 || zp_of(c.out[0]) != zero)
    return kernel_error(c.n, "output '" + c.out[0].t->name + "' must have scale 16/256 and zero point " +
                                 std::to_string(zero) + " (TFLite's quantized LOG_SOFTMAX)");
  if (t == DType::u8) return log_softmax_u8(c);
  return log_softmax_i8(c);
}

}  // namespace

void register_quant_activation_norm_kernels(KernelTable& t) {
  t.add(OpKind::elu, KernelKind::quant, elu_q);
  t.add(OpKind::gelu, KernelKind::quant, gelu_q);
  t.add(OpKind::prelu, KernelKind::quant, prelu_q);
  t.add(OpKind::l2_norm, KernelKind::quant, l2_norm_q);
  t.add(OpKind::log_softmax, KernelKind::quant, log_softmax_q);
}

}  // namespace tessera::cpu
