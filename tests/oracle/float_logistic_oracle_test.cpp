// Float LOGISTIC bit for bit against the TFLite interpreter: its builtin kernel computes
// e^x / (1 + e^x) (1 where e^x overflows), which rounds differently from 1 / (1 + e^-x) on
// about a fifth of inputs. Float models tolerate that, but a hybrid (dynamic-range)
// convolution after a SiLU quantizes its float input to int8 codes, where one ulp can move a
// code by a whole step; so the cpu's logistic is held to the interpreter's bits. Float EXP
// too: both take e^x from ops::exp_f32, the interpreter's expf, which the host's libm may
// round differently (glibc on x86-64 on two floats, kExpLibmDiffer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "import/tflite/single_op_model.h"
#include "ops/exp_f32.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;

// The two floats where glibc's expf (x86-64) rounds e^x to the other neighbour of the exact
// value than the interpreter (and ops::exp_f32) do; found by a run over all floats.
constexpr float kExpLibmDiffer[] = {0x1.04845ep+5f, -0x1.f8cbb2p+5f};

// The floats near each of kExpLibmDiffer: it and its two neighbours on either side.
std::vector<float> near_libm_differences() {
  std::vector<float> v;
  for (float x : kExpLibmDiffer) {
    const float up = std::nextafter(x, INFINITY), down = std::nextafter(x, -INFINITY);
    for (float y : {std::nextafter(down, -INFINITY), down, x, up, std::nextafter(up, INFINITY)}) v.push_back(y);
  }
  return v;
}

// One float unary op over x: its outputs from the interpreter (want) and from the cpu (got).
void run_unary(T::BuiltinOperator code, const std::string& name, const std::vector<float>& x, std::vector<float>& got,
               std::vector<float>& want) {
  TESSERA_REQUIRE_ORACLE(script);
  const int32_t n = static_cast<int32_t>(x.size());
  testing::SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {n}), testing::activation("y", T::TensorType_FLOAT32, {n})};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = code;
  const std::vector<uint8_t> model = m.bytes();
  std::vector<uint8_t> xb(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  TempDir dir(name);
  write_bytes(dir.path / (name + ".tflite"), model);
  std::vector<Job> jobs{Job{name, (dir.path / (name + ".tflite")).string(), {xb}, {}}};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  auto outs = run_tessera(model, {xb}, "cpu");
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  ASSERT_EQ((*outs)[0].size(), xb.size());
  ASSERT_EQ(jobs[0].outputs[0].size(), xb.size());
  got.resize(x.size());
  want.resize(x.size());
  std::memcpy(got.data(), (*outs)[0].data(), xb.size());
  std::memcpy(want.data(), jobs[0].outputs[0].data(), xb.size());
}

TEST(TfliteOracle, FloatLogisticIsTheInterpretersBitForBit) {
  constexpr int kRandom = 60000;
  std::vector<float> x = testing::random_floats(kRandom, 321, -95.0f, 95.0f);
  const std::vector<float> near = testing::random_floats(20000, 322, -6.0f, 6.0f);
  x.insert(x.end(), near.begin(), near.end());
  for (float v : {0.0f, -0.0f, 88.0f, 88.8f, 89.0f, 200.0f, -88.0f, -104.0f, -110.0f, -200.0f, 1e-8f, -1e-8f})
    x.push_back(v);
  for (float v : near_libm_differences()) x.push_back(v);
  const int32_t n = static_cast<int32_t>(x.size());
  std::vector<float> got, want;
  run_unary(T::BuiltinOperator_LOGISTIC, "logistic", x, got, want);
  if (HasFatalFailure() || IsSkipped()) return;
  int differ = 0, textbook_differ = 0;
  for (int32_t i = 0; i < n; ++i) {
    const float a = got[i], b = want[i];
    if (std::memcmp(&a, &b, 4) != 0 && ++differ <= 5) ADD_FAILURE() << "x = " << x[i] << ": " << a << ", the interpreter's " << b;
    textbook_differ += 1.0f / (1.0f + std::exp(-x[i])) != b;
  }
  EXPECT_EQ(differ, 0) << differ << " of " << n << " outputs differ from the interpreter's";
  // The test can tell the forms apart: the textbook form misses on many inputs.
  EXPECT_GT(textbook_differ, n / 20);
  std::printf("[oracle] float LOGISTIC: %d values bit-identical (1 / (1 + e^-x) would differ on %d)\n", n, textbook_differ);
}

