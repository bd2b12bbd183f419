// Dynamic shapes: the integer shape arithmetic in front of a RESHAPE folds to constants at
// import, and a model input whose shape_signature holds -1 loads at the shape given in
// ImportOptions / ModelLoadOptions (its intermediate tensors and outputs follow); a bad
// shape is an error naming the input and the dim. The interpreter judges the same models
// in tests/oracle/dynamic_shape_oracle_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "import/tflite/shape_chain_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/model.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;

Result<Graph> load(const std::vector<uint8_t>& bytes, const tflite::ImportOptions& o = {},
                   tflite::ImportReport* report = nullptr) {
  return tflite::load_tflite_buffer(ConstData::from_vector(bytes), o, report);
}

tflite::ImportOptions shape_of(const std::string& input, Shape s) { return {{{input, std::move(s)}}}; }

std::vector<float> seeded(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Runs the chain model's graph on x; the reference is x + bias (the reshape keeps the
// row-major order; bias [3] broadcasts over the last dim), in double.
void expect_chain_runs(Graph g, const Shape& x_shape) {
  const size_t n = static_cast<size_t>(num_elements(x_shape));
  const std::vector<float> x = seeded(n, 7 + static_cast<uint32_t>(n));
  auto s = Session::create(std::move(g), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->set_input(0, x.data(), static_cast<int64_t>(n * 4)).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto y = (*s)->output(0);
  ASSERT_TRUE(y.ok());
  ASSERT_EQ(y->size(), n * 4);
  std::vector<float> got(n);
  std::memcpy(got.data(), y->data(), n * 4);
  const double bias[3] = {0.25, -1.5, 3.0};
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(double(x[i]) + bias[i % 3])) << i;
}

TEST(TfliteShapeFold, ShapeChainFoldsToAConstantReshape) {
  // At the declared size [1,4,6]: SHAPE, GATHER, STRIDED_SLICE, MUL, PACK and
  // CONCATENATION fold away; what is left is the reshape to [1,8,3] and the add.
  auto g = load(testing::reshape_chain_model(1, 4, true).bytes());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->nodes().size(), 2u);
  EXPECT_EQ(g->nodes()[0].op, OpKind::reshape);
  EXPECT_EQ(g->nodes()[0].get(attr::shape), (std::vector<int64_t>{1, 8, 3}));
  EXPECT_EQ(g->nodes()[1].op, OpKind::add);
  const Tensor& shape = g->tensor(*g->find_tensor("shape"));
  ASSERT_TRUE(shape.data.has_value());
  std::vector<int32_t> v(3);
  std::memcpy(v.data(), shape.data->data, 12);
  EXPECT_EQ(v, (std::vector<int32_t>{1, 8, 3}));
  expect_chain_runs(std::move(*g), {1, 4, 6});
}

