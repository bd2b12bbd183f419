// Conformance cases: quantized LOGISTIC and SiLU (LOGISTIC then MUL by the same input, as
// TFLite graphs hold x * sigmoid(x)) on NHWC feature maps, the shape the NPU devices run
// (rknpu: one DPU lookup-table task each, docs/rknpu.md "Lookup tables"). The expected codes
// are the exact real results quantized with the output parameters; TFLite's arithmetic may
// differ from them by one code (the quantized cases' tolerance).
#include <cmath>

#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

constexpr double kOneCode = 1.0;

std::vector<uint8_t> random_codes(Rng& rng, DType t, int64_t n) {
  std::vector<uint8_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(pick(rng, t == DType::u8 ? 0 : -128, t == DType::u8 ? 255 : 127)));
  return v;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// TFLite's LOGISTIC output parameters: scale 1/256, zero point 0 (u8) or -128 (i8).
QuantParams logistic_out(DType t) {
  QuantParams q;
  q.scale = {1.0f / 256.0f};
  q.zero_point = {t == DType::u8 ? 0 : -128};
  return q;
}

TESSERA_CONFORMANCE_CASES(logistic) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
    const QuantParams xq = quant_for_range(-8, 6, t);
    std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
    std::vector<double> real;
    for (double v : dequantize_codes(codes, t, xq)) real.push_back(sigmoid(v));
    const QuantParams oq = logistic_out(t);
    CaseGraph cg;
    Case k = cg.finish(std::string("logistic NHWC ") + dtype_name(t) + " quantized", OpKind::logistic,
                       {cg.input("x", {1, h, w, c}, t, codes, xq)}, {}, t, oq);
    k.expected = expected_codes(real, t, oq);
    k.code_tolerance = kOneCode;
    k.quantized = true;
    cases.push_back(std::move(k));
  }
  return cases;
}

// SiLU: s = LOGISTIC(x) with TFLite's parameters, y = MUL(x, s) (and MUL(s, x)). Expected:
// the logistic's code quantized exactly, then the product of the two dequantized operands
// quantized exactly with y's parameters.
TESSERA_CONFORMANCE_CASES(mul) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8})
    for (bool x_first : {true, false}) {
      const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
      const QuantParams xq = quant_for_range(-7, 9, t), sq = logistic_out(t);
      std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
      const std::vector<double> x = dequantize_codes(codes, t, xq);
      std::vector<double> s_real;
      for (double v : x) s_real.push_back(sigmoid(v));
      std::vector<double> s_codes = expected_codes(s_real, t, sq), y;
      for (size_t i = 0; i < x.size(); ++i)
        y.push_back(x[i] * (s_codes[i] - static_cast<double>(sq.zero_point_at(0))) * sq.scale[0]);
      const QuantParams yq = quant_for_range(-0.3, 9, t);
      CaseGraph cg;
      TensorId xi = cg.input("x", {1, h, w, c}, t, codes, xq);
      auto si = cg.graph().add_op(OpKind::logistic, {xi}, {}, "sigmoid", t, sq);
      EXPECT_TRUE(si.ok());
      if (!si.ok()) continue;
      Case k = cg.finish(std::string("silu (logistic, mul") + (x_first ? "(x, s)" : "(s, x)") + ") NHWC " + dtype_name(t) +
                             " quantized",
                         OpKind::mul, x_first ? std::vector<TensorId>{xi, *si} : std::vector<TensorId>{*si, xi}, {}, t, yq);
      k.expected = expected_codes(y, t, yq);
      k.code_tolerance = kOneCode;
      k.quantized = true;
      cases.push_back(std::move(k));
    }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
