// MIRROR_PAD (f32, u8, i8; REFLECT and SYMMETRIC) as single-operator models against the
// TFLite interpreter: ranks 1-4, paddings up to the largest each mode allows, int32 and
// int64 paddings. The importer lowers it to one gather per padded axis; outputs must be
// byte-identical (the op copies values). Also the importer's refusals, by operator and
// tensor name.
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
    t.scale = 0.021f;
    t.zero_point = f == Form::u8 ? 117 : 4;
  }
  return t;
}

SingleOpModel mirror_pad_model(Form f, std::vector<int32_t> x, std::vector<int32_t> pads, T::MirrorPadMode mode, bool pads64) {
  std::vector<int32_t> y = x;
  for (size_t d = 0; d < x.size(); ++d) y[d] += pads[2 * d] + pads[2 * d + 1];
  SingleOpModel m;
  std::vector<uint8_t> pad_bytes;
  if (pads64) {
    std::vector<int64_t> p(pads.begin(), pads.end());
    pad_bytes.resize(p.size() * 8);
    std::memcpy(pad_bytes.data(), p.data(), pad_bytes.size());
  } else {
    pad_bytes = testing::int32_bytes(pads);
  }
  m.tensors = {tensor("x", f, x),
               testing::constant("paddings", pads64 ? T::TensorType_INT64 : T::TensorType_INT32, {static_cast<int32_t>(x.size()), 2}, pad_bytes),
               tensor("y", f, y)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_MIRROR_PAD;
  m.version = f == Form::i8 ? 2 : 1;
  m.options = [mode](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_MirrorPadOptions, T::CreateMirrorPadOptions(fb, mode).Union());
  };
  return m;
}

TEST(TfliteOracle, MirrorPadMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    std::vector<int32_t> x, pads;
    bool pads64 = false;
  };
  // Paddings up to size - 1 (REFLECT's limit; SYMMETRIC takes one more, tested below).
  const std::vector<Case> cases = {
      {{7}, {3, 6}},
      {{4, 5}, {1, 2, 3, 0}},
      {{2, 3, 4}, {0, 1, 2, 2, 3, 1}, true},
      {{1, 4, 5, 3}, {0, 0, 2, 3, 4, 1, 0, 0}},
      {{2, 3, 3, 2}, {1, 1, 2, 2, 0, 1, 1, 0}},
      {{3, 2}, {0, 0, 0, 0}},
  };
  TempDir dir("mirror_pad");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  uint32_t seed = 15000;
  auto add = [&](Form f, const std::vector<int32_t>& x, const std::vector<int32_t>& pads, T::MirrorPadMode mode, bool pads64) {
    std::string name = std::string("mirror_pad_") + (mode == T::MirrorPadMode_REFLECT ? "reflect_" : "symmetric_") + form_name(f);
    for (int32_t d : x) name += "_" + std::to_string(d);
    name += "_p";
    for (int32_t p : pads) name += std::to_string(p);
    if (pads64) name += "_i64pads";
    models.push_back(mirror_pad_model(f, x, pads, mode, pads64).bytes());
    const fs::path file = dir.path / (name + ".tflite");
    write_bytes(file, models.back());
    int64_t n = 1;
    for (int32_t d : x) n *= d;
    std::vector<uint8_t> in;
    if (f == Form::f32) {
      const std::vector<float> v = testing::random_floats(static_cast<size_t>(n), seed += 3);
      in.resize(v.size() * 4);
      std::memcpy(in.data(), v.data(), in.size());
    } else {
      in = random_bytes(static_cast<size_t>(n), seed += 3);
    }
    jobs.push_back(Job{name, file.string(), {in}, {}});
  };
  for (const Case& c : cases)
    for (Form f : {Form::f32, Form::u8, Form::i8})
      for (T::MirrorPadMode mode : {T::MirrorPadMode_REFLECT, T::MirrorPadMode_SYMMETRIC}) add(f, c.x, c.pads, mode, c.pads64);
  // SYMMETRIC up to the full size.
  add(Form::i8, {3, 4}, {3, 2, 4, 4}, T::MirrorPadMode_SYMMETRIC, false);
  add(Form::f32, {5}, {5, 5}, T::MirrorPadMode_SYMMETRIC, false);
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  expect_jobs_byte_exact(jobs, models, "mirror_pad");
}

TEST(TfliteOracle, MirrorPadRefusalsAreNamed) {
  {  // REFLECT past size - 1
    SingleOpModel m = mirror_pad_model(Form::f32, {3, 4}, {0, 0, 4, 0}, T::MirrorPadMode_REFLECT, false);
    expect_refused(m, {"MIRROR_PAD", "axis 1", "input 'x'", "exceed 3 (REFLECT)"});
  }
  {  // SYMMETRIC past size
    SingleOpModel m = mirror_pad_model(Form::u8, {3, 4}, {4, 0, 0, 0}, T::MirrorPadMode_SYMMETRIC, false);
    expect_refused(m, {"MIRROR_PAD", "axis 0", "exceed 3 (SYMMETRIC)"});
  }
  {  // paddings of another rank
    SingleOpModel m = mirror_pad_model(Form::i8, {3, 4}, {1, 1, 1, 1}, T::MirrorPadMode_REFLECT, false);
    m.tensors[1] = testing::constant("paddings", T::TensorType_INT32, {3, 2}, testing::int32_bytes({1, 1, 1, 1, 1, 1}));
    expect_refused(m, {"MIRROR_PAD", "input 'x' of rank 2"});
  }
  {  // missing options
    SingleOpModel m = mirror_pad_model(Form::f32, {3, 4}, {1, 1, 1, 1}, T::MirrorPadMode_REFLECT, false);
    m.options = nullptr;
    expect_refused(m, {"MIRROR_PAD", "MirrorPadOptions are missing"});
  }
  {  // another output quantization
    SingleOpModel m = mirror_pad_model(Form::u8, {3, 4}, {1, 1, 1, 1}, T::MirrorPadMode_REFLECT, false);
    m.tensors[2].zero_point = 3;
    expect_refused(m, {"MIRROR_PAD", "output 'y'", "quantization of input 'x'"});
  }
}

}  // namespace
}  // namespace tessera::oracle
