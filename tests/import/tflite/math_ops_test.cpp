// The elementwise math builtins (ABS, NEG, SQUARE, RSQRT, EXP, LOG): the nodes they import
// to, and the forms TFLite's kernels do not define refused with an error naming the
// operator and the tensor. Their values are judged against the TFLite interpreter in
// tests/oracle/math_oracle_test.cpp. The fuzz seeds of these operators
// (fuzz/regressions/tflite_fuzz/{abs,rsqrt,squared_difference,less,select_v2}_*) are the
// models built here: the last test checks the files still are, and that each imports and
// runs; TESSERA_WRITE_FUZZ_SEEDS=1 rewrites them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

Result<Graph> load(const SingleOpModel& m) { return tflite::load_tflite_buffer(ConstData::from_vector(m.bytes())); }

OpTensor q_tensor(const std::string& name, T::TensorType type, float scale, int64_t zp) {
  OpTensor t = testing::activation(name, type, {2, 3});
  t.scale = scale;
  t.zero_point = zp;
  return t;
}

SingleOpModel unary_model(T::BuiltinOperator code, int version, OpTensor x, OpTensor y) {
  SingleOpModel m;
  m.code = code;
  m.version = version;
  m.tensors = {std::move(x), std::move(y)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  return m;
}

void expect_error(const SingleOpModel& m, std::vector<std::string> phrases) {
  auto g = load(m);
  ASSERT_FALSE(g.ok());
  const std::string msg = g.status().to_string();
  for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(TfliteMathOps, ImportToOneNodeEach) {
  const std::pair<T::BuiltinOperator, OpKind> ops[] = {
      {T::BuiltinOperator_ABS, OpKind::abs},     {T::BuiltinOperator_NEG, OpKind::neg},
      {T::BuiltinOperator_SQUARE, OpKind::square}, {T::BuiltinOperator_RSQRT, OpKind::rsqrt},
      {T::BuiltinOperator_EXP, OpKind::exp},     {T::BuiltinOperator_LOG, OpKind::log}};
  for (const auto& [code, kind] : ops) {
    auto g = load(unary_model(code, 1, testing::activation("x", T::TensorType_FLOAT32, {2, 3}),
                              testing::activation("y", T::TensorType_FLOAT32, {2, 3})));
    ASSERT_TRUE(g.ok()) << T::EnumNameBuiltinOperator(code) << ": " << g.status().to_string();
    ASSERT_EQ(g->nodes().size(), 1u);
    EXPECT_EQ(g->nodes()[0].op, kind);
  }
}

TEST(TfliteMathOps, FormsTfliteDoesNotDefineAreRefused) {
  const auto u8 = T::TensorType_UINT8, i8 = T::TensorType_INT8, i16 = T::TensorType_INT16;
  // u8 ABS / EXP / RSQRT: TFLite's kernels take int8 (and int16 for ABS) only.
  expect_error(unary_model(T::BuiltinOperator_ABS, 2, q_tensor("x", u8, 0.1f, 128), q_tensor("y", u8, 0.1f, 0)),
               {"ABS", "input 'x' is u8 quantized", "f32, i8 quantized, i16 quantized"});
  expect_error(unary_model(T::BuiltinOperator_EXP, 1, q_tensor("x", u8, 0.1f, 128), q_tensor("y", u8, 0.1f, 0)),
               {"EXP", "input 'x' is u8 quantized"});
  // EXP v2 (int8) is newer than the interpreter that judges the kernels.
  expect_error(unary_model(T::BuiltinOperator_EXP, 2, q_tensor("x", i8, 0.1f, 0), q_tensor("y", i8, 0.1f, 0)), {"EXP", "version 2"});
  expect_error(unary_model(T::BuiltinOperator_RSQRT, 2, q_tensor("x", i16, 0.1f, 0), q_tensor("y", i16, 0.1f, 0)),
               {"RSQRT", "input 'x' is i16 quantized"});
  // Quantized NEG / SQUARE / LOG do not exist in TFLite (nor, here, EXP's int8 form).
  for (T::BuiltinOperator code : {T::BuiltinOperator_NEG, T::BuiltinOperator_SQUARE, T::BuiltinOperator_LOG, T::BuiltinOperator_EXP})
    expect_error(unary_model(code, 1, q_tensor("x", i8, 0.1f, 0), q_tensor("y", i8, 0.1f, 0)),
                 {T::EnumNameBuiltinOperator(code), "input 'x' is i8 quantized", "takes f32"});
  // int16 with a non-zero zero point; an output of another dtype; per-axis quantization.
  expect_error(unary_model(T::BuiltinOperator_ABS, 3, q_tensor("x", i16, 0.1f, 0), q_tensor("y", i16, 0.1f, 3)),
               {"ABS", "tensor 'y' has zero point 3"});
  expect_error(unary_model(T::BuiltinOperator_RSQRT, 2, q_tensor("x", i8, 0.1f, 0), testing::activation("y", T::TensorType_FLOAT32, {2, 3})),
               {"RSQRT", "tensor 'y' is f32", "input 'x' is i8 quantized"});
  OpTensor pc = q_tensor("x", i8, 0.1f, 0);
  pc.scale = 0;
  pc.scales = {0.1f, 0.2f};
  pc.quantized_dimension = 0;
  pc.shape = {2, 3};
  expect_error(unary_model(T::BuiltinOperator_ABS, 2, pc, q_tensor("y", i8, 0.1f, 0)), {"ABS", "'x'", "per-axis"});
  // A version past the forms the importer knows.
  expect_error(unary_model(T::BuiltinOperator_RSQRT, 3, q_tensor("x", i8, 0.1f, 0), q_tensor("y", i8, 0.1f, 0)), {"RSQRT", "version 3"});
}

OpTensor shaped(OpTensor t, std::vector<int32_t> shape) {
  t.shape = std::move(shape);
  return t;
}

// One small model per operator family, in its quantized form (the fuzzer mutates options,
// shapes and quantization from there).
std::vector<std::pair<std::string, SingleOpModel>> fuzz_seeds() {
  const auto i8 = T::TensorType_INT8;
  std::vector<std::pair<std::string, SingleOpModel>> seeds;
  seeds.push_back({"abs_i8", unary_model(T::BuiltinOperator_ABS, 2, q_tensor("x", i8, 0.02f, -7), q_tensor("y", i8, 0.013f, -100))});
  seeds.push_back({"rsqrt_i8", unary_model(T::BuiltinOperator_RSQRT, 2, q_tensor("x", i8, 0.01f, -128), q_tensor("y", i8, 0.05f, -128))});
  auto binary = [&](T::BuiltinOperator code, OpTensor y) {
    SingleOpModel m;
    m.code = code;
    m.version = 2;
    m.tensors = {shaped(q_tensor("a", i8, 0.02f, -7), {2, 3}), shaped(q_tensor("b", i8, 0.015f, 3), {3}), std::move(y)};
    m.op_inputs = {0, 1};
    m.op_outputs = {2};
    return m;
  };
  seeds.push_back({"squared_difference_i8", binary(T::BuiltinOperator_SQUARED_DIFFERENCE, q_tensor("y", i8, 0.03f, -128))});
  seeds.push_back({"less_i8", binary(T::BuiltinOperator_LESS, testing::activation("y", T::TensorType_BOOL, {2, 3}))});
  SingleOpModel sel;
  sel.code = T::BuiltinOperator_SELECT_V2;
  sel.version = 2;
  sel.tensors = {testing::activation("cond", T::TensorType_BOOL, {3}), q_tensor("a", i8, 0.05f, -3), shaped(q_tensor("b", i8, 0.05f, -3), {1, 3}),
                 q_tensor("y", i8, 0.05f, -3)};
  sel.op_inputs = {0, 1, 2};
  sel.op_outputs = {3};
  seeds.push_back({"select_v2_i8", sel});
  return seeds;
}

TEST(TfliteMathOps, FuzzSeedsAreTheseModelsAndRun) {
  namespace fs = std::filesystem;
  fs::path here = fs::path(__FILE__);  // relative to the test's build folder when the compiler was given a relative path
  if (here.is_relative()) here = fs::path(TESSERA_BINARY_DIR) / "tests" / here;
  const fs::path dir = fs::weakly_canonical(here.parent_path() / "../../../fuzz/regressions/tflite_fuzz");
  const bool write = std::getenv("TESSERA_WRITE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, m] : fuzz_seeds()) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = m.bytes();
    const fs::path file = dir / name;
    if (write) {
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    std::ifstream f(file, std::ios::binary);
    ASSERT_TRUE(f.good()) << file << " is missing (TESSERA_WRITE_FUZZ_SEEDS=1 writes it)";
    const std::vector<uint8_t> stored((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(stored, bytes) << file << " differs from the model this test builds";
    auto g = load(m);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    SessionOptions so;
    so.device = "cpu";
    auto s = Session::create(std::move(*g), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    for (size_t k = 0; k < (*s)->graph().inputs.size(); ++k) {
      const Tensor& t = (*s)->graph().tensor((*s)->graph().inputs[k]);
      std::vector<uint8_t> in(static_cast<size_t>(num_elements(t.shape) * dtype_size(t.dtype)), 1);  // code 1: >= every zero point used
      ASSERT_TRUE((*s)->set_input(k, in.data(), static_cast<int64_t>(in.size())).ok());
    }
    EXPECT_TRUE((*s)->run().ok());
  }
}

}  // namespace
}  // namespace tessera
