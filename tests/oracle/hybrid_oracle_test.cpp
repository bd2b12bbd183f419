// Hybrid (dynamic-range quantized) CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: float
// input and output, int8 weights with per-tensor or per-channel scales, float bias. Single-
// operator models with seeded inputs against the TFLite interpreter, within the corpus
// test's float tolerance (1e-5 relative to the larger of the two values and the output's
// largest magnitude): the on-the-fly quantization of the input must pick the same codes,
// or the difference is a whole weight step. Also: the importer's clear refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "import/tflite/single_op_model.h"
#include "oracle/hybrid_rows.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

enum class Kind { conv, depthwise, fc };

struct HybridCase {
  std::string name;
  Kind kind;
  std::vector<int32_t> x_shape, w_shape;
  bool per_channel = false;
  int stride = 1, dilation = 1;
  T::Padding padding = T::Padding_SAME;
  T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  bool bias = true;
  float input_lo = -1.0f, input_hi = 1.0f;
  bool asymmetric = false;  // fc: FullyConnectedOptions.asymmetric_quantize_inputs
  bool keep_dims = false;   // fc: keep_num_dims
};

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

int64_t count(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}

SingleOpModel hybrid_model(const HybridCase& c, uint32_t seed) {
  SingleOpModel m;
  const int axis = c.kind == Kind::depthwise ? 3 : 0;
  const int32_t oc = c.w_shape[static_cast<size_t>(axis)];
  std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(count(c.w_shape)), seed);
  for (uint8_t& b : wb)
    if (b == 0x80) b = 0x81;  // TFLite's symmetric weights stay in [-127, 127]
  OpTensor w = testing::constant("w", T::TensorType_INT8, c.w_shape, wb);
  if (c.per_channel) {
    for (int32_t k = 0; k < oc; ++k) w.scales.push_back(0.004f + 0.0011f * static_cast<float>(k % 7));
    w.quantized_dimension = axis;
  } else {
    w.scale = 0.0075f;
  }
  std::vector<int32_t> y_shape;
  if (c.kind == Kind::fc && c.keep_dims) {
    y_shape = c.x_shape;
    y_shape.back() = oc;
  } else if (c.kind == Kind::fc) {
    y_shape = {static_cast<int32_t>(count(c.x_shape) / c.w_shape[1]), oc};
  } else {
    auto out = [&](int32_t in, int32_t k) {
      const int32_t eff = (k - 1) * c.dilation + 1;
      return c.padding == T::Padding_SAME ? (in + c.stride - 1) / c.stride : (in - eff + c.stride) / c.stride;
    };
    y_shape = {c.x_shape[0], out(c.x_shape[1], c.w_shape[1]), out(c.x_shape[2], c.w_shape[2]), oc};
  }
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, c.x_shape), w};
  m.op_inputs = {0, 1};
  if (c.bias) {
    m.tensors.push_back(testing::constant("b", T::TensorType_FLOAT32, {oc},
                                          float_bytes(testing::random_floats(static_cast<size_t>(oc), seed + 1))));
    m.op_inputs.push_back(2);
  }  // TFLite's CONV_2D and DEPTHWISE_CONV_2D need the bias: only fc cases go without
  m.op_outputs = {static_cast<int32_t>(m.tensors.size())};
  m.tensors.push_back(testing::activation("y", T::TensorType_FLOAT32, y_shape));
  const HybridCase cc = c;
  switch (c.kind) {
    case Kind::conv:
      m.code = T::BuiltinOperator_CONV_2D;
      m.version = c.per_channel ? 5 : 2;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_Conv2DOptions,
                              T::CreateConv2DOptions(fb, cc.padding, cc.stride, cc.stride, cc.act, cc.dilation, cc.dilation).Union());
      };
      break;
    case Kind::depthwise:
      m.code = T::BuiltinOperator_DEPTHWISE_CONV_2D;
      m.version = 6;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        const int32_t mult = cc.w_shape[3] / cc.x_shape[3];
        return std::make_pair(T::BuiltinOptions_DepthwiseConv2DOptions,
                              T::CreateDepthwiseConv2DOptions(fb, cc.padding, cc.stride, cc.stride, mult, cc.act, cc.dilation,
                                                              cc.dilation)
                                  .Union());
      };
      break;
    case Kind::fc:
      m.code = T::BuiltinOperator_FULLY_CONNECTED;
      m.version = c.asymmetric ? 9 : c.keep_dims ? 5 : 3;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        T::FullyConnectedOptionsBuilder b(fb);
        b.add_fused_activation_function(cc.act);
        if (cc.keep_dims) b.add_keep_num_dims(true);
        // asymmetric_quantize_inputs: field 3 (vtable offset 10), newer than the compiled schema.
        if (cc.asymmetric) b.fbb_.AddElement<uint8_t>(10, 1, 0);
        return std::make_pair(T::BuiltinOptions_FullyConnectedOptions, b.Finish().Union());
      };
      break;
  }
  return m;
}