TEST(TfliteDynamicInput, RunsAtTheGivenShape) {
  for (Shape xs : {Shape{3, 5, 6}, Shape{2, 1, 6}, Shape{1, 4, 6}}) {
    SCOPED_TRACE(shape_str(xs));
    tflite::ImportReport report;
    auto g = load(testing::reshape_chain_model(1, 4, true).bytes(), shape_of("x", xs), &report);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_EQ(report.dynamic_dims.size(), 1u);
    EXPECT_EQ(report.dynamic_dims[0], (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(g->tensor(g->inputs[0]).shape, xs);
    EXPECT_EQ(g->tensor(g->outputs[0]).shape, (Shape{xs[0], 2 * xs[1], 3}));
    EXPECT_EQ(g->nodes().size(), 2u);
    expect_chain_runs(std::move(*g), xs);
  }
}

TEST(TfliteDynamicInput, InputNamedByIndexAndThroughTheModelApi) {
  ModelLoadOptions o;
  o.input_shapes = {{"0", {2, 3, 6}}};
  auto m = Model::from_tflite_buffer(ConstData::from_vector(testing::reshape_chain_model(1, 4, true).bytes()), o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->inputs()[0].shape, (std::vector<int64_t>{2, 3, 6}));
  EXPECT_EQ((*m)->inputs()[0].dynamic_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*m)->inputs()[0].bytes, 2 * 3 * 6 * 4);
  EXPECT_EQ((*m)->outputs()[0].shape, (std::vector<int64_t>{2, 6, 3}));
  EXPECT_TRUE((*m)->outputs()[0].dynamic_dims.empty());
}

TEST(TfliteDynamicInput, BadShapesNameTheInputAndTheDim) {
  const std::vector<uint8_t> bytes = testing::reshape_chain_model(1, 4, true).bytes();
  struct Case {
    tflite::ImportOptions opts;
    std::vector<std::string> phrases;
  };
  const std::vector<Case> cases = {
      {shape_of("x", {2, 4, 7}), {"input 0 'x' [-1,-1,6]", "dim 2 is fixed at 6 by the model, got 7"}},
      {shape_of("x", {2, 4}), {"input 0 'x'", "[2,4] has rank 2, the input has rank 3"}},
      {shape_of("x", {2, 4, 6, 1}), {"input 0 'x'", "has rank 4"}},
      {shape_of("x", {0, 4, 6}), {"input 0 'x'", "dim 0 is 0, it must be in [1, 2147483647]"}},
      {shape_of("x", {2, -3, 6}), {"input 0 'x'", "dim 1 is -3"}},
      {shape_of("x", {2, int64_t{1} << 31, 6}), {"input 0 'x'", "dim 1 is 2147483648"}},
      {shape_of("x", {2147483647, 2147483647, 6}), {"input 0 'x'", "more than 1099511627776 elements"}},
      {shape_of("y", {2, 4, 6}), {"input shape for 'y': the model has no such input (inputs: 0 'x')"}},
      {shape_of("1", {2, 4, 6}), {"input shape for '1': the model has no such input"}},
      {{{{"x", {2, 4, 6}}, {"0", {3, 4, 6}}}}, {"input 0 'x'", "given more than once"}},
  };
  for (const Case& c : cases) {
    auto g = load(bytes, c.opts);
    ASSERT_FALSE(g.ok());
    for (const std::string& p : c.phrases)
      EXPECT_NE(g.status().message().find(p), std::string::npos) << "'" << p << "' not in: " << g.status().message();
  }
}

TEST(TfliteDynamicInput, StaticInputKeepsItsShape) {
  // The same model written at [2,3,6] without a signature: its own shape is accepted, any
  // other is refused at the first dim that differs.
  const std::vector<uint8_t> bytes = testing::reshape_chain_model(2, 3, false).bytes();
  tflite::ImportReport report;
  auto same = load(bytes, shape_of("x", {2, 3, 6}), &report);
  ASSERT_TRUE(same.ok()) << same.status().to_string();
  EXPECT_TRUE(report.dynamic_dims.at(0).empty());
  auto other = load(bytes, shape_of("x", {4, 3, 6}));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("input 0 'x' [2,3,6]: dim 0 is fixed at 2 by the model, got 4"), std::string::npos)
      << other.status().message();
}

TEST(TfliteDynamicInput, AnyDimResizesFixedDimsAsResizeInputTensor) {
  // any_dim: a dim the file fixes may change too (the rank may not); the shape chain follows,
  // and a size the RESHAPE cannot take is an error naming the operator.
  tflite::ImportOptions o = shape_of("x", {4, 3, 6});
  o.any_dim = true;
  auto g = load(testing::reshape_chain_model(2, 3, false).bytes(), o);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->tensor(g->outputs[0]).shape, (Shape{4, 6, 3}));
  expect_chain_runs(std::move(*g), {4, 3, 6});
  o.input_shapes[0].shape = {4, 3, 12};  // [4,6,3] cannot hold 4*3*12 values
  auto bad = load(testing::reshape_chain_model(2, 3, false).bytes(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("op 6 (RESHAPE v1)"), std::string::npos) << bad.status().message();
  o.input_shapes[0].shape = {4, 3};
  auto rank = load(testing::reshape_chain_model(2, 3, false).bytes(), o);
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("has rank 2, the input has rank 3"), std::string::npos) << rank.status().message();
}

