// TRANSPOSE_CONV (f32, u8, i8 per-channel, int16x8) and TFLite's 16x8 forms of CONV_2D,
// DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB and LEAKY_RELU: single-operator models with
// seeded weights and inputs against the TFLite interpreter. Integer outputs byte-identical,
// float outputs within 1e-5 relative (of the larger value and the output's largest
// magnitude). Also the importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

enum class Form { f32, u8, i8, i16 };

const char* form_name(Form f) { return f == Form::f32 ? "f32" : f == Form::u8 ? "u8" : f == Form::i8 ? "i8" : "i16x8"; }

int64_t count(const std::vector<int32_t>& s) { return element_count(s); }

T::TensorType act_type(Form f) {
  return f == Form::f32 ? T::TensorType_FLOAT32 : f == Form::u8 ? T::TensorType_UINT8 : f == Form::i8 ? T::TensorType_INT8 : T::TensorType_INT16;
}

// An activation tensor of the form, with its quantization.
OpTensor act_tensor(const std::string& name, Form f, std::vector<int32_t> shape, float scale) {
  OpTensor t = testing::activation(name, act_type(f), std::move(shape));
  if (f != Form::f32) {
    t.scale = scale;
    t.zero_point = f == Form::u8 ? 131 : f == Form::i8 ? -7 : 0;
  }
  return t;
}

// Seeded random bytes of an activation: floats in [-1, 1), integers over all their codes.
std::vector<uint8_t> random_activation(Form f, int64_t n, uint32_t seed) {
  if (f == Form::f32) return bytes_of(testing::random_floats(static_cast<size_t>(n), seed));
  return random_bytes(static_cast<size_t>(n * (f == Form::i16 ? 2 : 1)), seed);
}

// Weights [oc, ...] of the form (channel axis 0), their quantization, and a bias of `oc`.
struct Weights {
  OpTensor w, bias;
};
Weights weights(Form f, std::vector<int32_t> shape, int channel_axis, bool per_channel, uint32_t seed,
                bool int32_bias_for_i16 = false) {
  const int32_t oc = shape[static_cast<size_t>(channel_axis)];
  const int64_t n = count(shape);
  Weights r;
  if (f == Form::f32) {
    r.w = testing::constant("w", T::TensorType_FLOAT32, shape, bytes_of(testing::random_floats(static_cast<size_t>(n), seed)));
    r.bias = testing::constant("b", T::TensorType_FLOAT32, {oc}, bytes_of(testing::random_floats(static_cast<size_t>(oc), seed + 1)));
    return r;
  }
  std::vector<uint8_t> wb = random_bytes(static_cast<size_t>(n), seed);
  if (f != Form::u8)
    for (uint8_t& b : wb)
      if (b == 0x80) b = 0x81;  // symmetric int8 weights stay in [-127, 127]
  r.w = testing::constant("w", f == Form::u8 ? T::TensorType_UINT8 : T::TensorType_INT8, shape, wb);
  if (per_channel) {
    for (int32_t k = 0; k < oc; ++k) r.w.scales.push_back(0.004f + 0.0013f * static_cast<float>(k % 5));
    r.w.quantized_dimension = channel_axis;
  } else {
    r.w.scale = 0.0061f;
    r.w.zero_point = f == Form::u8 ? 121 : 0;
  }
  std::vector<int64_t> b64(static_cast<size_t>(oc));
  std::vector<int32_t> b32(static_cast<size_t>(oc));
  const std::vector<uint8_t> rb = random_bytes(static_cast<size_t>(oc) * 2, seed + 1);
  for (int32_t k = 0; k < oc; ++k) {
    const int32_t v = static_cast<int16_t>(rb[2 * k] | (rb[2 * k + 1] << 8));  // [-32768, 32767]
    b64[k] = static_cast<int64_t>(v) * 37;                                      // int16x8 biases are wide
    b32[k] = v / 8;
  }
  r.bias = f == Form::i16 && !int32_bias_for_i16 ? testing::constant("b", T::TensorType_INT64, {oc}, bytes_of(b64))
                          : testing::constant("b", T::TensorType_INT32, {oc}, bytes_of(b32));
  return r;
}

