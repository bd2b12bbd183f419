// SVDF on hand-built models: the state persisting from one run of a session to the next
// (f32 against a double-precision reference carried over the runs; a new session starting
// from zero), and bad models refused with an error naming the operator and the tensor. The
// values are judged against the TFLite interpreter in tests/oracle/svdf_oracle_test.cpp.
// Also SOFTMAX's int8 -> int16 output parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "import/tflite/svdf_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;
using testing::SvdfBuilt;
using testing::SvdfCase;

Result<Graph> load(const std::vector<uint8_t>& bytes) { return tflite::load_tflite_buffer(ConstData::from_vector(bytes)); }

// Runs every input of `b` through one session, in order; returns each run's output bytes.
std::vector<std::vector<uint8_t>> run_stream(const std::vector<uint8_t>& model, const std::vector<std::vector<uint8_t>>& inputs) {
  auto g = load(model);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  SessionOptions so;
  so.device = "cpu";
  auto s = Session::create(std::move(*g), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  std::vector<std::vector<uint8_t>> outs;
  for (const auto& in : inputs) {
    EXPECT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
    Status st = (*s)->run();
    EXPECT_TRUE(st.ok()) << st.to_string();
    auto o = (*s)->output(0);
    EXPECT_TRUE(o.ok());
    outs.push_back(o.ok() ? *o : std::vector<uint8_t>{});
  }
  return outs;
}

std::vector<float> floats_of(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

TEST(Svdf, FloatStateCarriesAcrossRunsAsADoubleReference) {
  const SvdfCase c{"f32", false, 2, 5, 3, 2, 4, true, T::ActivationFunctionType_RELU};
  const int runs = 7;
  const SvdfBuilt b = testing::svdf_model(c, 42, runs);
  const auto outs = run_stream(b.model, b.inputs);
  ASSERT_EQ(outs.size(), static_cast<size_t>(runs));
  const int F = c.units * c.rank, M = c.memory, I = c.input, U = c.units;
  const std::vector<float> wf = floats_of(b.spec.tensors[1].data), wt = floats_of(b.spec.tensors[2].data),
                           bias = floats_of(b.spec.tensors[3].data);
  // history[b][f]: filter f's activations x . wf[f], newest last (zeros before the first run).
  std::vector<std::vector<std::vector<double>>> history(c.batch, std::vector<std::vector<double>>(F, std::vector<double>(M, 0.0)));
  for (int r = 0; r < runs; ++r) {
    const std::vector<float> x = floats_of(b.inputs[r]), y = floats_of(outs[r]);
    ASSERT_EQ(y.size(), static_cast<size_t>(c.batch * U));
    std::vector<double> want(y.size());
    double m = 0;
    for (int bb = 0; bb < c.batch; ++bb) {
      for (int f = 0; f < F; ++f) {
        double a = 0;
        for (int i = 0; i < I; ++i) a += double{wf[f * I + i]} * x[bb * I + i];
        auto& h = history[bb][f];
        h.erase(h.begin());
        h.push_back(a);
      }
      for (int u = 0; u < U; ++u) {
        double s = bias[u];
        for (int k = 0; k < c.rank; ++k)
          for (int t = 0; t < M; ++t) s += double{wt[(u * c.rank + k) * M + t]} * history[bb][u * c.rank + k][t];
        want[bb * U + u] = std::max(s, 0.0);
        m = std::max(m, std::fabs(want[bb * U + u]));
      }
    }
    for (size_t k = 0; k < y.size(); ++k) EXPECT_NEAR(y[k], want[k], 1e-5 * std::max(m, 1e-3)) << "run " << r << " value " << k;
  }
}

TEST(Svdf, IntegerStateStartsAtZeroInEachSessionAndPersistsWithinOne) {
  const SvdfCase c{"i8", true, 2, 12, 4, 2, 3, true, T::ActivationFunctionType_RELU};
  SvdfBuilt b = testing::svdf_model(c, 7, 4);
  // The same frame four times: the outputs change while the memory fills (the state is
  // kept), and a second session repeats the first one's outputs (it starts from zero again).
  for (auto& in : b.inputs) in = b.inputs[0];
  const auto first = run_stream(b.model, b.inputs);
  const auto second = run_stream(b.model, b.inputs);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first, second);
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);
}

// The error of loading `m`, which must fail.
std::string load_error(const SingleOpModel& m) {
  auto g = load(m.bytes());
  EXPECT_FALSE(g.ok());
  return g.ok() ? "" : g.status().to_string();
}

