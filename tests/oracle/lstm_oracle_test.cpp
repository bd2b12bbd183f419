// UNIDIRECTIONAL_SEQUENCE_LSTM, single-operator models with seeded weights and inputs,
// against the TFLite interpreter: f32 (within 1e-5 relative to the larger of the two values
// and the output's largest magnitude) and the integer 8x8_16 form (i8 in and out, i16 cell
// state; byte-identical), over batch, steps, features, cells, time-major and batch-major
// layouts, with and without the input gate (CIFG), cell clipping, zero points and cell
// scales; and a grid of the optional parts (peephole weights, projection with and without
// bias and clipping, layer norm, and their combinations) in both forms, with and without
// the input gate, over several sizes. The state persists across runs of one session, as
// the interpreter keeps its variable tensors between invocations: two runs of T steps must
// give the last T outputs of one interpreter run over the 2T steps. The hybrid form (f32
// x with i8 weights; symmetric and asymmetric input quantization) is judged the same way.
// BIDIRECTIONAL_SEQUENCE_LSTM (f32, with peephole weights and projection too) likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "import/tflite/lstm_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::LstmCase;
using testing::lstm_model;
using testing::float_bytes;

std::vector<uint8_t> lstm_input(const LstmCase& c, int32_t steps, uint32_t seed) {
  const size_t n = static_cast<size_t>(c.batch) * static_cast<size_t>(steps) * static_cast<size_t>(c.features);
  if (c.integer) return random_bytes(n, seed);
  return float_bytes(::tessera::testing::random_floats(n, seed));
}

// Empty when equal (bytes) or close (floats); otherwise a description of the first difference.
std::string compare(const LstmCase& c, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  if (c.integer) {
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i])
        return "byte " + std::to_string(i) + ": " + std::to_string(static_cast<int8_t>(got[i])) + " vs interpreter " +
               std::to_string(static_cast<int8_t>(want[i]));
    return "";
  }
  const size_t n = got.size() / 4;
  std::vector<float> a(n), b(n);
  std::memcpy(a.data(), got.data(), got.size());
  std::memcpy(b.data(), want.data(), want.size());
  double m = 0;
  for (float v : b) m = std::max(m, std::fabs(static_cast<double>(v)));
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= 1e-5 * std::max({std::fabs(static_cast<double>(a[i])), std::fabs(static_cast<double>(b[i])), m})))
      return "value " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs interpreter " + std::to_string(b[i]);
  }
  return "";
}

const std::vector<LstmCase>& cases() {
  using A = T::ActivationFunctionType;
  static const std::vector<LstmCase> k = {
      {"f32_b1_t5_i4_c3", false, 1, 5, 4, 3, false, false, A::ActivationFunctionType_TANH, 10.0f, 0, 0, 0, -11, 1},
      {"f32_b3_t4_i5_c7_time_major", false, 3, 4, 5, 7, true, false, A::ActivationFunctionType_TANH, 0.0f, 0, 0, 0, -11, 2},
      {"f32_b2_t6_i16_c12_cifg_relu", false, 2, 6, 16, 12, false, true, A::ActivationFunctionType_RELU, 2.0f, 0, 0, 0, -11, 3},
      {"f32_b2_t3_i6_c5_relu6_tm", false, 2, 3, 6, 5, true, false, A::ActivationFunctionType_RELU6, 0.5f, 0, 0, 0, -11, 4},
      {"f32_b1_t20_i28_c20", false, 1, 20, 28, 20, false, false, A::ActivationFunctionType_TANH, 10.0f, 0, 0, 0, -11, 5},
      {"i8_b1_t5_i8_c6", true, 1, 5, 8, 6, false, false, A::ActivationFunctionType_TANH, 10.0f, -128, 0, 0, -11, 6},
      {"i8_b3_t4_i5_c7_time_major", true, 3, 4, 5, 7, true, false, A::ActivationFunctionType_TANH, 0.0f, 5, -4, -4, -11, 7},
      {"i8_b2_t6_i16_c12_cifg", true, 2, 6, 16, 12, false, true, A::ActivationFunctionType_TANH, 3.0f, 0, -1, -1, -11, 8},
      {"i8_b1_t12_i20_c32_cell_2e-12", true, 1, 12, 20, 32, false, false, A::ActivationFunctionType_TANH, 1.0f, -20, 3, 3, -12, 9},
      {"i8_b4_t3_i9_c4_cell_2e-10_tm", true, 4, 3, 9, 4, true, false, A::ActivationFunctionType_TANH, 0.0f, 100, 0, 0, -10, 10},
  };
  return k;
}