TEST(TfliteDynamicInput, ParsesInputShapeSpecs) {
  auto o = tflite::parse_input_shape("images:0=1,224,224,3");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->input, "images:0");
  EXPECT_EQ(o->shape, (Shape{1, 224, 224, 3}));
  auto neg = tflite::parse_input_shape("0=-1,2");  // parsed; the importer refuses the -1
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(neg->shape, (Shape{-1, 2}));
  for (const char* bad : {"x", "=1,2", "x=", "x=1,,2", "x=1,a", "x=1,-", "x=99999999999999999"}) {
    auto r = tflite::parse_input_shape(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

// DIV, FLOOR_DIV and SUB of i32 constants fold with TFLite's rounding (DIV toward zero,
// FLOOR_DIV toward -inf); a division by zero is left to the kernel, not folded.
TEST(TfliteShapeFold, IntegerDivisionRoundsAsTheInterpreter) {
  struct Case {
    T::BuiltinOperator code;
    std::vector<int32_t> a, b, want;
  };
  const std::vector<Case> cases = {
      {T::BuiltinOperator_DIV, {7, -7, 9, -9}, {2, 2, -4, -4}, {3, -3, -2, 2}},
      {T::BuiltinOperator_FLOOR_DIV, {7, -7, 9, -9}, {2, 2, -4, -4}, {3, -4, -3, 2}},
      {T::BuiltinOperator_SUB, {7, -7, 9, -9}, {2, 2, -4, -4}, {5, -9, 13, -5}},
  };
  for (const Case& c : cases) {
    testing::MultiOpModel m;
    m.tensors = {testing::i32_const("a", {4}, c.a), testing::i32_const("b", {4}, c.b),
                 testing::activation("q", T::TensorType_INT32, {4}), testing::activation("x", T::TensorType_FLOAT32, {4}),
                 testing::activation("y", T::TensorType_FLOAT32, {4})};
    // q feeds nothing: it folds all the same and is read back from the graph.
    m.ops = {{c.code, {0, 1}, {2}, {}}, {T::BuiltinOperator_RELU, {3}, {4}, {}}};
    m.inputs = {3};
    m.outputs = {4};
    auto g = load(m.bytes());
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    const Tensor& q = g->tensor(*g->find_tensor("q"));
    ASSERT_TRUE(q.data.has_value()) << T::EnumNameBuiltinOperator(c.code);
    std::vector<int32_t> v(4);
    std::memcpy(v.data(), q.data->data, 16);
    EXPECT_EQ(v, c.want) << T::EnumNameBuiltinOperator(c.code);
  }
  // q = FLOOR_DIV(a, b) feeds the model output through a reshape: folded, only the
  // reshape of a constant is left; with a zero divisor both nodes stay.
  for (int32_t divisor : {2, 0}) {
    testing::MultiOpModel m;
    m.tensors = {testing::i32_const("a", {2}, {4, 5}), testing::i32_const("b", {2}, {2, divisor}),
                 testing::activation("q", T::TensorType_INT32, {2}), testing::activation("out", T::TensorType_INT32, {2})};
    m.ops = {{T::BuiltinOperator_FLOOR_DIV, {0, 1}, {2}, {}}, {T::BuiltinOperator_RESHAPE, {2}, {3}, {}}};
    m.outputs = {3};
    auto g = load(m.bytes());
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(g->nodes().size(), divisor == 0 ? 2u : 1u) << "divisor " << divisor;
  }
}

// RESHAPE takes its shape operand (a -1 resolved to the concrete size), else new_shape;
// SQUEEZE and EXPAND_DIMS compute their shapes from the input: the declared shape of
// their output here is a placeholder ([1]) that must not be used (the model output after
// the RELU declares the right one).
TEST(TfliteShapeFold, ReshapeSqueezeExpandDimsComputeTheirShapes) {
  struct Case {
    std::string name;
    T::BuiltinOperator code;
    std::vector<int32_t> x_shape;
    std::vector<testing::OpTensor> extra;  // inputs after x
    testing::OptionsWriter options;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"reshape operand", T::BuiltinOperator_RESHAPE, {2, 6}, {testing::i32_const("shape", {2}, {-1, 3})}, {}, {4, 3}},
      {"reshape new_shape", T::BuiltinOperator_RESHAPE, {2, 6}, {},
       [](flatbuffers::FlatBufferBuilder& fb) {
         const std::vector<int32_t> ns = {3, -1};
         return std::make_pair(T::BuiltinOptions_ReshapeOptions, T::CreateReshapeOptionsDirect(fb, &ns).Union());
       },
       {3, 4}},
      {"squeeze dims", T::BuiltinOperator_SQUEEZE, {1, 3, 1, 2}, {},
       [](flatbuffers::FlatBufferBuilder& fb) {
         const std::vector<int32_t> dims = {-2};
         return std::make_pair(T::BuiltinOptions_SqueezeOptions, T::CreateSqueezeOptionsDirect(fb, &dims).Union());
       },
       {1, 3, 2}},
      {"squeeze all", T::BuiltinOperator_SQUEEZE, {1, 3, 1, 2}, {}, {}, {3, 2}},
      {"expand_dims", T::BuiltinOperator_EXPAND_DIMS, {3, 2}, {testing::i32_const("axis", {}, {-1})}, {}, {3, 2, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::MultiOpModel m;
    m.tensors = {testing::activation("x", T::TensorType_FLOAT32, c.x_shape), testing::activation("r", T::TensorType_FLOAT32, {1}),
                 testing::activation("y", T::TensorType_FLOAT32, std::vector<int32_t>(c.want.begin(), c.want.end()))};
    std::vector<int32_t> ins = {0};
    for (const auto& e : c.extra) {
      ins.push_back(static_cast<int32_t>(m.tensors.size()));
      m.tensors.push_back(e);
    }
    m.ops = {{c.code, ins, {1}, c.options}, {T::BuiltinOperator_RELU, {1}, {2}, {}}};
    m.inputs = {0};
    m.outputs = {2};
    auto g = load(m.bytes());
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_EQ(g->nodes()[0].op, OpKind::reshape);
    EXPECT_EQ(g->nodes()[0].get(attr::shape), c.want);
  }
}

// The fuzz seed of these paths (fuzz/regressions/tflite_fuzz/reshape_chain_dynamic): the
// chain model with its dynamic input, which tflite_fuzz also loads at sizes taken from the
// input. The file must be the model this test writes (TESSERA_WRITE_FUZZ_SEEDS=1 writes it).
TEST(TfliteDynamicInput, FuzzSeedIsTheChainModel) {
  namespace fs = std::filesystem;
  const char* env = std::getenv("TESSERA_SOURCE_DIR");
  const fs::path dir = (env ? fs::path(env) : fs::path(TESSERA_BINARY_DIR).parent_path()) / "fuzz/regressions/tflite_fuzz";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is absent (set TESSERA_SOURCE_DIR)";
  const std::vector<uint8_t> bytes = testing::reshape_chain_model(1, 4, true).bytes();
  const fs::path file = dir / "reshape_chain_dynamic";
  if (std::getenv("TESSERA_WRITE_FUZZ_SEEDS"))
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  std::ifstream f(file, std::ios::binary);
  ASSERT_TRUE(f) << file << " is missing (TESSERA_WRITE_FUZZ_SEEDS=1 writes it)";
  const std::vector<uint8_t> stored((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(stored, bytes) << file << " differs from the model this test writes";
}

}  // namespace
}  // namespace tessera
