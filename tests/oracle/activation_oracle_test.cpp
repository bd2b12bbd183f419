// PRELU, ELU, GELU, LOG_SOFTMAX, L2_NORMALIZATION, ARG_MIN and CUMSUM as single-operator
// models against the TFLite interpreter, in float32 and in every quantized form TFLite's
// builtin kernels define for them, on seeded inputs (integer inputs over every code).
// Integer outputs byte-identical, float outputs within 1e-5 relative (op_checks.h). Also the
// importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

struct Q {  // a tensor's quantization; scale 0: plain
  float scale = 0;
  int64_t zero_point = 0;
};

OpTensor tensor(const std::string& name, T::TensorType type, const std::vector<int32_t>& shape, Q q) {
  OpTensor t = testing::activation(name, type, shape);
  t.scale = q.scale;
  t.zero_point = q.zero_point;
  return t;
}

size_t width(T::TensorType t) {
  switch (t) {
    case T::TensorType_FLOAT32: case T::TensorType_INT32: return 4;
    case T::TensorType_INT16: return 2;
    default: return 1;
  }
}

// Input bytes: floats in [lo, hi) for FLOAT32, small integers for INT32, every code
// of an 8- or 16-bit type.
std::vector<uint8_t> input_bytes(T::TensorType type, int64_t n, uint32_t seed, float lo = -4, float hi = 4) {
  if (type == T::TensorType_FLOAT32) return bytes_of(testing::random_floats(static_cast<size_t>(n), seed, lo, hi));
  std::mt19937 rng(seed);
  if (type == T::TensorType_INT32) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<int32_t>(rng() % 2001) - 1000;
    return bytes_of(v);
  }
  return random_bytes(static_cast<size_t>(n) * width(type), seed);
}

OpCheck unary_check(const std::string& name, T::BuiltinOperator code, int version, T::TensorType type,
                    const std::vector<int32_t>& shape, Q in, Q out, uint32_t seed, float lo = -4, float hi = 4) {
  OpCheck c;
  c.name = name;
  c.is_float = type == T::TensorType_FLOAT32;
  c.model.tensors = {tensor("x", type, shape, in), tensor("y", type, shape, out)};
  c.model.op_inputs = {0};
  c.model.op_outputs = {1};
  c.model.code = code;
  c.model.version = version;
  c.inputs.push_back(input_bytes(type, element_count(shape), seed, lo, hi));
  return c;
}

testing::OptionsWriter gelu_options(bool approximate) {
  return [approximate](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_GeluOptions, T::CreateGeluOptions(fb, approximate).Union());
  };
}

TEST(TfliteOracle, EluAndGeluMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto f32 = T::TensorType_FLOAT32, u8 = T::TensorType_UINT8, i8 = T::TensorType_INT8;
  std::vector<OpCheck> checks;
  uint32_t seed = 31000;
  for (const std::vector<int32_t>& shape : {std::vector<int32_t>{2, 3, 5}, std::vector<int32_t>{1, 8, 8, 4}}) {
    const std::string sfx = "_" + std::to_string(element_count(shape));
    checks.push_back(unary_check("elu_f32" + sfx, T::BuiltinOperator_ELU, 1, f32, shape, {}, {}, ++seed, -6, 4));
    // int8 ELU is version 2, newer than the oracle's interpreter, whose version-1 kernel
    // already runs int8: the interpreter judges the same model marked version 1.
    for (auto [nm, qi, qo] : {std::tuple{"elu_i8", Q{0.05f, 10}, Q{0.04f, 3}}, std::tuple{"elu_i8_wide", Q{0.11f, -20}, Q{0.09f, -100}}}) {
      OpCheck c = unary_check(nm + sfx, T::BuiltinOperator_ELU, 2, i8, shape, qi, qo, ++seed);
      c.oracle_model = c.model;
      c.oracle_model->version = 1;
      checks.push_back(std::move(c));
    }
    for (bool approx : {false, true}) {
      const std::string a = approx ? "_tanh" : "_erf";
      OpCheck c = unary_check("gelu_f32" + a + sfx, T::BuiltinOperator_GELU, 1, f32, shape, {}, {}, ++seed, -5, 5);
      c.model.options = gelu_options(approx);
      checks.push_back(std::move(c));
      c = unary_check("gelu_i8" + a + sfx, T::BuiltinOperator_GELU, 2, i8, shape, {0.04f, -5}, {0.03f, -60}, ++seed);
      c.model.options = gelu_options(approx);
      checks.push_back(std::move(c));
      c = unary_check("gelu_u8" + a + sfx, T::BuiltinOperator_GELU, 2, u8, shape, {0.03f, 130}, {0.025f, 20}, ++seed);
      c.model.options = gelu_options(approx);
      checks.push_back(std::move(c));
    }
  }
  EXPECT_EQ(run_op_checks(checks, "elu_gelu"), static_cast<int>(checks.size()));
}

