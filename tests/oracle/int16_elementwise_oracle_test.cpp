// TFLite's 16x8 quantization (int16 activations, zero point 0) for LOGISTIC, TANH, MUL and
// SOFTMAX, single-operator models judged by the interpreter byte for byte (op_checks.h).
// LOGISTIC and TANH take every int16 code once (a seeded permutation of all 65536) over
// input scales that take each of the interpreter's paths: 2^-12 read as Q3.12 (gemmlowp
// fixed point), TANH's 2^-11 (doubled with saturation first), a scale within CheckedLog2's
// tolerance of 2^-12, and general scales through the interpolated sigmoid table (1e-6 to 4).
// MUL takes seeded full-range codes over shapes with and without broadcasting, several
// scale triples (saturating and not) and the fused activations; SOFTMAX its own grid
// (below). Refusals (zero points, output scales, input scales the arithmetic cannot take)
// are checked by their messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

using testing::i16_tensor;

// Every int16 code once, in a seeded order.
std::vector<int16_t> all_codes(uint32_t seed) {
  std::vector<int32_t> v(65536);
  std::iota(v.begin(), v.end(), -32768);
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return std::vector<int16_t>(v.begin(), v.end());
}

std::vector<int16_t> random_codes(int64_t n, uint32_t seed, int32_t lo = -32768, int32_t hi = 32767) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int16_t>(d(rng));
  return v;
}

SingleOpModel unit_activation_model(T::BuiltinOperator code, std::vector<int32_t> shape, float in_scale,
                                    float out_scale = 1.0f / 32768, int64_t in_zp = 0, int64_t out_zp = 0) {
  SingleOpModel m;
  m.code = code;
  m.version = 3;  // op_version.cc: int16 LOGISTIC / TANH
  m.tensors = {i16_tensor("x", shape, in_scale, in_zp), i16_tensor("y", shape, out_scale, out_zp)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  return m;
}

SingleOpModel mul_model(std::vector<int32_t> a, std::vector<int32_t> b, std::vector<int32_t> y, float sa, float sb,
                        float so, T::ActivationFunctionType act, int64_t zp = 0) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_MUL;
  m.version = 4;  // op_version.cc: int16 MUL
  m.tensors = {i16_tensor("a", std::move(a), sa, zp), i16_tensor("b", std::move(b), sb), i16_tensor("y", std::move(y), so)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.options = [act](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_MulOptions, T::CreateMulOptions(fb, act).Union());
  };
  return m;
}

