// FILL, ZEROS_LIKE and SHAPE (f32, i32 and i64 forms) as single-operator models against the
// TFLite interpreter. FILL takes its value at run time (a model input) or as a constant;
// SHAPE is folded at import. Outputs must be byte-identical. The outputs of FILL and
// ZEROS_LIKE are constant by definition, so each FILL value is checked with two different
// values. Also the importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

template <typename V>
std::vector<uint8_t> bytes_of(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

SingleOpModel fill_model(T::TensorType type, std::vector<int32_t> dims, bool const_value, std::vector<uint8_t> value) {
  SingleOpModel m;
  OpTensor v = const_value ? testing::constant("value", type, {}, value) : testing::activation("value", type, {});
  m.tensors = {testing::constant("dims", T::TensorType_INT32, {static_cast<int32_t>(dims.size())}, testing::int32_bytes(dims)), v,
               testing::activation("y", type, dims)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_FILL;
  m.version = 1;
  return m;
}

SingleOpModel unary_model(T::BuiltinOperator code, T::TensorType in, std::vector<int32_t> x, T::TensorType out, std::vector<int32_t> y) {
  SingleOpModel m;
  m.tensors = {testing::activation("x", in, x), testing::activation("y", out, y)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = code;
  m.version = 1;
  if (code == T::BuiltinOperator_SHAPE)
    m.options = [out](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_ShapeOptions, T::CreateShapeOptions(fb, out).Union());
    };
  return m;
}

TEST(TfliteOracle, FillZerosLikeAndShapeMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  TempDir dir("fill_shape");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  auto add = [&](const std::string& name, const SingleOpModel& m, std::vector<std::vector<uint8_t>> inputs) {
    models.push_back(m.bytes());
    const fs::path file = dir.path / (name + ".tflite");
    write_bytes(file, models.back());
    jobs.push_back(Job{name, file.string(), std::move(inputs), {}});
  };
  for (float v : {0.75f, -3.5e7f}) {
    const std::string tag = v > 0 ? "a" : "b";
    add("fill_f32_runtime_2x3x4_" + tag, fill_model(T::TensorType_FLOAT32, {2, 3, 4}, false, {}), {bytes_of(std::vector<float>{v})});
    add("fill_f32_const_5_" + tag, fill_model(T::TensorType_FLOAT32, {5}, true, bytes_of(std::vector<float>{v})), {});
  }
  for (int32_t v : {7, -123456}) {
    const std::string tag = v > 0 ? "a" : "b";
    add("fill_i32_runtime_3x1x2_" + tag, fill_model(T::TensorType_INT32, {3, 1, 2}, false, {}), {bytes_of(std::vector<int32_t>{v})});
    add("fill_i32_const_1x4_" + tag, fill_model(T::TensorType_INT32, {1, 4}, true, bytes_of(std::vector<int32_t>{v})), {});
  }
  add("zeros_like_f32_3x4", unary_model(T::BuiltinOperator_ZEROS_LIKE, T::TensorType_FLOAT32, {3, 4}, T::TensorType_FLOAT32, {3, 4}),
      {bytes_of(testing::random_floats(12, 17000))});
  add("zeros_like_i32_2x2x3", unary_model(T::BuiltinOperator_ZEROS_LIKE, T::TensorType_INT32, {2, 2, 3}, T::TensorType_INT32, {2, 2, 3}),
      {random_bytes(48, 17001)});
  add("shape_f32_2x3x5", unary_model(T::BuiltinOperator_SHAPE, T::TensorType_FLOAT32, {2, 3, 5}, T::TensorType_INT32, {3}),
      {bytes_of(testing::random_floats(30, 17002))});
  add("shape_i8_1x7x4x2", unary_model(T::BuiltinOperator_SHAPE, T::TensorType_INT8, {1, 7, 4, 2}, T::TensorType_INT32, {4}),
      {random_bytes(56, 17003)});
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    EXPECT_EQ((*outs)[0], jobs[i].outputs[0]) << jobs[i].name << " differs";
    std::printf("[oracle] fill_shape %-32s %zu bytes %s\n", jobs[i].name.c_str(), jobs[i].outputs[0].size(),
                (*outs)[0] == jobs[i].outputs[0] ? "match" : "DIFFER");
  }
  // The two values of each FILL case gave different outputs: the comparison can fail.
  for (size_t i = 0; i + 2 < 8; i += 4) EXPECT_NE(jobs[i].outputs[0], jobs[i + 2].outputs[0]);
}

TEST(TfliteOracle, FillZerosLikeAndShapeRefusalsAreNamed) {
  auto expect_refused = [](const SingleOpModel& m, std::vector<std::vector<uint8_t>> inputs, std::vector<std::string> phrases) {
    auto r = run_tessera(m.bytes(), inputs, "cpu");
    ASSERT_FALSE(r.ok());
    const std::string msg = r.status().to_string();
    for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  };
  {  // dims that disagree with the output
    SingleOpModel m = fill_model(T::TensorType_FLOAT32, {2, 3}, true, bytes_of(std::vector<float>{1.0f}));
    m.tensors[2].shape = {3, 2};
    expect_refused(m, {}, {"FILL", "dims [2,3] differ from output 'y' [3,2]"});
  }
  {  // a value of several elements
    SingleOpModel m = fill_model(T::TensorType_FLOAT32, {2, 3}, true, bytes_of(std::vector<float>{1.0f, 2.0f}));
    m.tensors[1].shape = {2};
    expect_refused(m, {}, {"FILL", "value 'value' must hold one element"});
  }
  {  // an empty dim
    SingleOpModel m = fill_model(T::TensorType_INT32, {2, 0}, true, bytes_of(std::vector<int32_t>{1}));
    expect_refused(m, {}, {"FILL", "output 'y' [2,0]"});
  }
  {  // ZEROS_LIKE of a quantized tensor
    SingleOpModel m = unary_model(T::BuiltinOperator_ZEROS_LIKE, T::TensorType_UINT8, {2, 2}, T::TensorType_UINT8, {2, 2});
    expect_refused(m, {{0, 1, 2, 3}}, {"ZEROS_LIKE", "input 'x'", "u8"});
  }
  {  // SHAPE whose out_type is not the output's dtype
    SingleOpModel m = unary_model(T::BuiltinOperator_SHAPE, T::TensorType_FLOAT32, {2, 2}, T::TensorType_INT32, {2});
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_ShapeOptions, T::CreateShapeOptions(fb, T::TensorType_INT64).Union());
    };
    expect_refused(m, {std::vector<uint8_t>(16, 0)}, {"SHAPE", "out_type INT64", "output 'y' of dtype i32"});
  }
  {  // SHAPE into a float tensor
    SingleOpModel m = unary_model(T::BuiltinOperator_SHAPE, T::TensorType_FLOAT32, {2, 2}, T::TensorType_FLOAT32, {2});
    expect_refused(m, {std::vector<uint8_t>(16, 0)}, {"SHAPE", "output 'y' must be i32 or i64"});
  }
}

}  // namespace
}  // namespace tessera::oracle
