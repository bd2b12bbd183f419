// SPLIT and SPLIT_V on hand-built models: the slices they lower to, negative axes, SPLIT_V's
// -1 size, and bad inputs (a count that does not divide the axis, sizes that do not sum to
// it) refused with an error naming the operator and the tensor. The values are judged
// against the TFLite interpreter in tests/oracle/split_oracle_test.cpp.
#include <gtest/gtest.h>

#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

// SPLIT of f32 `shape` along `axis` into `n` outputs of `out_shape`.
SingleOpModel split_model(std::vector<int32_t> shape, int32_t axis, int n, std::vector<int32_t> out_shape) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_SPLIT;
  m.tensors.push_back(testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({axis})));
  m.tensors.push_back(testing::activation("x", T::TensorType_FLOAT32, shape));
  m.op_inputs = {0, 1};
  for (int k = 0; k < n; ++k) {
    m.tensors.push_back(testing::activation("y" + std::to_string(k), T::TensorType_FLOAT32, out_shape));
    m.op_outputs.push_back(2 + k);
  }
  m.options = [n](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SplitOptions, T::CreateSplitOptions(fb, n).Union());
  };
  return m;
}

// SPLIT_V of f32 `shape` along `axis` by `sizes`; outputs declared `out_shapes`.
SingleOpModel split_v_model(std::vector<int32_t> shape, std::vector<int32_t> sizes, int32_t axis,
                            std::vector<std::vector<int32_t>> out_shapes) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_SPLIT_V;
  m.tensors.push_back(testing::activation("x", T::TensorType_FLOAT32, shape));
  m.tensors.push_back(testing::constant("sizes", T::TensorType_INT32, {static_cast<int32_t>(sizes.size())}, testing::int32_bytes(sizes)));
  m.tensors.push_back(testing::constant("axis", T::TensorType_INT32, {1}, testing::int32_bytes({axis})));
  m.op_inputs = {0, 1, 2};
  const int n = static_cast<int>(out_shapes.size());
  for (int k = 0; k < n; ++k) {
    m.tensors.push_back(testing::activation("y" + std::to_string(k), T::TensorType_FLOAT32, out_shapes[k]));
    m.op_outputs.push_back(3 + k);
  }
  m.options = [n](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SplitVOptions, T::CreateSplitVOptions(fb, n).Union());
  };
  return m;
}

Result<Graph> load(const SingleOpModel& m) { return tflite::load_tflite_buffer(ConstData::from_vector(m.bytes())); }

// Runs a one-input f32 model on x[i] = i and returns every output.
std::vector<std::vector<float>> run(const SingleOpModel& m) {
  auto g = load(m);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  const int64_t n = g->tensor(g->inputs[0]).elements();
  auto s = Session::create(std::move(*g), SessionOptions{});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  EXPECT_TRUE((*s)->set_input(0, x.data(), n * 4).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<std::vector<float>> outs;
  for (size_t k = 0; k < (*s)->graph().outputs.size(); ++k) {
    auto o = (*s)->output(k);
    if (!o.ok()) return {};
    std::vector<float> v(o->size() / 4);
    std::memcpy(v.data(), o->data(), o->size());
    outs.push_back(std::move(v));
  }
  return outs;
}

TEST(TfliteSplit, NegativeAxisSplitsTheLastDimension) {
  auto outs = run(split_model({2, 4}, -1, 2, {2, 2}));
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0], (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(outs[1], (std::vector<float>{2, 3, 6, 7}));
}

TEST(TfliteSplit, SplitVInfersTheMinusOneSize) {
  auto outs = run(split_v_model({2, 5}, {1, -1, 2}, 1, {{2, 1}, {2, 2}, {2, 2}}));
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0], (std::vector<float>{0, 5}));
  EXPECT_EQ(outs[1], (std::vector<float>{1, 2, 6, 7}));
  EXPECT_EQ(outs[2], (std::vector<float>{3, 4, 8, 9}));
}

void expect_error(const SingleOpModel& m, const std::vector<std::string>& phrases) {
  auto g = load(m);
  ASSERT_FALSE(g.ok());
  for (const std::string& p : phrases)
    EXPECT_NE(g.status().message().find(p), std::string::npos) << "'" << p << "' missing from: " << g.status().message();
}

TEST(TfliteSplit, CountNotDividingTheAxisIsRefused) {
  expect_error(split_model({2, 6}, 1, 4, {2, 1}), {"op 0 (SPLIT v1)", "num_splits 4 does not divide dim 1 (6)", "'x'"});
}

TEST(TfliteSplit, SizesNotSummingToTheAxisAreRefused) {
  expect_error(split_v_model({2, 7}, {2, 2}, 1, {{2, 2}, {2, 2}}), {"op 0 (SPLIT_V v1)", "size_splits 'sizes' sums to 4", "'x'"});
  expect_error(split_v_model({2, 7}, {5, 4}, 1, {{2, 5}, {2, 4}}), {"SPLIT_V", "sums to 9+"});
  expect_error(split_v_model({2, 7}, {-1, -1, 1}, 1, {{2, 3}, {2, 3}, {2, 1}}), {"SPLIT_V", "more than one -1"});
  expect_error(split_v_model({2, 7}, {-2, 9}, 1, {{2, 1}, {2, 1}}), {"SPLIT_V", "size_splits 'sizes'[0] = -2 is outside [0, 7]"});
  expect_error(split_v_model({2, 7}, {3, 4}, 1, {{2, 3}}), {"SPLIT_V", "2 entries for 1 outputs"});
}

TEST(TfliteSplit, BadAxisAndCountAreRefused) {
  expect_error(split_model({2, 6}, 2, 2, {2, 3}), {"SPLIT", "axis 2 is outside rank 2"});
  expect_error(split_model({2, 6}, -3, 2, {2, 3}), {"SPLIT", "axis -3 is outside rank 2"});
  SingleOpModel m = split_model({2, 6}, 1, 2, {2, 3});
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SplitOptions, T::CreateSplitOptions(fb, 3).Union());
  };
  expect_error(m, {"SPLIT", "num_splits 3 does not match its 2 outputs"});
}

TEST(TfliteSplit, OutputQuantizationMustMatchTheInput) {
  SingleOpModel m = split_model({2, 6}, 1, 2, {2, 3});
  for (OpTensor& t : m.tensors) {
    if (t.name == "axis") continue;
    t.type = T::TensorType_INT8;
    t.scale = t.name == "y1" ? 0.5f : 0.25f;
  }
  expect_error(m, {"SPLIT", "output 'y1' differs from input 'x' in dtype or quantization"});
}

}  // namespace
}  // namespace tessera
