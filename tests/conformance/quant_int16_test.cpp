// Conformance cases: TFLite's 16x8 quantization (int16 activations, zero point 0) of the
// element-wise ops, against the real-valued op in double on the dequantized inputs,
// quantized with the output parameters. TFLite's int16 arithmetic approximates: logistic
// and tanh through gemmlowp's fixed point or an interpolated 256-entry table (a few codes
// of 2^-15), mul with one rounding of the product (one code), add / sub with the general
// scales or shifts (one code).
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

// Seeded int16 codes over the whole range, and the reals they stand for at `scale`.
struct I16Tensor {
  std::vector<uint8_t> bytes;
  std::vector<double> real;
  QuantParams q;
};
I16Tensor random_i16(Rng& rng, int64_t n, float scale) {
  I16Tensor t;
  t.q.scale = {scale};
  t.q.zero_point = {0};
  std::vector<int16_t> codes;
  for (int64_t i = 0; i < n; ++i) codes.push_back(static_cast<int16_t>(pick(rng, -32768, 32767)));
  codes[0] = -32768, codes[n - 1] = 32767;  // both ends of the range
  t.bytes.resize(codes.size() * 2);
  std::memcpy(t.bytes.data(), codes.data(), t.bytes.size());
  for (int16_t c : codes) t.real.push_back(static_cast<double>(scale) * c);
  return t;
}

QuantParams q16(float scale) {
  QuantParams q;
  q.scale = {scale};
  q.zero_point = {0};
  return q;
}

std::vector<double> codes16(const std::vector<double>& real, float scale) {
  std::vector<double> out;
  for (double r : real) out.push_back(std::clamp(std::round(r / static_cast<double>(scale)), -32768.0, 32767.0));
  return out;
}

