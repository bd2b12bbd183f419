#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "tessera/session.h"

namespace tessera {
namespace {

// x + w, then relu: the smallest graph that exercises weights, planning, and a run.
Graph add_relu_graph(const std::vector<float>& w) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {2, 3};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  Tensor wt;
  wt.name = "w";
  wt.shape = {3};
  wt.role = Role::weight;
  std::vector<uint8_t> bytes(w.size() * 4);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  wt.data = ConstData::from_vector(bytes);
  TensorId wi = g.add_tensor(wt);
  TensorId s = *g.add_op(OpKind::add, {xi, wi});
  TensorId y = *g.add_op(OpKind::relu, {s});
  g.tensor(y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {y};
  return g;
}

TEST(Session, AddReluOnCpu) {
  std::vector<float> w = {0.5f, -2.0f, 1.0f};
  auto s = Session::create(add_relu_graph(w), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto x = testing::random_floats(6, 7);
  ASSERT_TRUE((*s)->set_input(0, x.data(), 24).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto out = (*s)->output(0);
  ASSERT_TRUE(out.ok());
  const float* y = reinterpret_cast<const float*>(out->data());
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], std::max(0.0f, x[i] + w[i % 3])) << i;
}

TEST(Session, WrongInputSizeIsAClearError) {
  auto s = Session::create(add_relu_graph({1, 2, 3}), SessionOptions{});
  ASSERT_TRUE(s.ok());
  std::vector<float> x(5, 1.0f);
  Status st = (*s)->set_input(0, x.data(), 20);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("'x'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("24 bytes"), std::string::npos) << st.message();
}

TEST(Session, UnknownDeviceNamesTheKnownOnes) {
  SessionOptions o;
  o.device = "gpu";
  auto s = Session::create(add_relu_graph({1, 2, 3}), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cpu"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace tessera