// The output scale that keeps the outputs of a depth-`k` dot product of random codes mostly
// inside the output's range (about 1/4 of the range for one standard deviation).
float output_scale(Form f, float in_s, float w_s, int64_t k) {
  return in_s * w_s * std::sqrt(static_cast<float>(k)) * (f == Form::i16 ? 170.0f : 140.0f);
}

using Check = OpCheck;

void run_checks(std::vector<Check>& checks, const char* what) {
  TESSERA_REQUIRE_ORACLE(script);
  run_op_checks(checks, what);
}

struct TransposeCase {
  std::vector<int32_t> x_shape;  // [N, H, W, IC]
  int32_t oc, kh, kw, stride;
  T::Padding padding;
  bool bias = true;
  T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
};

// The output size TFLite's converter writes for a transposed convolution.
int32_t transpose_out(int32_t in, int32_t k, int32_t stride, T::Padding p) {
  return p == T::Padding_SAME ? in * stride : (in - 1) * stride + k;
}

Check transpose_check(const TransposeCase& c, Form f, bool per_channel, bool runtime_shape, uint32_t seed) {
  Check ch;
  ch.name = std::string("tconv_") + form_name(f) + (per_channel ? "_pc" : "") + "_" + std::to_string(c.x_shape[1]) + "x" +
            std::to_string(c.x_shape[2]) + "x" + std::to_string(c.x_shape[3]) + "_k" + std::to_string(c.kh) +
            std::to_string(c.kw) + "_s" + std::to_string(c.stride) + (c.padding == T::Padding_SAME ? "_same" : "_valid") +
            (c.bias ? "" : "_nobias") + (c.act != T::ActivationFunctionType_NONE ? "_relu" : "") + (runtime_shape ? "_rtshape" : "");
  ch.is_float = f == Form::f32;
  const std::vector<int32_t> out = {c.x_shape[0], transpose_out(c.x_shape[1], c.kh, c.stride, c.padding),
                                    transpose_out(c.x_shape[2], c.kw, c.stride, c.padding), c.oc};
  Weights w = weights(f, {c.oc, c.kh, c.kw, c.x_shape[3]}, 0, per_channel, seed);
  const float in_s = f == Form::i16 ? 1.0f / 4096 : 0.02f;
  const float w_s = per_channel ? 0.006f : 0.0061f;
  SingleOpModel& m = ch.model;
  OpTensor shape_t = runtime_shape ? testing::activation("out_shape", T::TensorType_INT32, {4})
                                   : testing::constant("out_shape", T::TensorType_INT32, {4}, testing::int32_bytes(out));
  m.tensors = {shape_t, w.w, act_tensor("x", f, c.x_shape, in_s)};
  m.op_inputs = {0, 1, 2};
  if (c.bias) {
    m.tensors.push_back(w.bias);
    m.op_inputs.push_back(3);
  }
  m.op_outputs = {static_cast<int32_t>(m.tensors.size())};
  m.tensors.push_back(act_tensor("y", f, out, output_scale(f, in_s, w_s, c.kh * c.kw * c.x_shape[3] / (c.stride * c.stride) + 1)));
  m.code = T::BuiltinOperator_TRANSPOSE_CONV;
  m.version = c.act != T::ActivationFunctionType_NONE ? 4 : 3;
  const TransposeCase cc = c;
  m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_TransposeConvOptions,
                          T::CreateTransposeConvOptions(fb, cc.padding, cc.stride, cc.stride, cc.act).Union());
  };
  if (runtime_shape) {
    m.model_inputs = {0, 2};
    ch.inputs.push_back(testing::int32_bytes(out));
  }
  ch.inputs.push_back(random_activation(f, count(c.x_shape), seed + 2));
  if (c.act == T::ActivationFunctionType_RELU) {
    // The oracle's interpreter takes TRANSPOSE_CONV up to version 3, before the fused
    // activation (version 4): it runs the model without it, and ReLU, which TFLite applies
    // as a clamp of the requantized output at the output's zero point (at 0 for floats),
    // is applied to its output here.
    ch.oracle_model = m;
    ch.oracle_model->version = 3;
    ch.oracle_model->options = [cc](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_TransposeConvOptions,
                            T::CreateTransposeConvOptions(fb, cc.padding, cc.stride, cc.stride).Union());
    };
    const OpTensor y = m.tensors.back();
    ch.post = [f, y](std::vector<uint8_t>& out) {
      for (size_t k = 0; k < out.size(); k += f == Form::f32 ? 4 : f == Form::i16 ? 2 : 1) {
        if (f == Form::f32) {
          float v;
          std::memcpy(&v, &out[k], 4);
          v = std::max(v, 0.0f);
          std::memcpy(&out[k], &v, 4);
        } else if (f == Form::u8) {
          out[k] = static_cast<uint8_t>(std::max<int>(out[k], static_cast<int>(y.zero_point)));
        } else if (f == Form::i8) {
          out[k] = static_cast<uint8_t>(std::max<int>(static_cast<int8_t>(out[k]), static_cast<int>(y.zero_point)));
        } else {
          int16_t v;
          std::memcpy(&v, &out[k], 2);
          v = std::max<int16_t>(v, 0);
          std::memcpy(&out[k], &v, 2);
        }
      }
    };
  }
  return ch;
}

