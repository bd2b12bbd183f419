// Float SOFTMAX bit for bit against the TFLite interpreter: its builtin kernel takes each row's
// maximum m in float, e = e^((x - m) * beta) in float (e^x the interpreter's expf, which
// ops::exp_f32 reproduces), the sum of the row's e from left to right in float, and e times
// the rounded reciprocal of the sum (ops/softmax_f32.h). Rows of 16 as in YOLOv8's DFL head,
// of 10, 33 and 1000; beta 1 and others; narrow and wide spreads, rows of equal values, -inf
// and very large entries. The cpu must give the same bits, and the form is pinned down: the
// textbook form in double (what the cpu computed before) and e / sum both differ on many
// outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "import/tflite/single_op_model.h"
#include "ops/exp_f32.h"
#include "ops/softmax_f32.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;

struct FloatSoftmaxCase {
  std::string name;
  std::vector<int32_t> shape;  // softmax along the last axis
  float beta;
  float spread;  // inputs in [-spread, spread]
  bool specials = false;  // equal rows, -inf entries and very large values mixed in
};

std::vector<uint8_t> float_softmax_model(const FloatSoftmaxCase& c) {
  testing::SingleOpModel m;
  m.code = T::BuiltinOperator_SOFTMAX;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, c.shape),
               testing::activation("y", T::TensorType_FLOAT32, c.shape)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  const float beta = c.beta;
  m.options = [beta](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SoftmaxOptions, T::CreateSoftmaxOptions(fb, beta).Union());
  };
  return m.bytes();
}

std::vector<float> case_inputs(const FloatSoftmaxCase& c, uint32_t seed) {
  int64_t n = 1;
  for (int32_t d : c.shape) n *= d;
  const int64_t len = c.shape.back();
  std::vector<float> x = testing::random_floats(static_cast<size_t>(n), seed, -c.spread, c.spread);
  if (c.specials) {
    const std::vector<float> pick = testing::random_floats(static_cast<size_t>(n), seed + 1, 0.0f, 1.0f);
    for (int64_t r = 0; r < n / len; ++r) {
      float* row = x.data() + r * len;
      if (r % 7 == 3) std::fill(row, row + len, row[0]);  // equal values: 1 / len each
      if (r % 11 == 5) row[len / 2] = 1e30f;              // one far above the rest: 1 and zeros
      if (r % 13 == 6) row[0] = -3e38f;                   // one far below: its difference is -inf
    }
    for (int64_t i = 0; i < n; ++i)  // -inf entries (at most one a row: never a row of -inf only)
      if (pick[static_cast<size_t>(i)] < 0.02f && i % len == 1) x[static_cast<size_t>(i)] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

// The form the cpu computed before: z = float(beta * x), the sum of e^(z - max) in double,
// each output e^(z - max) / sum rounded once.
void textbook_row(const float* x, float* y, int64_t len, double beta) {
  std::vector<float> z(static_cast<size_t>(len));
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < len; ++k) mx = std::max(mx, z[k] = static_cast<float>(beta * x[k]));
  double sum = 0;
  for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(z[k]) - mx);
  for (int64_t k = 0; k < len; ++k) y[k] = static_cast<float>(std::exp(static_cast<double>(z[k]) - mx) / sum);
}

// e / sum in place of e * (1 / sum), the rest as ops::softmax_f32_row.
void divided_row(const float* x, float* y, int64_t len, float beta) {
  float mx = x[0];
  for (int64_t k = 1; k < len; ++k) mx = std::max(mx, x[k]);
  float sum = 0.0f;
  for (int64_t k = 0; k < len; ++k) sum += y[k] = ops::exp_f32((x[k] - mx) * beta);
  for (int64_t k = 0; k < len; ++k) y[k] /= sum;
}

