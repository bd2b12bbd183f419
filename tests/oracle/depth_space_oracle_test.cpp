// DEPTH_TO_SPACE and SPACE_TO_DEPTH (f32, u8, i8) as single-operator models against the
// TFLite interpreter: block sizes 1-4, batches, odd depths. The importer lowers both to
// reshape + transpose + reshape; outputs must be byte-identical (the ops move values).
// Also the importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

enum class Form { f32, u8, i8 };

const char* form_name(Form f) { return f == Form::f32 ? "f32" : f == Form::u8 ? "u8" : "i8"; }

OpTensor tensor(const std::string& name, Form f, std::vector<int32_t> shape) {
  OpTensor t = testing::activation(name, f == Form::f32 ? T::TensorType_FLOAT32 : f == Form::u8 ? T::TensorType_UINT8 : T::TensorType_INT8,
                                   std::move(shape));
  if (f != Form::f32) {
    t.scale = 0.037f;
    t.zero_point = f == Form::u8 ? 128 : -3;
  }
  return t;
}

// x [N, H, W, C] moved by `block`; DEPTH_TO_SPACE when to_space.
SingleOpModel depth_space_model(bool to_space, Form f, std::vector<int32_t> x, int32_t block) {
  std::vector<int32_t> y = to_space ? std::vector<int32_t>{x[0], x[1] * block, x[2] * block, x[3] / (block * block)}
                                    : std::vector<int32_t>{x[0], x[1] / block, x[2] / block, x[3] * block * block};
  SingleOpModel m;
  m.tensors = {tensor("x", f, x), tensor("y", f, y)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = to_space ? T::BuiltinOperator_DEPTH_TO_SPACE : T::BuiltinOperator_SPACE_TO_DEPTH;
  m.version = f == Form::i8 ? 2 : 1;
  m.options = [to_space, block](flatbuffers::FlatBufferBuilder& fb) {
    if (to_space) return std::make_pair(T::BuiltinOptions_DepthToSpaceOptions, T::CreateDepthToSpaceOptions(fb, block).Union());
    return std::make_pair(T::BuiltinOptions_SpaceToDepthOptions, T::CreateSpaceToDepthOptions(fb, block).Union());
  };
  return m;
}

TEST(TfliteOracle, DepthToSpaceAndSpaceToDepthMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    bool to_space;
    std::vector<int32_t> x;
    int32_t block;
  };
  const std::vector<Case> cases = {
      {true, {1, 2, 3, 8}, 2},  {true, {2, 3, 2, 12}, 2}, {true, {1, 2, 2, 27}, 3}, {true, {1, 1, 3, 32}, 4},
      {true, {1, 3, 3, 5}, 1},  {false, {1, 4, 6, 2}, 2}, {false, {2, 6, 3, 3}, 3}, {false, {1, 8, 4, 1}, 4},
      {false, {1, 2, 2, 7}, 1}, {false, {3, 4, 4, 5}, 2},
  };
  TempDir dir("depth_space");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  uint32_t seed = 14000;
  for (const Case& c : cases)
    for (Form f : {Form::f32, Form::u8, Form::i8}) {
      const std::string name = std::string(c.to_space ? "d2s_" : "s2d_") + form_name(f) + "_" + std::to_string(c.x[0]) + "x" +
                               std::to_string(c.x[1]) + "x" + std::to_string(c.x[2]) + "x" + std::to_string(c.x[3]) + "_b" +
                               std::to_string(c.block);
      models.push_back(depth_space_model(c.to_space, f, c.x, c.block).bytes());
      const fs::path file = dir.path / (name + ".tflite");
      write_bytes(file, models.back());
      const size_t n = static_cast<size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]) * (f == Form::f32 ? 4 : 1);
      jobs.push_back(Job{name, file.string(), {random_bytes(n, seed += 3)}, {}});
      if (f == Form::f32)  // finite floats: random bytes could be NaNs, which compare unequal
        for (size_t k = 3; k < n; k += 4) jobs.back().inputs[0][k] &= 0x3f;
    }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  expect_jobs_byte_exact(jobs, models, "depth_space");
}

TEST(TfliteOracle, DepthSpaceRefusalsAreNamed) {
  {  // depth not a multiple of block^2
    SingleOpModel m = depth_space_model(true, Form::f32, {1, 2, 2, 8}, 2);
    m.tensors[0].shape = {1, 2, 2, 6};
    expect_refused(m, {"DEPTH_TO_SPACE", "input 'x'", "block_size^2"});
  }
  {  // a width the block does not divide
    SingleOpModel m = depth_space_model(false, Form::u8, {1, 4, 4, 2}, 2);
    m.tensors[0].shape = {1, 4, 5, 2};
    expect_refused(m, {"SPACE_TO_DEPTH", "input 'x'", "multiples of block_size 2"});
  }
  {  // block size 0
    SingleOpModel m = depth_space_model(true, Form::i8, {1, 2, 2, 4}, 2);
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_DepthToSpaceOptions, T::CreateDepthToSpaceOptions(fb, 0).Union());
    };
    expect_refused(m, {"DEPTH_TO_SPACE", "block_size 0"});
  }
  {  // missing options
    SingleOpModel m = depth_space_model(false, Form::f32, {1, 4, 4, 2}, 2);
    m.options = nullptr;
    expect_refused(m, {"SPACE_TO_DEPTH", "SpaceToDepthOptions are missing"});
  }
  {  // rank 3
    SingleOpModel m = depth_space_model(true, Form::f32, {1, 2, 2, 8}, 2);
    m.tensors[0].shape = {2, 2, 8};
    expect_refused(m, {"DEPTH_TO_SPACE", "input 'x' must be rank 4"});
  }
  {  // another output quantization
    SingleOpModel m = depth_space_model(true, Form::u8, {1, 2, 2, 8}, 2);
    m.tensors[1].scale = 0.05f;
    expect_refused(m, {"DEPTH_TO_SPACE", "output 'y'", "quantization of input 'x'"});
  }
}

}  // namespace
}  // namespace tessera::oracle
