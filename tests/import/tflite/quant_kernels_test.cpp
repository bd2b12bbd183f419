// The TFLite-exact quantized CPU kernels against the real-valued definition computed in
// double: TFLite's fixed-point requantization (Q31 multiplier, double rounding) may differ
// from exact rounding by one step, never more, and must agree on almost every element.
// Shapes and data are seeded random values; padding, strides, dilation, per-channel
// weights, depth multipliers, broadcasting and fused activations are all exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "tessera/session.h"

namespace tessera {
namespace {

struct QTensor {
  Shape shape;
  DType dtype;
  QuantParams q;
  std::vector<int32_t> values;  // quantized values
};

int32_t qlo(DType t) { return t == DType::u8 ? 0 : -128; }
int32_t qhi(DType t) { return t == DType::u8 ? 255 : 127; }

QTensor random_q(Shape s, DType t, float scale, int64_t zp, uint32_t seed, int axis = -1, int64_t channels = 1) {
  QTensor x{std::move(s), t, {}, {}};
  std::mt19937 rng(seed);
  if (axis >= 0) {
    std::uniform_real_distribution<float> d(0.5f * scale, 1.5f * scale);
    for (int64_t c = 0; c < channels; ++c) {
      x.q.scale.push_back(d(rng));
      x.q.zero_point.push_back(zp);
    }
    x.q.axis = axis;
  } else {
    x.q.scale = {scale};
    x.q.zero_point = {zp};
  }
  std::uniform_int_distribution<int32_t> v(qlo(t), qhi(t));
  x.values.resize(static_cast<size_t>(num_elements(x.shape)));
  for (auto& e : x.values) e = v(rng);
  return x;
}

std::vector<uint8_t> bytes_of(const QTensor& x) {
  std::vector<uint8_t> b(x.values.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(x.values[i]);
  return b;
}

TensorId add_input(Graph& g, const QTensor& x, const std::string& name) {
  Tensor t;
  t.name = name;
  t.shape = x.shape;
  t.dtype = x.dtype;
  t.quant = x.q;
  t.role = Role::input;
  TensorId id = g.add_tensor(t);
  g.inputs.push_back(id);
  return id;
}

TensorId add_weight(Graph& g, const QTensor& x, const std::string& name) {
  Tensor t;
  t.name = name;
  t.shape = x.shape;
  t.dtype = x.dtype;
  t.quant = x.q;
  t.role = Role::weight;
  t.data = ConstData::from_vector(bytes_of(x));
  return g.add_tensor(t);
}

TensorId add_bias(Graph& g, const std::vector<int32_t>& b) {
  Tensor t;
  t.name = "bias";
  t.shape = {static_cast<int64_t>(b.size())};
  t.dtype = DType::i32;
  t.role = Role::weight;
  std::vector<uint8_t> bytes(b.size() * 4);
  std::memcpy(bytes.data(), b.data(), bytes.size());
  t.data = ConstData::from_vector(bytes);
  return g.add_tensor(t);
}

// Runs g with the given inputs (threads as asked); returns output 0 as ints.
std::vector<int32_t> run(Graph g, const std::vector<QTensor>& inputs, DType out, int threads = 1) {
  SessionOptions o;
  o.device_options["threads"] = std::to_string(threads);
  auto s = Session::create(std::move(g), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto b = bytes_of(inputs[i]);
    EXPECT_TRUE((*s)->set_input(i, b.data(), static_cast<int64_t>(b.size())).ok());
  }
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto y = (*s)->output(0);
  if (!y.ok()) return {};
  std::vector<int32_t> v(y->size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = out == DType::u8 ? (*y)[i] : static_cast<int8_t>((*y)[i]);
  return v;
}

int32_t quantize(double real, double scale, int64_t zp, DType t, double lo = -1e300, double hi = 1e300) {
  real = std::min(std::max(real, lo), hi);
  double q = std::round(real / scale) + static_cast<double>(zp);
  return static_cast<int32_t>(std::min<double>(std::max<double>(q, qlo(t)), qhi(t)));
}

// At most one step from the exact result everywhere, exact on at least `exact_share`.
void expect_close(const std::vector<int32_t>& got, const std::vector<int32_t>& want, double exact_share = 0.97) {
  ASSERT_EQ(got.size(), want.size());
  size_t exact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1) << "element " << i;
    exact += got[i] == want[i];
  }
  EXPECT_GE(static_cast<double>(exact) / got.size(), exact_share);
}

double real(const QTensor& x, size_t i, int64_t channel = 0) {
  return x.q.scale_at(x.q.per_axis() ? channel : 0) * (x.values[i] - x.q.zero_point_at(x.q.per_axis() ? channel : 0));
}

struct ConvCase {
  DType dtype;
  bool per_channel, depthwise;
  int stride, dilation, multiplier;
  const char* act;
};

class QuantConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(QuantConv, MatchesDoubleWithinOneStep) {
  const ConvCase c = GetParam();
  const int64_t H = 11, W = 9, C = 4, KH = 3, KW = 3;
  const int64_t OC = c.depthwise ? C * c.multiplier : 6;
  const int64_t pad = c.dilation;  // SAME-like border for 3x3
  const DType t = c.dtype;
  const int64_t zx = t == DType::u8 ? 120 : -5, zy = t == DType::u8 ? 100 : 3;
  QTensor x = random_q({1, H, W, C}, t, 0.05f, zx, 11);
  Shape ws = c.depthwise ? Shape{1, KH, KW, OC} : Shape{OC, KH, KW, C};
  QTensor w = random_q(ws, t, 0.02f, t == DType::u8 && !c.per_channel ? 130 : 0, 12, c.per_channel ? (c.depthwise ? 3 : 0) : -1, OC);
  std::mt19937 rng(13);
  std::vector<int32_t> bias(OC);
  for (auto& b : bias) b = static_cast<int32_t>(rng() % 2001) - 1000;
  Graph g;
  TensorId xi = add_input(g, x, "x");
  TensorId wi = add_weight(g, w, "w");
  TensorId bi = add_bias(g, bias);
  QuantParams oq{{0.06f}, {zy}, -1};
  AttrMap attrs = {{"stride_h", int64_t{c.stride}}, {"stride_w", int64_t{c.stride}},
                                            {"dilation_h", int64_t{c.dilation}}, {"dilation_w", int64_t{c.dilation}},
                                            {"pad_top", pad}, {"pad_bottom", pad}, {"pad_left", pad}, {"pad_right", pad},
                                            {"activation", std::string(c.act)}};
  if (c.depthwise) attrs["depth_multiplier"] = int64_t{c.multiplier};
  auto y = g.add_op(c.depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d, {xi, wi, bi}, attrs, "conv", t, oq);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  const Shape ys = g.tensor(*y).shape;
  auto got = run(g, {x}, t);
  // Exact definition in double.
  std::vector<int32_t> want(static_cast<size_t>(num_elements(ys)));
  const double lo = std::string(c.act) == "none" ? -1e300 : 0.0, hi = std::string(c.act) == "relu6" ? 6.0 : 1e300;
  for (int64_t oy = 0; oy < ys[1]; ++oy)
    for (int64_t ox = 0; ox < ys[2]; ++ox)
      for (int64_t o = 0; o < OC; ++o) {
        const double wsc = w.q.scale_at(w.q.per_axis() ? o : 0);
        double acc = bias[o] * static_cast<double>(x.q.scale[0]) * wsc;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            const int64_t iy = oy * c.stride - pad + ky * c.dilation, ix = ox * c.stride - pad + kx * c.dilation;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            if (c.depthwise) {
              const int64_t ic = o / c.multiplier;
              acc += real(x, (iy * W + ix) * C + ic) * real(w, (ky * KW + kx) * OC + o, o);
            } else {
              for (int64_t ic = 0; ic < C; ++ic)
                acc += real(x, (iy * W + ix) * C + ic) * real(w, ((o * KH + ky) * KW + kx) * C + ic, o);
            }
          }
        want[(oy * ys[2] + ox) * OC + o] = quantize(acc, oq.scale[0], zy, t, lo, hi);
      }
  expect_close(got, want);
  // The same bits for any thread count.
  EXPECT_EQ(run(g, {x}, t, 3), got);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, QuantConv,
    ::testing::Values(ConvCase{DType::u8, false, false, 1, 1, 1, "none"}, ConvCase{DType::u8, false, false, 2, 1, 1, "relu6"},
                      ConvCase{DType::i8, true, false, 1, 2, 1, "relu"}, ConvCase{DType::i8, true, false, 2, 1, 1, "none"},
                      ConvCase{DType::u8, false, true, 1, 1, 1, "relu6"}, ConvCase{DType::i8, true, true, 2, 1, 2, "none"},
                      ConvCase{DType::i8, true, true, 1, 2, 1, "relu6"}));

TEST(QuantKernels, FullyConnectedPerTensorAndPerChannel) {
  for (bool per_channel : {false, true}) {
    const DType t = per_channel ? DType::i8 : DType::u8;
    QTensor x = random_q({3, 20}, t, 0.1f, t == DType::u8 ? 128 : 0, 21);
    QTensor w = random_q({7, 20}, t, 0.01f, t == DType::u8 ? 127 : 0, 22, per_channel ? 0 : -1, 7);
    std::vector<int32_t> bias = {100, -200, 300, 0, 5, -7, 1000};
    Graph g;
    TensorId xi = add_input(g, x, "x");
    auto y = g.add_op(OpKind::fully_connected, {xi, add_weight(g, w, "w"), add_bias(g, bias)}, {{"keep_dims", int64_t{0}}},
                      "fc", t, QuantParams{{0.05f}, {t == DType::u8 ? 120 : -10}, -1});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.outputs = {*y};
    auto got = run(g, {x}, t);
    std::vector<int32_t> want(21);
    for (int r = 0; r < 3; ++r)
      for (int o = 0; o < 7; ++o) {
        double acc = bias[o] * static_cast<double>(x.q.scale[0]) * w.q.scale_at(per_channel ? o : 0);
        for (int k = 0; k < 20; ++k) acc += real(x, r * 20 + k) * real(w, o * 20 + k, o);
        want[r * 7 + o] = quantize(acc, 0.05, t == DType::u8 ? 120 : -10, t);
      }
    expect_close(got, want, 0.9);
    EXPECT_EQ(run(g, {x}, t, 3), got);  // output channels split over threads: same bits
  }
}

// Binary ops with broadcasting: a [2, 3, 4] op b [3, 1].
void check_binary(OpKind op, DType t, const char* act) {
  QTensor a = random_q({2, 3, 4}, t, 0.07f, t == DType::u8 ? 128 : 2, 31);
  QTensor b = random_q({3, 1}, t, 0.03f, t == DType::u8 ? 100 : -20, 32);
  const float os = op == OpKind::mul ? 0.3f : 0.09f;
  const int64_t oz = t == DType::u8 ? 110 : 4;
  Graph g;
  TensorId ai = add_input(g, a, "a"), bi = add_input(g, b, "b");
  auto y = g.add_op(op, {ai, bi}, {{"activation", std::string(act)}}, "bin", t, QuantParams{{os}, {oz}, -1});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  auto got = run(g, {a, b}, t);
  std::vector<int32_t> want(24);
  for (int i = 0; i < 24; ++i) {
    const int j = (i / 4) % 3;
    double va = real(a, i), vb = real(b, j);
    double r = op == OpKind::add ? va + vb : op == OpKind::sub ? va - vb : va * vb;
    want[i] = quantize(r, os, oz, t, std::string(act) == "relu" ? 0.0 : -1e300);
  }
  expect_close(got, want, 0.9);
}

TEST(QuantKernels, AddSubMulBroadcast) {
  for (DType t : {DType::u8, DType::i8}) {
    check_binary(OpKind::add, t, "none");
    check_binary(OpKind::add, t, "relu");
    check_binary(OpKind::sub, t, "none");
    check_binary(OpKind::mul, t, "none");
  }
}

TEST(QuantKernels, AveragePoolIsExactAndMaxPoolPicksTheMax) {
  QTensor x = random_q({1, 7, 6, 3}, DType::i8, 0.1f, -3, 41);
  for (OpKind op : {OpKind::avg_pool2d, OpKind::max_pool2d}) {
    Graph g;
    TensorId xi = add_input(g, x, "x");
    auto y = g.add_op(op, {xi},
                      {{"filter_h", int64_t{3}}, {"filter_w", int64_t{3}}, {"stride_h", int64_t{2}}, {"stride_w", int64_t{2}},
                       {"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}},
                      "pool", DType::i8, x.q);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.outputs = {*y};
    const Shape ys = g.tensor(*y).shape;
    auto got = run(g, {x}, DType::i8);
    std::vector<int32_t> want;
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t ch = 0; ch < 3; ++ch) {
          double sum = 0, mx = -1e9;
          int n = 0;
          for (int64_t iy = oy * 2 - 1; iy < oy * 2 + 2; ++iy)
            for (int64_t ix = ox * 2 - 1; ix < ox * 2 + 2; ++ix) {
              if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
              const int32_t v = x.values[(iy * 6 + ix) * 3 + ch];
              sum += v;
              mx = std::max<double>(mx, v);
              ++n;
            }
          // Mean of stored values rounded half away from zero (TFLite's integer average).
          const double m = sum / n;
          want.push_back(op == OpKind::max_pool2d ? static_cast<int32_t>(mx) : static_cast<int32_t>(std::round(m)));
        }
    EXPECT_EQ(got, want) << op_name(op);
  }
}

TEST(QuantKernels, SoftmaxLogisticTanhWithinOneStep) {
  QTensor x = random_q({4, 10}, DType::u8, 0.1f, 128, 51);
  struct Case {
    OpKind op;
    QuantParams out;
  };
  for (const Case& c : {Case{OpKind::softmax, {{1.0f / 256}, {0}, -1}}, Case{OpKind::logistic, {{1.0f / 256}, {0}, -1}},
                        Case{OpKind::tanh, {{1.0f / 128}, {128}, -1}}}) {
    SCOPED_TRACE(op_name(c.op));
    Graph g;
    TensorId xi = add_input(g, x, "x");
    auto y = g.add_op(c.op, {xi}, {}, "f", DType::u8, c.out);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.outputs = {*y};
    auto got = run(g, {x}, DType::u8);
    std::vector<int32_t> want(40);
    for (int r = 0; r < 4; ++r) {
      double sum = 0, mx = -1e9;
      for (int i = 0; i < 10; ++i) mx = std::max(mx, real(x, r * 10 + i));
      for (int i = 0; i < 10; ++i) sum += std::exp(real(x, r * 10 + i) - mx);
      for (int i = 0; i < 10; ++i) {
        const double v = real(x, r * 10 + i);
        const double f = c.op == OpKind::softmax ? std::exp(v - mx) / sum
                         : c.op == OpKind::logistic ? 1 / (1 + std::exp(-v))
                                                    : std::tanh(v);
        want[r * 10 + i] = quantize(f, c.out.scale[0], c.out.zero_point[0], DType::u8);
      }
    }
    expect_close(got, want, 0.9);
  }
}

TEST(QuantKernels, ReluRelu6LeakyReluHardSwishWithinOneStep) {
  for (DType t : {DType::u8, DType::i8}) {
    QTensor x = random_q({3, 50}, t, 0.06f, t == DType::u8 ? 128 : 0, 55);
    struct Case {
      OpKind op;
      double (*f)(double);
    };
    for (const Case& c : {Case{OpKind::relu, [](double v) { return std::max(v, 0.0); }},
                          Case{OpKind::relu6, [](double v) { return std::min(std::max(v, 0.0), 6.0); }},
                          Case{OpKind::leaky_relu, [](double v) { return v >= 0 ? v : 0.2 * v; }},
                          Case{OpKind::hard_swish, [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }}}) {
      SCOPED_TRACE(op_name(c.op));
      const float os = 0.0437f;  // not a simple ratio of the input scale: avoids exact ties
      const int64_t oz = t == DType::u8 ? 60 : -60;
      Graph g;
      TensorId xi = add_input(g, x, "x");
      AttrMap a;
      if (c.op == OpKind::leaky_relu) a["alpha"] = 0.2;
      auto y = g.add_op(c.op, {xi}, a, "f", t, QuantParams{{os}, {oz}, -1});
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      g.tensor(*y).role = Role::output;
      g.outputs = {*y};
      auto got = run(g, {x}, t);
      std::vector<int32_t> want(150);
      for (int i = 0; i < 150; ++i) want[i] = quantize(c.f(real(x, i)), os, oz, t);
      // TFLite rounds twice (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT):
      // with a small multiplier such as leaky_relu's alpha path (shift -1) roughly one
      // small value in ten lands one step from exact rounding, as in TFLite itself.
      expect_close(got, want, 0.8);
    }
  }
}

TEST(QuantKernels, RequantizeAndConcatWithDifferentParameters) {
  QTensor a = random_q({2, 3}, DType::u8, 0.05f, 128, 61);
  QTensor b = random_q({2, 2}, DType::u8, 0.11f, 90, 62);
  Graph g;
  TensorId ai = add_input(g, a, "a"), bi = add_input(g, b, "b");
  QuantParams oq{{0.08f}, {100}, -1};
  auto y = g.add_op(OpKind::concat, {ai, bi}, {{"axis", int64_t{1}}}, "cat", DType::u8, oq);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  auto z = g.add_op(OpKind::requantize, {*y}, {}, "rq", DType::i8, QuantParams{{0.03f}, {-7}, -1});
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  g.tensor(*z).role = Role::output;
  g.outputs = {*z};
  auto got = run(g, {a, b}, DType::i8);
  std::vector<int32_t> want;
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 5; ++k) {
      const double v = k < 3 ? real(a, r * 3 + k) : real(b, r * 2 + k - 3);
      // Two roundings: into the concat output, then into the requantized output.
      const int32_t mid = quantize(v, 0.08, 100, DType::u8);
      want.push_back(quantize(0.08 * (mid - 100), 0.03, -7, DType::i8));
    }
  expect_close(got, want, 0.8);
}

TEST(QuantKernels, ResizeBilinearAlignCornersAndHalfPixel) {
  for (DType t : {DType::u8, DType::i8}) {
    for (int mode = 0; mode < 3; ++mode) {  // 0: plain, 1: align_corners, 2: half_pixel_centers
      SCOPED_TRACE(std::string(dtype_name(t)) + " mode " + std::to_string(mode));
      QTensor x = random_q({1, 4, 5, 2}, t, 0.1f, 0, 91);
      Graph g;
      TensorId xi = add_input(g, x, "x");
      auto y = g.add_op(OpKind::resize_bilinear, {xi},
                        {{"out_h", int64_t{7}}, {"out_w", int64_t{9}}, {"align_corners", int64_t{mode == 1}},
                         {"half_pixel_centers", int64_t{mode == 2}}},
                        "rs", t, x.q);
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      g.tensor(*y).role = Role::output;
      g.outputs = {*y};
      auto got = run(g, {x}, t);
      std::vector<int32_t> want;
      auto src = [&](int64_t o, int64_t in, int64_t out) {
        if (mode == 1) return o * static_cast<double>(in - 1) / (out - 1);
        if (mode == 2) return std::max(0.0, (o + 0.5) * in / out - 0.5);
        return o * static_cast<double>(in) / out;
      };
      for (int64_t oy = 0; oy < 7; ++oy)
        for (int64_t ox = 0; ox < 9; ++ox)
          for (int64_t ch = 0; ch < 2; ++ch) {
            const double fy = src(oy, 4, 7), fx = src(ox, 5, 9);
            const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
            const int64_t y1 = std::min<int64_t>(y0 + 1, 3), x1 = std::min<int64_t>(x0 + 1, 4);
            const double dy = fy - y0, dx = fx - x0;
            auto at = [&](int64_t yy, int64_t xx) { return static_cast<double>(x.values[(yy * 5 + xx) * 2 + ch]); };
            const double v = at(y0, x0) * (1 - dy) * (1 - dx) + at(y1, x0) * dy * (1 - dx) + at(y0, x1) * (1 - dy) * dx +
                             at(y1, x1) * dy * dx;
            want.push_back(static_cast<int32_t>(std::round(v)));
          }
      // u8 follows TFLite's float reference, which truncates: at most one step below.
      // i8 uses 10-bit fixed-point positions (scale rounded to 1/1024), which moves a few
      // values that sit near .5 by one step.
      expect_close(got, want, t == DType::u8 ? 0.4 : 0.9);
    }
  }
}

TEST(QuantKernels, MeanOverSpatialAxes) {
  QTensor x = random_q({1, 5, 4, 3}, DType::i8, 0.04f, -2, 71);
  Graph g;
  TensorId xi = add_input(g, x, "x");
  auto y = g.add_op(OpKind::mean, {xi}, {{"axes", std::vector<int64_t>{1, 2}}, {"keep_dims", int64_t{1}}}, "mean",
                    DType::i8, QuantParams{{0.02f}, {5}, -1});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  auto got = run(g, {x}, DType::i8);
  std::vector<int32_t> want(3);
  for (int ch = 0; ch < 3; ++ch) {
    double s = 0;
    for (int i = 0; i < 20; ++i) s += real(x, i * 3 + ch);
    want[ch] = quantize(s / 20, 0.02, 5, DType::i8);
  }
  expect_close(got, want, 0.6);
}

TEST(QuantKernels, PerChannelActivationsAreRejectedWithTheOpName) {
  QTensor x = random_q({1, 4, 4, 2}, DType::i8, 0.1f, 0, 81, 3, 2);  // per-axis input
  QTensor w = random_q({2, 1, 1, 2}, DType::i8, 0.1f, 0, 82);
  Graph g;
  TensorId xi = add_input(g, x, "x");
  auto y = g.add_op(OpKind::conv2d, {xi, add_weight(g, w, "w")}, {}, "c", DType::i8, QuantParams{{0.1f}, {0}, -1});
  ASSERT_TRUE(y.ok());
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  // The packed kernels check their operands when the session compiles; the reference
  // kernels when they run. Either way the error names the op and the problem.
  for (const char* kernels : {"packed", "reference"}) {
    SessionOptions o;
    o.device_options = {{"kernels", kernels}};
    auto s = Session::create(g, o);
    Status st = s.status();
    if (s.ok()) {
      auto b = bytes_of(x);
      ASSERT_TRUE((*s)->set_input(0, b.data(), static_cast<int64_t>(b.size())).ok());
      st = (*s)->run();
    }
    ASSERT_FALSE(st.ok()) << kernels;
    EXPECT_EQ(s.ok(), std::string(kernels) == "reference") << kernels << ": " << st.message();
    EXPECT_NE(st.message().find("conv2d"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("per-axis"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace tessera
