// TFLite's 16x8 quantization (int16, zero point 0) for AVERAGE_POOL_2D, MAX_POOL_2D and MEAN,
// single-operator models judged by the interpreter byte for byte (op_checks.h), on seeded
// codes over the whole int16 range. Pools: windows 1x1 to 7x7, strides 1-3, SAME and VALID,
// the fused activations (the output scale chosen so that RELU6 / RELU_N1_TO_1 clip). MEAN:
// both of the interpreter's int16 paths, equal input and output parameters (a truncated
// integer mean) and other scales (QuantizedMeanOrSum in float), over inner, outer, several
// and all axes, and over the spatial axes of a 4-D tensor with keep_dims (which int8 and
// uint8 treat apart, int16 not: those cases tell the paths apart). Refusals are checked by
// their messages. SUM (which the interpreter takes for int16 only with the input's
// quantization on the output) adds codes, with and without wrapping.
#include <gtest/gtest.h>

#include <random>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

using testing::i16_tensor;

std::vector<int16_t> random_codes(int64_t n, uint32_t seed, int32_t lo = -32768, int32_t hi = 32767) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int16_t>(d(rng));
  return v;
}

int32_t out_dim(int32_t in, int32_t k, int32_t stride, bool same) {
  return same ? (in + stride - 1) / stride : (in - k) / stride + 1;
}

struct PoolCase {
  const char* name;
  bool average;
  std::vector<int32_t> shape;  // NHWC
  int32_t kh, kw, stride;
  bool same;
  T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  float scale = 1.0f / 4096;
};

SingleOpModel pool_model(const PoolCase& c, int64_t zero_point = 0) {
  SingleOpModel m;
  m.code = c.average ? T::BuiltinOperator_AVERAGE_POOL_2D : T::BuiltinOperator_MAX_POOL_2D;
  m.version = 3;  // op_version.cc: int16 pooling
  const std::vector<int32_t> ys = {c.shape[0], out_dim(c.shape[1], c.kh, c.stride, c.same),
                                   out_dim(c.shape[2], c.kw, c.stride, c.same), c.shape[3]};
  m.tensors = {i16_tensor("x", c.shape, c.scale, zero_point), i16_tensor("y", ys, c.scale, zero_point)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.options = [c](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_Pool2DOptions,
                          T::CreatePool2DOptions(fb, c.same ? T::Padding_SAME : T::Padding_VALID, c.stride, c.stride,
                                                 c.kw, c.kh, c.act)
                              .Union());
  };
  return m;
}

TEST(TfliteOracle, Int16PoolsMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<PoolCase> cases = {
      {"avg_2x2_s2_valid", true, {1, 8, 8, 3}, 2, 2, 2, false},
      {"avg_3x3_s1_same", true, {2, 7, 9, 4}, 3, 3, 1, true},
      {"avg_3x3_s2_same_odd", true, {1, 11, 13, 5}, 3, 3, 2, true},
      {"avg_7x7_global", true, {2, 7, 7, 16}, 7, 7, 1, false},
      {"avg_2x3_s3_same", true, {1, 10, 10, 2}, 2, 3, 3, true},
      {"avg_relu", true, {1, 6, 6, 8}, 2, 2, 1, false, T::ActivationFunctionType_RELU},
      {"avg_relu6", true, {1, 6, 6, 8}, 3, 3, 1, true, T::ActivationFunctionType_RELU6, 1.0f / 2048},
      {"avg_1x1", true, {1, 4, 5, 3}, 1, 1, 1, false},
      {"max_2x2_s2_valid", false, {1, 8, 8, 3}, 2, 2, 2, false},
      {"max_3x3_s1_same", false, {2, 7, 9, 4}, 3, 3, 1, true},
      {"max_3x3_s2_same_odd", false, {1, 11, 13, 5}, 3, 3, 2, true},
      {"max_5x5_s1_same", false, {1, 9, 9, 6}, 5, 5, 1, true},
      {"max_relu", false, {1, 6, 6, 8}, 2, 2, 1, false, T::ActivationFunctionType_RELU},
      {"max_relu_n1_to_1", false, {1, 6, 6, 8}, 2, 2, 2, false, T::ActivationFunctionType_RELU_N1_TO_1, 1.0f / 8192},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 400;
  for (const PoolCase& c : cases) {
    std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.shape), seed++))};
    OpCheck ch{std::string("pool_") + c.name, pool_model(c), std::move(ins), false, {}, {}};
    checks.push_back(std::move(ch));
  }
  EXPECT_EQ(run_op_checks(checks, "int16_pool"), static_cast<int>(checks.size()));
}