TEST(TfliteOracle, TransposeConvMatchesTheInterpreter) {
  const auto relu = T::ActivationFunctionType_RELU;
  const std::vector<TransposeCase> cases = {
      {{1, 5, 5, 3}, 4, 3, 3, 1, T::Padding_SAME},
      {{1, 4, 6, 5}, 3, 3, 3, 2, T::Padding_SAME},
      {{2, 3, 4, 4}, 6, 4, 4, 2, T::Padding_SAME, false},
      {{1, 4, 3, 2}, 5, 3, 2, 2, T::Padding_VALID},
      {{1, 3, 3, 8}, 4, 2, 2, 2, T::Padding_VALID, true, relu},
      {{1, 2, 5, 16}, 8, 3, 4, 3, T::Padding_SAME},
  };
  std::vector<Check> checks;
  uint32_t seed = 9100;
  for (const TransposeCase& c : cases) {
    checks.push_back(transpose_check(c, Form::f32, false, false, seed += 10));
    checks.push_back(transpose_check(c, Form::u8, false, false, seed += 10));
    checks.push_back(transpose_check(c, Form::i8, true, false, seed += 10));
    checks.push_back(transpose_check(c, Form::i16, true, false, seed += 10));
  }
  checks.push_back(transpose_check(cases[1], Form::i8, false, false, seed += 10));
  checks.push_back(transpose_check(cases[1], Form::i16, true, true, seed += 10));  // output_shape fed at run time
  Check i32_bias = transpose_check(cases[0], Form::i16, true, false, seed += 10);
  i32_bias.name += "_i32bias";
  i32_bias.model.tensors[3] = weights(Form::i16, {cases[0].oc, 3, 3, 3}, 0, true, seed, true).bias;
  checks.push_back(std::move(i32_bias));
  run_checks(checks, "transpose_conv");
}

// CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED in the 16x8 form, per-channel and per-tensor.
TEST(TfliteOracle, Int16x8ConvolutionsMatchTheInterpreter) {
  std::vector<Check> checks;
  uint32_t seed = 9500;
  struct ConvCase {
    const char* name;
    T::BuiltinOperator code;
    std::vector<int32_t> x, w;
    bool per_channel;
    int stride;
    T::Padding padding;
    T::ActivationFunctionType act;
    enum Bias { i64, i32, absent } bias = i64;  // TFLite's kernels take each bias type its own way
  };
  const auto none = T::ActivationFunctionType_NONE, relu = T::ActivationFunctionType_RELU;
  const std::vector<ConvCase> cases = {
      {"conv_pc_i32bias", T::BuiltinOperator_CONV_2D, {1, 6, 6, 5}, {4, 3, 3, 5}, true, 1, T::Padding_SAME, none, ConvCase::i32},
      {"fc_pt_i32bias", T::BuiltinOperator_FULLY_CONNECTED, {2, 48}, {7, 48}, false, 1, T::Padding_SAME, none, ConvCase::i32},
      {"fc_pt_nobias", T::BuiltinOperator_FULLY_CONNECTED, {2, 48}, {7, 48}, false, 1, T::Padding_SAME, none, ConvCase::absent},
      {"conv_pc_same", T::BuiltinOperator_CONV_2D, {1, 7, 7, 5}, {6, 3, 3, 5}, true, 1, T::Padding_SAME, none},
      {"conv_pc_valid_s2_relu", T::BuiltinOperator_CONV_2D, {2, 9, 8, 4}, {3, 3, 3, 4}, true, 2, T::Padding_VALID, relu},
      {"conv_pt_1x1", T::BuiltinOperator_CONV_2D, {1, 5, 5, 24}, {8, 1, 1, 24}, false, 1, T::Padding_SAME, none},
      {"dw_pc_same", T::BuiltinOperator_DEPTHWISE_CONV_2D, {1, 8, 8, 6}, {1, 3, 3, 6}, true, 1, T::Padding_SAME, none},
      {"dw_pc_mult2_s2", T::BuiltinOperator_DEPTHWISE_CONV_2D, {1, 9, 9, 3}, {1, 3, 3, 6}, true, 2, T::Padding_VALID, relu},
      {"fc_pt", T::BuiltinOperator_FULLY_CONNECTED, {3, 40}, {9, 40}, false, 1, T::Padding_SAME, none},
      {"fc_pt_relu", T::BuiltinOperator_FULLY_CONNECTED, {2, 64}, {5, 64}, false, 1, T::Padding_SAME, relu},
  };
  for (const ConvCase& c : cases) {
    Check ch;
    ch.name = c.name;
    const bool dw = c.code == T::BuiltinOperator_DEPTHWISE_CONV_2D, fc = c.code == T::BuiltinOperator_FULLY_CONNECTED;
    const int axis = dw ? 3 : 0;
    Weights w = weights(Form::i16, c.w, axis, c.per_channel, seed += 10, c.bias == ConvCase::i32);
    std::vector<int32_t> y;
    int64_t depth = fc ? c.w[1] : (dw ? c.w[1] * c.w[2] : c.w[1] * c.w[2] * c.w[3]);
    if (fc) {
      y = {static_cast<int32_t>(count(c.x) / c.w[1]), c.w[0]};
    } else {
      auto out = [&](int32_t in, int32_t k) { return c.padding == T::Padding_SAME ? (in + c.stride - 1) / c.stride : (in - k + c.stride) / c.stride; };
      y = {c.x[0], out(c.x[1], c.w[1]), out(c.x[2], c.w[2]), c.w[static_cast<size_t>(axis)]};
    }
    const float in_s = 1.0f / 2048;
    SingleOpModel& m = ch.model;
    m.tensors = {act_tensor("x", Form::i16, c.x, in_s), w.w, w.bias, act_tensor("y", Form::i16, y, output_scale(Form::i16, in_s, 0.006f, depth))};
    m.op_inputs = {0, 1, c.bias == ConvCase::absent ? -1 : 2};
    m.op_outputs = {3};
    m.code = c.code;
    const ConvCase cc = c;
    if (fc) {
      m.version = 7;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_FullyConnectedOptions, T::CreateFullyConnectedOptions(fb, cc.act).Union());
      };
    } else if (dw) {
      m.version = 5;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_DepthwiseConv2DOptions,
                              T::CreateDepthwiseConv2DOptions(fb, cc.padding, cc.stride, cc.stride, cc.w[3] / cc.x[3], cc.act).Union());
      };
    } else {
      m.version = 4;
      m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_Conv2DOptions, T::CreateConv2DOptions(fb, cc.padding, cc.stride, cc.stride, cc.act).Union());
      };
    }
    ch.inputs.push_back(random_activation(Form::i16, count(c.x), seed + 5));
    checks.push_back(std::move(ch));
  }
  run_checks(checks, "int16x8");
}