// The optional parts: each variant in f32 and int8, with and without the input gate, at
// sizes that change from case to case (seeded). In the integer form a projection with
// peephole weights keeps P = C (the interpreter's peephole product is not an LSTM's
// otherwise; refused, tests/import/tflite/lstm_test.cpp).
std::vector<LstmCase> variant_cases() {
  struct Variant {
    const char* name;
    bool peephole, layer_norm;
    int projection;  // 0: none, 1: P < C, 2: P > C, 3: P = C
    bool projection_bias;
    float proj_clip;
  };
  const Variant variants[] = {
      {"peephole", true, false, 0, false, 0.0f},
      {"proj_narrow", false, false, 1, false, 0.0f},
      {"proj_wide_bias", false, false, 2, true, 0.0f},
      {"proj_bias_clip", false, false, 1, true, 0.3f},
      {"layer_norm", false, true, 0, false, 0.0f},
      {"layer_norm_peephole", true, true, 0, false, 0.0f},
      {"all", true, true, 1, true, 0.0f},
  };
  std::vector<LstmCase> out;
  uint32_t seed = 40;
  for (const Variant& v : variants)
    for (int integer = 0; integer < 2; ++integer)
      for (int cifg = 0; cifg < 2; ++cifg) {
        LstmCase c;
        c.seed = ++seed;
        c.integer = integer != 0;
        c.cifg = cifg != 0;
        c.batch = 1 + static_cast<int32_t>(seed % 3);
        c.steps = 3 + static_cast<int32_t>(seed % 5);
        c.features = 4 + static_cast<int32_t>((seed * 7) % 9);
        c.cells = 4 + static_cast<int32_t>((seed * 5) % 13);
        c.time_major = seed % 2 == 0;
        c.cell_clip = seed % 3 == 0 ? 0.0f : 3.0f;
        c.peephole = v.peephole;
        c.layer_norm = v.layer_norm;
        int proj = v.projection;
        if (proj != 0 && v.peephole && c.integer) proj = 3;
        c.projection = proj == 1 ? c.cells / 2 + 1 : proj == 2 ? c.cells + 3 : proj == 3 ? c.cells : 0;
        c.projection_bias = v.projection_bias;
        c.proj_clip = v.proj_clip;
        if (c.integer) {
          c.x_zero_point = static_cast<int64_t>(seed % 7) - 3;
          c.h_zero_point = c.hidden_zero_point = static_cast<int64_t>(seed % 5) - 2;
          c.cell_shift = seed % 2 == 0 ? -11 : -12;
        }
        c.name = std::string(c.integer ? "i8_" : "f32_") + v.name + (c.cifg ? "_cifg" : "") + "_b" +
                 std::to_string(c.batch) + "_t" + std::to_string(c.steps) + "_i" + std::to_string(c.features) + "_c" +
                 std::to_string(c.cells) + (c.projection ? "_p" + std::to_string(c.projection) : "") +
                 (c.time_major ? "_tm" : "");
        out.push_back(c);
      }
  return out;
}

// The hybrid form (f32 x with i8 weights, TFLite's dynamic-range quantization): plain and
// with the optional parts, symmetric and asymmetric input quantization, with and without
// the input gate (f32 outputs within 1e-5).
std::vector<LstmCase> hybrid_cases() {
  struct Variant {
    const char* name;
    bool peephole, layer_norm;
    bool projection;
    float proj_clip;
  };
  const Variant variants[] = {{"plain", false, false, false, 0.0f},
                              {"peephole", true, false, false, 0.0f},
                              {"proj_clip", false, false, true, 0.4f},
                              {"layer_norm", false, true, false, 0.0f},
                              {"all", true, true, true, 0.0f}};
  std::vector<LstmCase> out;
  uint32_t seed = 80;
  for (const Variant& v : variants)
    for (int asymmetric = 0; asymmetric < 2; ++asymmetric)
      for (int cifg = 0; cifg < 2; ++cifg) {
        LstmCase c;
        c.seed = ++seed;
        c.hybrid = true;
        c.asymmetric = asymmetric != 0;
        c.cifg = cifg != 0;
        c.batch = 1 + static_cast<int32_t>(seed % 3);
        c.steps = 3 + static_cast<int32_t>(seed % 4);
        c.features = 4 + static_cast<int32_t>((seed * 7) % 9);
        c.cells = 4 + static_cast<int32_t>((seed * 5) % 11);
        c.time_major = seed % 2 == 0;
        c.cell_clip = seed % 3 == 0 ? 0.0f : 3.0f;
        c.peephole = v.peephole;
        c.layer_norm = v.layer_norm;
        c.projection = v.projection ? c.cells / 2 + 2 : 0;
        c.projection_bias = v.projection;
        c.proj_clip = v.proj_clip;
        c.name = std::string("hybrid_") + (c.asymmetric ? "asym_" : "sym_") + v.name + (c.cifg ? "_cifg" : "") + "_b" +
                 std::to_string(c.batch) + "_t" + std::to_string(c.steps) + "_i" + std::to_string(c.features) + "_c" +
                 std::to_string(c.cells) + (c.projection ? "_p" + std::to_string(c.projection) : "") +
                 (c.time_major ? "_tm" : "");
        out.push_back(c);
      }
  return out;
}