TEST(TfliteOracle, FloatSoftmaxIsTheInterpretersBitForBit) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<FloatSoftmaxCase> cases = {
      {"dfl_16", {1, 4, 600, 16}, 1.0f, 8.0f},
      {"dfl_16_wide", {1, 4, 300, 16}, 1.0f, 60.0f, true},
      {"len_16_beta", {500, 16}, 0.37f, 20.0f, true},
      {"len_10", {3, 200, 10}, 1.0f, 5.0f},
      {"len_10_beta", {400, 10}, 2.5f, 10.0f, true},
      {"len_33", {150, 33}, 1.0f, 30.0f, true},
      {"len_33_beta", {150, 33}, 0.125f, 3.0f},
      {"len_1000", {12, 1000}, 1.0f, 10.0f, true},
      {"len_1000_beta", {6, 1000}, 1.7f, 4.0f},
      {"len_1", {64, 1}, 1.0f, 50.0f},
  };
  TempDir dir("float_softmax");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < cases.size(); ++i) {
    models.push_back(float_softmax_model(cases[i]));
    const fs::path file = dir.path / (cases[i].name + ".tflite");
    write_bytes(file, models.back());
    inputs.push_back(case_inputs(cases[i], 900 + 2 * static_cast<uint32_t>(i)));
    std::vector<uint8_t> in(inputs.back().size() * 4);
    std::memcpy(in.data(), inputs.back().data(), in.size());
    jobs.push_back(Job{cases[i].name, file.string(), {in}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  int64_t total = 0, total_textbook = 0, total_divided = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const FloatSoftmaxCase& c = cases[i];
    SCOPED_TRACE(c.name);
    const std::vector<float>& x = inputs[i];
    const int64_t n = static_cast<int64_t>(x.size()), len = c.shape.back();
    ASSERT_EQ(jobs[i].outputs[0].size(), x.size() * 4);
    std::vector<float> want(x.size());
    std::memcpy(want.data(), jobs[i].outputs[0].data(), x.size() * 4);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ((*outs)[0].size(), x.size() * 4);
    std::vector<float> got(x.size()), scalar(x.size()), textbook(x.size()), divided(x.size());
    std::memcpy(got.data(), (*outs)[0].data(), x.size() * 4);
    for (int64_t r = 0; r < n / len; ++r) {
      ops::softmax_f32_row(x.data() + r * len, scalar.data() + r * len, len, c.beta);
      textbook_row(x.data() + r * len, textbook.data() + r * len, len, c.beta);
      divided_row(x.data() + r * len, divided.data() + r * len, len, c.beta);
    }
    int64_t differ = 0, scalar_differ = 0, textbook_differ = 0, divided_differ = 0;
    for (int64_t k = 0; k < n; ++k) {
      const float b = want[k];
      ASSERT_FALSE(std::isnan(b)) << "k = " << k;  // no case makes a NaN
      if (std::memcmp(&got[k], &b, 4) != 0 && ++differ <= 5)
        ADD_FAILURE() << "element " << k << " (row " << k / len << "): " << std::hexfloat << got[k]
                      << ", the interpreter's " << b;
      if (std::memcmp(&scalar[k], &b, 4) != 0 && ++scalar_differ <= 5)
        ADD_FAILURE() << "element " << k << ": softmax_f32_row " << std::hexfloat << scalar[k] << ", the interpreter's " << b;
      textbook_differ += std::memcmp(&textbook[k], &b, 4) != 0;
      divided_differ += std::memcmp(&divided[k], &b, 4) != 0;
    }
    EXPECT_EQ(differ, 0) << differ << " of " << n << " outputs differ from the interpreter's";
    EXPECT_EQ(scalar_differ, 0);
    total += n;
    total_textbook += textbook_differ;
    total_divided += divided_differ;
    std::printf("[oracle] float SOFTMAX %-14s %6lld values bit-identical (textbook form differs on %lld, e / sum on %lld)\n",
                c.name.c_str(), static_cast<long long>(n), static_cast<long long>(textbook_differ),
                static_cast<long long>(divided_differ));
  }
  // The test can tell the forms apart: both others miss on many outputs.
  EXPECT_GT(total_textbook, total / 10);
  EXPECT_GT(total_divided, total / 10);
}

}  // namespace
}  // namespace tessera::oracle
