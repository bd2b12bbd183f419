// SVDF (f32 and TFLite's integer form), single-operator models with seeded random weights
// and inputs, against the TFLite interpreter over several Invoke calls of one interpreter
// (the activation state carries from one to the next): f32 within 1e-5 relative to the
// largest output magnitude, integer byte-identical. The grid covers batch, memory size,
// rank, units, input size, the bias present or absent and the fused activation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "import/tflite/svdf_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::SvdfBuilt;
using testing::SvdfCase;

constexpr int kInvokes = 6;  // enough for the memory of the short cases to fill and roll over

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
  TempDir dir(cases.front().integer ? "svdf_i8" : cases.front().hybrid ? "svdf_hybrid" : "svdf_f32");
  std::vector<Job> jobs;
  std::vector<SvdfBuilt> built;
  for (size_t i = 0; i < cases.size(); ++i) {
    built.push_back(testing::svdf_model(cases[i], seed0 + static_cast<uint32_t>(i), kInvokes));
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
    double worst_all = 0;
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
        if (cases[i].asymmetric) EXPECT_TRUE(ours == theirs) << "not bit-exact (worst relative difference " << worst << ")";
        worst_all = std::max(worst_all, worst);
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
      std::printf("[oracle] svdf %-28s %d invokes x %zu bytes within 1e-5 (largest difference %.1e of the largest value)\n",
                  cases[i].name.c_str(), kInvokes, jobs[i].outputs[0].size(), worst_all);
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

// Hybrid (dynamic-range): f32 input and state, int8 weights_feature and weights_time.
TEST(TfliteOracle, HybridSvdfMatchesTheInterpreterOverInvokes) {
  auto h = [](SvdfCase c) {
    c.hybrid = true;
    return c;
  };
  run_cases({
                h({"hybrid_b1_i3_u1_r1_m1", false, 1, 3, 1, 1, 1}),
                h({"hybrid_b2_i10_u4_r1_m3", false, 2, 10, 4, 1, 3}),
                h({"hybrid_b2_i5_u3_r2_m4_relu", false, 2, 5, 3, 2, 4, true, kRelu}),
                h({"hybrid_b3_i20_u8_r3_m2_nobias", false, 3, 20, 8, 3, 2, false}),
                h({"hybrid_b1_i40_u16_r2_m10_relu6", false, 1, 40, 16, 2, 10, true, kRelu6}),
            },
            900);
}

// Hybrid with asymmetric_quantize_inputs (SVDF v4): each batch row quantized with its own
// zero point, the feature sums corrected by the weights' row sums (rows of every sign
// pattern, a zero row and an all-zero invoke, as above).
TEST(TfliteOracle, HybridAsymmetricSvdfMatchesTheInterpreterOverInvokes) {
  auto h = [](SvdfCase c) {
    c.hybrid = true;
    c.asymmetric = true;
    return c;
  };
  run_cases({
                h({"asym_b1_i3_u1_r1_m1", false, 1, 3, 1, 1, 1}),
                h({"asym_b2_i10_u4_r1_m3", false, 2, 10, 4, 1, 3}),
                h({"asym_b4_i5_u3_r2_m4_relu", false, 4, 5, 3, 2, 4, true, kRelu}),
                h({"asym_b3_i20_u8_r3_m2_nobias", false, 3, 20, 8, 3, 2, false}),
                h({"asym_b4_i40_u16_r2_m10_relu6", false, 4, 40, 16, 2, 10, true, kRelu6}),
                h({"asym_b2_i300_u12_r1_m5", false, 2, 300, 12, 1, 5}),
            },
            950);
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
