// SUM, REDUCE_MAX, REDUCE_MIN and REDUCE_PROD (f32 and TFLite's quantized forms) as
// single-operator models against the TFLite interpreter: seeded inputs over every code,
// axes inner, outer, several and all, with and without keep_dims. Integer outputs
// byte-identical, float outputs within 1e-5 relative (of the larger value and the output's
// largest magnitude). Also the importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include <cmath>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

enum class Form { f32, u8, i8, i16 };

const char* form_name(Form f) { return f == Form::f32 ? "f32" : f == Form::u8 ? "u8" : f == Form::i8 ? "i8" : "i16"; }

T::TensorType type_of(Form f) {
  return f == Form::f32 ? T::TensorType_FLOAT32 : f == Form::u8 ? T::TensorType_UINT8 : f == Form::i8 ? T::TensorType_INT8 : T::TensorType_INT16;
}

int64_t count(const std::vector<int32_t>& s) { return element_count(s); }

OpTensor tensor(const std::string& name, Form f, std::vector<int32_t> shape, float scale, int64_t zp) {
  OpTensor t = testing::activation(name, type_of(f), std::move(shape));
  if (f != Form::f32) {
    t.scale = scale;
    t.zero_point = zp;
  }
  return t;
}

using Check = OpCheck;

void run_checks(std::vector<Check>& checks, const char* what) {
  TESSERA_REQUIRE_ORACLE(script);
  run_op_checks(checks, what);
}

struct ReduceCase {
  std::vector<int32_t> shape;
  std::vector<int32_t> axes;
  bool keep;
};

const std::vector<ReduceCase> kCases = {
    {{2, 3, 4, 5}, {1, 2}, true},  {{3, 7}, {1}, false},      {{2, 3, 4}, {0, 2}, false},
    {{4, 5, 6}, {-1}, true},       {{2, 5, 3}, {0, 1, 2}, false}, {{1, 4, 4, 8}, {1, 2}, false},
    {{6, 4}, {0, -2}, false},      // a repeated axis counts once
};

std::vector<int32_t> reduced_shape(const ReduceCase& c) {
  std::vector<int32_t> out;
  const int rank = static_cast<int>(c.shape.size());
  for (int d = 0; d < rank; ++d) {
    bool red = false;
    for (int32_t a : c.axes) red = red || (a < 0 ? a + rank : a) == d;
    if (!red) out.push_back(c.shape[static_cast<size_t>(d)]);
    else if (c.keep) out.push_back(1);
  }
  return out;
}

// One model: `code` over c; input quantization (scale, zp) and output quantization.
Check reduce_check(T::BuiltinOperator code, const char* op, const ReduceCase& c, Form f, float in_s, int64_t in_zp,
                   float out_s, int64_t out_zp, uint32_t seed, const std::string& suffix = "") {
  Check ch;
  ch.name = std::string(op) + "_" + form_name(f) + "_" + std::to_string(c.shape.size()) + "d";
  for (int32_t a : c.axes) ch.name += "_" + std::to_string(a);
  ch.name += (c.keep ? "_keep" : "") + suffix;
  ch.is_float = f == Form::f32;
  SingleOpModel& m = ch.model;
  m.tensors = {tensor("x", f, c.shape, in_s, in_zp),
               testing::constant("axes", T::TensorType_INT32, {static_cast<int32_t>(c.axes.size())}, testing::int32_bytes(c.axes)),
               tensor("y", f, reduced_shape(c), out_s, out_zp)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = code;
  m.version = f == Form::i16 ? (code == T::BuiltinOperator_REDUCE_PROD ? 2 : 3) : f == Form::i8 ? 2 : f == Form::u8 && code == T::BuiltinOperator_SUM ? 2 : 1;
  const bool keep = c.keep;
  m.options = [keep](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_ReducerOptions, T::CreateReducerOptions(fb, keep).Union());
  };
  const int64_t n = count(c.shape);
  if (f == Form::f32) {
    const std::vector<float> v = testing::random_floats(static_cast<size_t>(n), seed, -1.0f, 1.0f);
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    ch.inputs.push_back(std::move(b));
  } else {
    ch.inputs.push_back(random_bytes(static_cast<size_t>(n * (f == Form::i16 ? 2 : 1)), seed));
  }
  return ch;
}

int64_t reduced_count(const ReduceCase& c) { return count(c.shape) / std::max<int64_t>(count(reduced_shape(c)), 1); }

TEST(TfliteOracle, SumMatchesTheInterpreter) {
  std::vector<Check> checks;
  uint32_t seed = 12000;
  for (const ReduceCase& c : kCases) {
    // Random codes: a sum of n has a deviation of about 74 sqrt(n) codes; the output scale
    // keeps most sums in range (the rest wrap, as TFLite's plain cast does).
    const float spread = std::sqrt(static_cast<float>(reduced_count(c))) * 1.9f;
    checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", c, Form::f32, 0, 0, 0, 0, seed += 7));
    checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", c, Form::u8, 0.02f, 131, 0.02f * spread, 120, seed += 7));
    checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", c, Form::i8, 0.013f, -9, 0.013f * spread, 5, seed += 7));
  }
  // Output quantization equal to the input's: TFLite adds the codes in the storage type.
  checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", kCases[1], Form::i8, 0.05f, 0, 0.05f, 0, seed += 7, "_same_q"));
  checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", kCases[0], Form::u8, 0.05f, 3, 0.05f, 3, seed += 7, "_same_q"));
  // A narrow output: many sums leave the output's range.
  checks.push_back(reduce_check(T::BuiltinOperator_SUM, "sum", kCases[0], Form::i8, 0.02f, 11, 0.03f, -4, seed += 7, "_narrow"));
  run_checks(checks, "sum");
}

