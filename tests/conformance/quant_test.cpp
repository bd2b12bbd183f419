// Conformance cases: quantize, dequantize, requantize, and the quantized (u8 / i8 with
// TFLite parameters) forms of the arithmetic ops. Quantized arithmetic is checked against
// the exact result of the real-valued op on the dequantized inputs, quantized with the
// output parameters; TFLite's fixed-point arithmetic may differ from it by one code.
// Those cases are skipped while the op has no quantized cpu kernel.
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

constexpr double kOneCode = 1.0;  // fixed-point requantization rounds once more than exact math

// Random codes of a quantized dtype and the real values they stand for.
struct QTensor {
  std::vector<uint8_t> codes;
  std::vector<double> real;
  QuantParams q;
};
QTensor random_q(Rng& rng, DType t, int64_t n, double lo, double hi) {
  QTensor r;
  r.q = quant_for_range(lo, hi, t);
  const int64_t qmin = t == DType::u8 ? 0 : -128, qmax = t == DType::u8 ? 255 : 127;
  for (int64_t i = 0; i < n; ++i) r.codes.push_back(static_cast<uint8_t>(pick(rng, qmin, qmax)));
  r.real = dequantize_codes(r.codes, t, r.q);
  return r;
}

// Output parameters covering the real results, and the expected codes.
void expect_quantized(Case& c, const std::vector<double>& real, DType t, const QuantParams& q) {
  c.expected = expected_codes(real, t, q);
  c.code_tolerance = kOneCode;
  c.quantized = true;
}
QuantParams out_params(const std::vector<double>& real, DType t) {
  double lo = 0, hi = 0;
  for (double v : real) lo = std::min(lo, v), hi = std::max(hi, v);
  return quant_for_range(lo, hi, t);
}

// ---- quantize / dequantize / requantize (exact) ----