// Float EXP: the cpu's outputs (ops::exp_f32, or its vector twins) are the interpreter's bit
// for bit over the whole range, the overflow and underflow edges, denormal results,
// infinities, NaN and the floats where glibc's expf rounds the other way.
TEST(TfliteOracle, FloatExpIsTheInterpretersBitForBit) {
  std::vector<float> x = testing::random_floats(80000, 323, -110.0f, 95.0f);
  const std::vector<float> edge = testing::random_floats(4000, 324, -104.5f, -86.0f);  // denormal and zero results
  x.insert(x.end(), edge.begin(), edge.end());
  const float kHigh = ops::expf32::kHigh, kLow = ops::expf32::kLow;
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 1e-8f, -1e-8f, 1e-40f, -1e-40f, 88.0f, -88.0f, kHigh,
                  std::nextafter(kHigh, INFINITY), std::nextafter(kHigh, 0.0f), kLow, std::nextafter(kLow, -INFINITY),
                  std::nextafter(kLow, 0.0f), 200.0f, -200.0f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN})
    x.push_back(v);
  const std::vector<float> near = near_libm_differences();
  x.insert(x.end(), near.begin(), near.end());
  std::vector<float> got, want;
  run_unary(T::BuiltinOperator_EXP, "exp", x, got, want);
  if (HasFatalFailure() || IsSkipped()) return;
  int differ = 0, scalar_differ = 0, libm_differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float b = want[i];
    if (std::isnan(b)) {  // NaN's payload is not compared
      EXPECT_TRUE(std::isnan(got[i])) << "x = " << x[i];
      continue;
    }
    if (std::memcmp(&got[i], &b, 4) != 0 && ++differ <= 5)
      ADD_FAILURE() << "x = " << std::hexfloat << x[i] << ": " << got[i] << ", the interpreter's " << b;
    const float e = ops::exp_f32(x[i]);  // the scalar definition itself, whatever path the cpu took
    if (std::memcmp(&e, &b, 4) != 0 && ++scalar_differ <= 5)
      ADD_FAILURE() << "x = " << std::hexfloat << x[i] << ": exp_f32 " << e << ", the interpreter's " << b;
    libm_differ += std::exp(x[i]) != b;
  }
  EXPECT_EQ(differ, 0) << differ << " of " << x.size() << " outputs differ from the interpreter's";
  EXPECT_EQ(scalar_differ, 0) << differ << " of " << x.size() << " exp_f32 values differ from the interpreter's";
  // The interpreter rounds the two documented floats as exp_f32 does: to nearest (long double
  // e^x, exact enough here to tell the neighbours apart).
  for (float v : kExpLibmDiffer) {
    const size_t i = std::find(x.begin(), x.end(), v) - x.begin();
    ASSERT_LT(i, x.size());
    const long double exact = std::exp(static_cast<long double>(v));
    const float nearest = static_cast<float>(exact);
    const float other =
        static_cast<long double>(nearest) < exact ? std::nextafter(nearest, INFINITY) : std::nextafter(nearest, 0.0f);
    EXPECT_LT(std::fabs(static_cast<long double>(want[i]) - exact), std::fabs(static_cast<long double>(other) - exact))
        << std::hexfloat << "x = " << v;
  }
  std::printf("[oracle] float EXP: %zu values bit-identical (the host's std::exp differs on %d)\n", x.size(), libm_differ);
}

}  // namespace
}  // namespace tessera::oracle
