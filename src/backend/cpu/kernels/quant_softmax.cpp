// TFLite-exact quantized softmax (u8 / i8 in, u8 / i8 out with scale 1/256) and the
// gemmlowp fixed-point functions it needs.
//
// TFLite's reference kernel (reference_ops::Softmax for quantized types, with parameters
// from PreprocessSoftmaxScaling and CalculateInputRadius) works in gemmlowp fixed point:
// differences to the row maximum are scaled by beta * input_scale into a Q5.26 value,
// exponentiated with exp_on_negative_values, summed in Q12.19, and normalised with a
// Newton-Raphson reciprocal. This file reproduces that arithmetic step by step.
#include <bit>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace q::fp {

namespace {
int32_t mul(int32_t a, int32_t b) { return srdhm(a, b); }  // fixed-point product
int32_t mask_if(bool c) { return c ? -1 : 0; }
}  // namespace

// gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl (0 integer bits).
static int32_t exp_on_interval(int32_t a) {
  constexpr int32_t kConstantTerm = 1895147668;   // exp(-1/8) in Q0.31
  constexpr int32_t kOneThird = 715827883;        // 1/3 in Q0.31
  const int32_t x = a + (1 << 28);                // a + 1/8
  const int32_t x2 = mul(x, x);
  const int32_t x3 = mul(x2, x);
  const int32_t x4 = mul(x2, x2);
  const int32_t x4_over_4 = rounding_divide_by_pot(x4, 2);
  const int32_t poly = rounding_divide_by_pot(mul(x4_over_4 + x3, kOneThird) + x2, 1);
  return kConstantTerm + mul(kConstantTerm, x + poly);  // gemmlowp: c + c * (x + poly)
}

int32_t exp_on_negative_values(int32_t a, int integer_bits) {
  const int fractional_bits = 31 - integer_bits;
  const int32_t one_quarter = 1 << (fractional_bits - 2);
  const int32_t mask = one_quarter - 1;
  const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
  int32_t result = exp_on_interval(rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0));
  const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
  // exp(-2^k) in Q0.31 for k = -2 .. 4 (gemmlowp GEMMLOWP_EXP_BARREL_SHIFTER).
  constexpr int32_t kBarrel[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int e = -2; e <= 4; ++e) {
    if (integer_bits <= e) continue;
    const int shift = fractional_bits + e;
    if (remainder & (1 << shift)) result = mul(result, kBarrel[e + 2]);
  }
  if (integer_bits > 5) {
    const int32_t clamp_raw = -(1 << (36 - integer_bits));  // -32.0
    if (a < clamp_raw) result = 0;
  }
  if (a == 0) result = std::numeric_limits<int32_t>::max();  // One() with 0 integer bits
  (void)mask_if;
  return result;
}

int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  // RoundingHalfSum(a, One) in Q0.31.
  const int64_t sum = static_cast<int64_t>(a) + std::numeric_limits<int32_t>::max();
  const int32_t half_denominator = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
  constexpr int32_t k48Over17 = 1515870810;      // 48/17 in Q2.29
  constexpr int32_t kNeg32Over17 = -1010580540;  // -32/17 in Q2.29
  int32_t x = k48Over17 + mul(half_denominator, kNeg32Over17);  // Q2.29
  constexpr int32_t kOneQ2 = 1 << 29;
  for (int i = 0; i < 3; ++i) {
    const int32_t hdx = mul(half_denominator, x);                  // Q2.29
    const int32_t one_minus = kOneQ2 - hdx;                        // Q2.29
    x = x + rescale(mul(x, one_minus), 4, 2);                      // Q4.27 -> Q2.29
  }
  // ExactMulByPot<-1>: the same raw value read as Q1.30, then Rescale<0>.
  return rescale(x, 1, 0);
}

}  // namespace q::fp