struct MeanCase {
  const char* name;
  std::vector<int32_t> shape;
  std::vector<int32_t> axes;
  bool keep_dims;
  float in_scale, out_scale;
};

SingleOpModel mean_model(const MeanCase& c, int64_t zero_point = 0) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_MEAN;
  m.version = 3;  // op_version.cc: int16 MEAN
  const int rank = static_cast<int>(c.shape.size());
  std::vector<int32_t> ys;
  for (int d = 0; d < rank; ++d) {
    bool red = false;
    for (int32_t a : c.axes) red = red || (a < 0 ? a + rank : a) == d;
    if (!red)
      ys.push_back(c.shape[static_cast<size_t>(d)]);
    else if (c.keep_dims)
      ys.push_back(1);
  }
  m.tensors = {i16_tensor("x", c.shape, c.in_scale, zero_point),
               testing::constant("axes", T::TensorType_INT32, {static_cast<int32_t>(c.axes.size())},
                                 testing::int32_bytes(c.axes)),
               i16_tensor("y", ys, c.out_scale)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  const bool keep = c.keep_dims;
  m.options = [keep](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_ReducerOptions, T::CreateReducerOptions(fb, keep).Union());
  };
  return m;
}

TEST(TfliteOracle, Int16MeanMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const float k = 1.0f / 4096;
  const std::vector<MeanCase> cases = {
      // the spatial axes with keep_dims, equal and other scales
      {"spatial_same_scale", {2, 5, 7, 6}, {1, 2}, true, k, k},
      {"spatial_2_1", {1, 6, 6, 4}, {2, 1}, true, k, k},
      {"spatial_finer_out", {2, 4, 9, 40}, {1, 2}, true, k, k / 4},
      {"spatial_coarser_out", {2, 8, 8, 30}, {1, 2}, true, 0.001f, 0.003f},
      // equal parameters: the integer mean, truncated
      {"equal_inner", {3, 4, 17}, {-1}, false, k, k},
      {"equal_outer_keep", {5, 3, 4}, {0}, true, k, k},
      {"equal_spatial_no_keep", {1, 5, 5, 4}, {1, 2}, false, k, k},
      {"equal_all", {2, 3, 4}, {0, 1, 2}, true, k, k},
      // QuantizedMeanOrSum: float mean rescaled
      {"float_inner", {3, 4, 17}, {2}, false, 0.0005f, 0.0002f},
      {"float_two_axes", {2, 6, 5, 3}, {0, 3}, true, 0.001f, 0.0007f},
      {"float_negative_axes", {2, 6, 5, 3}, {-3, -2}, true, 0.002f, 0.0005f},
      {"float_saturating", {4, 30}, {1}, false, 0.01f, 0.00001f},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 500;
  for (const MeanCase& c : cases) {
    std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.shape), seed++))};
    OpCheck ch{std::string("mean_") + c.name, mean_model(c), std::move(ins), false, {}, {}};
    checks.push_back(std::move(ch));
  }
  EXPECT_EQ(run_op_checks(checks, "int16_mean"), static_cast<int>(checks.size()));
}

SingleOpModel sum_model(const MeanCase& c) {
  SingleOpModel m = mean_model(c);
  m.code = T::BuiltinOperator_SUM;
  m.version = 2;  // (op_version.cc gives int16 SUM no version of its own)
  return m;
}

