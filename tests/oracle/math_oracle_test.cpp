// TFLite's elementwise math builtins against the interpreter: ABS, NEG, SQUARE, RSQRT, EXP,
// LOG in every form TFLite's kernels define (float32; int8 for ABS, RSQRT and EXP; int16
// for ABS), SQUARED_DIFFERENCE and POW, the comparisons and SELECT_V2, on seeded inputs
// over the whole code range, with and without broadcasting. Refusals of the other forms are in
// tests/import/tflite/math_ops_test.cpp.
#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;

struct Q {  // a tensor's quantization; scale 0: float
  float scale = 0;
  int64_t zero_point = 0;
};

OpTensor tensor(const std::string& name, T::TensorType type, const std::vector<int32_t>& shape, Q q) {
  OpTensor t = testing::activation(name, type, shape);
  t.scale = q.scale;
  t.zero_point = q.zero_point;
  return t;
}

// A one-input operator: floats in [lo, hi) for FLOAT32, else every code of the type.
OpCheck unary_check(const std::string& name, T::BuiltinOperator code, int version, T::TensorType type,
                    const std::vector<int32_t>& shape, Q in, Q out, float lo, float hi, uint32_t seed) {
  OpCheck c;
  c.name = name;
  c.is_float = type == T::TensorType_FLOAT32;
  c.model.tensors = {tensor("x", type, shape, in), tensor("y", type, shape, out)};
  c.model.op_inputs = {0};
  c.model.op_outputs = {1};
  c.model.code = code;
  c.model.version = version;
  const int64_t n = element_count(shape);
  if (c.is_float) c.inputs.push_back(bytes_of(testing::random_floats(static_cast<size_t>(n), seed, lo, hi)));
  else c.inputs.push_back(random_bytes(static_cast<size_t>(n * (type == T::TensorType_INT16 ? 2 : 1)), seed));
  return c;
}

TEST(TfliteOracle, MathUnaryOpsMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto f32 = T::TensorType_FLOAT32, i8 = T::TensorType_INT8, i16 = T::TensorType_INT16;
  const std::vector<std::vector<int32_t>> shapes = {{2, 3, 5}, {1, 7, 9, 4}};
  std::vector<OpCheck> checks;
  uint32_t seed = 12000;
  for (const auto& shape : shapes) {
    const std::string sfx = "_" + std::to_string(element_count(shape));
    // float32
    checks.push_back(unary_check("abs_f32" + sfx, T::BuiltinOperator_ABS, 1, f32, shape, {}, {}, -3, 3, ++seed));
    checks.push_back(unary_check("neg_f32" + sfx, T::BuiltinOperator_NEG, 1, f32, shape, {}, {}, -3, 3, ++seed));
    checks.push_back(unary_check("square_f32" + sfx, T::BuiltinOperator_SQUARE, 1, f32, shape, {}, {}, -3, 3, ++seed));
    checks.push_back(unary_check("rsqrt_f32" + sfx, T::BuiltinOperator_RSQRT, 1, f32, shape, {}, {}, 0.001f, 9, ++seed));
    checks.push_back(unary_check("exp_f32" + sfx, T::BuiltinOperator_EXP, 1, f32, shape, {}, {}, -8, 8, ++seed));
    checks.push_back(unary_check("log_f32" + sfx, T::BuiltinOperator_LOG, 1, f32, shape, {}, {}, 0.0001f, 20, ++seed));
    // int8: ABS with and without rescaling, RSQRT over non-negative codes (EXP's int8 form,
    // version 2, is newer than the oracle's interpreter, and refused)
    checks.push_back(unary_check("abs_i8_rescale" + sfx, T::BuiltinOperator_ABS, 2, i8, shape, {0.02f, -7}, {0.013f, -100}, 0, 0, ++seed));
    checks.push_back(unary_check("abs_i8_same_scale" + sfx, T::BuiltinOperator_ABS, 2, i8, shape, {0.02f, 5}, {0.02f, -128}, 0, 0, ++seed));
    checks.push_back(unary_check("rsqrt_i8" + sfx, T::BuiltinOperator_RSQRT, 2, i8, shape, {0.01f, -128}, {0.05f, -128}, 0, 0, ++seed));
    checks.push_back(unary_check("rsqrt_i8_big" + sfx, T::BuiltinOperator_RSQRT, 2, i8, shape, {3.7f, -128}, {0.0021f, -20}, 0, 0, ++seed));
    // int16 ABS (zero points 0)
    checks.push_back(unary_check("abs_i16_rescale" + sfx, T::BuiltinOperator_ABS, 3, i16, shape, {0.0007f, 0}, {0.00041f, 0}, 0, 0, ++seed));
    checks.push_back(unary_check("abs_i16_same_scale" + sfx, T::BuiltinOperator_ABS, 3, i16, shape, {0.0007f, 0}, {0.0007f, 0}, 0, 0, ++seed));
  }
  EXPECT_EQ(run_op_checks(checks, "math_unary"), static_cast<int>(checks.size()));
}

