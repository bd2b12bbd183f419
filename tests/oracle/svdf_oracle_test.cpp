// SVDF (f32 and TFLite's integer form), single-operator models with seeded random weights
// and inputs, against the TFLite interpreter over several Invoke calls of one interpreter
// (the activation state carries from one to the next): f32 within 1e-5 relative to the
// largest output magnitude, integer byte-identical. The grid covers batch, memory size,
// rank, units, input size, the bias present or absent and the fused activation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

struct SvdfCase {
  std::string name;
  bool integer;
  int batch, input, units, rank, memory;
  bool bias = true;
  T::ActivationFunctionType act = T::ActivationFunctionType_NONE;
  float state_gain = 1;  // integer: > 1 pushes the feature sums into int16 saturation
  float out_gain = 1;    // integer: > 1 spreads (and saturates) the int8 outputs
};

constexpr int kInvokes = 6;  // enough for the memory of the short cases to fill and roll over

template <typename V>
std::vector<uint8_t> bytes_of(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The model, and the seeded inputs of every invoke (invoke-major).
struct Built {
  std::vector<uint8_t> model;
  std::vector<std::vector<uint8_t>> inputs;
};

Built svdf_model(const SvdfCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  auto uniform_in = [&](float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); };
  const int filters = c.units * c.rank;
  SingleOpModel m;
  m.code = T::BuiltinOperator_SVDF;
  m.version = c.integer ? 3 : 1;
  Built b;
  if (!c.integer) {
    auto floats = [&](size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = uni(rng);
      return v;
    };
    OpTensor x = testing::activation("x", T::TensorType_FLOAT32, {c.batch, c.input});
    OpTensor wf = testing::constant("weights_feature", T::TensorType_FLOAT32, {filters, c.input},
                                    bytes_of(floats(static_cast<size_t>(filters * c.input))));
    OpTensor wt = testing::constant("weights_time", T::TensorType_FLOAT32, {filters, c.memory},
                                    bytes_of(floats(static_cast<size_t>(filters * c.memory))));
    OpTensor bias = testing::constant("bias", T::TensorType_FLOAT32, {c.units}, bytes_of(floats(static_cast<size_t>(c.units))));
    OpTensor st = testing::activation("state", T::TensorType_FLOAT32, {c.batch, filters * c.memory});
    st.variable = true;
    OpTensor y = testing::activation("y", T::TensorType_FLOAT32, {c.batch, c.units});
    m.tensors = {x, wf, wt, bias, st, y};
    for (int n = 0; n < kInvokes; ++n) b.inputs.push_back(bytes_of(floats(static_cast<size_t>(c.batch * c.input))));
  } else {
    // Scales chosen so that the feature sums use much of the int16 state (and sometimes
    // saturate it) and the outputs spread over the int8 range.
    const float x_scale = uniform_in(0.005f, 0.1f), wf_scale = uniform_in(0.002f, 0.02f);
    const float state_scale =
        x_scale * wf_scale * uniform_in(2.0f, 40.0f) * std::sqrt(static_cast<float>(c.input)) / c.state_gain;
    const float wt_scale = uniform_in(1e-5f, 1e-4f);
    const double typical = 12000.0 * 16000.0 * std::sqrt(static_cast<double>(c.memory * c.rank));
    const float y_scale =
        static_cast<float>(state_scale * wt_scale * typical / 60.0 * uniform_in(0.5f, 2.0f) / c.out_gain);
    std::vector<int8_t> wf(static_cast<size_t>(filters * c.input));
    for (auto& v : wf) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    std::vector<int16_t> wt(static_cast<size_t>(filters * c.memory));
    for (auto& v : wt) v = static_cast<int16_t>(static_cast<int>(rng() % 65535) - 32767);
    std::vector<int32_t> bias(static_cast<size_t>(c.units));
    for (auto& v : bias) v = static_cast<int32_t>(uni(rng) * 3e8);
    OpTensor x = testing::activation("x", T::TensorType_INT8, {c.batch, c.input});
    x.scale = x_scale;
    x.zero_point = static_cast<int64_t>(rng() % 41) - 20;
    OpTensor wft = testing::constant("weights_feature", T::TensorType_INT8, {filters, c.input}, bytes_of(wf));
    wft.scale = wf_scale;
    OpTensor wtt = testing::constant("weights_time", T::TensorType_INT16, {filters, c.memory}, bytes_of(wt));
    wtt.scale = wt_scale;
    OpTensor bt = testing::constant("bias", T::TensorType_INT32, {c.units}, bytes_of(bias));
    bt.scale = state_scale * wt_scale;
    OpTensor st = testing::activation("state", T::TensorType_INT16, {c.batch, filters * c.memory});
    st.scale = state_scale;
    st.variable = true;
    OpTensor y = testing::activation("y", T::TensorType_INT8, {c.batch, c.units});
    y.scale = y_scale;
    y.zero_point = static_cast<int64_t>(rng() % 21) - 10;
    m.tensors = {x, wft, wtt, bt, st, y};
    for (int n = 0; n < kInvokes; ++n)
      b.inputs.push_back(random_bytes(static_cast<size_t>(c.batch * c.input), seed * 31 + static_cast<uint32_t>(n)));
  }
  m.op_inputs = {0, 1, 2, c.bias ? 3 : -1, 4};
  m.op_outputs = {5};
  m.model_inputs = {0};
  const int rank = c.rank;
  const T::ActivationFunctionType act = c.act;
  m.options = [rank, act](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SVDFOptions, T::CreateSVDFOptions(fb, rank, act).Union());
  };
  b.model = m.bytes();
  return b;
}

