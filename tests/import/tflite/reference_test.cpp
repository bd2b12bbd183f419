// End-to-end arithmetic against ../shared/reference: the TensorFlow Lite interpreter's own
// outputs (*.tflite-output.bin, from the TFLite oracle), which the cpu device matches byte
// for byte (InterpreterReference), and the outputs of a peer, Arm NN's CpuRef backend
// (*.armnn-output.bin), which differs from the interpreter.
//
// Why the peer differs: CpuRef dequantizes every operand to float, accumulates in float
// and quantizes each layer's result with round(x / scale) + zero_point, while the
// interpreter uses integer accumulation and a Q31 fixed-point multiplier (rounded twice on
// u8 and depthwise, once on int8 conv and fully connected). The two agree except where a
// value sits within float error of a rounding boundary; such one-step disagreements inside
// the network reach the output as a few steps on a few scores (at most 2 on mnv1 and mnv2,
// 4 on tf2mnv2). The tests here require the same ranking and that bound.
// peer_arithmetic_test.cpp shows the rest exactly: an emulation of CpuRef's float
// arithmetic (peer_arithmetic.h) reproduces all four peer outputs byte for byte, and
// charges every differing score to the conv, depthwise, add, pool, mean and
// fully-connected nodes whose requantization rounds differently (see its header).
//
// The NCHW model additionally differs by construction: CpuRef fills quantized PAD borders
// with the raw value 0, TFLite with the output's zero point (pad.cc), except for the PAD in
// front of the first convolution, which CpuRef's optimizer folds into that convolution's
// own (zero-point) padding: PeerArithmeticNchw.PadBorderValueIsTheDominantCause.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

std::vector<uint8_t> run(Graph g, const std::vector<uint8_t>& input, int threads) {
  SessionOptions o;
  o.device_options["threads"] = std::to_string(threads);
  auto s = Session::create(std::move(g), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  Status st = (*s)->set_input(0, input.data(), static_cast<int64_t>(input.size()));
  EXPECT_TRUE(st.ok()) << st.to_string();
  st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto out = (*s)->output(0);
  EXPECT_TRUE(out.ok());
  return out.ok() ? *out : std::vector<uint8_t>{};
}

std::vector<int> as_ints(const std::vector<uint8_t>& b, bool is_signed) {
  std::vector<int> v(b.size());
  for (size_t i = 0; i < b.size(); ++i) v[i] = is_signed ? static_cast<int8_t>(b[i]) : b[i];
  return v;
}

std::vector<int> top(const std::vector<int>& v, int k) {
  std::vector<int> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return v[a] > v[b]; });
  idx.resize(k);
  return idx;
}

struct Diff {
  int max_abs = 0;
  size_t count = 0;
};
Diff diff(const std::vector<int>& a, const std::vector<int>& b) {
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    int e = std::abs(a[i] - b[i]);
    d.max_abs = std::max(d.max_abs, e);
    d.count += e != 0;
  }
  return d;
}

struct RefCase {
  const char* name;
  const char* model;
  int top1, top2;  // the two best classes (the reference ties them for mnv1_128_cat)
  int max_steps;   // measured largest difference between the interpreter and the peer
};

class ReferenceOutputs : public ::testing::TestWithParam<RefCase> {};