// Input bytes of a tensor: floats in [lo, hi) (rounded to multiples of `step` when > 0, so
// comparisons see ties), every code of an integer type, 0/1 for bool.
std::vector<uint8_t> input_bytes(T::TensorType type, int64_t n, uint32_t seed, float lo, float hi, float step = 0) {
  if (type == T::TensorType_FLOAT32) {
    std::vector<float> v = testing::random_floats(static_cast<size_t>(n), seed, lo, hi);
    if (step > 0)
      for (float& x : v) x = std::round(x / step) * step;
    return bytes_of(v);
  }
  if (type == T::TensorType_INT32) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::mt19937 rng(seed);
    for (int32_t& x : v) x = static_cast<int32_t>(rng() % 9) - 4;
    return bytes_of(v);
  }
  std::vector<uint8_t> b = random_bytes(static_cast<size_t>(n * (type == T::TensorType_INT16 ? 2 : 1)), seed);
  if (type == T::TensorType_BOOL)
    for (uint8_t& x : b) x &= 1;
  return b;
}

std::vector<int32_t> broadcast_of(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> r(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < r.size(); ++k) {
    const int32_t da = k < r.size() - a.size() ? 1 : a[k - (r.size() - a.size())];
    const int32_t db = k < r.size() - b.size() ? 1 : b[k - (r.size() - b.size())];
    r[k] = std::max(da, db);
  }
  return r;
}

OpCheck binary_check(const std::string& name, T::BuiltinOperator code, int version, T::TensorType type, T::TensorType out_type,
                     const std::vector<int32_t>& as, const std::vector<int32_t>& bs, Q qa, Q qb, Q qy,
                     float lo, float hi, float step, uint32_t seed) {
  OpCheck c;
  c.name = name;
  c.is_float = out_type == T::TensorType_FLOAT32;
  const std::vector<int32_t> ys = broadcast_of(as, bs);
  c.model.tensors = {tensor("a", type, as, qa), tensor("b", type, bs, qb), tensor("y", out_type, ys, qy)};
  c.model.op_inputs = {0, 1};
  c.model.op_outputs = {2};
  c.model.code = code;
  c.model.version = version;
  c.inputs = {input_bytes(type, element_count(as), seed, lo, hi, step), input_bytes(type, element_count(bs), seed + 1, lo, hi, step)};
  return c;
}