// |a - b| <= 1e-5 max(|a|, |b|, m), m the largest magnitude of the interpreter's output.
int64_t float_differences(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& theirs, double* worst) {
  const size_t n = theirs.size() / 4;
  std::vector<float> a(n), b(n);
  std::memcpy(a.data(), ours.data(), n * 4);
  std::memcpy(b.data(), theirs.data(), n * 4);
  double m = 0;
  for (float v : b) m = std::max(m, std::fabs(static_cast<double>(v)));
  int64_t bad = 0;
  *worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    const double tol = 1e-5 * std::max({std::fabs(static_cast<double>(a[i])), std::fabs(static_cast<double>(b[i])), m});
    *worst = std::max(*worst, m > 0 ? d / m : d);
    bad += !(d <= tol);
  }
  return bad;
}

void run_cases(const std::vector<SvdfCase>& cases, uint32_t seed0) {
  TESSERA_REQUIRE_ORACLE(script);
  TempDir dir(cases.front().integer ? "svdf_i8" : "svdf_f32");
  std::vector<Job> jobs;
  std::vector<Built> built;
  for (size_t i = 0; i < cases.size(); ++i) {
    built.push_back(svdf_model(cases[i], seed0 + static_cast<uint32_t>(i)));
    const fs::path file = dir.path / (cases[i].name + ".tflite");
    write_bytes(file, built.back().model);
    jobs.push_back(Job{cases[i].name, file.string(), built.back().inputs, {}});
  }
  ASSERT_EQ(run_batch_invokes(script, dir.path, jobs, kInvokes, 1), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera_invokes(built[i].model, built[i].inputs, kInvokes, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), static_cast<size_t>(kInvokes));
    for (int n = 0; n < kInvokes; ++n) {
      SCOPED_TRACE("invoke " + std::to_string(n));
      const auto& ours = (*outs)[static_cast<size_t>(n)];
      const auto& theirs = jobs[i].outputs[static_cast<size_t>(n)];
      ASSERT_EQ(ours.size(), theirs.size());
      if (cases[i].integer) {
        int64_t differ = 0;
        for (size_t k = 0; k < ours.size(); ++k) differ += ours[k] != theirs[k];
        EXPECT_EQ(differ, 0) << differ << " of " << ours.size() << " bytes differ";
      } else {
        double worst = 0;
        EXPECT_EQ(float_differences(ours, theirs, &worst), 0) << "worst relative difference " << worst;
      }
    }
    if (cases[i].integer) {
      // The spread of the codes shows the case is not degenerate (all saturated, all one value).
      int lo = 127, hi = -128;
      for (const auto& o : jobs[i].outputs)
        for (uint8_t v : o) lo = std::min(lo, int{static_cast<int8_t>(v)}), hi = std::max(hi, int{static_cast<int8_t>(v)});
      std::printf("[oracle] svdf %-28s %d invokes x %zu bytes identical, codes %d..%d\n", cases[i].name.c_str(), kInvokes,
                  jobs[i].outputs[0].size(), lo, hi);
    } else {
      std::printf("[oracle] svdf %-28s %d invokes x %zu bytes within 1e-5\n", cases[i].name.c_str(), kInvokes,
                  jobs[i].outputs[0].size());
    }
  }
}

