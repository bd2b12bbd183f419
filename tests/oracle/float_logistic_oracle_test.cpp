// Float LOGISTIC bit for bit against the TFLite interpreter: its builtin kernel computes
// e^x / (1 + e^x) (1 where e^x overflows), which rounds differently from 1 / (1 + e^-x) on
// about a fifth of inputs. Float models tolerate that, but a hybrid (dynamic-range)
// convolution after a SiLU quantizes its float input to int8 codes, where one ulp can move a
// code by a whole step; so the cpu's logistic is held to the interpreter's bits.
#include <gtest/gtest.h>

#include <cmath>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;

TEST(TfliteOracle, FloatLogisticIsTheInterpretersBitForBit) {
  TESSERA_REQUIRE_ORACLE(script);
  constexpr int kRandom = 60000;
  std::vector<float> x = testing::random_floats(kRandom, 321, -95.0f, 95.0f);
  const std::vector<float> near = testing::random_floats(20000, 322, -6.0f, 6.0f);
  x.insert(x.end(), near.begin(), near.end());
  for (float v : {0.0f, -0.0f, 88.0f, 88.8f, 89.0f, 200.0f, -88.0f, -104.0f, -110.0f, -200.0f, 1e-8f, -1e-8f})
    x.push_back(v);
  const int32_t n = static_cast<int32_t>(x.size());
  testing::SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {n}), testing::activation("y", T::TensorType_FLOAT32, {n})};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = T::BuiltinOperator_LOGISTIC;
  const std::vector<uint8_t> model = m.bytes();
  std::vector<uint8_t> xb(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  TempDir dir("logistic");
  write_bytes(dir.path / "logistic.tflite", model);
  std::vector<Job> jobs{Job{"logistic", (dir.path / "logistic.tflite").string(), {xb}, {}}};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  auto outs = run_tessera(model, {xb}, "cpu");
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  const std::vector<uint8_t>& got = (*outs)[0];
  const std::vector<uint8_t>& want = jobs[0].outputs[0];
  ASSERT_EQ(got.size(), want.size());
  int differ = 0, textbook_differ = 0;
  for (int32_t i = 0; i < n; ++i) {
    float a, b;
    std::memcpy(&a, &got[4 * i], 4);
    std::memcpy(&b, &want[4 * i], 4);
    if (std::memcmp(&a, &b, 4) != 0 && ++differ <= 5) ADD_FAILURE() << "x = " << x[i] << ": " << a << ", the interpreter's " << b;
    textbook_differ += 1.0f / (1.0f + std::exp(-x[i])) != b;
  }
  EXPECT_EQ(differ, 0) << differ << " of " << n << " outputs differ from the interpreter's";
  // The test can tell the forms apart: the textbook form misses on many inputs.
  EXPECT_GT(textbook_differ, n / 20);
  std::printf("[oracle] float LOGISTIC: %d values bit-identical (1 / (1 + e^-x) would differ on %d)\n", n, textbook_differ);
}

}  // namespace
}  // namespace tessera::oracle