TEST(TfliteOracle, Int16LogisticAndTanhMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Scale {
    const char* name;
    float scale;
  };
  const Scale scales[] = {
      {"pot_q3_12", 1.0f / 4096},              // power of two, Q3.12: gemmlowp
      {"pot_q4_11", 1.0f / 2048},              // TANH: doubled (saturating) to Q3.12; LOGISTIC: the table
      {"pot_q2_13", 1.0f / 8192},              // the table for both (a right shift is not taken)
      {"near_pot", 1.0f / 4096 * 1.0004f},     // within CheckedLog2's tolerance: read as Q3.12
      {"general_3_over_32768", 3.0f / 32768},  // covers [-3, 3]
      {"general_8_over_32768", 8.0f / 32768 * 1.1f},
      {"general_0_0003", 0.0003f},
      {"general_1e_6", 1e-6f},
      {"general_0_01", 0.01f},
      {"general_4", 4.0f},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 1;
  for (T::BuiltinOperator code : {T::BuiltinOperator_LOGISTIC, T::BuiltinOperator_TANH}) {
    const std::string op = code == T::BuiltinOperator_LOGISTIC ? "logistic" : "tanh";
    for (const Scale& s : scales) {
      const std::vector<int32_t> shape = seed % 2 ? std::vector<int32_t>{1, 256, 256} : std::vector<int32_t>{4, 64, 16, 16};
      OpCheck c{op + "_" + s.name, unit_activation_model(code, shape, s.scale), {bytes_of(all_codes(seed++))}, false, {}, {}};
      checks.push_back(std::move(c));
    }
  }
  // TANH's output scale need only be 2^-15 within CheckedLog2's tolerance.
  OpCheck near{"tanh_out_near_pot", unit_activation_model(T::BuiltinOperator_TANH, {3, 77}, 0.0007f, 1.0f / 32768 * 1.0003f),
               {bytes_of(random_codes(3 * 77, 99))}, false, {}, {}};
  checks.push_back(std::move(near));
  EXPECT_EQ(run_op_checks(checks, "int16_unit_activation"), static_cast<int>(checks.size()));
}

SingleOpModel add_sub_model(T::BuiltinOperator code, std::vector<int32_t> a, std::vector<int32_t> b,
                            std::vector<int32_t> y, float sa, float sb, float so,
                            T::ActivationFunctionType act = T::ActivationFunctionType_NONE, bool pot_option = true) {
  SingleOpModel m;
  m.code = code;
  m.version = 3;  // op_version.cc: int16 ADD / SUB
  m.tensors = {i16_tensor("a", std::move(a), sa), i16_tensor("b", std::move(b), sb), i16_tensor("y", std::move(y), so)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.options = [code, act, pot_option](flatbuffers::FlatBufferBuilder& fb) {
    if (code == T::BuiltinOperator_ADD)
      return std::make_pair(T::BuiltinOptions_AddOptions, T::CreateAddOptions(fb, act, pot_option).Union());
    return std::make_pair(T::BuiltinOptions_SubOptions, T::CreateSubOptions(fb, act, pot_option).Union());
  };
  return m;
}

// ADD / SUB with power-of-two scales: TFLite's shift-only kernels (pot_scale_int16, the
// option's default): the operand at the smaller scale divided by a power of two with
// gemmlowp's rounding in int16 (exponents 1 to 20, past 15 included), saturating adds and
// subtracts, the fused activations, broadcasting either operand; scales within CheckedLog2's
// tolerance of a power of two; and the same powers of two with the option off (the
// general-scale kernel).
TEST(TfliteOracle, Int16PowerOfTwoAddSubMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    const char* name;
    std::vector<int32_t> a, b, y;
    float sa, sb, so;
    T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
    bool pot_option = true;
  };
  const float k = 1.0f / 32768;
  const std::vector<Case> cases = {
      {"same_scales", {4, 300}, {4, 300}, {4, 300}, 8 * k, 8 * k, 8 * k},
      {"b_shift_1", {2, 8, 8, 16}, {2, 8, 8, 16}, {2, 8, 8, 16}, 16 * k, 8 * k, 16 * k},
      {"b_shift_3", {3, 77}, {3, 77}, {3, 77}, 1.0f / 256, 1.0f / 2048, 1.0f / 256},
      {"a_shift_5", {3, 77}, {3, 77}, {3, 77}, 1.0f / 65536, 1.0f / 2048, 1.0f / 2048},
      {"b_shift_15", {500}, {500}, {500}, 1.0f, 1.0f / 32768, 1.0f},
      {"b_shift_16", {500}, {500}, {500}, 1.0f, 1.0f / 65536, 1.0f},
      {"b_shift_20", {500}, {500}, {500}, 4.0f, 4.0f / 1048576, 4.0f},
      {"broadcast_b", {2, 6, 6, 8}, {8}, {2, 6, 6, 8}, 1.0f / 1024, 1.0f / 4096, 1.0f / 1024},
      {"broadcast_a", {1, 4, 1}, {3, 4, 5}, {3, 4, 5}, 1.0f / 4096, 1.0f / 1024, 1.0f / 1024},
      {"scalar_b", {5, 9}, {1}, {5, 9}, 1.0f / 512, 1.0f / 2048, 1.0f / 512},
      {"near_pot", {6, 50}, {6, 50}, {6, 50}, 1.0f / 512 * 1.0003f, 1.0f / 256 * 1.0003f, 1.0f / 256 * 1.0003f},
      {"relu", {6, 50}, {6, 50}, {6, 50}, 2 * k, k, 2 * k, T::ActivationFunctionType_RELU},
      {"relu6", {6, 50}, {50}, {6, 50}, 1.0f / 1024, 1.0f / 4096, 1.0f / 1024, T::ActivationFunctionType_RELU6},
      {"relu_n1_to_1", {6, 50}, {6, 50}, {6, 50}, 1.0f / 16384, 1.0f / 16384, 1.0f / 16384,
       T::ActivationFunctionType_RELU_N1_TO_1},
      {"option_off", {4, 60}, {4, 60}, {4, 60}, 1.0f / 4096, 1.0f / 8192, 1.0f / 2048, T::ActivationFunctionType_NONE,
       false},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 300;
  for (T::BuiltinOperator code : {T::BuiltinOperator_ADD, T::BuiltinOperator_SUB}) {
    const std::string op = code == T::BuiltinOperator_ADD ? "add_" : "sub_";
    for (const Case& c : cases) {
      // add.cc's shift-only kernel has no broadcasting form (the interpreter aborts on it):
      // refused by name in Int16ElementwiseRefusalsNameTheTensor.
      if (code == T::BuiltinOperator_ADD && c.pot_option && (c.a != c.y || c.b != c.y)) continue;
      std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.a), seed)),
                                               bytes_of(random_codes(element_count(c.b), seed + 1))};
      seed += 2;
      OpCheck ch{op + c.name, add_sub_model(code, c.a, c.b, c.y, c.sa, c.sb, c.so, c.act, c.pot_option), std::move(ins),
                 false, {}, {}};
      checks.push_back(std::move(ch));
    }
  }
  ASSERT_EQ(checks.size(), 2 * cases.size() - 4);  // broadcast_b, broadcast_a, scalar_b, relu6
  EXPECT_EQ(run_op_checks(checks, "int16_pot_add_sub"), static_cast<int>(checks.size()));
}