// Runs every case through the interpreter and Tessera's cpu and compares the outputs.
void expect_cases_match(const std::vector<LstmCase>& cs, const char* dirname) {
  TESSERA_REQUIRE_ORACLE(script);
  TempDir dir(dirname);
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (const LstmCase& c : cs) {
    models.push_back(lstm_model(c, c.steps).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    jobs.push_back(Job{c.name, file.string(), {lstm_input(c, c.steps, 500 + c.seed)}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cs.size(); ++i) {
    const LstmCase& c = cs[i];
    SCOPED_TRACE(c.name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    const std::string diff = compare(c, (*outs)[0], jobs[i].outputs[0]);
    EXPECT_EQ(diff, "");
    // The cases must exercise the arithmetic: many distinct output values, not saturated gates.
    const size_t width = c.integer ? 1 : 4;
    std::set<std::vector<uint8_t>> distinct;
    for (size_t k = 0; k + width <= (*outs)[0].size(); k += width)
      distinct.insert(std::vector<uint8_t>((*outs)[0].begin() + k, (*outs)[0].begin() + k + width));
    EXPECT_GE(distinct.size(), std::min<size_t>(10, (*outs)[0].size() / width / 2));
    std::printf("[oracle] lstm %-44s %s (%zu distinct values)\n", c.name.c_str(),
                diff.empty() ? (c.integer ? "identical" : "within 1e-5") : diff.c_str(), distinct.size());
  }
}

TEST(TfliteOracle, UnidirectionalSequenceLstmMatchesTheInterpreter) { expect_cases_match(cases(), "lstm"); }

TEST(TfliteOracle, LstmPeepholeProjectionAndLayerNormMatchTheInterpreter) {
  expect_cases_match(variant_cases(), "lstm_variants");
}

TEST(TfliteOracle, HybridLstmMatchesTheInterpreter) { expect_cases_match(hybrid_cases(), "lstm_hybrid"); }

// Two runs of one session over T steps each = the last T steps of one interpreter run over
// 2T steps (batch 1, batch-major: the two inputs concatenate along time).
TEST(TfliteOracle, LstmStatePersistsAcrossRunsLikeTheInterpretersVariables) {
  TESSERA_REQUIRE_ORACLE(script);
  TempDir dir("lstm_state");
  std::vector<LstmCase> picked = {cases()[0], cases()[5], cases()[8], variant_cases()[12], variant_cases()[14],
                                  variant_cases()[26], hybrid_cases()[2], hybrid_cases()[19]};
  std::vector<Job> jobs;
  for (LstmCase& c : picked) {
    c.batch = 1;
    c.time_major = false;
    const fs::path file = dir.path / (c.name + "_2t.tflite");
    write_bytes(file, lstm_model(c, 2 * c.steps).bytes());
    std::vector<uint8_t> a = lstm_input(c, c.steps, 700 + c.seed), b = lstm_input(c, c.steps, 800 + c.seed);
    a.insert(a.end(), b.begin(), b.end());
    jobs.push_back(Job{c.name, file.string(), {a}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < picked.size(); ++i) {
    const LstmCase& c = picked[i];
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> model = lstm_model(c, c.steps).bytes();
    auto owner = std::make_shared<std::vector<uint8_t>>(model);
    auto g = tflite::load_tflite_buffer(ConstData{owner->data(), static_cast<int64_t>(owner->size()), owner});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    SessionOptions so;
    so.device = "cpu";
    auto s = Session::create(std::move(*g), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const size_t half = jobs[i].inputs[0].size() / 2;
    const std::vector<uint8_t>& all = jobs[i].outputs[0];
    std::string diff;
    for (size_t run = 0; run < 2; ++run) {
      const uint8_t* x = jobs[i].inputs[0].data() + run * half;
      ASSERT_TRUE((*s)->set_input(0, x, static_cast<int64_t>(half)).ok());
      ASSERT_TRUE((*s)->run().ok());
      auto o = (*s)->output(0);
      ASSERT_TRUE(o.ok());
      ASSERT_EQ(all.size(), 2 * o->size());
      const auto from = all.begin() + static_cast<std::ptrdiff_t>(run * o->size());
      const std::string d = compare(c, *o, std::vector<uint8_t>(from, from + static_cast<std::ptrdiff_t>(o->size())));
      EXPECT_EQ(d, "") << "run " << run;
      if (diff.empty() && !d.empty()) diff = "run " + std::to_string(run) + ": " + d;
    }
    std::printf("[oracle] lstm state across runs %-26s %s\n", c.name.c_str(), diff.empty() ? "matches" : diff.c_str());
  }
}

// BIDIRECTIONAL_SEQUENCE_LSTM (f32), separate and merged outputs, time- and batch-major,
// CIFG, relu, cell clipping, peephole weights, projection (with bias and clipping), and the
// hybrid form (int8 weights; symmetric and asymmetric input quantization). (The interpreter requires the two directions' cell counts to
// be equal, and its merged batch-major output differs from the separate outputs joined
// from the second batch row on; Tessera refuses both, tests/import/tflite/lstm_test.cpp.)
TEST(TfliteOracle, BidirectionalSequenceLstmMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  using A = T::ActivationFunctionType;
  using testing::BiLstmCase;
  const std::vector<BiLstmCase> bicases = {
      {"bi_b1_t5_i4_c3_tm", 1, 5, 4, 3, 3, true, false, false, A::ActivationFunctionType_TANH, 0.0f, 21},
      {"bi_b2_t6_i5_c6_merge_tm", 2, 6, 5, 6, 6, true, true, false, A::ActivationFunctionType_TANH, 3.0f, 22},
      {"bi_b3_t4_i6_c5_batch_major", 3, 4, 6, 5, 5, false, false, false, A::ActivationFunctionType_TANH, 0.0f, 23},
      {"bi_b2_t7_i8_c4_bm_relu", 2, 7, 8, 4, 4, false, false, false, A::ActivationFunctionType_RELU, 2.0f, 24},
      {"bi_b2_t5_i6_c4_tm_cifg", 2, 5, 6, 4, 4, true, false, true, A::ActivationFunctionType_TANH, 0.0f, 25},
      {"bi_b2_t5_i6_c5_tm_peephole", 2, 5, 6, 5, 5, true, false, false, A::ActivationFunctionType_TANH, 0.0f, 26, true},
      {"bi_b3_t4_i5_c6_bm_proj3_bias", 3, 4, 5, 6, 6, false, false, false, A::ActivationFunctionType_TANH, 2.0f, 27, false, 3,
       true},
      {"bi_b2_t6_i4_c4_merge_peep_cifg_proj7_clip", 2, 6, 4, 4, 4, true, true, true, A::ActivationFunctionType_TANH, 0.0f, 28,
       true, 7, true, 0.4f},
      {"bi_hybrid_sym_b2_t5_i6_c5_tm", 2, 5, 6, 5, 5, true, false, false, A::ActivationFunctionType_TANH, 0.0f, 29, false, 0,
       false, 0.0f, true},
      {"bi_hybrid_asym_b3_t4_i5_c6_bm_peep_proj4", 3, 4, 5, 6, 6, false, false, false, A::ActivationFunctionType_TANH, 2.0f, 30,
       true, 4, true, 0.0f, true, true},
      {"bi_hybrid_asym_b2_t6_i4_c4_merge_cifg", 2, 6, 4, 4, 4, true, true, true, A::ActivationFunctionType_TANH, 0.0f, 31, false,
       0, false, 0.0f, true, true},
  };
  TempDir dir("bilstm");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (const BiLstmCase& c : bicases) {
    models.push_back(testing::bilstm_model(c).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    const size_t n = static_cast<size_t>(c.batch) * static_cast<size_t>(c.steps) * static_cast<size_t>(c.features);
    jobs.push_back(Job{c.name, file.string(), {float_bytes(::tessera::testing::random_floats(n, 900 + c.seed))}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < bicases.size(); ++i) {
    const BiLstmCase& c = bicases[i];
    SCOPED_TRACE(c.name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), jobs[i].outputs.size());
    ASSERT_EQ(outs->size(), c.merge ? 1u : 2u);
    std::string diff;
    for (size_t k = 0; k < outs->size() && diff.empty(); ++k) diff = compare(LstmCase{}, (*outs)[k], jobs[i].outputs[k]);
    EXPECT_EQ(diff, "");
    // The case exercises the arithmetic: many distinct output values.
    std::set<std::vector<uint8_t>> distinct;
    for (const auto& o : *outs)
      for (size_t k = 0; k + 4 <= o.size(); k += 4) distinct.insert(std::vector<uint8_t>(o.begin() + k, o.begin() + k + 4));
    EXPECT_GE(distinct.size(), 10u);
    std::printf("[oracle] bidirectional lstm %-36s %s (%zu distinct values)\n", c.name.c_str(),
                diff.empty() ? "within 1e-5" : diff.c_str(), distinct.size());
  }
}

}  // namespace
}  // namespace tessera::oracle