TEST(TfliteOracle, SquaredDifferenceAndPowMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto f32 = T::TensorType_FLOAT32, i8 = T::TensorType_INT8, i32 = T::TensorType_INT32;
  const auto sqd = T::BuiltinOperator_SQUARED_DIFFERENCE;
  std::vector<OpCheck> checks;
  uint32_t seed = 13000;
  const std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> shapes = {
      {{2, 3, 5}, {2, 3, 5}}, {{1, 6, 5, 4}, {4}}, {{3, 1, 5}, {1, 4, 1}}};
  for (const auto& [as, bs] : shapes) {
    const std::string sfx = "_" + std::to_string(element_count(as)) + "x" + std::to_string(element_count(bs));
    checks.push_back(binary_check("sqdiff_f32" + sfx, sqd, 1, f32, f32, as, bs, {}, {}, {}, -3, 3, 0, seed += 2));
    checks.push_back(binary_check("sqdiff_i32" + sfx, sqd, 1, i32, i32, as, bs, {}, {}, {}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check("sqdiff_i8" + sfx, sqd, 2, i8, i8, as, bs, {0.02f, -7}, {0.015f, 3}, {0.03f, -128}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check("sqdiff_i8_same" + sfx, sqd, 2, i8, i8, as, bs, {0.05f, 10}, {0.05f, 10}, {0.2f, -100}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check("pow_f32" + sfx, T::BuiltinOperator_POW, 1, f32, f32, as, bs, {}, {}, {}, 0.05f, 3, 0, seed += 2));
  }
  EXPECT_EQ(run_op_checks(checks, "math_binary"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, ComparisonsMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto f32 = T::TensorType_FLOAT32, i8 = T::TensorType_INT8, u8 = T::TensorType_UINT8, i32 = T::TensorType_INT32;
  const auto boolean = T::TensorType_BOOL;
  const std::pair<const char*, T::BuiltinOperator> ops[] = {
      {"equal", T::BuiltinOperator_EQUAL},         {"not_equal", T::BuiltinOperator_NOT_EQUAL},
      {"less", T::BuiltinOperator_LESS},           {"less_equal", T::BuiltinOperator_LESS_EQUAL},
      {"greater", T::BuiltinOperator_GREATER},     {"greater_equal", T::BuiltinOperator_GREATER_EQUAL}};
  std::vector<OpCheck> checks;
  uint32_t seed = 14000;
  for (const auto& [op, code] : ops) {
    const std::string o = op;
    checks.push_back(binary_check(o + "_f32", code, 1, f32, boolean, {2, 3, 8}, {2, 3, 8}, {}, {}, {}, -2, 2, 0.5f, seed += 2));
    checks.push_back(binary_check(o + "_f32_bcast", code, 1, f32, boolean, {4, 1, 6}, {3, 1}, {}, {}, {}, -2, 2, 0.5f, seed += 2));
    checks.push_back(binary_check(o + "_i32", code, 1, i32, boolean, {5, 7}, {7}, {}, {}, {}, 0, 0, 0, seed += 2));
    // 8-bit: equal quantization (ties), then different scales and zero points.
    checks.push_back(binary_check(o + "_u8_same", code, 2, u8, boolean, {3, 40}, {3, 40}, {0.1f, 128}, {0.1f, 128}, {}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check(o + "_u8", code, 2, u8, boolean, {2, 4, 9}, {4, 9}, {0.02f, 120}, {0.013f, 90}, {}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check(o + "_i8", code, 2, i8, boolean, {6, 20}, {6, 20}, {0.02f, -7}, {0.03f, 5}, {}, 0, 0, 0, seed += 2));
    checks.push_back(binary_check(o + "_i8_bcast", code, 2, i8, boolean, {2, 5, 6}, {1, 6}, {0.25f, 0}, {0.5f, -3}, {}, 0, 0, 0, seed += 2));
  }
  // 8-bit operands near their zero points, so that equal real values (ties) are common.
  for (OpCheck& c : checks)
    for (size_t k = 0; k < 2; ++k) {
      const OpTensor& t = c.model.tensors[k];
      if (t.scale > 0)
        for (uint8_t& b : c.inputs[k]) b = static_cast<uint8_t>(t.zero_point + b % 5 - 2);
    }
  EXPECT_EQ(run_op_checks(checks, "compare"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, SelectV2MatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    const char* name;
    T::TensorType type;
    Q q;
    std::vector<int32_t> cs, as, bs;
  };
  const std::vector<Case> cases = {
      {"f32", T::TensorType_FLOAT32, {}, {2, 3, 5}, {2, 3, 5}, {2, 3, 5}},
      {"f32_bcast", T::TensorType_FLOAT32, {}, {5}, {4, 1, 5}, {3, 1}},
      {"i32_bcast_cond", T::TensorType_INT32, {}, {3, 1, 1}, {3, 4, 2}, {3, 4, 2}},
      {"u8", T::TensorType_UINT8, {0.1f, 128}, {4, 6}, {4, 6}, {6}},
      {"i8", T::TensorType_INT8, {0.05f, -3}, {2, 1, 7}, {2, 5, 7}, {1, 5, 1}},
      {"i16", T::TensorType_INT16, {0.001f, 0}, {3, 8}, {3, 8}, {3, 8}},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 15000;
  for (const Case& k : cases) {
    OpCheck c;
    c.name = std::string("select_v2_") + k.name;
    c.is_float = k.type == T::TensorType_FLOAT32;
    const std::vector<int32_t> ys = broadcast_of(k.cs, broadcast_of(k.as, k.bs));
    c.model.tensors = {tensor("cond", T::TensorType_BOOL, k.cs, {}), tensor("a", k.type, k.as, k.q), tensor("b", k.type, k.bs, k.q),
                       tensor("y", k.type, ys, k.q)};
    c.model.op_inputs = {0, 1, 2};
    c.model.op_outputs = {3};
    c.model.code = T::BuiltinOperator_SELECT_V2;
    c.model.version = 1;  // the oracle's interpreter predates v2, whose kernel is v1's
    c.inputs = {input_bytes(T::TensorType_BOOL, element_count(k.cs), seed += 3, 0, 0),
                input_bytes(k.type, element_count(k.as), seed + 1, -5, 5), input_bytes(k.type, element_count(k.bs), seed + 2, -5, 5)};
    checks.push_back(std::move(c));
  }
  EXPECT_EQ(run_op_checks(checks, "select_v2"), static_cast<int>(checks.size()));
}

}  // namespace
}  // namespace tessera::oracle