// PRELU: alpha per channel (the common form, a constant), full, and broadcast both ways.
TEST(TfliteOracle, PreluMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    std::vector<int32_t> xs, as;
    bool alpha_constant;
  };
  const std::vector<Case> cases = {
      {{1, 6, 6, 8}, {8}, true}, {{2, 3, 5}, {2, 3, 5}, false}, {{3, 5, 4}, {5, 1}, false}, {{1, 4, 4, 3}, {1, 1, 3}, true}};
  struct Form {
    const char* name;
    T::TensorType type;
    Q x, a, y;
  };
  const std::vector<Form> forms = {
      {"f32", T::TensorType_FLOAT32, {}, {}, {}},
      {"u8", T::TensorType_UINT8, {0.05f, 128}, {0.004f, 60}, {0.06f, 100}},
      {"i8", T::TensorType_INT8, {0.03f, -4}, {0.01f, -20}, {0.02f, 5}},
      {"i8_big_alpha", T::TensorType_INT8, {0.02f, 0}, {0.05f, 3}, {0.07f, -128}},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 32000;
  for (const Form& f : forms)
    for (const Case& k : cases) {
      OpCheck c;
      c.name = std::string("prelu_") + f.name + "_" + std::to_string(element_count(k.xs)) + "x" +
               std::to_string(element_count(k.as)) + (k.alpha_constant ? "_const" : "");
      c.is_float = f.type == T::TensorType_FLOAT32;
      std::vector<int32_t> ys(std::max(k.xs.size(), k.as.size()), 1);
      for (size_t d = 0; d < ys.size(); ++d) {
        const size_t ox = ys.size() - k.xs.size(), oa = ys.size() - k.as.size();
        ys[d] = std::max(d < ox ? 1 : k.xs[d - ox], d < oa ? 1 : k.as[d - oa]);
      }
      OpTensor alpha = tensor("alpha", f.type, k.as, f.a);
      std::vector<uint8_t> alpha_bytes = input_bytes(f.type, element_count(k.as), ++seed, -0.5f, 1.5f);
      if (k.alpha_constant) alpha.data = alpha_bytes;
      c.model.tensors = {tensor("x", f.type, k.xs, f.x), alpha, tensor("y", f.type, ys, f.y)};
      c.model.op_inputs = {0, 1};
      c.model.op_outputs = {2};
      c.model.code = T::BuiltinOperator_PRELU;
      c.inputs.push_back(input_bytes(f.type, element_count(k.xs), ++seed));
      if (!k.alpha_constant) c.inputs.push_back(alpha_bytes);
      checks.push_back(std::move(c));
    }
  EXPECT_EQ(run_op_checks(checks, "prelu"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, LogSoftmaxAndL2NormalizationMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto f32 = T::TensorType_FLOAT32, u8 = T::TensorType_UINT8, i8 = T::TensorType_INT8;
  const Q ls_u8{16.0f / 256, 255}, ls_i8{16.0f / 256, 127}, l2_u8{1.0f / 128, 128}, l2_i8{1.0f / 128, 0};
  std::vector<OpCheck> checks;
  uint32_t seed = 33000;
  for (const std::vector<int32_t>& shape : {std::vector<int32_t>{3, 10}, std::vector<int32_t>{2, 3, 4, 7}, std::vector<int32_t>{1, 300}}) {
    const std::string sfx = "_" + std::to_string(element_count(shape));
    checks.push_back(unary_check("log_softmax_f32" + sfx, T::BuiltinOperator_LOG_SOFTMAX, 1, f32, shape, {}, {}, ++seed, -8, 8));
    checks.push_back(unary_check("log_softmax_u8" + sfx, T::BuiltinOperator_LOG_SOFTMAX, 1, u8, shape, {0.05f, 120}, ls_u8, ++seed));
    checks.push_back(unary_check("log_softmax_u8_fine" + sfx, T::BuiltinOperator_LOG_SOFTMAX, 1, u8, shape, {0.01f, 0}, ls_u8, ++seed));
    checks.push_back(unary_check("log_softmax_i8" + sfx, T::BuiltinOperator_LOG_SOFTMAX, 2, i8, shape, {0.05f, -3}, ls_i8, ++seed));
    checks.push_back(unary_check("log_softmax_i8_wide" + sfx, T::BuiltinOperator_LOG_SOFTMAX, 2, i8, shape, {0.2f, 10}, ls_i8, ++seed));
    checks.push_back(unary_check("l2_norm_f32" + sfx, T::BuiltinOperator_L2_NORMALIZATION, 1, f32, shape, {}, {}, ++seed));
    checks.push_back(unary_check("l2_norm_u8" + sfx, T::BuiltinOperator_L2_NORMALIZATION, 1, u8, shape, {0.05f, 128}, l2_u8, ++seed));
    checks.push_back(unary_check("l2_norm_u8_offset" + sfx, T::BuiltinOperator_L2_NORMALIZATION, 1, u8, shape, {0.02f, 77}, l2_u8, ++seed));
    checks.push_back(unary_check("l2_norm_i8" + sfx, T::BuiltinOperator_L2_NORMALIZATION, 2, i8, shape, {0.05f, 0}, l2_i8, ++seed));
    checks.push_back(unary_check("l2_norm_i8_offset" + sfx, T::BuiltinOperator_L2_NORMALIZATION, 2, i8, shape, {0.03f, -30}, l2_i8, ++seed));
  }
  // Rows near their zero point (small norms, the inverse square root's first steps).
  OpCheck c = unary_check("l2_norm_i8_small", T::BuiltinOperator_L2_NORMALIZATION, 2, i8, {6, 5}, {0.05f, 0}, l2_i8, ++seed);
  for (uint8_t& b : c.inputs[0]) b = static_cast<uint8_t>(static_cast<int8_t>(b % 5) - 2);
  checks.push_back(std::move(c));
  EXPECT_EQ(run_op_checks(checks, "log_softmax_l2"), static_cast<int>(checks.size()));
}

// ARG_MIN over each axis of f32 (with ties), u8, i8 and i32 inputs, int32 and int64 outputs.
TEST(TfliteOracle, ArgMinMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<std::pair<const char*, T::TensorType>> types = {
      {"f32", T::TensorType_FLOAT32}, {"u8", T::TensorType_UINT8}, {"i8", T::TensorType_INT8}, {"i32", T::TensorType_INT32}};
  const std::vector<int32_t> shape = {3, 5, 6};
  std::vector<OpCheck> checks;
  uint32_t seed = 34000;
  for (const auto& [tn, type] : types)
    for (int32_t axis : {0, 1, -1})
      for (T::TensorType out : {T::TensorType_INT32}) {  // the oracle's runner has no int64 tensors
        OpCheck c;
        c.name = std::string("arg_min_") + tn + "_axis" + std::to_string(axis) + "_i32";
        std::vector<int32_t> ys;
        for (int d = 0; d < 3; ++d)
          if (d != (axis < 0 ? axis + 3 : axis)) ys.push_back(shape[static_cast<size_t>(d)]);
        const bool q = type == T::TensorType_UINT8 || type == T::TensorType_INT8;
        c.model.tensors = {tensor("x", type, shape, q ? Q{0.1f, 3} : Q{}),
                           testing::constant("axis", T::TensorType_INT32, {1}, testing::int32_bytes({axis})),
                           tensor("y", out, ys, {})};
        c.model.op_inputs = {0, 1};
        c.model.op_outputs = {2};
        c.model.code = T::BuiltinOperator_ARG_MIN;
        c.model.version = type == T::TensorType_INT8 ? 2 : 1;
        c.model.options = [out](flatbuffers::FlatBufferBuilder& fb) {
          return std::make_pair(T::BuiltinOptions_ArgMinOptions, T::CreateArgMinOptions(fb, out).Union());
        };
        std::vector<uint8_t> x = input_bytes(type, element_count(shape), ++seed, -2, 2);
        if (type == T::TensorType_FLOAT32) {  // a coarse grid: ties, where the first index wins
          std::vector<float> v(x.size() / 4);
          std::memcpy(v.data(), x.data(), x.size());
          for (float& f : v) f = std::round(f * 2) / 2;
          x = bytes_of(v);
        }
        c.inputs.push_back(x);
        checks.push_back(std::move(c));
      }
  EXPECT_EQ(run_op_checks(checks, "arg_min"), static_cast<int>(checks.size()));
}

// CUMSUM over each axis, inclusive and exclusive, forward and reversed; f32, i32, i64.
TEST(TfliteOracle, CumsumMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<std::pair<const char*, T::TensorType>> types = {
      {"f32", T::TensorType_FLOAT32}, {"i32", T::TensorType_INT32}};  // the oracle's runner has no int64 tensors
  const std::vector<int32_t> shape = {2, 7, 5};
  std::vector<OpCheck> checks;
  uint32_t seed = 35000;
  for (const auto& [tn, type] : types)
    for (int32_t axis : {0, 1, -1})
      for (int flags = 0; flags < 4; ++flags) {
        const bool exclusive = flags & 1, reverse = flags & 2;
        if (type != T::TensorType_FLOAT32 && axis == 0 && flags != 3) continue;
        OpCheck c;
        c.name = std::string("cumsum_") + tn + "_axis" + std::to_string(axis) + (exclusive ? "_exclusive" : "") +
                 (reverse ? "_reverse" : "");
        c.is_float = type == T::TensorType_FLOAT32;
        c.model.tensors = {tensor("x", type, shape, {}),
                           testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({axis})),
                           tensor("y", type, shape, {})};
        c.model.op_inputs = {0, 1};
        c.model.op_outputs = {2};
        c.model.code = T::BuiltinOperator_CUMSUM;
        c.model.options = [exclusive, reverse](flatbuffers::FlatBufferBuilder& fb) {
          return std::make_pair(T::BuiltinOptions_CumsumOptions, T::CreateCumsumOptions(fb, exclusive, reverse).Union());
        };
        c.inputs.push_back(input_bytes(type, element_count(shape), ++seed, -3, 3));
        checks.push_back(std::move(c));
      }
  EXPECT_EQ(run_op_checks(checks, "cumsum"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, ActivationAndNormalizationRefusals) {
  const auto f32 = T::TensorType_FLOAT32, u8 = T::TensorType_UINT8, i8 = T::TensorType_INT8, i16 = T::TensorType_INT16;
  // ELU on u8: TFLite's ELU takes f32 and int8 only.
  expect_refused(unary_check("elu_u8", T::BuiltinOperator_ELU, 2, u8, {4, 4}, {0.1f, 128}, {0.1f, 128}, 1).model,
                 {"ELU", "input 'x'", "u8 quantized", "f32 or i8 quantized"});
  // GELU on int16.
  expect_refused(unary_check("gelu_i16", T::BuiltinOperator_GELU, 2, i16, {4, 4}, {0.001f, 0}, {0.001f, 0}, 2).model,
                 {"GELU", "input 'x'", "i16"});
  // LOG_SOFTMAX int8 with an output scale other than 16/256.
  expect_refused(unary_check("log_softmax_i8", T::BuiltinOperator_LOG_SOFTMAX, 2, i8, {2, 8}, {0.05f, 0}, {0.1f, 127}, 3).model,
                 {"LOG_SOFTMAX", "output 'y'", "scale 0.0625"});
  // L2_NORMALIZATION u8 with the wrong output zero point, and with a fused activation.
  expect_refused(unary_check("l2_u8", T::BuiltinOperator_L2_NORMALIZATION, 1, u8, {2, 8}, {0.05f, 128}, {1.0f / 128, 0}, 4).model,
                 {"L2_NORMALIZATION", "output 'y'", "zero point 128"});
  {
    OpCheck c = unary_check("l2_relu", T::BuiltinOperator_L2_NORMALIZATION, 1, f32, {2, 8}, {}, {}, 5);
    c.model.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_L2NormOptions, T::CreateL2NormOptions(fb, T::ActivationFunctionType_RELU).Union());
    };
    expect_refused(c.model, {"L2_NORMALIZATION", "fused activation RELU"});
  }
  {  // PRELU with alpha of another dtype than the input.
    OpCheck c = unary_check("prelu_mixed", T::BuiltinOperator_PRELU, 1, i8, {2, 3, 4}, {0.05f, 0}, {0.05f, 0}, 6);
    c.model.tensors.insert(c.model.tensors.begin() + 1, tensor("alpha", f32, {4}, {}));
    c.model.op_inputs = {0, 1};
    c.model.op_outputs = {2};
    expect_refused(c.model, {"PRELU", "tensor 'alpha'", "f32"});
  }
  {  // PRELU whose alpha would widen the input (the interpreter keeps the input's shape).
    OpCheck c = unary_check("prelu_widen", T::BuiltinOperator_PRELU, 1, f32, {3, 1, 4}, {}, {}, 7);
    c.model.tensors.insert(c.model.tensors.begin() + 1, tensor("alpha", f32, {1, 5, 1}, {}));
    c.model.tensors[2].shape = {3, 5, 4};
    c.model.op_inputs = {0, 1};
    c.model.op_outputs = {2};
    expect_refused(c.model, {"PRELU", "alpha 'alpha'", "input 'x'"});
  }
  {  // ELU int8 marked version 3 (beyond what TFLite defines).
    OpCheck c = unary_check("elu_v3", T::BuiltinOperator_ELU, 3, i8, {4, 4}, {0.1f, 0}, {0.1f, 0}, 8);
    expect_refused(c.model, {"ELU", "version 3"});
  }
  {  // CUMSUM with an axis outside the input.
    OpCheck c;
    c.model.tensors = {tensor("x", f32, {3, 4}, {}), testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({2})),
                       tensor("y", f32, {3, 4}, {})};
    c.model.op_inputs = {0, 1};
    c.model.op_outputs = {2};
    c.model.code = T::BuiltinOperator_CUMSUM;
    expect_refused(c.model, {"CUMSUM", "axis 2", "input 'x' of rank 2"});
  }
}

}  // namespace
}  // namespace tessera::oracle