constexpr auto kRelu = T::ActivationFunctionType_RELU;
constexpr auto kRelu6 = T::ActivationFunctionType_RELU6;
constexpr auto kReluN1 = T::ActivationFunctionType_RELU_N1_TO_1;

// name, integer, batch, input, units, rank, memory[, bias, activation, state_gain, out_gain]
TEST(TfliteOracle, FloatSvdfMatchesTheInterpreterOverInvokes) {
  run_cases({
                {"b1_i3_u1_r1_m1", false, 1, 3, 1, 1, 1},
                {"b1_i10_u4_r1_m3", false, 1, 10, 4, 1, 3},
                {"b2_i5_u3_r2_m4", false, 2, 5, 3, 2, 4},
                {"b3_i1_u2_r3_m2", false, 3, 1, 2, 3, 2},
                {"b1_i40_u16_r2_m10", false, 1, 40, 16, 2, 10},
                {"b2_i7_u5_r1_m6_nobias", false, 2, 7, 5, 1, 6, false},
                {"b2_i8_u4_r2_m3_relu", false, 2, 8, 4, 2, 3, true, kRelu},
                {"b1_i6_u3_r3_m5_relu6", false, 1, 6, 3, 3, 5, true, kRelu6},
                {"b4_i4_u2_r1_m2_relu_n1", false, 4, 4, 2, 1, 2, true, kReluN1},
            },
            700);
}

// The interpreter's integer SVDF requires fused activation RELU (svdf.cc refuses the others
// at Invoke) and applies none: the outputs below the output zero point stay.
TEST(TfliteOracle, IntegerSvdfMatchesTheInterpreterOverInvokes) {
  run_cases({
                {"b1_i3_u1_r1_m1", true, 1, 3, 1, 1, 1, true, kRelu},
                {"b1_i10_u4_r1_m3", true, 1, 10, 4, 1, 3, true, kRelu},
                {"b2_i5_u3_r2_m4", true, 2, 5, 3, 2, 4, true, kRelu},
                {"b3_i1_u2_r3_m2", true, 3, 1, 2, 3, 2, true, kRelu},
                {"b1_i40_u16_r2_m10", true, 1, 40, 16, 2, 10, true, kRelu},
                {"b2_i7_u5_r1_m6_nobias", true, 2, 7, 5, 1, 6, false, kRelu},
                {"b2_i8_u4_r2_m3", true, 2, 8, 4, 2, 3, true, kRelu},
                {"b1_i49_u32_r1_m8", true, 1, 49, 32, 1, 8, true, kRelu},
                {"b4_i16_u8_r4_m5", true, 4, 16, 8, 4, 5, true, kRelu},
                {"b2_i24_u6_r2_m4_state_saturates", true, 2, 24, 6, 2, 4, true, kRelu, 60.0f},
                {"b2_i12_u10_r1_m7_wide_outputs", true, 2, 12, 10, 1, 7, false, kRelu, 1.0f, 8.0f},
            },
            800);
}

}  // namespace
}  // namespace tessera::oracle
