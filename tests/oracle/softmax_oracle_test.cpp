// Quantized SOFTMAX (int8 and uint8, and int8 -> int16), single-operator models with seeded inputs, against
// the TFLite interpreter: every output byte must be identical. The cases cover input scales
// from coarse (most exponentials underflow to 0) to fine (all close to 1), betas other than
// 1, row lengths from 1 to past 256, and inputs that are constant along a row.
#include <gtest/gtest.h>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

struct SoftmaxCase {
  std::string name;
  T::TensorType type;
  std::vector<int32_t> shape;
  float scale;
  int64_t zero_point;
  float beta;
  bool constant_rows = false;  // every value of a row the same
  bool i16_out = false;        // an i8 input with an i16 output (scale 1/65536, zero point -32768)
};

SingleOpModel softmax_model(const SoftmaxCase& c) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_SOFTMAX;
  m.version = c.type == T::TensorType_INT8 ? 2 : 1;
  OpTensor x = testing::activation("x", c.type, c.shape);
  x.scale = c.scale;
  x.zero_point = c.zero_point;
  OpTensor y = testing::activation("y", c.i16_out ? T::TensorType_INT16 : c.type, c.shape);
  y.scale = c.i16_out ? 1.0f / 65536 : 1.0f / 256;
  y.zero_point = c.i16_out ? -32768 : c.type == T::TensorType_INT8 ? -128 : 0;
  m.tensors = {x, y};
  m.op_inputs = {0};
  m.op_outputs = {1};
  const float beta = c.beta;
  m.options = [beta](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SoftmaxOptions, T::CreateSoftmaxOptions(fb, beta).Union());
  };
  return m;
}

void run_softmax_cases(const std::string& script, const std::string& tag, const std::vector<SoftmaxCase>& cases) {
  TempDir dir(tag);
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (size_t i = 0; i < cases.size(); ++i) {
    const SoftmaxCase& c = cases[i];
    models.push_back(softmax_model(c).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    int64_t n = 1;
    for (int32_t d : c.shape) n *= d;
    std::vector<uint8_t> in = random_bytes(static_cast<size_t>(n), 500 + static_cast<uint32_t>(i));
    if (c.constant_rows) {
      const int64_t len = c.shape.back();
      for (int64_t k = 0; k < n; ++k) in[static_cast<size_t>(k)] = in[static_cast<size_t>(k / len * len)];
    }
    jobs.push_back(Job{c.name, file.string(), {in}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    ASSERT_EQ((*outs)[0].size(), jobs[i].outputs[0].size());
    int64_t differ = 0;
    for (size_t k = 0; k < (*outs)[0].size(); ++k) differ += (*outs)[0][k] != jobs[i].outputs[0][k];
    EXPECT_EQ(differ, 0) << differ << " of " << (*outs)[0].size() << " bytes differ";
    std::printf("[oracle] softmax %-22s %zu bytes identical\n", cases[i].name.c_str(), (*outs)[0].size());
  }
}

TEST(TfliteOracle, QuantizedSoftmaxMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const T::TensorType i8 = T::TensorType_INT8, u8 = T::TensorType_UINT8;
  const std::vector<SoftmaxCase> cases = {
      {"i8_dfl_16", i8, {1, 4, 300, 16}, 0.1076f, -12, 1.0f},
      {"i8_fine_10", i8, {3, 10}, 0.01f, 5, 1.0f},
      {"i8_coarse_64", i8, {2, 64}, 0.5f, -128, 1.0f},
      {"i8_beta_half_257", i8, {2, 257}, 0.0625f, 0, 0.5f},
      {"i8_beta_3_row_1", i8, {5, 1}, 0.2f, 10, 3.0f},
      {"i8_long_1000", i8, {1, 1000}, 0.03125f, -30, 1.0f},
      {"i8_constant_rows", i8, {4, 33}, 0.1f, 0, 1.0f, true},
      {"u8_dfl_16", u8, {1, 4, 300, 16}, 0.1076f, 128, 1.0f},
      {"u8_fine_7", u8, {6, 7}, 0.003921569f, 0, 1.0f},
      {"u8_coarse_100", u8, {2, 100}, 0.75f, 200, 1.0f},
      {"u8_beta_2_31", u8, {3, 31}, 0.05f, 100, 2.0f},
      {"u8_beta_tenth_500", u8, {1, 500}, 0.25f, 17, 0.1f},
      {"u8_constant_rows", u8, {3, 12}, 0.1f, 128, 1.0f, true},
      // Blocks of 8 rows (quant_softmax.cpp softmax_block) and the rows after the last block.
      {"i8_rows_11x10", i8, {11, 10}, 0.05f, -3, 1.0f},
      {"i8_dfl_rows_13", i8, {13, 16}, 0.1076f, -12, 1.0f},
      {"u8_rows_17x33", u8, {17, 33}, 0.1f, 120, 1.0f},
  };
  run_softmax_cases(script, "softmax", cases);
}

// int8 in, int16 out (the keyword-spotting models' last operator): the same float table,
// codes roundf(p * 65536) - 32768 clamped to int16, the output parameters TFLite demands.
TEST(TfliteOracle, Int8ToInt16SoftmaxMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const T::TensorType i8 = T::TensorType_INT8;
  const std::vector<SoftmaxCase> cases = {
      {"i16_two_classes", i8, {4, 2}, 0.0390625f, -128, 1.0f, false, true},
      {"i16_fine_12", i8, {3, 12}, 0.01f, 5, 1.0f, false, true},
      {"i16_coarse_64", i8, {2, 64}, 0.5f, -128, 1.0f, false, true},
      {"i16_mid_300", i8, {1, 300}, 0.1076f, -12, 1.0f, false, true},
      {"i16_beta_half_33", i8, {2, 33}, 0.0625f, 0, 0.5f, false, true},
      {"i16_beta_2_10", i8, {5, 10}, 0.05f, 20, 2.0f, false, true},
      {"i16_beta_tenth_7", i8, {3, 7}, 0.25f, -7, 0.1f, false, true},
      {"i16_row_1", i8, {6, 1}, 0.2f, 10, 3.0f, false, true},
      {"i16_constant_rows", i8, {4, 5}, 0.1f, 0, 1.0f, true, true},
      {"i16_rows_19x16", i8, {19, 16}, 0.1076f, -12, 1.0f, false, true},
      {"i16_rows_10x9", i8, {10, 9}, 0.05f, 3, 1.0f, false, true},
  };
  run_softmax_cases(script, "softmax_i16", cases);
}

}  // namespace
}  // namespace tessera::oracle