TEST_P(ReferenceOutputs, MatchCpuRefWithinMeasuredStepsAndSameRanking) {
  const RefCase& c = GetParam();
  TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + c.model + ".tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, std::string("reference/") + c.name + ".input.bin");
  TESSERA_REQUIRE_FIXTURE(ref_path, std::string("reference/") + c.name + ".armnn-output.bin");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const bool is_signed = g->tensor(g->outputs[0]).dtype == DType::i8;
  std::vector<uint8_t> out = run(std::move(*g), testing::read_file(in_path), 1);
  std::vector<uint8_t> ref = testing::read_file(ref_path);
  ASSERT_EQ(out.size(), ref.size());
  auto a = as_ints(out, is_signed), b = as_ints(ref, is_signed);
  auto set2 = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<int> want = set2({c.top1, c.top2});
  EXPECT_EQ(set2(top(a, 2)), want);
  EXPECT_EQ(set2(top(b, 2)), want);
  Diff d = diff(a, b);
  EXPECT_LE(d.max_abs, c.max_steps) << c.name;
  EXPECT_LE(d.count, a.size() / 50) << c.name << ": " << d.count << " of " << a.size() << " scores differ";
  RecordProperty("differing_scores", static_cast<int>(d.count));
  RecordProperty("max_step_difference", d.max_abs);
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferenceOutputs,
                         ::testing::Values(RefCase{"mnv1_128_cat", "mobilenet_v1_0.25_128_quant", 283, 286, 2},
                                           RefCase{"mnv2_224_grace", "mobilenet_v2_1.0_224_quant", 653, 458, 2},
                                           RefCase{"tf2mnv2_224_grace", "tf2_mobilenet_v2_1.0_224_ptq", 653, 440, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

// The interpreter's own outputs (../shared/reference/*.tflite-output.bin, from the TFLite
// oracle): the cpu device matches them byte for byte, on 1 and 2 threads.
struct InterpreterCase {
  const char* name;
  const char* model;
};

class InterpreterReference : public ::testing::TestWithParam<InterpreterCase> {};

TEST_P(InterpreterReference, CpuIsByteIdentical) {
  const InterpreterCase& c = GetParam();
  TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + c.model + ".tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, std::string("reference/") + c.name + ".input.bin");
  TESSERA_REQUIRE_FIXTURE(ref_path, std::string("reference/") + c.name + ".tflite-output.bin");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const bool is_signed = g->tensor(g->outputs[0]).dtype == DType::i8;
  const std::vector<uint8_t> input = testing::read_file(in_path), ref = testing::read_file(ref_path);
  for (int threads : {1, 2}) {
    std::vector<uint8_t> out = run(*g, input, threads);
    ASSERT_EQ(out.size(), ref.size());
    Diff d = diff(as_ints(out, is_signed), as_ints(ref, is_signed));
    EXPECT_EQ(d.count, 0u) << c.name << " on " << threads << " threads: " << d.count << " values differ, by up to "
                           << d.max_abs << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, InterpreterReference,
                         ::testing::Values(InterpreterCase{"mnv1_128_cat", "mobilenet_v1_0.25_128_quant"},
                                           InterpreterCase{"mnv2_224_grace", "mobilenet_v2_1.0_224_quant"},
                                           InterpreterCase{"tf2mnv2_224_grace", "tf2_mobilenet_v2_1.0_224_ptq"},
                                           InterpreterCase{"nchw_grace", "mobilenet_v2_quantized_1x3x224x224"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(QuantizedThreads, OutputsAreBitIdenticalForAnyThreadCount) {
  for (const char* m : {"mobilenet_v1_0.25_128_quant", "person_detect"}) {
    SCOPED_TRACE(m);
    TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + m + ".tflite");
    auto g = tflite::load_tflite_file(model);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    const Tensor& in = g->tensor(g->inputs[0]);
    std::vector<uint8_t> input(static_cast<size_t>(in.elements()));
    std::mt19937 rng(7);
    for (auto& b : input) b = static_cast<uint8_t>(rng());
    auto one = run(*g, input, 1);
    EXPECT_EQ(run(*g, input, 2), one);
    EXPECT_EQ(run(*g, input, 3), one);
  }
}

// Where the ±1 steps come from: the first layers of MobileNetV2 computed both ways on the
// same inputs. CpuRef-style float (dequantize, accumulate in float, one rounding) and
// TFLite's integer path (two roundings in MultiplyByQuantizedMultiplier) never differ by
// more than one step, but they do differ on a share of values that depends on the
// layer's multiplier: measured 12 % and 9 % for ops 1 and 3 (right shifts of 1 and 2),
// 0.5 % and 0.2 % for ops 0 and 2 (shifts of 6 and 8). (The float sum here runs over the
// filter window before the input channels; CpuRef's exact order, and the whole network,
// are in peer_arithmetic.h.)
TEST(ReferenceOutputsExplained, FloatSingleRoundingVsTfliteIntegerPerLayer) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v2_1.0_224_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, "reference/mnv2_224_grace.input.bin");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const std::vector<uint8_t> input = testing::read_file(in_path);
  constexpr int kLayers = 4;
  std::vector<Node> nodes(g->nodes().begin(), g->nodes().begin() + kLayers);
  g->tensor(g->outputs[0]).role = Role::activation;
  g->outputs.clear();
  for (const Node& n : nodes) {
    g->tensor(n.outputs[0]).role = Role::output;
    g->outputs.push_back(n.outputs[0]);
  }
  const Graph copy = *g;
  auto s = Session::create(std::move(*g), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  ASSERT_TRUE((*s)->run().ok());
  std::map<TensorId, std::vector<uint8_t>> values{{copy.inputs[0], input}};
  for (size_t k = 0; k < copy.outputs.size(); ++k) values[copy.outputs[k]] = *(*s)->output(k);
  for (const Node& n : nodes) {
    SCOPED_TRACE(n.name);
    ASSERT_TRUE(n.op == OpKind::conv2d || n.op == OpKind::depthwise_conv2d);
    const Tensor &X = copy.tensor(n.inputs[0]), &W = copy.tensor(n.inputs[1]), &B = copy.tensor(n.inputs[2]),
                 &Y = copy.tensor(n.outputs[0]);
    const auto& xb = values.at(n.inputs[0]);
    const auto& yb = values.at(n.outputs[0]);
    const bool dw = n.op == OpKind::depthwise_conv2d;
    const int64_t H = X.shape[1], Wd = X.shape[2], C = X.shape[3], OH = Y.shape[1], OW = Y.shape[2], OC = Y.shape[3];
    const int64_t KH = W.shape[1], KW = W.shape[2], st = n.get(attr::stride_h), pt = n.get(attr::pad_top),
                  pl = n.get(attr::pad_left);
    const float xs = X.quant.scale[0], ws = W.quant.scale[0], ys = Y.quant.scale[0];
    const float xz = static_cast<float>(X.quant.zero_point[0]), wz = static_cast<float>(W.quant.zero_point[0]);
    const float hi = n.get(attr::activation) == "relu6" ? 6.0f : 1e30f;
    const float lo = n.get(attr::activation) == "none" ? -1e30f : 0.0f;
    int64_t differ = 0, total = 0;
    int worst = 0;
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < OC; ++o) {
          float acc = 0;
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t iy = oy * st - pt + ky, ix = ox * st - pl + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= Wd) continue;
              for (int64_t ic = dw ? o : 0; ic < (dw ? o + 1 : C); ++ic) {
                const float wv = dw ? W.data->data[(ky * KW + kx) * OC + o] : W.data->data[((o * KH + ky) * KW + kx) * C + ic];
                acc += xs * (xb[(iy * Wd + ix) * C + ic] - xz) * ws * (wv - wz);
              }
            }
          int32_t bias;
          std::memcpy(&bias, B.data->data + 4 * o, 4);
          acc = std::min(std::max(acc + bias * B.quant.scale[0], lo), hi);
          const int q = std::clamp(static_cast<int>(std::round(acc / ys)) + static_cast<int>(Y.quant.zero_point[0]), 0, 255);
          const int e = std::abs(q - yb[(oy * OW + ox) * OC + o]);
          worst = std::max(worst, e);
          differ += e != 0;
          ++total;
        }
    EXPECT_LE(worst, 1);
    EXPECT_LT(differ, total / 5);
    RecordProperty(n.name + " differing", std::to_string(differ) + " of " + std::to_string(total));
  }
}

}  // namespace
}  // namespace tessera