// SUM with the input's quantization on the output (the interpreter refuses other output
// scales for int16): codes added in int16, wrapping, over small codes (no wrap) and the
// full range (wrapping).
TEST(TfliteOracle, Int16SumMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const float k = 1.0f / 4096;
  struct SumCase {
    MeanCase shape;
    int32_t spread;
  };
  const std::vector<SumCase> cases = {
      {{"inner_small", {3, 4, 17}, {-1}, false, k, k}, 1000},
      {{"outer_keep_small", {5, 3, 4}, {0}, true, k, k}, 3000},
      {{"spatial_full_range", {2, 5, 7, 6}, {1, 2}, true, k, k}, 32767},
      {{"all_full_range", {2, 3, 4}, {0, 1, 2}, false, k, k}, 32767},
      {{"two_axes_full_range", {2, 6, 5, 3}, {0, 3}, true, k, k}, 32767},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 600;
  for (const SumCase& c : cases) {
    std::vector<std::vector<uint8_t>> ins = {bytes_of(random_codes(element_count(c.shape.shape), seed++, -c.spread, c.spread))};
    OpCheck ch{std::string("sum_") + c.shape.name, sum_model(c.shape), std::move(ins), false, {}, {}};
    checks.push_back(std::move(ch));
  }
  EXPECT_EQ(run_op_checks(checks, "int16_sum"), static_cast<int>(checks.size()));
}

// u8 / i8 MEAN away from the spatial axes takes the same two paths: equal input and output
// parameters the truncated integer mean of the codes, other parameters the float one.
TEST(TfliteOracle, EightBitMeanWithEqualParametersMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<MeanCase> cases = {
      {"equal_inner", {3, 4, 17}, {-1}, false, 0.05f, 0.05f},
      {"equal_outer_keep", {6, 5, 4}, {0}, true, 0.02f, 0.02f},
      {"equal_two_axes", {2, 6, 5, 3}, {0, 3}, true, 0.1f, 0.1f},
      {"rescaled_inner", {3, 4, 17}, {-1}, false, 0.05f, 0.03f},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 700;
  for (const bool u8 : {false, true})
    for (const MeanCase& c : cases) {
      SingleOpModel m = mean_model(c);
      for (OpTensor& t : m.tensors)
        if (t.type == T::TensorType_INT16) {
          t.type = u8 ? T::TensorType_UINT8 : T::TensorType_INT8;
          t.zero_point = u8 ? 128 : 3;
        }
      m.version = u8 ? 1 : 2;
      OpCheck ch{std::string(u8 ? "u8_" : "i8_") + c.name, m, {random_bytes(static_cast<size_t>(element_count(c.shape)), seed++)},
                 false, {}, {}};
      checks.push_back(std::move(ch));
    }
  EXPECT_EQ(run_op_checks(checks, "mean8"), static_cast<int>(checks.size()));
}

TEST(TfliteOracle, Int16PoolMeanRefusalsNameTheTensor) {
  expect_refused(pool_model({"zp", true, {1, 4, 4, 2}, 2, 2, 2, false}, 3), {"AVERAGE_POOL_2D", "'x'", "zero point 3"});
  expect_refused(pool_model({"huge", true, {1, 300, 300, 1}, 300, 300, 1, false}), {"AVERAGE_POOL_2D", "65536"});
  expect_refused(mean_model({"zp", {2, 4}, {1}, false, 0.001f, 0.001f}, 7), {"MEAN", "'x'", "zero point 7"});
  expect_refused(mean_model({"long", {1, 70000}, {1}, false, 0.001f, 0.001f}), {"MEAN", "'x'", "65536"});
  expect_refused(sum_model({"rescaled", {2, 4}, {1}, false, 0.001f, 0.005f}), {"SUM", "'y'", "quantization of input 'x'"});
}

}  // namespace
}  // namespace tessera::oracle
