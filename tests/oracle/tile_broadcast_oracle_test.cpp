// TILE and BROADCAST_TO (f32, u8, i8; BROADCAST_TO also i16) as single-operator models
// against the TFLite interpreter: ranks 1-4, multiples 1-4, broadcasts that add leading
// dims and widen size-1 dims. The importer lowers both to gathers with constant indices;
// outputs must be byte-identical (the ops copy values). Also the importer's refusals, by
// operator and tensor name.
#include <gtest/gtest.h>

#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

enum class Form { f32, u8, i8, i16 };

const char* form_name(Form f) { return f == Form::f32 ? "f32" : f == Form::u8 ? "u8" : f == Form::i8 ? "i8" : "i16"; }

OpTensor tensor(const std::string& name, Form f, std::vector<int32_t> shape) {
  OpTensor t = testing::activation(
      name, f == Form::f32 ? T::TensorType_FLOAT32 : f == Form::u8 ? T::TensorType_UINT8 : f == Form::i8 ? T::TensorType_INT8 : T::TensorType_INT16,
      std::move(shape));
  if (f != Form::f32) {
    t.scale = 0.019f;
    t.zero_point = f == Form::u8 ? 140 : f == Form::i8 ? -6 : 0;
  }
  return t;
}

// TILE when `tile`, else BROADCAST_TO; `arg` is the multiples or the target shape.
SingleOpModel model(bool tile, Form f, std::vector<int32_t> x, std::vector<int32_t> arg) {
  std::vector<int32_t> y = arg;
  if (tile)
    for (size_t d = 0; d < x.size(); ++d) y[d] = x[d] * arg[d];
  SingleOpModel m;
  m.tensors = {tensor("x", f, x), testing::constant(tile ? "multiples" : "shape", T::TensorType_INT32, {static_cast<int32_t>(arg.size())}, testing::int32_bytes(arg)),
               tensor("y", f, y)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = tile ? T::BuiltinOperator_TILE : T::BuiltinOperator_BROADCAST_TO;
  // BROADCAST_TO's builtin versions start at 2 (the interpreter has no version 1).
  m.version = f == Form::i16 ? 3 : f == Form::i8 || !tile ? 2 : 1;
  return m;
}

TEST(TfliteOracle, TileAndBroadcastToMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    bool tile;
    std::vector<int32_t> x, arg;
  };
  const std::vector<Case> cases = {
      {true, {5}, {3}},           {true, {2, 3}, {2, 1}},       {true, {2, 3}, {1, 4}},    {true, {1, 2, 3}, {3, 2, 2}},
      {true, {2, 1, 3, 2}, {1, 3, 1, 2}}, {true, {3, 2}, {1, 1}},
      {false, {3}, {4, 3}},       {false, {1, 3}, {2, 4, 3}},   {false, {2, 1}, {2, 5}},   {false, {1, 1, 4}, {3, 2, 4}},
      {false, {2, 1, 3, 1}, {2, 4, 3, 2}}, {false, {4}, {1, 1, 2, 4}}, {false, {2, 3}, {2, 3}},
  };
  TempDir dir("tile_broadcast");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  uint32_t seed = 16000;
  for (const Case& c : cases)
    for (Form f : {Form::f32, Form::u8, Form::i8, Form::i16}) {
      if (c.tile && f == Form::i16) continue;  // TILE defines no int16 form
      std::string name = std::string(c.tile ? "tile_" : "broadcast_to_") + form_name(f);
      for (int32_t d : c.x) name += "_" + std::to_string(d);
      name += "_by";
      for (int32_t d : c.arg) name += "_" + std::to_string(d);
      models.push_back(model(c.tile, f, c.x, c.arg).bytes());
      const fs::path file = dir.path / (name + ".tflite");
      write_bytes(file, models.back());
      int64_t n = 1;
      for (int32_t d : c.x) n *= d;
      std::vector<uint8_t> in;
      if (f == Form::f32) {
        const std::vector<float> v = testing::random_floats(static_cast<size_t>(n), seed += 3);
        in.resize(v.size() * 4);
        std::memcpy(in.data(), v.data(), in.size());
      } else {
        in = random_bytes(static_cast<size_t>(n * (f == Form::i16 ? 2 : 1)), seed += 3);
      }
      jobs.push_back(Job{name, file.string(), {in}, {}});
    }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  expect_jobs_byte_exact(jobs, models, "tile_broadcast");
}

TEST(TfliteOracle, TileAndBroadcastToRefusalsAreNamed) {
  {  // multiples of another rank
    SingleOpModel m = model(true, Form::f32, {2, 3}, {2, 2});
    m.tensors[1] = testing::constant("multiples", T::TensorType_INT32, {3}, testing::int32_bytes({2, 2, 1}));
    expect_refused(m, {"TILE", "input 'x' has rank 2"});
  }
  {  // a zero multiple
    SingleOpModel m = model(true, Form::i8, {2, 3}, {2, 1});
    m.tensors[1] = testing::constant("multiples", T::TensorType_INT32, {2}, testing::int32_bytes({0, 1}));
    m.tensors[2].shape = {0, 3};
    expect_refused(m, {"TILE", "multiple 0 of axis 0", "input 'x'"});
  }
  {  // not broadcastable
    SingleOpModel m = model(false, Form::u8, {2, 3}, {4, 3});
    expect_refused(m, {"BROADCAST_TO", "input 'x' [2,3] does not broadcast to [4,3]"});
  }
  {  // a lower rank
    SingleOpModel m = model(false, Form::f32, {2, 3}, {3});
    expect_refused(m, {"BROADCAST_TO", "rank below input 'x'"});
  }
  {  // version 1, which the interpreter does not have
    SingleOpModel m = model(false, Form::f32, {1, 3}, {2, 3});
    m.version = 1;
    expect_refused(m, {"BROADCAST_TO", "version 1"});
  }
  {  // another output quantization
    SingleOpModel m = model(true, Form::u8, {2, 3}, {2, 2});
    m.tensors[2].scale = 0.5f;
    expect_refused(m, {"TILE", "output 'y'", "quantization of input 'x'"});
  }
}

}  // namespace
}  // namespace tessera::oracle
