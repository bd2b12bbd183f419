// SPLIT and SPLIT_V, single-operator models with seeded inputs, against the TFLite
// interpreter: f32, u8 and i8 (the split copies bytes, so every output must be identical),
// positive and negative axes, and SPLIT_V's -1 size.
#include <gtest/gtest.h>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

struct SplitCase {
  std::string name;
  T::TensorType type;
  std::vector<int32_t> shape;
  int32_t axis;
  std::vector<int32_t> sizes;  // SPLIT_V's size_splits; empty: SPLIT into `count` parts
  int count = 0;
};

int64_t type_bytes(T::TensorType t) { return t == T::TensorType_FLOAT32 ? 4 : 1; }

SingleOpModel split_case_model(const SplitCase& c) {
  SingleOpModel m;
  OpTensor x = testing::activation("x", c.type, c.shape);
  if (c.type != T::TensorType_FLOAT32) {
    x.scale = 0.05f;
    x.zero_point = c.type == T::TensorType_UINT8 ? 128 : -3;
  }
  const int32_t rank = static_cast<int32_t>(c.shape.size());
  const int32_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  std::vector<int32_t> parts = c.sizes;
  if (parts.empty()) parts.assign(static_cast<size_t>(c.count), c.shape[axis] / c.count);
  int32_t known = 0;
  for (int32_t p : parts) known += p == -1 ? 0 : p;
  for (int32_t& p : parts)
    if (p == -1) p = c.shape[axis] - known;
  const int n = static_cast<int>(parts.size());
  if (c.sizes.empty()) {
    m.code = T::BuiltinOperator_SPLIT;
    m.version = c.type == T::TensorType_INT8 ? 2 : 1;
    m.tensors = {testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({c.axis})), x};
    m.op_inputs = {0, 1};
    m.options = [n](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SplitOptions, T::CreateSplitOptions(fb, n).Union());
    };
  } else {
    m.code = T::BuiltinOperator_SPLIT_V;
    m.version = c.type == T::TensorType_INT8 ? 2 : 1;
    m.tensors = {x, testing::constant("size_splits", T::TensorType_INT32, {n}, testing::int32_bytes(c.sizes)),
                 testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({c.axis}))};
    m.op_inputs = {0, 1, 2};
    m.options = [n](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_SplitVOptions, T::CreateSplitVOptions(fb, n).Union());
    };
  }
  for (int k = 0; k < n; ++k) {
    OpTensor y = x;
    y.name = "y" + std::to_string(k);
    y.shape[static_cast<size_t>(axis)] = parts[static_cast<size_t>(k)];
    m.op_outputs.push_back(static_cast<int32_t>(m.tensors.size()));
    m.tensors.push_back(y);
  }
  return m;
}

TEST(TfliteOracle, SplitAndSplitVMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<SplitCase> cases = {
      {"split_f32_axis1", T::TensorType_FLOAT32, {2, 6, 3}, 1, {}, 3},
      {"split_f32_neg_axis", T::TensorType_FLOAT32, {1, 4, 4, 8}, -1, {}, 4},
      {"split_u8_axis0", T::TensorType_UINT8, {4, 5, 3}, 0, {}, 2},
      {"split_i8_neg_axis", T::TensorType_INT8, {1, 8, 8, 6}, -3, {}, 2},
      {"split_v_f32", T::TensorType_FLOAT32, {3, 7}, 1, {2, -1, 1}},
      {"split_v_u8_neg_axis", T::TensorType_UINT8, {2, 9, 4}, -2, {4, 5}},
      {"split_v_i8_minus_one", T::TensorType_INT8, {1, 6, 5, 4}, 2, {-1, 1, 3}},
  };
  TempDir dir("split");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (size_t i = 0; i < cases.size(); ++i) {
    const SplitCase& c = cases[i];
    models.push_back(split_case_model(c).bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    int64_t n = type_bytes(c.type);
    for (int32_t d : c.shape) n *= d;
    std::vector<uint8_t> in;
    if (c.type == T::TensorType_FLOAT32) {
      const std::vector<float> v = testing::random_floats(static_cast<size_t>(n / 4), 300 + static_cast<uint32_t>(i));
      in.resize(static_cast<size_t>(n));
      std::memcpy(in.data(), v.data(), in.size());
    } else {
      in = random_bytes(static_cast<size_t>(n), 300 + static_cast<uint32_t>(i));
    }
    jobs.push_back(Job{c.name, file.string(), {in}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), jobs[i].outputs.size());
    for (size_t k = 0; k < outs->size(); ++k) EXPECT_EQ((*outs)[k], jobs[i].outputs[k]) << "output " << k;
    std::printf("[oracle] %-22s %zu outputs identical\n", cases[i].name.c_str(), outs->size());
  }
}

}  // namespace
}  // namespace tessera::oracle