// logistic / tanh: input scales taking the fixed-point path (2^-12, and 2^-11 for tanh) and
// the table (others); the output is Q0.15. Tolerances in codes: {fixed point, table}.
std::vector<Case> unit_cases(Rng& rng, OpKind op, double (*f)(double), double fixed_tol, double table_tol) {
  std::vector<Case> cases;
  for (float scale : {1.0f / 4096, 1.0f / 2048, 3.0f / 32768, 0.0007f}) {
    const bool fixed_point = scale == 1.0f / 4096 || (op == OpKind::tanh && scale == 1.0f / 2048);
    const int64_t n = pick(rng, 64, 400);
    I16Tensor x = random_i16(rng, n, scale);
    std::vector<double> real;
    for (double v : x.real) real.push_back(f(v));
    CaseGraph cg;
    Case c = cg.finish(std::string(op_name(op)) + " i16 scale " + std::to_string(scale), op,
                       {cg.input("x", {n}, DType::i16, x.bytes, x.q)}, {}, DType::i16, q16(1.0f / 32768));
    c.expected = codes16(real, 1.0f / 32768);
    c.code_tolerance = fixed_point ? fixed_tol : table_tol;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(logistic) {
  return unit_cases(rng, OpKind::logistic, [](double x) { return 1 / (1 + std::exp(-x)); }, 6, 1);
}
TESSERA_CONFORMANCE_CASES(tanh) { return unit_cases(rng, OpKind::tanh, [](double x) { return std::tanh(x); }, 12, 2); }

// mul: full-range codes, a broadcast operand, output scales with and without saturation.
TESSERA_CONFORMANCE_CASES(mul) {
  std::vector<Case> cases;
  for (float so : {1.0f / 2048, 1.0f / 16384}) {
    const Shape s = {pick(rng, 1, 4), pick(rng, 2, 9), pick(rng, 2, 17)};
    const float sa = 1.0f / 4096, sb = 1.0f / 8192;
    I16Tensor a = random_i16(rng, num_elements(s), sa), b = random_i16(rng, s.back(), sb);
    std::vector<double> real;
    for (int64_t i = 0; i < num_elements(s); ++i) real.push_back(a.real[i] * b.real[i % s.back()]);
    CaseGraph cg;
    Case c = cg.finish("mul i16 quantized, output scale " + std::to_string(so), OpKind::mul,
                       {cg.input("a", s, DType::i16, a.bytes, a.q), cg.input("b", {s.back()}, DType::i16, b.bytes, b.q)},
                       {}, DType::i16, q16(so));
    c.expected = codes16(real, so);
    c.code_tolerance = 1;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  {
    // int16 x int16 -> uint8 (TFLite's legacy form): Q0.15 operands, a Q0.7 output (scale
    // 1/128) around its zero point; within one code of the real product.
    const Shape s = {pick(rng, 1, 4), pick(rng, 2, 17)};
    const float k = 1.0f / 32768;
    I16Tensor a = random_i16(rng, num_elements(s), k), b = random_i16(rng, num_elements(s), k);
    QuantParams qo;
    qo.scale = {1.0f / 128};
    qo.zero_point = {pick(rng, 0, 255)};
    std::vector<double> expected;
    for (int64_t i = 0; i < num_elements(s); ++i)
      expected.push_back(std::clamp(std::round(a.real[i] * b.real[i] * 128) + static_cast<double>(qo.zero_point[0]), 0.0, 255.0));
    CaseGraph cg;
    Case c = cg.finish("mul i16 x i16 -> u8 (Q0.7)", OpKind::mul,
                       {cg.input("a", s, DType::i16, a.bytes, a.q), cg.input("b", s, DType::i16, b.bytes, b.q)}, {},
                       DType::u8, qo);
    c.expected = expected;
    c.code_tolerance = 1;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  return cases;
}

// add / sub: general scales (left shift 15, within one code) and the power-of-two form
// (pot_int16: b at half or a quarter of the output's scale, shifted right with rounding:
// within one code), with a broadcast operand; results past the range saturate.
std::vector<Case> add_sub_cases(Rng& rng, OpKind op) {
  std::vector<Case> cases;
  struct Form {
    float sa, sb, so;
    bool pot;
  };
  for (const Form& f : {Form{1.0f / 4096, 0.0003f, 1.0f / 2048, false}, Form{1.0f / 2048, 1.0f / 8192, 1.0f / 2048, true},
                        Form{1.0f / 16384, 1.0f / 4096, 1.0f / 4096, true}}) {
    const Shape s = {pick(rng, 1, 4), pick(rng, 2, 9), pick(rng, 2, 17)};
    I16Tensor a = random_i16(rng, num_elements(s), f.sa), b = random_i16(rng, s.back(), f.sb);
    std::vector<double> real;
    for (int64_t i = 0; i < num_elements(s); ++i)
      real.push_back(op == OpKind::add ? a.real[i] + b.real[i % s.back()] : a.real[i] - b.real[i % s.back()]);
    CaseGraph cg;
    AttrMap attrs;
    if (f.pot) attrs["pot_int16"] = int64_t{1};
    Case c = cg.finish(std::string(op_name(op)) + " i16 quantized" + (f.pot ? ", power-of-two scales" : ", general scales"), op,
                       {cg.input("a", s, DType::i16, a.bytes, a.q), cg.input("b", {s.back()}, DType::i16, b.bytes, b.q)},
                       attrs, DType::i16, q16(f.so));
    c.expected = codes16(real, f.so);
    c.code_tolerance = 1;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  return cases;
}
TESSERA_CONFORMANCE_CASES(add) { return add_sub_cases(rng, OpKind::add); }
TESSERA_CONFORMANCE_CASES(sub) { return add_sub_cases(rng, OpKind::sub); }

// softmax: rows of int16 codes in a band (so the exponentials spread over [exp(-10), 1]), two
// input scales and a beta; the output is Q0.15.
TESSERA_CONFORMANCE_CASES(softmax) {
  std::vector<Case> cases;
  for (float scale : {0.0005f, 0.00005f}) {
    const int64_t R = pick(rng, 1, 4), L = pick(rng, 2, 40);
    const double beta = scale < 0.0001f ? 2.0 : 1.0;
    std::vector<int16_t> codes;
    for (int64_t i = 0; i < R * L; ++i) codes.push_back(static_cast<int16_t>(pick(rng, -12000, 12000)));
    std::vector<uint8_t> bytes(codes.size() * 2);
    std::memcpy(bytes.data(), codes.data(), bytes.size());
    std::vector<double> real;
    for (int64_t r = 0; r < R; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t k = 0; k < L; ++k) mx = std::max(mx, beta * scale * codes[r * L + k]);
      for (int64_t k = 0; k < L; ++k) sum += std::exp(beta * scale * codes[r * L + k] - mx);
      for (int64_t k = 0; k < L; ++k) real.push_back(std::exp(beta * scale * codes[r * L + k] - mx) / sum);
    }
    CaseGraph cg;
    Case c = cg.finish("softmax i16 scale " + std::to_string(scale), OpKind::softmax,
                       {cg.input("x", {R, L}, DType::i16, bytes, q16(scale))}, {{"axis", int64_t{-1}}, {"beta", beta}},
                       DType::i16, q16(1.0f / 32768));
    c.expected = codes16(real, 1.0f / 32768);
    c.code_tolerance = 64;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  return cases;
}

// avg_pool2d / max_pool2d: 2x2 windows, stride 2, the input's parameters kept (TFLite);
// the average rounds once (one code), the maximum is exact.
std::vector<Case> pool_cases(Rng& rng, bool is_max) {
  std::vector<Case> cases;
  const int64_t H = pick(rng, 2, 9), W = pick(rng, 2, 9), C = pick(rng, 1, 5), F = 2;
  I16Tensor x = random_i16(rng, H * W * C, 1.0f / 4096);
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
  CaseGraph cg;
  const OpKind op = is_max ? OpKind::max_pool2d : OpKind::avg_pool2d;
  Case c = cg.finish(std::string(op_name(op)) + " i16 quantized", op, {cg.input("x", {1, H, W, C}, DType::i16, x.bytes, x.q)},
                     {{"filter_h", F}, {"filter_w", F}, {"stride_h", F}, {"stride_w", F}}, DType::i16, x.q);
  c.expected = codes16(real, 1.0f / 4096);
  c.code_tolerance = is_max ? 0 : 1;
  c.quantized = true;
  cases.push_back(std::move(c));
  return cases;
}
TESSERA_CONFORMANCE_CASES(avg_pool2d) { return pool_cases(rng, false); }
TESSERA_CONFORMANCE_CASES(max_pool2d) { return pool_cases(rng, true); }

// mean over the spatial axes: equal parameters (the integer mean, truncated: within one
// code) and a finer output scale (the float mean rounded: within one code).
TESSERA_CONFORMANCE_CASES(mean) {
  std::vector<Case> cases;
  for (float so : {1.0f / 4096, 1.0f / 16384}) {
    const int64_t H = pick(rng, 1, 6), W = pick(rng, 1, 6), C = pick(rng, 1, 5);
    I16Tensor x = random_i16(rng, H * W * C, 1.0f / 4096);
    std::vector<double> real(static_cast<size_t>(C), 0.0);
    for (int64_t i = 0; i < H * W; ++i)
      for (int64_t ch = 0; ch < C; ++ch) real[ch] += x.real[i * C + ch] / static_cast<double>(H * W);
    CaseGraph cg;
    Case c = cg.finish("mean i16 quantized, output scale " + std::to_string(so), OpKind::mean,
                       {cg.input("x", {1, H, W, C}, DType::i16, x.bytes, x.q)},
                       {{"axes", std::vector<int64_t>{1, 2}}, {"keep_dims", int64_t{1}}}, DType::i16, q16(so));
    c.expected = codes16(real, so);
    c.code_tolerance = 1;
    c.quantized = true;
    cases.push_back(std::move(c));
  }
  return cases;
}

// sum over the last axis, the input's parameters kept (TFLite's int16 SUM adds the codes):
// codes small enough not to wrap, so the sum is exact.
TESSERA_CONFORMANCE_CASES(sum) {
  std::vector<Case> cases;
  const int64_t R = pick(rng, 1, 5), L = pick(rng, 2, 30);
  const float scale = 1.0f / 4096;
  std::vector<int16_t> codes;
  for (int64_t i = 0; i < R * L; ++i) codes.push_back(static_cast<int16_t>(pick(rng, -1000, 1000)));
  std::vector<uint8_t> bytes(codes.size() * 2);
  std::memcpy(bytes.data(), codes.data(), bytes.size());
  std::vector<double> real(static_cast<size_t>(R), 0.0);
  for (int64_t i = 0; i < R * L; ++i) real[static_cast<size_t>(i / L)] += static_cast<double>(scale) * codes[i];
  CaseGraph cg;
  Case c = cg.finish("sum i16 quantized", OpKind::sum, {cg.input("x", {R, L}, DType::i16, bytes, q16(scale))},
                     {{"axes", std::vector<int64_t>{1}}, {"keep_dims", int64_t{0}}}, DType::i16, q16(scale));
  c.expected = codes16(real, scale);
  c.quantized = true;
  cases.push_back(std::move(c));
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