// ADD / SUB (general scales, with and without broadcasting) and LEAKY_RELU on int16.
TEST(TfliteOracle, Int16AddSubLeakyReluMatchTheInterpreter) {
  std::vector<Check> checks;
  uint32_t seed = 9800;
  struct BinCase {
    const char* name;
    T::BuiltinOperator code;
    std::vector<int32_t> a, b;
    float sa, sb, sy;
    T::ActivationFunctionType act;
  };
  const auto none = T::ActivationFunctionType_NONE;
  const std::vector<BinCase> bins = {
      {"add_same_shape", T::BuiltinOperator_ADD, {1, 4, 5, 6}, {1, 4, 5, 6}, 0.000585f, 0.000807f, 0.001024f, none},
      {"add_broadcast_relu", T::BuiltinOperator_ADD, {2, 3, 7}, {1, 1, 7}, 0.0021f, 0.00033f, 0.0017f, T::ActivationFunctionType_RELU},
      {"add_output_saturates", T::BuiltinOperator_ADD, {64}, {64}, 0.01f, 0.013f, 0.0031f, none},
      {"sub_same_shape", T::BuiltinOperator_SUB, {1, 2, 16, 2}, {1, 2, 16, 2}, 0.000969f, 0.000009f, 0.000594f, none},
      {"sub_broadcast", T::BuiltinOperator_SUB, {3, 8}, {8}, 0.0013f, 0.0029f, 0.0041f, none},
  };
  for (const BinCase& c : bins) {
    Check ch;
    ch.name = c.name;
    SingleOpModel& m = ch.model;
    m.tensors = {act_tensor("a", Form::i16, c.a, c.sa), act_tensor("b", Form::i16, c.b, c.sb),
                 act_tensor("y", Form::i16, c.a, c.sy)};
    m.op_inputs = {0, 1};
    m.op_outputs = {2};
    m.code = c.code;
    m.version = c.code == T::BuiltinOperator_ADD ? 3 : 3;
    const BinCase cc = c;
    m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
      if (cc.code == T::BuiltinOperator_ADD)
        return std::make_pair(T::BuiltinOptions_AddOptions, T::CreateAddOptions(fb, cc.act, false).Union());
      return std::make_pair(T::BuiltinOptions_SubOptions, T::CreateSubOptions(fb, cc.act, false).Union());
    };
    ch.inputs = {random_activation(Form::i16, count(c.a), seed += 10), random_activation(Form::i16, count(c.b), seed += 10)};
    checks.push_back(std::move(ch));
  }
  for (const auto& [alpha, sy] : std::vector<std::pair<float, float>>{{0.3f, 0.001749f}, {0.01f, 0.0009f}, {0.2f, 0.004f}}) {
    Check ch;
    ch.name = "leaky_relu_alpha" + std::to_string(alpha).substr(0, 4);
    SingleOpModel& m = ch.model;
    m.tensors = {act_tensor("x", Form::i16, {1, 6, 7, 5}, 0.0019f), act_tensor("y", Form::i16, {1, 6, 7, 5}, sy)};
    m.op_inputs = {0};
    m.op_outputs = {1};
    m.code = T::BuiltinOperator_LEAKY_RELU;
    m.version = 2;
    const float a = alpha;
    m.options = [a](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_LeakyReluOptions, T::CreateLeakyReluOptions(fb, a).Union());
    };
    ch.inputs = {random_activation(Form::i16, 6 * 7 * 5, seed += 10)};
    checks.push_back(std::move(ch));
  }
  run_checks(checks, "int16");
}

// Refusals name the operator and the tensor (or the disagreement).
TEST(TfliteOracle, TransposeConvAndInt16RefusalsAreNamed) {
  auto expect_refused = [](const SingleOpModel& m, std::vector<std::string> phrases) {
    const std::vector<uint8_t> bytes = m.bytes();
    std::vector<std::vector<uint8_t>> inputs;
    auto r = run_tessera(bytes, inputs, "cpu");
    ASSERT_FALSE(r.ok());
    const std::string msg = r.status().to_string();
    for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  };
  const TransposeCase base{{1, 4, 4, 3}, 5, 3, 3, 2, T::Padding_SAME};
  {  // output channels that are not the filter's
    Check c = transpose_check(base, Form::i8, true, false, 1);
    c.model.tensors[0] = testing::constant("out_shape", T::TensorType_INT32, {4}, testing::int32_bytes({1, 8, 8, 4}));
    c.model.tensors.back().shape = {1, 8, 8, 4};
    expect_refused(c.model, {"TRANSPOSE_CONV", "output shape [1,8,8,4]", "filter 'w'"});
  }
  {  // a spatial size the strides cannot give back
    Check c = transpose_check(base, Form::f32, false, false, 2);
    c.model.tensors[0] = testing::constant("out_shape", T::TensorType_INT32, {4}, testing::int32_bytes({1, 11, 8, 5}));
    c.model.tensors.back().shape = {1, 11, 8, 5};
    expect_refused(c.model, {"TRANSPOSE_CONV", "disagrees", "SAME"});
  }
  {  // a rank-3 filter
    Check c = transpose_check(base, Form::f32, false, false, 3);
    c.model.tensors[1].shape = {5, 9, 3};
    expect_refused(c.model, {"TRANSPOSE_CONV", "filter 'w' must be rank 4"});
  }
  {  // hybrid weights
    Check c = transpose_check(base, Form::f32, false, false, 4);
    Weights w = weights(Form::i8, {5, 3, 3, 3}, 0, true, 5);
    c.model.tensors[1] = w.w;
    expect_refused(c.model, {"TRANSPOSE_CONV", "hybrid", "'w'"});
  }
  {  // int16 ADD with power-of-two scales and pot_scale_int16 set: TFLite's shift-only kernel
    SingleOpModel m;
    m.tensors = {act_tensor("a", Form::i16, {8}, 1.0f / 1024), act_tensor("b", Form::i16, {8}, 1.0f / 512),
                 act_tensor("y", Form::i16, {8}, 1.0f / 256)};
    m.op_inputs = {0, 1};
    m.op_outputs = {2};
    m.code = T::BuiltinOperator_ADD;
    m.version = 3;
    expect_refused(m, {"ADD", "power-of-two scales"});
  }
  {  // int16 with a non-zero zero point
    SingleOpModel m;
    OpTensor a = act_tensor("a", Form::i16, {8}, 0.001f);
    a.zero_point = 3;
    m.tensors = {a, act_tensor("b", Form::i16, {8}, 0.002f), act_tensor("y", Form::i16, {8}, 0.003f)};
    m.op_inputs = {0, 1};
    m.op_outputs = {2};
    m.code = T::BuiltinOperator_SUB;
    m.version = 3;
    expect_refused(m, {"SUB", "'a'", "zero point 3"});
  }
  for (const bool depthwise : {false, true}) {  // forms TFLite's own kernels refuse
    SingleOpModel m;
    m.tensors = {act_tensor("x", Form::i16, {1, 5, 5, 4}, 0.001f), weights(Form::i16, {depthwise ? 1 : 4, 3, 3, 4}, depthwise ? 3 : 0, true, 6, true).w,
                 weights(Form::i16, {4, 3, 3, 4}, 0, true, 6, true).bias, act_tensor("y", Form::i16, {1, 5, 5, 4}, 0.01f)};
    m.op_outputs = {3};
    if (depthwise) {
      m.op_inputs = {0, 1, 2};  // an int32 bias
      m.code = T::BuiltinOperator_DEPTHWISE_CONV_2D;
      m.version = 5;
      m.options = [](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_DepthwiseConv2DOptions, T::CreateDepthwiseConv2DOptions(fb, T::Padding_SAME, 1, 1, 1).Union());
      };
      expect_refused(m, {"DEPTHWISE_CONV_2D", "i64 bias"});
    } else {
      m.op_inputs = {0, 1, -1};  // no bias
      m.code = T::BuiltinOperator_CONV_2D;
      m.version = 4;
      m.options = [](flatbuffers::FlatBufferBuilder& fb) {
        return std::make_pair(T::BuiltinOptions_Conv2DOptions, T::CreateConv2DOptions(fb, T::Padding_SAME, 1, 1).Union());
      };
      expect_refused(m, {"CONV_2D", "needs a bias"});
    }
  }
}

}  // namespace
}  // namespace tessera::oracle