// MUL int16 x int16 -> uint8: mul.cc's legacy path (reference_ops::Mul for an int16 product
// and a uint8 output), which reads the codes as Q0.15, takes gemmlowp's rounding doubling
// high product, divides it by 2^8 (a Q0.7 value) and adds the output's zero point; the
// scales take no part. Over zero points and the fused activations (the interpreter has no
// broadcasting form: it aborts; refused in Int16ElementwiseRefusalsNameTheTensor).
TEST(TfliteOracle, Int16MulToUint8MatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    const char* name;
    std::vector<int32_t> a, b, y;
    int64_t zo;
    T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  };
  const std::vector<Case> cases = {
      {"zp_128", {4, 300}, {4, 300}, {4, 300}, 128},
      {"zp_0", {3, 77}, {3, 77}, {3, 77}, 0},
      {"zp_255", {3, 77}, {3, 77}, {3, 77}, 255},
      {"zp_37", {2, 6, 6, 8}, {2, 6, 6, 8}, {2, 6, 6, 8}, 37},
      {"relu", {6, 50}, {6, 50}, {6, 50}, 100, T::ActivationFunctionType_RELU},
      {"relu6", {6, 50}, {6, 50}, {6, 50}, 20, T::ActivationFunctionType_RELU6},
      {"relu_n1_to_1", {6, 50}, {6, 50}, {6, 50}, 128, T::ActivationFunctionType_RELU_N1_TO_1},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 400;
  for (const Case& c : cases) {
    SingleOpModel m = mul_model(c.a, c.b, c.y, 1.0f / 32768, 1.0f / 32768, 1.0f / 128, c.act);
    m.tensors[2].type = T::TensorType_UINT8;
    m.tensors[2].zero_point = c.zo;
    std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.a), seed)),
                                             bytes_of(random_codes(element_count(c.b), seed + 1))};
    seed += 2;
    checks.push_back(OpCheck{std::string("mul_i16_u8_") + c.name, std::move(m), std::move(ins), false, {}, {}});
  }
  EXPECT_EQ(run_op_checks(checks, "int16_mul_u8"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, Int16MulMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct MulCase {
    const char* name;
    std::vector<int32_t> a, b, y;
    float sa, sb, so;
    T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  };
  const float k = 1.0f / 32768;
  const std::vector<MulCase> cases = {
      {"same_shape", {2, 8, 8, 16}, {2, 8, 8, 16}, {2, 8, 8, 16}, 4 * k, 4 * k, 16 * k},
      {"saturating", {4, 300}, {4, 300}, {4, 300}, 8 * k, 8 * k, 4 * k},
      {"large_scales", {1, 5, 7, 3}, {1, 5, 7, 3}, {1, 5, 7, 3}, 0.05f, 0.5f, 900.0f},
      {"tiny_output_scale", {3, 40}, {3, 40}, {3, 40}, 1e-4f, 2e-4f, 1e-6f},
      {"broadcast_channel", {2, 6, 6, 8}, {8}, {2, 6, 6, 8}, 3 * k, 0.01f, 0.0005f},
      {"broadcast_both", {3, 1, 5}, {1, 4, 1}, {3, 4, 5}, 0.001f, 0.002f, 0.0001f},
      {"scalar", {5, 9}, {1}, {5, 9}, 0.002f, 0.003f, 0.0002f},
      {"relu", {6, 50}, {6, 50}, {6, 50}, 2 * k, 5 * k, 6 * k, T::ActivationFunctionType_RELU},
      {"relu6", {6, 50}, {50}, {6, 50}, 0.0004f, 0.0005f, 7.0f / 32768, T::ActivationFunctionType_RELU6},
      {"relu_n1_to_1", {6, 50}, {6, 50}, {6, 50}, 0.001f, 0.0002f, 2.0f / 32768, T::ActivationFunctionType_RELU_N1_TO_1},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 200;
  for (const MulCase& c : cases) {
    std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.a), seed)),
                                             bytes_of(random_codes(element_count(c.b), seed + 1))};
    seed += 2;
    OpCheck ch{std::string("mul_") + c.name, mul_model(c.a, c.b, c.y, c.sa, c.sb, c.so, c.act), std::move(ins), false, {}, {}};
    checks.push_back(std::move(ch));
  }
  EXPECT_EQ(run_op_checks(checks, "int16_mul"), static_cast<int>(checks.size()));
}