namespace {

constexpr int kScaledDiffIntegerBits = 5;     // softmax.h: kScaledDiffIntegerBits
constexpr int kAccumulationIntegerBits = 12;  // softmax.h: kAccumulationIntegerBits

// TFLite's input-dependent constants (PreprocessSoftmaxScaling, CalculateInputRadius) and
// the exponential of every difference an 8-bit row can have (0 down to -255), made once
// at compile (prepare_softmax) instead of twice per value: the same function of the same
// integers, so the same bits.
struct SoftmaxTable : PreparedKernel {
  int32_t diff_min = 0;
  int32_t exp_of[256] = {};  // exp_of[d]: Q0.31 exponential of the difference -d (0 below diff_min)
};

SoftmaxTable softmax_table(float input_scale, double beta) {
  SoftmaxTable t;
  // PreprocessSoftmaxScaling: beta * input_scale * 2^(31 - 5), capped at 2^31 - 1.
  const double real = std::min(beta * input_scale * static_cast<double>(int64_t{1} << (31 - kScaledDiffIntegerBits)),
                               static_cast<double>((int64_t{1} << 31) - 1));
  const q::Multiplier m = q::quantize_multiplier(real);
  const int left_shift = m.shift;
  // CalculateInputRadius(5, left_shift): the largest |diff| that does not saturate.
  const double max_rescaled = 1.0 * ((1 << kScaledDiffIntegerBits) - 1) *
                              static_cast<double>(int64_t{1} << (31 - kScaledDiffIntegerBits)) /
                              static_cast<double>(int64_t{1} << left_shift);
  t.diff_min = -static_cast<int32_t>(std::floor(max_rescaled));
  for (int32_t d = 0; d < 256; ++d) {
    if (-d < t.diff_min) continue;
    const int32_t scaled = q::srdhm(-d * (1 << left_shift), m.multiplier);  // MultiplyByQuantizedMultiplierGreaterThanOne
    t.exp_of[d] = q::fp::exp_on_negative_values(scaled, kScaledDiffIntegerBits);
  }
  return t;
}

// Per-tensor 8-bit input (else nullptr: the kernel reports what is wrong).
Result<std::unique_ptr<PreparedKernel>> prepare_softmax(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  if (x.quant.scale.size() != 1 || (x.dtype != DType::u8 && x.dtype != DType::i8)) return std::unique_ptr<PreparedKernel>();
  return std::unique_ptr<PreparedKernel>(
      std::make_unique<SoftmaxTable>(softmax_table(x.quant.scale[0], n.get(attr::beta))));
}

Status softmax(KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t));
  if (c.in.size() > 1 && c.in[1]) return kernel_error(c.n, "a mask is not supported for quantized softmax");
  const int64_t rank = static_cast<int64_t>(c.in[0].shape().size());
  const int64_t axis = c.n.get(attr::axis);
  if (axis != -1 && axis != rank - 1) return kernel_error(c.n, "quantized softmax runs along the last axis only");
  const DType ti = c.in[0].dtype(), to = c.out[0].dtype();
  SoftmaxTable made;
  if (!c.prepared) made = softmax_table(c.in[0].t->quant.scale[0], c.n.get(attr::beta));
  const SoftmaxTable& tab = c.prepared ? static_cast<const SoftmaxTable&>(*c.prepared) : made;
  const int32_t diff_min = tab.diff_min;
  const int32_t* exp_of = tab.exp_of;
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const int32_t out_min = q::qmin(to), out_max = q::qmax(to);
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * depth;
    int32_t max_in_row = q::qmin(ti);
    for (int64_t i = 0; i < depth; ++i) max_in_row = std::max(max_in_row, q::load(x, ti, base + i));
    int32_t sum_of_exps = 0;  // Q12.19
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t diff = q::load(x, ti, base + i) - max_in_row;
      if (diff >= diff_min) sum_of_exps += q::fp::rescale(exp_of[-diff], 0, kAccumulationIntegerBits);
    }
    // GetReciprocal(sum_of_exps, 12): normalise into [1, 2) and invert.
    const int headroom_plus_one = std::countl_zero(static_cast<uint32_t>(sum_of_exps));
    const int num_bits_over_unit = kAccumulationIntegerBits - headroom_plus_one;
    const int32_t shifted_sum_minus_one =
        static_cast<int32_t>((static_cast<uint32_t>(sum_of_exps) << headroom_plus_one) - (uint32_t{1} << 31));
    const int32_t shifted_scale = q::fp::one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
    for (int64_t i = 0; i < depth; ++i) {
      const int32_t diff = q::load(x, ti, base + i) - max_in_row;
      int32_t out = out_min;
      if (diff >= diff_min) {
        const int32_t e = exp_of[-diff];
        const int32_t unsat = q::rounding_divide_by_pot(q::srdhm(shifted_scale, e), num_bits_over_unit + 31 - 8);
        out = q::clamp(unsat + out_min, out_min, out_max);
      }
      q::store(y, to, base + i, out);
    }
  }
  return Status::Ok();
}

}  // namespace

void register_quant_softmax_kernels(KernelTable& t) { t.add(OpKind::softmax, KernelKind::quant, softmax, prepare_softmax); }

}  // namespace tessera::cpu
