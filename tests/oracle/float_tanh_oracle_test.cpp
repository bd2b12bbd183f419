// Float TANH bit for bit against the TFLite interpreter: its builtin kernel evaluates Eigen's
// fast tanh (a rational polynomial, ops/exp_approx.h tanh_value), which rounds differently
// from std::tanh on more than half of inputs. Float models tolerate that, but in a hybrid
// (dynamic-range) recurrent model the state after a TANH is quantized to int8 codes at the
// next step's FULLY_CONNECTED, where one ulp can move a code by a whole step (GRU, LSTM).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;

TEST(TfliteOracle, FloatTanhIsTheInterpretersBitForBit) {
  TESSERA_REQUIRE_ORACLE(script);
  // Seeded values at several scales: past the clamp (+-7.9), the body, near the tiny cut
  // (4e-4), plus edges.
  std::vector<float> x = testing::random_floats(50000, 331, -12.0f, 12.0f);
  for (auto [n, seed, r] : {std::tuple{50000, 332u, 1.5f}, std::tuple{30000, 333u, 0.002f}, std::tuple{20000, 334u, 4.5f}}) {
    const std::vector<float> v = testing::random_floats(static_cast<size_t>(n), seed, -r, r);
    x.insert(x.end(), v.begin(), v.end());
  }
  for (float v : {0.0f, -0.0f, 0.0004f, -0.0004f, 0.00039999f, 7.90531110763549805f, -7.90531110763549805f, 7.9054f, 8.0f,
                  -8.0f, 20.0f, -20.0f, 1e-30f, -1e-30f, 1e30f, -1e30f})
    x.push_back(v);
  const int32_t n = static_cast<int32_t>(x.size());
  testing::SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {n}), testing::activation("y", T::TensorType_FLOAT32, {n})};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = T::BuiltinOperator_TANH;
  const std::vector<uint8_t> model = m.bytes();
  std::vector<uint8_t> xb(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  TempDir dir("tanh");
  write_bytes(dir.path / "tanh.tflite", model);
  std::vector<Job> jobs{Job{"tanh", (dir.path / "tanh.tflite").string(), {xb}, {}}};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  auto outs = run_tessera(model, {xb}, "cpu");
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  const std::vector<uint8_t>& got = (*outs)[0];
  const std::vector<uint8_t>& want = jobs[0].outputs[0];
  ASSERT_EQ(got.size(), want.size());
  int differ = 0, std_differ = 0;
  for (int32_t i = 0; i < n; ++i) {
    float a, b;
    std::memcpy(&a, &got[4 * i], 4);
    std::memcpy(&b, &want[4 * i], 4);
    if (std::memcmp(&a, &b, 4) != 0 && ++differ <= 5) ADD_FAILURE() << "x = " << x[i] << ": " << a << ", the interpreter's " << b;
    std_differ += std::tanh(x[i]) != b;
  }
  EXPECT_EQ(differ, 0) << differ << " of " << n << " outputs differ from the interpreter's";
  // The test can tell the forms apart: std::tanh misses on many inputs.
  EXPECT_GT(std_differ, n / 10);
  std::printf("[oracle] float TANH: %d values bit-identical (std::tanh would differ on %d)\n", n, std_differ);
}

}  // namespace
}  // namespace tessera::oracle