SingleOpModel softmax_model(std::vector<int32_t> shape, float in_scale, float beta, float out_scale = 1.0f / 32768) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_SOFTMAX;
  m.version = 3;  // op_version.cc: int16 SOFTMAX
  m.tensors = {i16_tensor("x", shape, in_scale), i16_tensor("y", shape, out_scale)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  if (beta >= 0)  // a negative beta here: no SoftmaxOptions (the interpreter then takes beta 0)
    m.options = [beta](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SoftmaxOptions, T::CreateSoftmaxOptions(fb, beta).Union());
    };
  return m;
}

// Seeded codes in [-spread, spread] (a row's differences, and so its exponentials, vary
// with the spread), optionally every row constant.
std::vector<int16_t> spread_codes(int64_t n, int32_t spread, uint32_t seed, int64_t constant_rows_of = 0) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(-spread, spread);
  std::vector<int16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int16_t>(d(rng));
  if (constant_rows_of > 0)
    for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = v[static_cast<size_t>(k / constant_rows_of * constant_rows_of)];
  return v;
}

// SOFTMAX: input scales from coarse (most exponentials under the table's exp(-10)) to fine,
// betas other than 1, row lengths 1 to 2000, ranks 1 to 4, code spreads from 40 to the
// whole int16 range, constant rows, and an output scale within TF_LITE_ENSURE_NEAR of 2^-15.
TEST(TfliteOracle, Int16SoftmaxMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct SoftmaxCase {
    const char* name;
    std::vector<int32_t> shape;
    float scale, beta;
    int32_t spread;
    bool constant_rows = false;
    float out_scale = 1.0f / 32768;
  };
  const std::vector<SoftmaxCase> cases = {
      {"full_range_10", {4, 10}, 10.0f / 32768, 1.0f, 32767},
      {"full_range_rank1", {300}, 10.0f / 32768, 1.0f, 32767},
      {"narrow_q3_12", {3, 2, 5, 16}, 1.0f / 4096, 1.0f, 8000},
      {"fine_0_0001", {2, 300}, 0.0001f, 1.0f, 20000},
      {"fine_1e_5_spread_40", {5, 7}, 1e-5f, 1.0f, 40},
      {"coarse_0_01", {6, 33}, 0.01f, 1.0f, 2000},
      {"coarse_0_05_full", {2, 64}, 0.05f, 1.0f, 32767},
      {"beta_half", {3, 100}, 0.0005f, 0.5f, 15000},
      {"beta_3", {2, 3, 50}, 0.0002f, 3.0f, 32767},
      {"row_1", {7, 1}, 0.001f, 1.0f, 32767},
      {"row_2", {9, 2}, 0.001f, 1.0f, 3000},
      {"long_2000", {1, 2000}, 0.0003f, 1.0f, 32767},
      {"constant_rows", {4, 12}, 0.001f, 1.0f, 32767, true},
      {"out_scale_near", {3, 21}, 0.0004f, 1.0f, 9000, false, 1.0f / 32768 * 1.0005f},
      {"no_options", {3, 8}, 0.0004f, -1.0f, 9000},  // beta 0: rows uniform
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 300;
  for (const SoftmaxCase& c : cases) {
    const int64_t n = element_count(c.shape);
    std::vector<std::vector<uint8_t>> ins = {
        bytes_of(spread_codes(n, c.spread, seed++, c.constant_rows ? c.shape.back() : 0))};
    OpCheck ch{std::string("softmax_") + c.name, softmax_model(c.shape, c.scale, c.beta, c.out_scale), std::move(ins),
               false, {}, {}};
    checks.push_back(std::move(ch));
  }
  EXPECT_EQ(run_op_checks(checks, "int16_softmax"), static_cast<int>(checks.size()));
}

SingleOpModel compare_model(T::BuiltinOperator code, int version, std::vector<int32_t> a, std::vector<int32_t> b,
                            std::vector<int32_t> y, float sa, float sb) {
  SingleOpModel m;
  m.code = code;
  m.version = version;
  m.tensors = {i16_tensor("a", std::move(a), sa), i16_tensor("b", std::move(b), sb),
               testing::activation("y", T::TensorType_BOOL, std::move(y))};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  return m;
}

TEST(TfliteOracle, Int16ElementwiseRefusalsNameTheTensor) {
  // (No interpreter needed: Tessera's import errors.)
  expect_refused(unit_activation_model(T::BuiltinOperator_LOGISTIC, {4}, 1.0f / 4096, 1.0f / 32768, 3),
                 {"LOGISTIC", "'x'", "zero point 3"});
  expect_refused(unit_activation_model(T::BuiltinOperator_LOGISTIC, {4}, 1.0f / 4096, 1.0f / 16384),
                 {"LOGISTIC", "'y'", "1/32768"});
  expect_refused(unit_activation_model(T::BuiltinOperator_LOGISTIC, {4}, 1.0f / 4096, 1.0f / 32768 * 1.0003f),
                 {"LOGISTIC", "'y'", "1/32768"});
  expect_refused(unit_activation_model(T::BuiltinOperator_TANH, {4}, 1.0f / 4096, 1.0f / 65536), {"TANH", "'y'"});
  expect_refused(unit_activation_model(T::BuiltinOperator_TANH, {4}, 1e-16f), {"TANH", "'x'", "too small"});
  expect_refused(unit_activation_model(T::BuiltinOperator_TANH, {4}, 100.0f), {"TANH", "'x'", "too large"});
  expect_refused(mul_model({4}, {4}, {4}, 0.1f, 0.1f, 0.1f, T::ActivationFunctionType_NONE, 5),
                 {"MUL", "'a'", "zero point 5"});
  // ADD / SUB with power-of-two scales (the shift-only kernel): one operand must be at the
  // output's scale and the other at one no larger (the interpreter's Prepare refuses the rest).
  expect_refused(add_sub_model(T::BuiltinOperator_ADD, {8}, {8}, {8}, 1.0f / 4096, 1.0f / 8192, 1.0f / 2048),
                 {"ADD", "'a'", "'b'", "one operand at the output's scale"});
  expect_refused(add_sub_model(T::BuiltinOperator_SUB, {8}, {8}, {8}, 1.0f / 1024, 1.0f / 2048, 1.0f / 2048),
                 {"SUB", "'a'", "one operand at the output's scale"});
  SingleOpModel mul_u8 = mul_model({2, 8}, {8}, {2, 8}, 1.0f / 32768, 1.0f / 32768, 1.0f / 128, T::ActivationFunctionType_NONE);
  mul_u8.tensors[2].type = T::TensorType_UINT8;
  mul_u8.tensors[2].zero_point = 128;
  expect_refused(mul_u8, {"MUL", "'a' [2,8]", "'b' [8]", "does not broadcast"});
  expect_refused(add_sub_model(T::BuiltinOperator_ADD, {2, 8}, {8}, {2, 8}, 1.0f / 1024, 1.0f / 2048, 1.0f / 1024),
                 {"ADD", "'a' [2,8]", "'b' [8]", "does not broadcast"});
  expect_refused(softmax_model({2, 4}, 0.001f, 1.0f, 1.0f / 65536), {"SOFTMAX", "'y'", "1/32768"});
  expect_refused(softmax_model({1, 2, 2, 2, 4}, 0.001f, 1.0f), {"SOFTMAX", "'x'", "rank 5"});
  expect_refused(softmax_model({2, 4}, 8.0f, 1.0f), {"SOFTMAX", "'x'", "too large"});
}

}  // namespace
}  // namespace tessera::oracle