// A constant's bytes resized to its (new) shape.
void reshape_constant(OpTensor& t, std::vector<int32_t> shape) {
  size_t n = 1;
  for (int32_t d : shape) n *= static_cast<size_t>(d);
  const size_t size = t.type == T::TensorType_INT16 ? 2 : t.type == T::TensorType_INT8 ? 1 : 4;
  t.shape = std::move(shape);
  t.data.assign(n * size, 1);
}

SingleOpModel float_spec() { return testing::svdf_model({"f32", false, 2, 5, 3, 2, 4}, 1, 1).spec; }  // F = 6, M = 4
SingleOpModel int_spec() {
  return testing::svdf_model({"i8", true, 1, 6, 4, 1, 3, true, T::ActivationFunctionType_RELU}, 1, 1).spec;
}

TEST(Svdf, BadModelsAreRefusedNamingTheOperatorAndTensor) {
  {
    SingleOpModel m = float_spec();
    m.tensors[0].shape = {2, 1, 5};
    const std::string e = load_error(m);
    EXPECT_NE(e.find("SVDF"), std::string::npos) << e;
    EXPECT_NE(e.find("input 'x' must be [batch, input_size], got [2,1,5]"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    reshape_constant(m.tensors[1], {6, 5, 1});
    const std::string e = load_error(m);
    EXPECT_NE(e.find("weights_feature 'weights_feature' must be [filters, input_size]"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    reshape_constant(m.tensors[2], {5, 4});
    const std::string e = load_error(m);
    EXPECT_NE(e.find("weights_time 'weights_time' [5,4] needs 6 rows"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    m.tensors[4].shape = {2, 25};
    const std::string e = load_error(m);
    EXPECT_NE(e.find("SVDF"), std::string::npos) << e;
    EXPECT_NE(e.find("state 'state' must be [2, 24] (batch, filters * memory_size), got [2,25]"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SVDFOptions, T::CreateSVDFOptions(fb, 4).Union());
    };
    const std::string e = load_error(m);
    EXPECT_NE(e.find("rank 4 does not divide the 6 filters of weights_feature 'weights_feature'"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    reshape_constant(m.tensors[3], {4});
    const std::string e = load_error(m);
    EXPECT_NE(e.find("bias 'bias' must be [3], got [4]"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    m.tensors[4].variable = false;
    m.model_inputs = {0, 4};
    const std::string e = load_error(m);
    EXPECT_NE(e.find("input 4 'state' (activation_state) must be a variable tensor"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    m.options = nullptr;
    EXPECT_NE(load_error(m).find("SVDFOptions are missing"), std::string::npos);
  }
  {
    SingleOpModel m = float_spec();
    m.op_outputs = {4};
    const std::string e = load_error(m);
    EXPECT_NE(e.find("'state'"), std::string::npos) << e;
  }
  {
    // Hybrid: an f32 input with int8 weights_feature, but f32 weights_time.
    SingleOpModel m = float_spec();
    m.tensors[1].type = T::TensorType_INT8;
    m.tensors[1].scale = 0.01f;
    reshape_constant(m.tensors[1], {6, 5});
    m.version = 2;
    const std::string e = load_error(m);
    EXPECT_NE(e.find("hybrid SVDF (f32 input) needs i8 weights_feature and weights_time, 'weights_feature' is i8 and "
                     "'weights_time' f32"),
              std::string::npos)
        << e;
  }
  {
    // Hybrid with asymmetric_quantize_inputs (SVDF v4) and more input features than its
    // int32 sums hold.
    SingleOpModel m =
        testing::svdf_model({"h", false, 1, 66312, 1, 1, 1, true, T::ActivationFunctionType_NONE, 1, 1, true, true}, 1, 1).spec;
    const std::string e = load_error(m);
    EXPECT_NE(e.find("input 'x' has 66312 features; with asymmetric_quantize_inputs the hybrid int32 sum holds 66311 products"),
              std::string::npos)
        << e;
  }
  {
    SingleOpModel m = int_spec();
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SVDFOptions, T::CreateSVDFOptions(fb, 1).Union());
    };
    const std::string e = load_error(m);
    EXPECT_NE(e.find("integer SVDF needs fused activation RELU"), std::string::npos) << e;
  }
  {
    SingleOpModel m = int_spec();
    m.tensors[4].zero_point = 3;
    const std::string e = load_error(m);
    EXPECT_NE(e.find("'state' must have zero point 0, got 3"), std::string::npos) << e;
  }
  {
    SingleOpModel m = int_spec();
    m.tensors[2].type = T::TensorType_INT8;
    reshape_constant(m.tensors[2], {4, 3});
    const std::string e = load_error(m);
    EXPECT_NE(e.find("weights_time 'weights_time' must be i16"), std::string::npos) << e;
  }
  {
    SingleOpModel m = float_spec();
    m.version = 5;
    EXPECT_NE(load_error(m).find("SVDF version 5 is not supported (up to version 4)"), std::string::npos);
  }
}

// int8 -> int16 SOFTMAX: TFLite's output parameters (scale 1/65536, zero point -32768).
TEST(Svdf, Int16SoftmaxOutputNeedsTflitesParameters) {
  auto model = [](int64_t zero_point, float scale, T::TensorType out) {
    SingleOpModel m;
    m.code = T::BuiltinOperator_SOFTMAX;
    m.version = 2;
    OpTensor x = testing::activation("x", T::TensorType_INT8, {2, 3});
    x.scale = 0.1f;
    OpTensor y = testing::activation("y", out, {2, 3});
    y.scale = scale;
    y.zero_point = zero_point;
    m.tensors = {x, y};
    m.op_inputs = {0};
    m.op_outputs = {1};
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SoftmaxOptions, T::CreateSoftmaxOptions(fb, 1.0f).Union());
    };
    return m;
  };
  EXPECT_TRUE(load(model(-32768, 1.0f / 65536, T::TensorType_INT16).bytes()).ok());
  std::string e = load_error(model(0, 1.0f / 65536, T::TensorType_INT16));
  EXPECT_NE(e.find("SOFTMAX"), std::string::npos) << e;
  EXPECT_NE(e.find("i16 output 'y' must have scale 1/65536 and zero point -32768"), std::string::npos) << e;
  e = load_error(model(-32768, 1.0f / 32768, T::TensorType_INT16));
  EXPECT_NE(e.find("i16 output 'y'"), std::string::npos) << e;
  e = load_error(model(0, 1.0f / 256, T::TensorType_UINT8));
  EXPECT_NE(e.find("a i8 input needs an output of the same dtype (or i16 for i8), output 'y' is u8"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The fuzz seeds with the new operators (fuzz/regressions/tflite_fuzz/, which scripts/fuzz.sh
// copies into the tflite_fuzz corpus): small f32, integer and hybrid SVDF models (symmetric and asymmetric inputs),
// written by the helpers above. Each must import and run; the committed bytes must
// be what the helpers write (TESSERA_WRITE_FUZZ_SEEDS=1 rewrites them).
TEST(Svdf, FuzzSeedsAreTheSingleOperatorModels) {
  const std::filesystem::path dir = std::filesystem::path(TESSERA_TESTS_DIR) / ".." / "fuzz" / "regressions" / "tflite_fuzz";
  const std::vector<std::pair<std::string, SvdfBuilt>> seeds = {
      {"svdf_f32.tflite", testing::svdf_model({"f32", false, 1, 4, 2, 2, 3}, 5, 1)},
      {"svdf_i8.tflite", testing::svdf_model({"i8", true, 1, 4, 2, 1, 3, true, T::ActivationFunctionType_RELU}, 6, 1)},
      {"svdf_hybrid.tflite",
       testing::svdf_model({"hybrid", false, 1, 4, 2, 1, 3, true, T::ActivationFunctionType_NONE, 1, 1, true}, 7, 1)},
      {"svdf_hybrid_asym.tflite",
       testing::svdf_model({"asym", false, 2, 4, 2, 1, 3, true, T::ActivationFunctionType_NONE, 1, 1, true, true}, 8, 1)},
  };
  const bool write = std::getenv("TESSERA_WRITE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, built] : seeds) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t>& bytes = built.model;
    const std::filesystem::path p = dir / name;
    if (write) {
      std::ofstream f(p, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_TRUE(std::filesystem::exists(p)) << p << " is missing (TESSERA_WRITE_FUZZ_SEEDS=1 writes it)";
    std::ifstream f(p, std::ios::binary);
    const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(on_disk, bytes) << p << " differs from the model the helper writes";
    EXPECT_EQ(run_stream(bytes, built.inputs).size(), 1u);
  }
}

}  // namespace
}  // namespace tessera
