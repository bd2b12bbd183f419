#include <gtest/gtest.h>

#include "tessera/graph.h"
#include "tessera/backend/region.h"

namespace tessera {
namespace {

TensorId input(Graph& g, const std::string& name, Shape s, DType t = DType::f32) {
  Tensor x;
  x.name = name;
  x.shape = std::move(s);
  x.dtype = t;
  x.role = Role::input;
  TensorId id = g.add_tensor(x);
  g.inputs.push_back(id);
  return id;
}

TEST(Graph, OpListIsTheSingleSource) {
  EXPECT_STREQ(op_name(OpKind::conv2d), "conv2d");
  EXPECT_EQ(op_from_name("scatter_rows"), OpKind::scatter_rows);
  EXPECT_FALSE(op_from_name("not_an_op").has_value());
  EXPECT_EQ(op_min_inputs(OpKind::conv2d), 2);
  EXPECT_EQ(op_max_inputs(OpKind::conv2d), 3);
}

TEST(Graph, ShapeInferenceForConvNamesTheProblem) {
  Graph g;
  TensorId x = input(g, "img", {1, 8, 8, 3});
  Tensor w;
  w.name = "filter";
  w.shape = {4, 3, 3, 5};  // IC 5 does not divide 3 input channels
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::vector<uint8_t>(4 * 3 * 3 * 5 * 4, 1));
  TensorId wi = g.add_tensor(w);
  auto r = g.add_op(OpKind::conv2d, {x, wi}, {{"stride_h", int64_t{1}}, {"stride_w", int64_t{1}}}, "conv1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[conv2d]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("conv1"), std::string::npos) << r.status().message();
  EXPECT_EQ(g.nodes().size(), 0u);  // nothing half-added
}

TEST(Graph, ConvOutputShapeWithPaddingAndStride) {
  Graph g;
  TensorId x = input(g, "img", {1, 224, 224, 3});
  Tensor w;
  w.name = "filter";
  w.shape = {32, 3, 3, 3};
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::vector<uint8_t>(32 * 27 * 4, 1));
  TensorId wi = g.add_tensor(w);
  auto y = g.add_op(OpKind::conv2d, {x, wi},
                    {{"stride_h", int64_t{2}}, {"stride_w", int64_t{2}}, {"pad_top", int64_t{0}},
                     {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{0}}, {"pad_right", int64_t{1}}});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(g.tensor(*y).shape, (Shape{1, 112, 112, 32}));
}

TEST(Graph, MismatchedAddShapesAndWrongInputCounts) {
  Graph g;
  TensorId a = input(g, "a", {2, 3});
  TensorId b = input(g, "b", {4, 3});
  auto r = g.add_op(OpKind::add, {a, b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos) << r.status().message();
  auto c = g.add_op(OpKind::add, {a});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("1 inputs"), std::string::npos) << c.status().message();
  auto d = g.add_op(OpKind::relu, {TensorId{42}});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("does not exist"), std::string::npos) << d.status().message();
}

// The shape checks of cumsum, arg_min, prelu and log_softmax name the node and the problem.
TEST(Graph, CumsumArgMinPreluAndLogSoftmaxNameTheProblem) {
  Graph g;
  TensorId x = input(g, "x", {2, 3, 4});
  TensorId u = input(g, "u", {2, 3});
  g.tensor(u).dtype = DType::u8;
  auto a = g.add_op(OpKind::cumsum, {x}, {{"axis", int64_t{3}}}, "sum");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("[cumsum] 'sum': axis 3 out of range for rank 3"), std::string::npos) << a.status().message();
  auto b = g.add_op(OpKind::cumsum, {u}, {}, "sum_u8");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("input 'u' is u8; cumsum takes f32, i32 or i64"), std::string::npos) << b.status().message();
  auto c = g.add_op(OpKind::arg_min, {x}, {{"axis", int64_t{-4}}}, "argmin");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("[arg_min] 'argmin': axis -4 out of range"), std::string::npos) << c.status().message();
  TensorId alpha = input(g, "alpha", {5});
  auto d = g.add_op(OpKind::prelu, {x, alpha}, {}, "prelu");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("inputs 'x' and 'alpha'"), std::string::npos) << d.status().message();
  TensorId s = input(g, "s", {});
  auto e = g.add_op(OpKind::log_softmax, {s}, {}, "ls");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("input 's' must have rank >= 1"), std::string::npos) << e.status().message();
  // Scalars have no axis to concatenate along (a fuzzed model once indexed an empty shape).
  auto f = g.add_op(OpKind::concat, {s, s}, {{"axis", int64_t{0}}}, "cat");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("input 0 's' is a scalar; concat needs rank >= 1"), std::string::npos)
      << f.status().message();
  auto ok = g.add_op(OpKind::cumsum, {x}, {{"axis", int64_t{-1}}, {"exclusive", int64_t{1}}}, "good");
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

TEST(Graph, ValidateCatchesUseBeforeDefinitionAndShortWeights) {
  Graph g;
  TensorId a = input(g, "a", {2, 2});
  Tensor t;
  t.name = "later";
  t.shape = {2, 2};
  TensorId later = g.add_tensor(t);
  Node n;
  n.op = OpKind::add;
  n.inputs = {a, later};
  Tensor o;
  o.name = "o";
  o.shape = {2, 2};
  n.outputs = {g.add_tensor(o)};
  ASSERT_TRUE(g.add_node(n).ok());
  Status s = g.validate();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'later'"), std::string::npos) << s.message();

  Graph h;
  Tensor w;
  w.name = "w";
  w.shape = {8};
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::vector<uint8_t>(16));  // 8 f32 need 32 bytes
  h.add_tensor(w);
  Status hs = h.validate();
  EXPECT_FALSE(hs.ok());
  EXPECT_NE(hs.message().find("32 bytes"), std::string::npos) << hs.message();
}

TEST(Region, RowsAndValidation) {
  Shape full{4, 128, 16};
  Region r = Region::rows(full, -2, 10, 12);
  EXPECT_EQ(r.extent(full), (Shape{4, 2, 16}));
  EXPECT_EQ(r.partial_axis(full), 1);
  EXPECT_TRUE(r.validate(full).ok());
  Region out = Region::rows(full, 1, 120, 130);
  Status s = out.validate(full);
  EXPECT_EQ(s.code(), StatusCode::out_of_range);
  EXPECT_NE(s.message().find("[120, 130)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera
