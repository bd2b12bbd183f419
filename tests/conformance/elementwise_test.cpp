// Conformance cases: elementwise binary and unary ops, and cast.
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

// Index into a tensor of shape `in` that output element `flat` of shape `out` reads under
// numpy broadcasting.
int64_t bcast_index(const Shape& out, const Shape& in, int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t i = flat % out[d];
    flat /= out[d];
    const int k = d - static_cast<int>(out.size() - in.size());
    if (k >= 0) {
      if (in[k] != 1) idx += i * stride;
      stride *= in[k];
    }
  }
  return idx;
}

// Shapes (a, b) that broadcast: b drops leading dims and sets some dims to 1.
std::pair<Shape, Shape> broadcast_pair(Rng& rng) {
  Shape a = random_shape(rng, static_cast<int>(pick(rng, 1, 4)), 1, 6);
  Shape b(a.begin() + pick(rng, 0, static_cast<int64_t>(a.size()) - 1), a.end());
  for (auto& d : b)
    if (pick(rng, 0, 2) == 0) d = 1;
  if (pick(rng, 0, 1)) std::swap(a, b);
  return {a, b};
}

using BinFn = double (*)(double, double);

// `fused_act`: whether the op takes attr activation (TFLite's FLOOR_DIV has none).
std::vector<Case> binary_cases(Rng& rng, OpKind op, BinFn f, bool nonzero_b, bool fused_act = true) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 4; ++variant) {
    auto [as, bs] = variant == 0 ? std::pair<Shape, Shape>{{3, 5}, {3, 5}} : broadcast_pair(rng);
    const Shape out = *broadcast_shapes(as, bs);
    auto a = uniform(rng, num_elements(as), -2, 2);
    auto b = uniform(rng, num_elements(bs), -2, 2);
    if (nonzero_b)
      for (auto& x : b) x = (x < 0 ? -0.5f : 0.5f) + x;  // |b| >= 0.5
    const std::string act = variant == 3 && fused_act ? "relu" : "none";
    CaseGraph cg;
    TensorId ai = cg.input_f32("a", as, a);
    // One variant takes b as a weight (a constant operand, as in a bias add).
    TensorId bi = variant == 2 ? cg.weight("b", bs, DType::f32, bytes_of(b)) : cg.input_f32("b", bs, b);
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(as) + " x " + shape_str(bs) + " act " + act, op,
                       {ai, bi}, fused_act ? AttrMap{{"activation", act}} : AttrMap{});
    for (int64_t i = 0; i < num_elements(out); ++i) {
      const double x = a[bcast_index(out, as, i)], y = b[bcast_index(out, bs, i)];
      double v = f(x, y);
      if (act == "relu") v = std::max(v, 0.0);
      c.expected.push_back(v);
      // Rounding either operand by e moves the result by at most |x f_x| + |y f_y| times e.
      c.magnitude.push_back(op == OpKind::div ? 2 * std::fabs(x / y) : op == OpKind::mul ? 2 * std::fabs(x * y)
                                                                                    : std::fabs(x) + std::fabs(y));
    }
    cases.push_back(std::move(c));
  }
  // An integer case: i32 operands.
  if (op == OpKind::add || op == OpKind::sub || op == OpKind::mul || op == OpKind::maximum || op == OpKind::minimum) {
    Shape s = {4, 3};
    std::vector<int32_t> a(12), b(3);
    for (auto& x : a) x = static_cast<int32_t>(pick(rng, -1000, 1000));
    for (auto& x : b) x = static_cast<int32_t>(pick(rng, -1000, 1000));
    CaseGraph cg;
    TensorId ai = cg.input("a", s, DType::i32, bytes_of(a));
    TensorId bi = cg.input("b", {3}, DType::i32, bytes_of(b));
    Case c = cg.finish(std::string(op_name(op)) + " i32", op, {ai, bi}, {});
    for (int i = 0; i < 12; ++i) c.expected.push_back(f(a[i], b[i % 3]));
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(add) { return binary_cases(rng, OpKind::add, [](double a, double b) { return a + b; }, false); }
TESSERA_CONFORMANCE_CASES(sub) { return binary_cases(rng, OpKind::sub, [](double a, double b) { return a - b; }, false); }
TESSERA_CONFORMANCE_CASES(mul) { return binary_cases(rng, OpKind::mul, [](double a, double b) { return a * b; }, false); }
TESSERA_CONFORMANCE_CASES(div) { return binary_cases(rng, OpKind::div, [](double a, double b) { return a / b; }, true); }
// floor_div: f32 (floor of the quotient) and i32 (rounds toward -infinity).
TESSERA_CONFORMANCE_CASES(floor_div) {
  auto cases = binary_cases(rng, OpKind::floor_div, [](double a, double b) { return std::floor(a / b); }, true, false);
  std::vector<int32_t> a(12), b(12);
  for (auto& x : a) x = static_cast<int32_t>(pick(rng, -1000, 1000));
  for (auto& x : b) x = static_cast<int32_t>(pick(rng, 1, 50) * (pick(rng, 0, 1) ? 1 : -1));
  CaseGraph cg;
  TensorId ai = cg.input("a", {3, 4}, DType::i32, bytes_of(a));
  TensorId bi = cg.input("b", {3, 4}, DType::i32, bytes_of(b));
  Case c = cg.finish("floor_div i32", OpKind::floor_div, {ai, bi}, {});
  for (int i = 0; i < 12; ++i) c.expected.push_back(std::floor(static_cast<double>(a[i]) / b[i]));
  cases.push_back(std::move(c));
  return cases;
}
TESSERA_CONFORMANCE_CASES(maximum) {
  return binary_cases(rng, OpKind::maximum, [](double a, double b) { return std::max(a, b); }, false);
}
TESSERA_CONFORMANCE_CASES(minimum) {
  return binary_cases(rng, OpKind::minimum, [](double a, double b) { return std::min(a, b); }, false);
}
TESSERA_CONFORMANCE_CASES(squared_difference) {
  return binary_cases(rng, OpKind::squared_difference, [](double a, double b) { return (a - b) * (a - b); }, false, false);
}
// pow: positive bases (a real power of a negative base is NaN), exponents in [-2, 2].
TESSERA_CONFORMANCE_CASES(pow) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    auto [as, bs] = variant == 0 ? std::pair<Shape, Shape>{{3, 5}, {3, 5}} : broadcast_pair(rng);
    const Shape out = *broadcast_shapes(as, bs);
    auto a = uniform(rng, num_elements(as), 0.1f, 3);
    auto b = uniform(rng, num_elements(bs), -2, 2);
    CaseGraph cg;
    TensorId ai = cg.input_f32("a", as, a), bi = cg.input_f32("b", bs, b);
    Case c = cg.finish("pow " + shape_str(as) + " x " + shape_str(bs), OpKind::pow, {ai, bi}, {});
    for (int64_t i = 0; i < num_elements(out); ++i) {
      const double x = a[bcast_index(out, as, i)], y = b[bcast_index(out, bs, i)], v = std::pow(x, y);
      c.expected.push_back(v);
      // Rounding a by e moves a^b by b a^b e, rounding b by e by ln(a) b a^b e.
      c.magnitude.push_back(std::fabs(v) * (1 + std::fabs(y) + std::fabs(y * std::log(x))));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// prelu: alpha broadcast against x (per channel, as TFLite's PRELU takes it, or full).
TESSERA_CONFORMANCE_CASES(prelu) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const Shape xs = random_shape(rng, 3, 1, 6);
    const Shape as = variant == 0 ? xs : variant == 1 ? Shape{xs.back()} : Shape{xs[1], 1};
    auto x = uniform(rng, num_elements(xs), -3, 3);
    auto a = uniform(rng, num_elements(as), -0.5f, 1.5f);
    CaseGraph cg;
    TensorId xi = cg.input_f32("x", xs, x);
    TensorId ai = variant == 1 ? cg.weight("alpha", as, DType::f32, bytes_of(a)) : cg.input_f32("alpha", as, a);
    Case c = cg.finish("prelu " + shape_str(xs) + " alpha " + shape_str(as), OpKind::prelu, {xi, ai}, {});
    for (int64_t i = 0; i < num_elements(xs); ++i) {
      const double v = x[i], al = a[bcast_index(xs, as, i)];
      const double y = v >= 0 ? v : al * v;
      c.expected.push_back(y);
      c.magnitude.push_back(std::fabs(y) + std::fabs(v));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// Comparisons: small integer values in f32 (ties are common, and exact), broadcasting, and
// one i32 case; the output is boolean.
std::vector<Case> compare_cases(Rng& rng, OpKind op, bool (*f)(double, double)) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    auto [as, bs] = variant == 0 ? std::pair<Shape, Shape>{{3, 5}, {3, 5}} : broadcast_pair(rng);
    const Shape out = *broadcast_shapes(as, bs);
    std::vector<float> a(static_cast<size_t>(num_elements(as))), b(static_cast<size_t>(num_elements(bs)));
    for (auto& x : a) x = static_cast<float>(pick(rng, -2, 2)) * 0.5f;
    for (auto& x : b) x = static_cast<float>(pick(rng, -2, 2)) * 0.5f;
    CaseGraph cg;
    TensorId ai = cg.input_f32("a", as, a), bi = cg.input_f32("b", bs, b);
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(as) + " x " + shape_str(bs), op, {ai, bi}, {}, DType::boolean);
    for (int64_t i = 0; i < num_elements(out); ++i)
      c.expected.push_back(f(a[bcast_index(out, as, i)], b[bcast_index(out, bs, i)]) ? 1 : 0);
    cases.push_back(std::move(c));
  }
  std::vector<int32_t> a(12), b(3);
  for (auto& x : a) x = static_cast<int32_t>(pick(rng, -3, 3));
  for (auto& x : b) x = static_cast<int32_t>(pick(rng, -3, 3));
  CaseGraph cg;
  TensorId ai = cg.input("a", {4, 3}, DType::i32, bytes_of(a)), bi = cg.input("b", {3}, DType::i32, bytes_of(b));
  Case c = cg.finish(std::string(op_name(op)) + " i32", op, {ai, bi}, {}, DType::boolean);
  for (int i = 0; i < 12; ++i) c.expected.push_back(f(a[i], b[i % 3]) ? 1 : 0);
  cases.push_back(std::move(c));
  return cases;
}
TESSERA_CONFORMANCE_CASES(equal) { return compare_cases(rng, OpKind::equal, [](double a, double b) { return a == b; }); }
TESSERA_CONFORMANCE_CASES(not_equal) { return compare_cases(rng, OpKind::not_equal, [](double a, double b) { return a != b; }); }
TESSERA_CONFORMANCE_CASES(less) { return compare_cases(rng, OpKind::less, [](double a, double b) { return a < b; }); }
TESSERA_CONFORMANCE_CASES(less_equal) { return compare_cases(rng, OpKind::less_equal, [](double a, double b) { return a <= b; }); }
TESSERA_CONFORMANCE_CASES(greater) { return compare_cases(rng, OpKind::greater, [](double a, double b) { return a > b; }); }
TESSERA_CONFORMANCE_CASES(greater_equal) {
  return compare_cases(rng, OpKind::greater_equal, [](double a, double b) { return a >= b; });
}