TESSERA_CONFORMANCE_CASES(quantize) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const DType t = variant == 1 ? DType::i8 : DType::u8;
    Shape s = random_shape(rng, 2, 2, 6);
    auto x = uniform(rng, num_elements(s), -3, 3);
    x[0] = 100.0f;  // saturates
    QuantParams q = quant_for_range(-2.5, 2.0, t);
    if (variant == 2) {  // per channel along axis 1
      q.axis = 1;
      q.scale.clear();
      q.zero_point.clear();
      for (int64_t ch = 0; ch < s[1]; ++ch) {
        q.scale.push_back(0.01f + 0.01f * static_cast<float>(ch));
        q.zero_point.push_back(pick(rng, 100, 150));
      }
    }
    CaseGraph cg;
    Case c = cg.finish("quantize f32->" + std::string(dtype_name(t)) + (variant == 2 ? " per-axis" : ""), OpKind::quantize,
                       {cg.input_f32("x", s, x)}, {}, t, q);
    const double qmin = t == DType::u8 ? 0 : -128, qmax = t == DType::u8 ? 255 : 127;
    for (int64_t i = 0; i < num_elements(s); ++i) {
      const int64_t ch = variant == 2 ? i % s[1] : 0;
      // TFLite: round(x / scale) in double, half away from zero, then + zero point, clamp.
      const double r = std::round(static_cast<double>(x[i]) / static_cast<double>(q.scale_at(ch)));
      c.expected.push_back(std::clamp(static_cast<double>(r) + static_cast<double>(q.zero_point_at(ch)), qmin, qmax));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(dequantize) {
  std::vector<Case> cases;
  // Integer codes, per tensor and per axis.
  for (DType t : {DType::u8, DType::i8}) {
    Shape s = random_shape(rng, 2, 2, 6);
    QTensor x = random_q(rng, t, num_elements(s), -2, 3);
    std::vector<double> real = x.real;
    if (t == DType::i8) {  // per channel along axis 0
      x.q.axis = 0;
      x.q.scale.clear();
      x.q.zero_point.clear();
      for (int64_t ch = 0; ch < s[0]; ++ch) x.q.scale.push_back(0.03f * (ch + 1)), x.q.zero_point.push_back(ch - 1);
      auto codes = decode(t, x.codes, num_elements(s));
      for (int64_t i = 0; i < num_elements(s); ++i) {
        const int64_t ch = i / s[1];
        real[i] = static_cast<double>(x.q.scale[ch]) * (codes[i] - static_cast<double>(x.q.zero_point[ch]));
      }
    }
    CaseGraph cg;
    Case c = cg.finish("dequantize " + std::string(dtype_name(t)), OpKind::dequantize,
                       {cg.input("x", s, t, x.codes, x.q)}, {}, DType::f32);
    c.expected = real;
    cases.push_back(std::move(c));
  }
  // Float and GGUF block encodings.
  for (DType t : {DType::f16, DType::bf16, DType::q8_0, DType::q4_0}) {
    Shape s = {pick(rng, 1, 4), dtype_is_block(t) ? 32 * pick(rng, 1, 3) : pick(rng, 1, 40)};
    auto v = uniform(rng, num_elements(s), -3, 3);
    auto bytes = encode(t, v);
    CaseGraph cg;
    Case c = cg.finish("dequantize " + std::string(dtype_name(t)), OpKind::dequantize, {cg.input("x", s, t, bytes)}, {},
                       DType::f32);
    c.expected = decode(t, bytes, num_elements(s));
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(requantize) {
  std::vector<Case> cases;
  for (DType to : {DType::i8, DType::u8}) {
    Shape s = random_shape(rng, 2, 2, 6);
    QTensor x = random_q(rng, DType::u8, num_elements(s), -2, 3);
    QuantParams q = quant_for_range(-1.5, 2.5, to);
    CaseGraph cg;
    Case c = cg.finish("requantize u8->" + std::string(dtype_name(to)), OpKind::requantize,
                       {cg.input("x", s, DType::u8, x.codes, x.q)}, {}, to, q);
    expect_quantized(c, x.real, to, q);
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---- quantized arithmetic (TFLite semantics) ----

// u8 conv2d with per-tensor u8 weights, or i8 conv2d with per-channel symmetric i8
// weights (TFLite's two quantized conv schemes), i32 bias at scale in_scale * w_scale.
std::vector<Case> qconv_cases(Rng& rng, bool depthwise) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t H = pick(rng, 3, 7), W = pick(rng, 3, 7), C = pick(rng, 1, 4), K = pick(rng, 1, 3);
    const int64_t OC = depthwise ? C : pick(rng, 1, 5), IC = depthwise ? 1 : C;
    const int64_t stride = pick(rng, 1, 2), pad = K / 2;
    const int64_t OH = (H + 2 * pad - K) / stride + 1, OW = (W + 2 * pad - K) / stride + 1;
    QTensor x = random_q(rng, t, H * W * C, -1, 2);
    const Shape ws = depthwise ? Shape{1, K, K, OC} : Shape{OC, K, K, IC};
    const int64_t nw = num_elements(ws);
    QTensor w = random_q(rng, t, nw, -1, 1);
    std::vector<double> wreal = w.real;
    if (t == DType::i8) {  // per output channel, zero point 0
      w.q.axis = depthwise ? 3 : 0;
      w.q.scale.clear();
      w.q.zero_point.assign(OC, 0);
      for (int64_t o = 0; o < OC; ++o) w.q.scale.push_back(0.004f * (o + 1));
      for (int64_t i = 0; i < nw; ++i) {
        const int64_t o = depthwise ? i % OC : i / (K * K * IC);
        wreal[i] = static_cast<double>(w.q.scale[o]) * static_cast<int8_t>(w.codes[i]);
      }
    }
    std::vector<int32_t> bias(OC);
    std::vector<double> bias_real(OC);
    QuantParams bq;
    bq.axis = t == DType::i8 ? 0 : -1;
    for (int64_t o = 0; o < OC; ++o) {
      bias[o] = static_cast<int32_t>(pick(rng, -2000, 2000));
      const double bs = static_cast<double>(x.q.scale[0]) * w.q.scale_at(o);
      if (t == DType::i8 || o == 0) bq.scale.push_back(static_cast<float>(bs)), bq.zero_point.push_back(0);
      bias_real[o] = bias[o] * bs;
    }
    std::vector<double> real;
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < OC; ++o) {
          double acc = bias_real[o];
          for (int64_t ky = 0; ky < K; ++ky)
            for (int64_t kx = 0; kx < K; ++kx) {
              const int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              for (int64_t ic = 0; ic < IC; ++ic) {
                const int64_t xc = depthwise ? o : ic;
                const double wv = depthwise ? wreal[(ky * K + kx) * OC + o] : wreal[((o * K + ky) * K + kx) * IC + ic];
                acc += x.real[(iy * W + ix) * C + xc] * wv;
              }
            }
          real.push_back(acc);
        }
    QuantParams oq = out_params(real, t);
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input("x", {1, H, W, C}, t, x.codes, x.q), cg.weight("w", ws, t, w.codes, w.q),
                                cg.weight("bias", {OC}, DType::i32, bytes_of(bias), bq)};
    AttrMap attrs = {{"stride_h", stride}, {"stride_w", stride}, {"pad_top", pad},
                                              {"pad_bottom", pad},  {"pad_left", pad},    {"pad_right", pad}};
    const OpKind op = depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d;
    Case c = cg.finish(std::string(op_name(op)) + " " + dtype_name(t) + " quantized", op, in, attrs, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(conv2d) { return qconv_cases(rng, false); }
TESSERA_CONFORMANCE_CASES(depthwise_conv2d) { return qconv_cases(rng, true); }

TESSERA_CONFORMANCE_CASES(fully_connected) {
  std::vector<Case> cases;
  const DType t = DType::u8;
  const int64_t M = pick(rng, 1, 4), IC = pick(rng, 2, 30), OC = pick(rng, 1, 10);
  QTensor x = random_q(rng, t, M * IC, -1, 2), w = random_q(rng, t, OC * IC, -1, 1);
  std::vector<int32_t> bias(OC);
  QuantParams bq;
  bq.scale = {x.q.scale[0] * w.q.scale[0]};
  bq.zero_point = {0};
  std::vector<double> real;
  for (auto& b : bias) b = static_cast<int32_t>(pick(rng, -500, 500));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < OC; ++o) {
      double acc = bias[o] * static_cast<double>(x.q.scale[0]) * w.q.scale[0];
      for (int64_t k = 0; k < IC; ++k) acc += x.real[m * IC + k] * w.real[o * IC + k];
      real.push_back(acc);
    }
  QuantParams oq = out_params(real, t);
  CaseGraph cg;
  Case c = cg.finish("fully_connected u8 quantized", OpKind::fully_connected,
                     {cg.input("x", {M, IC}, t, x.codes, x.q), cg.weight("w", {OC, IC}, t, w.codes, w.q),
                      cg.weight("bias", {OC}, DType::i32, bytes_of(bias), bq)},
                     {}, t, oq);
  expect_quantized(c, real, t, oq);
  cases.push_back(std::move(c));
  return cases;
}

// `shared`: TFLite's MAXIMUM / MINIMUM require the inputs and the output to share one set
// of parameters (they compare codes); add / sub / mul rescale each.
std::vector<Case> qbinary(Rng& rng, OpKind op, double (*f)(double, double), bool shared = false) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    Shape s = random_shape(rng, 3, 1, 5);
    QTensor a = random_q(rng, t, num_elements(s), -2, 2), b = random_q(rng, t, s.back(), shared ? -2 : -1, shared ? 2 : 3);
    std::vector<double> real;
    for (int64_t i = 0; i < num_elements(s); ++i) real.push_back(f(a.real[i], b.real[i % s.back()]));
    QuantParams oq = shared ? a.q : out_params(real, t);
    CaseGraph cg;
    Case c = cg.finish(std::string(op_name(op)) + " " + dtype_name(t) + " quantized", op,
                       {cg.input("a", s, t, a.codes, a.q), cg.input("b", {s.back()}, t, b.codes, b.q)}, {}, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(add) { return qbinary(rng, OpKind::add, [](double a, double b) { return a + b; }); }
TESSERA_CONFORMANCE_CASES(mul) { return qbinary(rng, OpKind::mul, [](double a, double b) { return a * b; }); }
TESSERA_CONFORMANCE_CASES(sub) { return qbinary(rng, OpKind::sub, [](double a, double b) { return a - b; }); }
TESSERA_CONFORMANCE_CASES(maximum) {
  return qbinary(rng, OpKind::maximum, [](double a, double b) { return std::max(a, b); }, true);
}
TESSERA_CONFORMANCE_CASES(minimum) {
  return qbinary(rng, OpKind::minimum, [](double a, double b) { return std::min(a, b); }, true);
}

// Quantized unary ops: u8 and i8 inputs, output parameters covering the results.
std::vector<Case> qunary(Rng& rng, OpKind op, double (*f)(double), AttrMap attrs = {}) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t n = pick(rng, 4, 40);
    QTensor x = random_q(rng, t, n, -4, 4);
    std::vector<double> real;
    for (double v : x.real) real.push_back(f(v));
    QuantParams oq = out_params(real, t);
    CaseGraph cg;
    Case c = cg.finish(std::string(op_name(op)) + " " + dtype_name(t) + " quantized", op, {cg.input("x", {n}, t, x.codes, x.q)},
                       attrs, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}
TESSERA_CONFORMANCE_CASES(relu) { return qunary(rng, OpKind::relu, [](double x) { return std::max(x, 0.0); }); }
TESSERA_CONFORMANCE_CASES(relu6) { return qunary(rng, OpKind::relu6, [](double x) { return std::clamp(x, 0.0, 6.0); }); }
TESSERA_CONFORMANCE_CASES(leaky_relu) {
  return qunary(rng, OpKind::leaky_relu, [](double x) { return x >= 0 ? x : 0.25 * x; }, {{"alpha", 0.25}});
}
TESSERA_CONFORMANCE_CASES(hard_swish) {
  return qunary(rng, OpKind::hard_swish, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; });
}

// TFLite fixes u8 tanh's output parameters: scale 1/128, zero point 128.
TESSERA_CONFORMANCE_CASES(tanh) {
  std::vector<Case> cases;
  const int64_t n = pick(rng, 4, 40);
  QTensor x = random_q(rng, DType::u8, n, -3, 3);
  std::vector<double> real;
  for (double v : x.real) real.push_back(std::tanh(v));
  QuantParams oq;
  oq.scale = {1.0f / 128.0f};
  oq.zero_point = {128};
  CaseGraph cg;
  Case c = cg.finish("tanh u8 quantized", OpKind::tanh, {cg.input("x", {n}, DType::u8, x.codes, x.q)}, {}, DType::u8, oq);
  expect_quantized(c, real, DType::u8, oq);
  cases.push_back(std::move(c));
  return cases;
}

// mean over the spatial axes of an NHWC u8 tensor (global average pooling), keep_dims.
TESSERA_CONFORMANCE_CASES(mean) {
  std::vector<Case> cases;
  const int64_t H = pick(rng, 1, 6), W = pick(rng, 1, 6), C = pick(rng, 1, 5);
  QTensor x = random_q(rng, DType::u8, H * W * C, -1, 3);
  std::vector<double> real(C, 0.0);
  for (int64_t i = 0; i < H * W; ++i)
    for (int64_t ch = 0; ch < C; ++ch) real[ch] += x.real[i * C + ch] / static_cast<double>(H * W);
  QuantParams oq = out_params(real, DType::u8);
  CaseGraph cg;
  Case c = cg.finish("mean u8 quantized", OpKind::mean, {cg.input("x", {1, H, W, C}, DType::u8, x.codes, x.q)},
                     {{"axes", std::vector<int64_t>{1, 2}}, {"keep_dims", int64_t{1}}}, DType::u8, oq);
  expect_quantized(c, real, DType::u8, oq);
  cases.push_back(std::move(c));
  return cases;
}

// concat of u8 inputs with different parameters: each is requantized to the output's.
TESSERA_CONFORMANCE_CASES(concat) {
  std::vector<Case> cases;
  const int64_t R = pick(rng, 1, 4), A = pick(rng, 1, 5), B = pick(rng, 1, 5);
  QTensor a = random_q(rng, DType::u8, R * A, -1, 2), b = random_q(rng, DType::u8, R * B, -3, 1);
  std::vector<double> real;
  for (int64_t r = 0; r < R; ++r) {
    real.insert(real.end(), a.real.begin() + r * A, a.real.begin() + (r + 1) * A);
    real.insert(real.end(), b.real.begin() + r * B, b.real.begin() + (r + 1) * B);
  }
  QuantParams oq = quant_for_range(-3, 2, DType::u8);
  CaseGraph cg;
  Case c = cg.finish("concat u8 quantized", OpKind::concat,
                     {cg.input("a", {R, A}, DType::u8, a.codes, a.q), cg.input("b", {R, B}, DType::u8, b.codes, b.q)},
                     {{"axis", int64_t{1}}}, DType::u8, oq);
  expect_quantized(c, real, DType::u8, oq);
  cases.push_back(std::move(c));
  return cases;
}

std::vector<Case> qpool(Rng& rng, bool is_max) {
  std::vector<Case> cases;
  const DType t = DType::u8;
  const int64_t H = pick(rng, 2, 8), W = pick(rng, 2, 8), C = pick(rng, 1, 4), F = 2;
  QTensor x = random_q(rng, t, H * W * C, -1, 3);
  const int64_t OH = (H - F) / F + 1, OW = (W - F) / F + 1;
  std::vector<double> real;
  for (int64_t oy = 0; oy < OH; ++oy)
    for (int64_t ox = 0; ox < OW; ++ox)
      for (int64_t ch = 0; ch < C; ++ch) {
        double acc = is_max ? -1e300 : 0;
        for (int64_t ky = 0; ky < F; ++ky)
          for (int64_t kx = 0; kx < F; ++kx) {
            const double v = x.real[((oy * F + ky) * W + ox * F + kx) * C + ch];
            acc = is_max ? std::max(acc, v) : acc + v / (F * F);
          }
        real.push_back(acc);
      }
  CaseGraph cg;  // pools keep the input's parameters (TFLite)
  const OpKind op = is_max ? OpKind::max_pool2d : OpKind::avg_pool2d;
  Case c = cg.finish(std::string(op_name(op)) + " u8 quantized", op, {cg.input("x", {1, H, W, C}, t, x.codes, x.q)},
                     {{"filter_h", F}, {"filter_w", F}, {"stride_h", F}, {"stride_w", F}}, t, x.q);
  expect_quantized(c, real, t, x.q);
  cases.push_back(std::move(c));
  return cases;
}

TESSERA_CONFORMANCE_CASES(avg_pool2d) { return qpool(rng, false); }
TESSERA_CONFORMANCE_CASES(max_pool2d) { return qpool(rng, true); }

// TFLite fixes the output parameters of u8 softmax and logistic: scale 1/256, zero point 0.
QuantParams unit_interval_u8() {
  QuantParams q;
  q.scale = {1.0f / 256.0f};
  q.zero_point = {0};
  return q;
}

TESSERA_CONFORMANCE_CASES(softmax) {
  std::vector<Case> cases;
  const int64_t R = pick(rng, 1, 4), L = pick(rng, 2, 12);
  QTensor x = random_q(rng, DType::u8, R * L, -4, 4);
  std::vector<double> real;
  for (int64_t r = 0; r < R; ++r) {
    double mx = -1e300, sum = 0;
    for (int64_t k = 0; k < L; ++k) mx = std::max(mx, x.real[r * L + k]);
    for (int64_t k = 0; k < L; ++k) sum += std::exp(x.real[r * L + k] - mx);
    for (int64_t k = 0; k < L; ++k) real.push_back(std::exp(x.real[r * L + k] - mx) / sum);
  }
  CaseGraph cg;
  Case c = cg.finish("softmax u8 quantized", OpKind::softmax, {cg.input("x", {R, L}, DType::u8, x.codes, x.q)}, {},
                     DType::u8, unit_interval_u8());
  expect_quantized(c, real, DType::u8, unit_interval_u8());
  cases.push_back(std::move(c));
  return cases;
}

TESSERA_CONFORMANCE_CASES(logistic) {
  std::vector<Case> cases;
  const int64_t n = pick(rng, 4, 40);
  QTensor x = random_q(rng, DType::u8, n, -6, 6);
  std::vector<double> real;
  for (double v : x.real) real.push_back(1 / (1 + std::exp(-v)));
  CaseGraph cg;
  Case c = cg.finish("logistic u8 quantized", OpKind::logistic, {cg.input("x", {n}, DType::u8, x.codes, x.q)}, {},
                     DType::u8, unit_interval_u8());
  expect_quantized(c, real, DType::u8, unit_interval_u8());
  cases.push_back(std::move(c));
  return cases;
}

// gelu (both forms) on u8 / i8, elu on i8: TFLite's 256-entry tables.
TESSERA_CONFORMANCE_CASES(gelu) {
  auto cases = qunary(rng, OpKind::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  auto tanh_form = qunary(
      rng, OpKind::gelu,
      [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); },
      {{"approximate", int64_t{1}}});
  cases.insert(cases.end(), tanh_form.begin(), tanh_form.end());
  return cases;
}
TESSERA_CONFORMANCE_CASES(elu) {
  std::vector<Case> cases;
  const int64_t n = pick(rng, 4, 40);
  QTensor x = random_q(rng, DType::i8, n, -4, 3);
  std::vector<double> real;
  for (double v : x.real) real.push_back(v < 0 ? std::expm1(v) : v);
  QuantParams oq = out_params(real, DType::i8);
  CaseGraph cg;
  Case c = cg.finish("elu i8 quantized", OpKind::elu, {cg.input("x", {n}, DType::i8, x.codes, x.q)}, {}, DType::i8, oq);
  expect_quantized(c, real, DType::i8, oq);
  cases.push_back(std::move(c));
  return cases;
}

// prelu u8 / i8 with a per-channel alpha of the input's dtype.
TESSERA_CONFORMANCE_CASES(prelu) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t R = pick(rng, 1, 5), C = pick(rng, 2, 6);
    QTensor x = random_q(rng, t, R * C, -3, 3);
    QTensor a = random_q(rng, t, C, -0.5, 1.0);
    std::vector<double> real;
    for (int64_t i = 0; i < R * C; ++i) real.push_back(x.real[i] >= 0 ? x.real[i] : x.real[i] * a.real[i % C]);
    QuantParams oq = out_params(real, t);
    CaseGraph cg;
    Case c = cg.finish("prelu " + std::string(dtype_name(t)) + " quantized", OpKind::prelu,
                       {cg.input("x", {R, C}, t, x.codes, x.q), cg.weight("alpha", {C}, t, a.codes, a.q)}, {}, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}

// l2_norm (output scale 1/128, zero point 128 for u8, 0 for i8) and log_softmax (output
// scale 16/256, zero point 255 for u8, 127 for i8): TFLite's fixed output parameters.
TESSERA_CONFORMANCE_CASES(l2_norm) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t R = pick(rng, 1, 4), D = pick(rng, 3, 12);
    QTensor x = random_q(rng, t, R * D, -2, 2);
    std::vector<double> real;
    for (int64_t r = 0; r < R; ++r) {
      double sq = 0;
      for (int64_t k = 0; k < D; ++k) sq += x.real[r * D + k] * x.real[r * D + k];
      for (int64_t k = 0; k < D; ++k) real.push_back(sq > 0 ? x.real[r * D + k] / std::sqrt(sq) : 0);
    }
    QuantParams oq;
    oq.scale = {1.0f / 128};
    oq.zero_point = {t == DType::u8 ? 128 : 0};
    CaseGraph cg;
    Case c = cg.finish("l2_norm " + std::string(dtype_name(t)) + " quantized", OpKind::l2_norm,
                       {cg.input("x", {R, D}, t, x.codes, x.q)}, {}, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}
TESSERA_CONFORMANCE_CASES(log_softmax) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t R = pick(rng, 1, 4), L = pick(rng, 2, 12);
    QTensor x = random_q(rng, t, R * L, -3, 3);
    std::vector<double> real;
    for (int64_t r = 0; r < R; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t k = 0; k < L; ++k) mx = std::max(mx, x.real[r * L + k]);
      for (int64_t k = 0; k < L; ++k) sum += std::exp(x.real[r * L + k] - mx);
      for (int64_t k = 0; k < L; ++k) real.push_back(x.real[r * L + k] - mx - std::log(sum));
    }
    QuantParams oq;
    oq.scale = {16.0f / 256};
    oq.zero_point = {t == DType::u8 ? 255 : 127};
    CaseGraph cg;
    Case c = cg.finish("log_softmax " + std::string(dtype_name(t)) + " quantized", OpKind::log_softmax,
                       {cg.input("x", {R, L}, t, x.codes, x.q)}, {}, t, oq);
    expect_quantized(c, real, t, oq);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
