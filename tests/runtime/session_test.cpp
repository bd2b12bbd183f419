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

// SessionOptions::progress: reports that never decrease, end at exactly 1 and reach
// every device the plan uses (tile: cpu fallback plus compile); false cancels by name.
TEST(Session, ProgressRisesToOneAndFalseCancels) {
  for (const char* device : {"cpu", "tile"}) {
    SCOPED_TRACE(device);
    std::vector<double> seen;
    SessionOptions so;
    so.device = device;
    so.progress = [&](double f) {
      seen.push_back(f);
      return true;
    };
    auto s = Session::create(add_relu_graph({0.5f, -2.0f, 1.0f}), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_GE(seen.size(), 3u);
    EXPECT_EQ(seen.front(), 0.0);
    EXPECT_EQ(seen.back(), 1.0);
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]) << "report " << i;
    for (double f : seen) EXPECT_TRUE(f >= 0.0 && f <= 1.0) << f;
    const size_t reports = seen.size();
    auto x = testing::random_floats(6, 7);
    ASSERT_TRUE((*s)->set_input(0, x.data(), 24).ok());
    EXPECT_TRUE((*s)->run().ok());
    EXPECT_EQ(seen.size(), reports);  // running reports nothing: the callback was create()'s

    int calls = 0;
    so.progress = [&](double) { return ++calls < 2; };
    auto c = Session::create(add_relu_graph({0.5f, -2.0f, 1.0f}), so);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::cancelled);
    EXPECT_NE(c.status().message().find("cancelled by the progress callback"), std::string::npos)
        << c.status().message();
    EXPECT_EQ(calls, 2);  // no report after the one that said stop
  }
}

}  // namespace
}  // namespace tessera
