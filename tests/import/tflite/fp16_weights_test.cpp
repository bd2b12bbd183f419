// Float16 weights: a DEQUANTIZE of a constant f16 tensor is folded at import into an f32
// constant (exact), so the graph has no dequantize node left (yolov5n_fp16.tflite: 131 of
// them). Its outputs are judged against the interpreter in tests/corpus.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;

testing::SingleOpModel add_of_dequantized_f16(const std::vector<uint16_t>& halves) {
  // y = x + dequantize(c), c a constant f16 [n].
  testing::SingleOpModel m;
  const int32_t n = static_cast<int32_t>(halves.size());
  std::vector<uint8_t> c(halves.size() * 2);
  std::memcpy(c.data(), halves.data(), c.size());
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {n}), testing::constant("c16", T::TensorType_FLOAT16, {n}, c),
               testing::activation("c32", T::TensorType_FLOAT32, {n}), testing::activation("y", T::TensorType_FLOAT32, {n})};
  m.before = {testing::OpBefore{T::BuiltinOperator_DEQUANTIZE, 1, {1}, {2}}};
  m.code = T::BuiltinOperator_ADD;
  m.op_inputs = {0, 2};
  m.op_outputs = {3};
  m.model_inputs = {0};
  return m;
}

TEST(TfliteFp16Weights, ConstantDequantizeIsFoldedIntoAnF32Constant) {
  // 1.5, -2, 65504 (the largest f16), 2^-24 (the smallest denormal), -0.
  const std::vector<uint16_t> halves = {0x3E00, 0xC000, 0x7BFF, 0x0001, 0x8000};
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(add_of_dequantized_f16(halves).bytes()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0].op, OpKind::add);
  const Tensor& c = g->tensor(g->nodes()[0].inputs[1]);
  EXPECT_EQ(c.dtype, DType::f32);
  EXPECT_EQ(c.role, Role::weight);
  auto s = Session::create(std::move(*g), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::vector<float> x(5, 0.0f);
  ASSERT_TRUE((*s)->set_input(0, x.data(), 20).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto y = (*s)->output(0);
  ASSERT_TRUE(y.ok());
  std::vector<float> v(5);
  std::memcpy(v.data(), y->data(), 20);
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 65504.0f, 5.9604644775390625e-8f, 0.0f}));
}

TEST(TfliteFp16Weights, Yolov5nFp16HasNoDequantizeNodes) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/corpus/yolov5n_fp16.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  int convs = 0;
  for (const Node& n : g->nodes()) {
    EXPECT_NE(n.op, OpKind::dequantize) << n.name;
    if (n.op != OpKind::conv2d) continue;
    ++convs;
    const Tensor& w = g->tensor(n.inputs[1]);
    EXPECT_EQ(w.dtype, DType::f32) << n.name;
    EXPECT_EQ(w.role, Role::weight) << n.name;
    ASSERT_TRUE(w.data) << n.name;
    EXPECT_EQ(w.data->size, w.elements() * 4) << n.name;
  }
  EXPECT_EQ(convs, 60);
}

}  // namespace
}  // namespace tessera