// The corpus test's float comparison: "" or what differs.
std::string compare_floats(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " bytes, the interpreter's " + std::to_string(want.size());
  const size_t n = got.size() / 4;
  std::vector<float> a(n), b(n);
  std::memcpy(a.data(), got.data(), n * 4);
  std::memcpy(b.data(), want.data(), n * 4);
  double m = 0;
  for (float v : b) m = std::max(m, std::fabs(static_cast<double>(v)));
  int64_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= 1e-5 * std::max({std::fabs(static_cast<double>(a[i])), std::fabs(static_cast<double>(b[i])), m}))) {
      ++differ;
      worst = std::max(worst, d);
    }
  }
  if (differ == 0) return "";
  return std::to_string(differ) + " of " + std::to_string(n) + " floats differ (largest difference " +
         std::to_string(worst) + ", largest value " + std::to_string(m) + ")";
}

TEST(TfliteOracle, HybridConvDepthwiseAndFullyConnectedMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto relu = T::ActivationFunctionType_RELU, relu6 = T::ActivationFunctionType_RELU6;
  const std::vector<HybridCase> cases = {
      {"conv_tensor_same", Kind::conv, {1, 9, 9, 5}, {6, 3, 3, 5}},
      {"conv_tensor_valid_s2_relu", Kind::conv, {2, 11, 10, 3}, {4, 3, 3, 3}, false, 2, 1, T::Padding_VALID, relu},
      {"conv_tensor_1x1", Kind::conv, {1, 6, 6, 16}, {8, 1, 1, 16}},
      {"conv_channel_same", Kind::conv, {1, 9, 9, 5}, {6, 3, 3, 5}, true},
      {"conv_channel_batch2_s2_relu6", Kind::conv, {2, 12, 12, 4}, {7, 3, 3, 4}, true, 2, 1, T::Padding_SAME, relu6, true,
       -0.3f, 2.0f},
      {"conv_channel_positive_input", Kind::conv, {1, 8, 8, 3}, {5, 3, 3, 3}, true, 1, 1, T::Padding_SAME,
       T::ActivationFunctionType_NONE, true, 0.5f, 3.0f},
      {"conv_channel_dilation2", Kind::conv, {1, 10, 10, 2}, {3, 3, 3, 2}, true, 1, 2},
      {"dw_channel_same", Kind::depthwise, {1, 8, 8, 4}, {1, 3, 3, 4}, true},
      {"dw_channel_mult2_s2_relu", Kind::depthwise, {2, 9, 9, 3}, {1, 3, 3, 6}, true, 2, 1, T::Padding_VALID, relu, true,
       -2.0f, 0.25f},
      {"dw_channel_5x5", Kind::depthwise, {1, 7, 7, 8}, {1, 5, 5, 8}, true},
      {"fc_tensor", Kind::fc, {3, 20}, {7, 20}},
      {"fc_tensor_relu_rank3", Kind::fc, {2, 3, 16}, {5, 16}, false, 1, 1, T::Padding_SAME, relu, true, -0.5f, 1.5f},
      {"fc_tensor_nobias", Kind::fc, {4, 33}, {9, 33}, false, 1, 1, T::Padding_SAME, T::ActivationFunctionType_NONE, false},
  };
  TempDir dir("hybrid");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (size_t i = 0; i < cases.size(); ++i) {
    const HybridCase& c = cases[i];
    const uint32_t seed = 700 + 10 * static_cast<uint32_t>(i);
    models.push_back(hybrid_model(c, seed).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    std::vector<float> x = testing::random_floats(static_cast<size_t>(count(c.x_shape)), seed + 2, c.input_lo, c.input_hi);
    jobs.push_back(Job{c.name, file.string(), {float_bytes(x)}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    EXPECT_EQ(compare_floats((*outs)[0], jobs[i].outputs[0]), "");
    std::printf("[oracle] hybrid %-30s %zu floats within 1e-5\n", cases[i].name.c_str(), (*outs)[0].size() / 4);
  }
}

// FULLY_CONNECTED with asymmetric_quantize_inputs: each input row gets its own scale and zero
// point, the sums are corrected by the weights' row sums times the zero point. Bit-exact to
// the interpreter (the codes, the int32 sums and the float products all match).
TEST(TfliteOracle, HybridAsymmetricFullyConnectedIsBitExact) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto none = T::ActivationFunctionType_NONE, relu = T::ActivationFunctionType_RELU,
             relu6 = T::ActivationFunctionType_RELU6, relu1 = T::ActivationFunctionType_RELU_N1_TO_1;
  auto fc = [](std::string name, std::vector<int32_t> x, std::vector<int32_t> w, bool per_channel, T::ActivationFunctionType act,
               bool bias, bool keep_dims) {
    HybridCase c{std::move(name), Kind::fc, std::move(x), std::move(w), per_channel, 1, 1, T::Padding_SAME, act, bias};
    c.asymmetric = true;
    c.keep_dims = keep_dims;
    return c;
  };
  const std::vector<HybridCase> cases = {
      fc("asym_fc_b1", {1, 20}, {7, 20}, false, none, true, false),
      fc("asym_fc_b4", {4, 33}, {9, 33}, false, none, true, false),
      fc("asym_fc_b8_relu", {8, 16}, {5, 16}, false, relu, true, false),
      fc("asym_fc_nobias_relu6", {5, 24}, {6, 24}, false, relu6, false, false),
      fc("asym_fc_rank3_flat", {2, 3, 16}, {5, 16}, false, relu1, true, false),
      fc("asym_fc_rank3_keep", {2, 3, 16}, {5, 16}, false, none, true, true),
      fc("asym_fc_rank4_keep_relu", {2, 2, 3, 12}, {4, 12}, false, relu, true, true),
      fc("asym_fc_deep", {4, 1500}, {10, 1500}, false, none, true, false),
      fc("asym_fc_b3_deep_relu6", {3, 700}, {12, 700}, false, relu6, false, false),
  };
  // Per-channel hybrid FULLY_CONNECTED is not in the grid: the oracle's interpreter predates
  // it (it reads the filter's per-tensor scale, 0 there, and gives the bias alone).
  TempDir dir("hybrid_asym_fc");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (size_t i = 0; i < cases.size(); ++i) {
    const HybridCase& c = cases[i];
    const uint32_t seed = 4100 + 10 * static_cast<uint32_t>(i);
    models.push_back(hybrid_model(c, seed).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    const int64_t cols = c.w_shape[1], rows = count(c.x_shape) / cols;
    // One all-zero row in every other case (not in a one-row case: the whole input would be zero).
    const int64_t zero_row = rows > 2 && i % 2 == 0 ? rows - 1 : -1;
    jobs.push_back(Job{c.name, file.string(), {float_bytes(patterned_rows(rows, cols, seed + 2, zero_row))}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    const std::vector<uint8_t>& got = (*outs)[0];
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    ASSERT_EQ(got.size(), want.size());
    int64_t differ = 0;
    for (size_t k = 0; k < got.size(); k += 4) differ += std::memcmp(&got[k], &want[k], 4) != 0;
    EXPECT_EQ(differ, 0) << differ << " of " << got.size() / 4 << " floats differ from the interpreter's bits";
    // The interpreter's output is not degenerate (a constant output catches no wrong code).
    std::vector<float> w(want.size() / 4);
    std::memcpy(w.data(), want.data(), want.size());
    EXPECT_NE(*std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()));
    std::printf("[oracle] hybrid %-30s %zu floats bit-exact\n", cases[i].name.c_str(), w.size());
  }
}

// Per-channel hybrid FULLY_CONNECTED with asymmetric inputs, which the oracle's interpreter
// predates (newer TFLite multiplies each output channel by its own scale): against a
// reference computed here in double from TFLite's definition of the row quantization
// (AsymmetricQuantizeFloats: range and zero point in double, codes in float).
TEST(TfliteOracle, HybridAsymmetricPerChannelFullyConnectedMatchesADoubleReference) {
  for (const auto& [rows, depth, units] : {std::tuple{5, 24, 7}, std::tuple{8, 300, 12}}) {
    HybridCase c{"fc_channel", Kind::fc, {rows, depth}, {units, depth}, true};
    c.asymmetric = true;
    const testing::SingleOpModel m = hybrid_model(c, 900 + static_cast<uint32_t>(depth));
    const std::vector<float> x = patterned_rows(rows, depth, 901 + static_cast<uint32_t>(depth), rows - 1);
    auto outs = run_tessera(m.bytes(), {float_bytes(x)}, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    std::vector<float> y((*outs)[0].size() / 4);
    ASSERT_EQ(y.size(), static_cast<size_t>(rows * units));
    std::memcpy(y.data(), (*outs)[0].data(), (*outs)[0].size());
    const std::vector<uint8_t>& wb = m.tensors[1].data;
    std::vector<float> bias(static_cast<size_t>(units));
    std::memcpy(bias.data(), m.tensors[2].data.data(), bias.size() * 4);
    int64_t bad = 0;
    for (int r = 0; r < rows; ++r) {
      const float* row = x.data() + r * depth;
      double rmin = 0, rmax = 0;
      for (int k = 0; k < depth; ++k) rmin = std::min(rmin, double{row[k]}), rmax = std::max(rmax, double{row[k]});
      double scale = 1;
      int zp = 0;
      std::vector<int> codes(static_cast<size_t>(depth), 0);
      if (rmin != rmax) {
        scale = (rmax - rmin) / 255;
        const double zmin = -128 - rmin / scale, zmax = 127 - rmax / scale;
        const double z = 128 + std::fabs(rmin / scale) < 127 + std::fabs(rmax / scale) ? zmin : zmax;
        zp = z <= -128 ? -128 : z >= 127 ? 127 : static_cast<int>(std::round(z));
        const float inv = 1.0f / static_cast<float>(scale);
        for (int k = 0; k < depth; ++k)
          codes[static_cast<size_t>(k)] = std::clamp(static_cast<int>(std::round(static_cast<float>(zp) + row[k] * inv)), -128, 127);
      }
      for (int o = 0; o < units; ++o) {
        int64_t acc = 0;
        for (int k = 0; k < depth; ++k)
          acc += int64_t{static_cast<int8_t>(wb[static_cast<size_t>(o * depth + k)])} * (codes[static_cast<size_t>(k)] - zp);
        const double want = bias[static_cast<size_t>(o)] +
                            static_cast<double>(acc) * static_cast<float>(scale) * m.tensors[1].scales[static_cast<size_t>(o)];
        const double got = y[static_cast<size_t>(r * units + o)];
        bad += !(std::fabs(got - want) <= 1e-6 * std::max(1.0, std::fabs(want)));
      }
    }
    EXPECT_EQ(bad, 0) << bad << " of " << y.size() << " outputs differ from the double reference (rows " << rows << ", depth "
                      << depth << ")";
  }
}

// The same models without the option are symmetric: on mostly-positive rows the two differ,
// so the asymmetric grid above cannot pass by quantizing symmetrically.
TEST(TfliteOracle, HybridAsymmetricFullyConnectedDiffersFromSymmetric) {
  HybridCase c{"fc", Kind::fc, {4, 40}, {6, 40}};
  const std::vector<uint8_t> x = float_bytes(patterned_rows(4, 40, 77));
  auto sym = run_tessera(hybrid_model(c, 5).bytes(), {x}, "cpu");
  c.asymmetric = true;
  auto asym = run_tessera(hybrid_model(c, 5).bytes(), {x}, "cpu");
  ASSERT_TRUE(sym.ok() && asym.ok());
  EXPECT_NE((*sym)[0], (*asym)[0]);
}

// What the importer refuses, by name: asymmetric input quantization for FULLY_CONNECTED with
// a depth whose int32 sums could overflow, a depthwise filter with one scale for several
// channels (TFLite's hybrid kernel refuses it too), uint8 hybrid weights.
TEST(TfliteOracle, HybridRefusalsNameOperatorAndTensor) {
  HybridCase fc{"fc", Kind::fc, {1, 66312}, {1, 66312}};
  fc.asymmetric = true;
  SingleOpModel asym = hybrid_model(fc, 1);
  HybridCase dw{"dw", Kind::depthwise, {1, 5, 5, 4}, {1, 3, 3, 4}};
  SingleOpModel dw_tensor = hybrid_model(dw, 2);
  SingleOpModel u8w = hybrid_model(HybridCase{"conv", Kind::conv, {1, 5, 5, 2}, {3, 3, 3, 2}}, 3);
  u8w.tensors[1].type = T::TensorType_UINT8;
  u8w.tensors[1].zero_point = 128;
  const std::vector<std::pair<SingleOpModel*, std::vector<std::string>>> refused = {
      {&asym, {"FULLY_CONNECTED", "asymmetric_quantize_inputs", "'w'", "depth 66312", "66311 products"}},
      {&dw_tensor, {"DEPTHWISE_CONV_2D", "one scale per output channel", "'w'"}},
      {&u8w, {"CONV_2D", "int8", "'w'"}},
  };
  for (const auto& [model, phrases] : refused) {
    std::vector<float> x(static_cast<size_t>(count(model->tensors[0].shape)), 0.5f);
    auto r = run_tessera(model->bytes(), {float_bytes(x)}, "cpu");
    ASSERT_FALSE(r.ok()) << phrases[0];
    for (const std::string& p : phrases) EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().to_string();
  }
}

}  // namespace
}  // namespace tessera::oracle