TEST(TfliteOracle, ReduceMaxMinMatchTheInterpreter) {
  std::vector<Check> checks;
  uint32_t seed = 12500;
  for (const auto& [code, op] : {std::pair{T::BuiltinOperator_REDUCE_MAX, "reduce_max"}, std::pair{T::BuiltinOperator_REDUCE_MIN, "reduce_min"}})
    for (const ReduceCase& c : kCases) {
      checks.push_back(reduce_check(code, op, c, Form::f32, 0, 0, 0, 0, seed += 7));
      checks.push_back(reduce_check(code, op, c, Form::u8, 0.02f, 131, 0.02f, 131, seed += 7));
      checks.push_back(reduce_check(code, op, c, Form::i8, 0.013f, -9, 0.013f, -9, seed += 7));
      checks.push_back(reduce_check(code, op, c, Form::i16, 0.0004f, 0, 0.0004f, 0, seed += 7));
    }
  run_checks(checks, "reduce_max_min");
}

TEST(TfliteOracle, ReduceProdMatchesTheInterpreter) {
  std::vector<Check> checks;
  uint32_t seed = 13000;
  // Products of few values near 1 in magnitude keep the output in range.
  const std::vector<ReduceCase> cases = {
      {{3, 4}, {1}, false}, {{2, 3, 5}, {1}, true}, {{4, 2, 3}, {0, 2}, false}, {{5, 2}, {0}, false}, {{2, 2, 2}, {0, 1, 2}, true},
  };
  for (const ReduceCase& c : cases) {
    checks.push_back(reduce_check(T::BuiltinOperator_REDUCE_PROD, "reduce_prod", c, Form::f32, 0, 0, 0, 0, seed += 7));
    checks.push_back(reduce_check(T::BuiltinOperator_REDUCE_PROD, "reduce_prod", c, Form::i8, 1.0f / 80, 3, 1.0f / 50, -2, seed += 7));
    checks.push_back(reduce_check(T::BuiltinOperator_REDUCE_PROD, "reduce_prod", c, Form::i16, 1.0f / 20000, 0, 1.0f / 16000, 0, seed += 7));
  }
  run_checks(checks, "reduce_prod");
}

// Refusals name the operator and the tensor.
TEST(TfliteOracle, ReductionRefusalsAreNamed) {
  auto expect_refused = [](const SingleOpModel& m, std::vector<std::string> phrases) {
    std::vector<std::vector<uint8_t>> inputs;
    auto r = run_tessera(m.bytes(), inputs, "cpu");
    ASSERT_FALSE(r.ok());
    const std::string msg = r.status().to_string();
    for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  };
  {  // an axis past the input's rank
    Check c = reduce_check(T::BuiltinOperator_SUM, "sum", kCases[1], Form::f32, 0, 0, 0, 0, 1);
    c.model.tensors[1] = testing::constant("axes", T::TensorType_INT32, {1}, testing::int32_bytes({2}));
    expect_refused(c.model, {"SUM", "axis 2", "input 'x' of rank 2"});
  }
  {  // quantized max with another output quantization
    Check c = reduce_check(T::BuiltinOperator_REDUCE_MAX, "reduce_max", kCases[1], Form::i8, 0.02f, 1, 0.03f, 1, 2);
    expect_refused(c.model, {"REDUCE_MAX", "output 'y'", "input 'x'"});
  }
  {  // u8 product: not a form TFLite defines
    Check c = reduce_check(T::BuiltinOperator_REDUCE_PROD, "reduce_prod", kCases[1], Form::u8, 0.02f, 1, 0.03f, 1, 3);
    expect_refused(c.model, {"REDUCE_PROD", "input 'x'", "u8"});
  }
  {  // int16 sum to another scale: the interpreter refuses it (it adds int16 codes)
    Check c = reduce_check(T::BuiltinOperator_SUM, "sum", kCases[1], Form::i16, 0.02f, 0, 0.03f, 0, 4);
    c.model.version = 2;
    expect_refused(c.model, {"SUM", "output 'y'", "quantization of input 'x'"});
  }
  {  // axes that are not constant
    Check c = reduce_check(T::BuiltinOperator_REDUCE_MIN, "reduce_min", kCases[1], Form::f32, 0, 0, 0, 0, 5);
    c.model.tensors[1].data.clear();
    expect_refused(c.model, {"REDUCE_MIN"});
  }
}

}  // namespace
}  // namespace tessera::oracle
