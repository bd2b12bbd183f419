// Typed attributes (tessera/attrs.h): ops.def's declarations, the checks a node passes
// when it joins a graph, and the typed reads.
#include <gtest/gtest.h>

#include <set>

#include "ops/attrs_check.h"
#include "tessera/graph.h"

namespace tessera {
namespace {

TensorId input(Graph& g, Shape s, DType t = DType::f32) {
  Tensor x;
  x.name = "x" + std::to_string(g.tensors().size());
  x.shape = std::move(s);
  x.dtype = t;
  x.role = Role::input;
  return g.add_tensor(x);
}

TEST(Attrs, EveryDeclarationIsWellFormed) {
  std::set<attr::Id> used;
  for (int o = 0; o < kNumOps; ++o) {
    const auto op = static_cast<OpKind>(o);
    std::set<attr::Id> seen;
    for (const attr::Spec* s : attr::specs_of(op)) {
      SCOPED_TRACE(std::string(op_name(op)) + "." + s->name);
      EXPECT_TRUE(seen.insert(s->id).second) << "declared twice";
      used.insert(s->id);
      EXPECT_EQ(attr::find_spec(op, s->id), s);
      EXPECT_STREQ(attr::key_name(s->id), s->name);
      EXPECT_GT(std::string(s->meaning).size(), 3u) << "one line of meaning";
      // A declared default passes its own checks (this also parses every `allowed`).
      if (s->presence == attr::Presence::defaulted) {
        Node n;
        n.op = op;
        n.attrs[s->name] = s->default_value;
        Status st = attr::check(n);
        // Other required attributes of the op are missing; only this one's check matters.
        if (!st.ok()) {
          EXPECT_NE(st.message().find("is required"), std::string::npos) << st.message();
        }
      }
    }
  }
  for (int k = 0; k < attr::kNumKeys; ++k)
    EXPECT_TRUE(used.count(static_cast<attr::Id>(k))) << "key '" << attr::key_name(static_cast<attr::Id>(k))
                                                     << "' is declared by no op";
}

TEST(Attrs, ReadsAreTypedWithTheOpsDefaults) {
  Graph g;
  TensorId x = input(g, {1, 8, 8, 4});
  auto y = g.add_op(OpKind::max_pool2d, {x}, {{"filter_h", int64_t{2}}, {"filter_w", int64_t{2}}, {"stride_h", int64_t{2}}},
                    "pool");
  ASSERT_TRUE(y.ok()) << y.status().message();
  const Node& n = g.nodes().back();
  EXPECT_EQ(n.get(attr::stride_h), 2);
  EXPECT_EQ(n.get(attr::stride_w), 1);   // ops.def default
  EXPECT_EQ(n.get(attr::pad_right), 0);  // ops.def default
  EXPECT_EQ(n.get(attr::activation), "none");
  EXPECT_EQ(g.tensor(*y).shape, (Shape{1, 4, 7, 4}));  // rows stride 2, columns stride 1

  TensorId r = input(g, {2, 3, 4});
  auto sm = g.add_op(OpKind::softmax, {r}, {}, "sm");
  ASSERT_TRUE(sm.ok());
  EXPECT_EQ(g.nodes().back().get(attr::axis), -1);
  EXPECT_EQ(g.nodes().back().get(attr::beta), 1.0);
}

TEST(Attrs, IntegersAreStoredAsFloatsAndListsWhereDeclared) {
  Graph g;
  TensorId x = input(g, {2, 5});
  // beta given as an integer, axes of a mean as one integer.
  auto sm = g.add_op(OpKind::softmax, {x}, {{"beta", int64_t{2}}});
  ASSERT_TRUE(sm.ok()) << sm.status().message();
  EXPECT_EQ(g.nodes().back().get(attr::beta), 2.0);
  auto m = g.add_op(OpKind::mean, {x}, {{"axes", int64_t{1}}});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(g.nodes().back().get(attr::axes), (std::vector<int64_t>{1}));
  EXPECT_EQ(g.tensor(*m).shape, (Shape{2}));
}

TEST(Attrs, OptionalAttributesReadAsOptional) {
  Graph g;
  TensorId x = input(g, {2, 3});
  ASSERT_TRUE(g.add_op(OpKind::pad, {x}, {{"paddings", std::vector<int64_t>{0, 0, 1, 1}}}).ok());
  EXPECT_FALSE(g.nodes().back().find(attr::value).has_value());
  ASSERT_TRUE(g.add_op(OpKind::pad, {x}, {{"paddings", std::vector<int64_t>{0, 0, 1, 1}}, {"value", 3.5}}).ok());
  EXPECT_EQ(g.nodes().back().find(attr::value), 3.5);
}

// Each bad attribute is refused at graph build with the node's and the attribute's name.
TEST(Attrs, BadAttributesAreRefusedNamingNodeAndAttribute) {
  struct Case {
    OpKind op;
    AttrMap attrs;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {OpKind::softmax, {{"axsi", int64_t{0}}}, {"softmax 'n'", "unknown attribute 'axsi'", "takes: axis, beta"}},
      {OpKind::softmax, {{"axis", std::string("last")}}, {"softmax 'n'", "'axis' must be an integer", "'last'"}},
      {OpKind::softmax, {{"axis", 1.5}}, {"'axis' must be an integer", "1.5"}},
      {OpKind::conv2d, {{"stride_h", int64_t{0}}}, {"conv2d 'n'", "'stride_h' is 0, allowed: >= 1"}},
      {OpKind::conv2d, {{"activation", std::string("gelu")}}, {"'activation' is 'gelu'", "none|relu|relu6"}},
      {OpKind::matmul, {{"transpose_b", int64_t{2}}}, {"'transpose_b' is 2, allowed: 0|1"}},
      {OpKind::max_pool2d, {{"filter_w", int64_t{2}}}, {"max_pool2d 'n'", "'filter_h' is required"}},
      {OpKind::rope, {{"mode", std::string("gptj")}}, {"'mode' is 'gptj', allowed: normal|neox"}},
      {OpKind::rms_norm, {{"eps", -1.0}}, {"'eps' is -1, allowed: >= 0"}},
      {OpKind::relu, {{"activation", std::string("relu")}}, {"unknown attribute 'activation'", "relu takes: none"}},
      {OpKind::cumsum, {{"exclusive", int64_t{2}}}, {"cumsum 'n'", "'exclusive' is 2, allowed: 0|1"}},
      {OpKind::l2_norm, {{"eps", -1e-6}}, {"l2_norm 'n'", "'eps' is -1e-06, allowed: >= 0"}},
  };
  for (const Case& c : cases) {
    Graph g;
    TensorId x = input(g, {1, 4, 4, 8});
    std::vector<TensorId> ins = {x};
    if (c.op == OpKind::conv2d) ins.push_back(input(g, {8, 1, 1, 8}));
    if (c.op == OpKind::matmul) ins.push_back(input(g, {1, 4, 8, 4}));
    if (c.op == OpKind::rope) ins.push_back(input(g, {1}, DType::i32));
    auto r = g.add_op(c.op, ins, c.attrs, "n");
    ASSERT_FALSE(r.ok()) << op_name(c.op);
    for (const std::string& s : c.says)
      EXPECT_NE(r.status().message().find(s), std::string::npos) << r.status().message() << "\n  lacks: " << s;
    // add_node says the same.
    Node n;
    n.op = c.op;
    n.name = "n";
    n.inputs = ins;
    n.outputs = {x};
    n.attrs = c.attrs;
    Status st = g.add_node(n);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.message(), r.status().message());
  }
}

// A pass that writes a wrong value after the build is caught by Graph::validate.
TEST(Attrs, ValidateChecksAttributesWrittenAfterTheBuild) {
  Graph g;
  TensorId x = input(g, {2, 3});
  auto y = g.add_op(OpKind::softmax, {x});
  ASSERT_TRUE(y.ok());
  g.outputs = {*y};
  ASSERT_TRUE(g.validate().ok());
  g.nodes().back().attrs["beta"] = std::string("two");
  Status st = g.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'beta' must be a float"), std::string::npos) << st.message();
}

TEST(AttrsDeathTest, ReadingAnUndeclaredAttributeIsABug) {
  Node n;
  n.op = OpKind::relu;
  n.name = "r";
  EXPECT_DEATH((void)n.get(attr::axis), "relu 'r' read attribute 'axis', which relu does not declare");
  Node p;
  p.op = OpKind::rope;
  EXPECT_DEATH((void)p.get(attr::n_dims), "without a default");
}

}  // namespace
}  // namespace tessera