// select: a boolean condition broadcast against two f32 operands.
TESSERA_CONFORMANCE_CASES(select) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    auto [as, bs] = variant == 0 ? std::pair<Shape, Shape>{{3, 5}, {3, 5}} : broadcast_pair(rng);
    const Shape ab = *broadcast_shapes(as, bs);
    const Shape cs = variant == 2 ? Shape{ab.back()} : ab;
    std::vector<uint8_t> cond(static_cast<size_t>(num_elements(cs)));
    for (auto& x : cond) x = static_cast<uint8_t>(pick(rng, 0, 1));
    auto a = uniform(rng, num_elements(as), -2, 2);
    auto b = uniform(rng, num_elements(bs), -2, 2);
    CaseGraph cg;
    TensorId ci = cg.input("cond", cs, DType::boolean, cond);
    TensorId ai = cg.input_f32("a", as, a), bi = cg.input_f32("b", bs, b);
    Case c = cg.finish("select " + shape_str(cs) + " ? " + shape_str(as) + " : " + shape_str(bs), OpKind::select, {ci, ai, bi}, {});
    for (int64_t i = 0; i < num_elements(ab); ++i) {
      const double v = cond[bcast_index(ab, cs, i)] ? a[bcast_index(ab, as, i)] : b[bcast_index(ab, bs, i)];
      c.expected.push_back(v);
      c.magnitude.push_back(std::fabs(v));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// Unary ops: y = f(x) on a random shape; magnitude |y| + |x f'(x)| covers a rounded input.
using UnFn = std::function<double(double)>;
// `terms` (optional) is the sum of the absolute terms of the formula where it cancels.
std::vector<Case> unary_cases(Rng& rng, OpKind op, UnFn f, float lo, float hi,
                              AttrMap attrs = {}, UnFn terms = nullptr) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 2; ++variant) {
    Shape s = random_shape(rng, static_cast<int>(pick(rng, 1, 4)), 1, 7);
    auto x = uniform(rng, num_elements(s), lo, hi);
    CaseGraph cg;
    TensorId xi = cg.input_f32("x", s, x);
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(s), op, {xi}, attrs);
    for (float v : x) {
      const double y = f(v), h = 1e-4 * std::max(1.0, std::fabs(static_cast<double>(v)));
      const double slope = (f(v + h) - f(v - h)) / (2 * h);
      c.expected.push_back(y);
      c.magnitude.push_back(std::fabs(y) + std::fabs(v * slope) + (terms ? terms(v) : 0.0));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

double logistic(double x) { return 1 / (1 + std::exp(-x)); }

TESSERA_CONFORMANCE_CASES(relu) { return unary_cases(rng, OpKind::relu, [](double x) { return std::max(x, 0.0); }, -4, 4); }
TESSERA_CONFORMANCE_CASES(relu6) {
  return unary_cases(rng, OpKind::relu6, [](double x) { return std::clamp(x, 0.0, 6.0); }, -3, 9);
}
TESSERA_CONFORMANCE_CASES(leaky_relu) {
  return unary_cases(rng, OpKind::leaky_relu, [](double x) { return x >= 0 ? x : 0.125 * x; }, -4, 4,
                     {{"alpha", 0.125}});
}
TESSERA_CONFORMANCE_CASES(logistic) { return unary_cases(rng, OpKind::logistic, logistic, -6, 6); }
TESSERA_CONFORMANCE_CASES(tanh) { return unary_cases(rng, OpKind::tanh, [](double x) { return std::tanh(x); }, -3, 3); }
TESSERA_CONFORMANCE_CASES(hard_swish) {
  return unary_cases(rng, OpKind::hard_swish, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }, -5, 5);
}
TESSERA_CONFORMANCE_CASES(silu) { return unary_cases(rng, OpKind::silu, [](double x) { return x * logistic(x); }, -6, 6); }
TESSERA_CONFORMANCE_CASES(gelu) {
  // 0.5 x (1 + erf) cancels for negative x: its terms add up to about |x|.
  auto terms = [](double x) { return std::fabs(x); };
  auto erf_form = unary_cases(
      rng, OpKind::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4, {}, terms);
  auto tanh_form = unary_cases(
      rng, OpKind::gelu,
      [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -4, 4,
      {{"approximate", int64_t{1}}}, terms);
  erf_form.insert(erf_form.end(), tanh_form.begin(), tanh_form.end());
  return erf_form;
}
TESSERA_CONFORMANCE_CASES(elu) {
  return unary_cases(rng, OpKind::elu, [](double x) { return x < 0 ? std::expm1(x) : x; }, -5, 3);
}
TESSERA_CONFORMANCE_CASES(exp) { return unary_cases(rng, OpKind::exp, [](double x) { return std::exp(x); }, -4, 4); }
TESSERA_CONFORMANCE_CASES(sqrt) { return unary_cases(rng, OpKind::sqrt, [](double x) { return std::sqrt(x); }, 0.01f, 4); }
TESSERA_CONFORMANCE_CASES(rsqrt) { return unary_cases(rng, OpKind::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1f, 4); }
TESSERA_CONFORMANCE_CASES(abs) { return unary_cases(rng, OpKind::abs, [](double x) { return std::fabs(x); }, -4, 4); }
TESSERA_CONFORMANCE_CASES(neg) { return unary_cases(rng, OpKind::neg, [](double x) { return -x; }, -4, 4); }
TESSERA_CONFORMANCE_CASES(square) { return unary_cases(rng, OpKind::square, [](double x) { return x * x; }, -4, 4); }
TESSERA_CONFORMANCE_CASES(log) { return unary_cases(rng, OpKind::log, [](double x) { return std::log(x); }, 0.01f, 8); }

// cast: f32 -> i32 (truncates), f32 -> f16, i32 -> f32, u8 -> i32.
TESSERA_CONFORMANCE_CASES(cast) {
  std::vector<Case> cases;
  Shape s = random_shape(rng, 2, 2, 6);
  const int64_t n = num_elements(s);
  auto x = uniform(rng, n, -100, 100);
  {
    CaseGraph cg;
    Case c = cg.finish("cast f32->i32", OpKind::cast, {cg.input_f32("x", s, x)}, {}, DType::i32);
    for (float v : x) c.expected.push_back(std::trunc(v));
    cases.push_back(std::move(c));
  }
  {
    CaseGraph cg;
    Case c = cg.finish("cast f32->f16", OpKind::cast, {cg.input_f32("x", s, x)}, {}, DType::f16);
    c.expected = decode(DType::f16, encode(DType::f16, x), n);  // round to nearest even
    cases.push_back(std::move(c));
  }
  {
    std::vector<int32_t> xi(n);
    for (auto& v : xi) v = static_cast<int32_t>(pick(rng, -100000, 100000));
    CaseGraph cg;
    Case c = cg.finish("cast i32->f32", OpKind::cast, {cg.input("x", s, DType::i32, bytes_of(xi))}, {}, DType::f32);
    for (int32_t v : xi) c.expected.push_back(v);
    cases.push_back(std::move(c));
  }
  {
    std::vector<uint8_t> xu(n);
    for (auto& v : xu) v = static_cast<uint8_t>(pick(rng, 0, 255));
    CaseGraph cg;
    Case c = cg.finish("cast u8->i32", OpKind::cast, {cg.input("x", s, DType::u8, xu)}, {}, DType::i32);
    for (uint8_t v : xu) c.expected.push_back(v);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
