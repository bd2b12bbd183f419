// Placeholder shapes: converters leave shapes such as [1,1,1,3] on intermediate tensors that
// the interpreter recomputes when it allocates. The importer gives such a tensor the shape
// its operator produces (Tessera's shape inference); a model output keeps its declared
// shape, which must agree, and a failing inference is still an error naming the operator.
#include <gtest/gtest.h>

#include <cstring>

#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;

// t = RELU(x) declared `t_shape`; y = ADD(t, x) declared `y_shape`; x is f32 [2,3].
testing::SingleOpModel relu_add(std::vector<int32_t> t_shape, std::vector<int32_t> y_shape,
                                std::vector<int32_t> x_shape = {2, 3}) {
  testing::SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, x_shape), testing::activation("t", T::TensorType_FLOAT32, t_shape),
               testing::activation("y", T::TensorType_FLOAT32, y_shape), testing::activation("x2", T::TensorType_FLOAT32, {2, 3})};
  m.before = {testing::OpBefore{T::BuiltinOperator_RELU, 1, {0}, {1}}};
  m.code = T::BuiltinOperator_ADD;
  m.op_inputs = {1, 3};
  m.op_outputs = {2};
  m.model_inputs = {0, 3};
  return m;
}

Result<Graph> load(const testing::SingleOpModel& m) { return tflite::load_tflite_buffer(ConstData::from_vector(m.bytes())); }

TEST(TflitePlaceholderShapes, IntermediateTensorTakesTheInferredShape) {
  auto g = load(relu_add({1, 1, 1, 3}, {2, 3}));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->tensor(g->nodes()[0].outputs[0]).shape, (Shape{2, 3}));
  auto s = Session::create(std::move(*g), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::vector<float> x = {-1, 2, -3, 4, 0.5f, -0.5f}, x2 = {10, 20, 30, 40, 50, 60};
  ASSERT_TRUE((*s)->set_input(0, x.data(), 24).ok());
  ASSERT_TRUE((*s)->set_input(1, x2.data(), 24).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto y = (*s)->output(0);
  ASSERT_TRUE(y.ok());
  std::vector<float> v(6);
  std::memcpy(v.data(), y->data(), 24);
  EXPECT_EQ(v, (std::vector<float>{10, 22, 30, 44, 50.5f, 60}));
}

TEST(TflitePlaceholderShapes, ModelOutputMustAgree) {
  auto g = load(relu_add({2, 3}, {1, 1, 1, 3}));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("op 1 (ADD v1)"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("output 'y' is declared [1,1,1,3] but the operator produces [2,3]"), std::string::npos)
      << g.status().message();
}

TEST(TflitePlaceholderShapes, FailingInferenceIsStillAnError) {
  // t = RELU(x) with x [4]: ADD(t [4], x2 [2,3]) cannot broadcast.
  auto g = load(relu_add({1}, {2, 3}, {4}));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("op 1 (ADD v1)"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera
