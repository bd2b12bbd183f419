// STRIDED_SLICE's TFLite masks and negative indices, resolved by the importer into
// explicit begin/end/strides, on hand-built models; the values are checked by running them.
#include <gtest/gtest.h>

#include <cstring>

#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

#if __has_include("tflite_schema_generated.h")
#include "tflite_schema_generated.h"

namespace tessera {
namespace {

namespace T = ::tflite;

struct SliceSpec {
  std::vector<int32_t> begin, end, strides;
  int begin_mask = 0, end_mask = 0, shrink_mask = 0;
  std::vector<int32_t> out_shape;
};

// x: f32 [4, 6]; STRIDED_SLICE with constant begin/end/strides.
std::vector<uint8_t> slice_model(const SliceSpec& s) {
  flatbuffers::FlatBufferBuilder fb;
  auto bytes_of = [](const std::vector<int32_t>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  std::vector<int32_t> xs = {4, 6}, vs = {2};
  auto bb = bytes_of(s.begin), eb = bytes_of(s.end), sb = bytes_of(s.strides);
  std::vector<flatbuffers::Offset<T::Buffer>> buffers = {T::CreateBufferDirect(fb), T::CreateBufferDirect(fb, &bb),
                                                          T::CreateBufferDirect(fb, &eb), T::CreateBufferDirect(fb, &sb)};
  std::vector<flatbuffers::Offset<T::Tensor>> tensors = {
      T::CreateTensorDirect(fb, &xs, T::TensorType_FLOAT32, 0, "x"),
      T::CreateTensorDirect(fb, &vs, T::TensorType_INT32, 1, "begin"),
      T::CreateTensorDirect(fb, &vs, T::TensorType_INT32, 2, "end"),
      T::CreateTensorDirect(fb, &vs, T::TensorType_INT32, 3, "strides"),
      T::CreateTensorDirect(fb, &s.out_shape, T::TensorType_FLOAT32, 0, "y")};
  std::vector<int32_t> ins = {0, 1, 2, 3}, outs = {4}, model_in = {0};
  auto opts = T::CreateStridedSliceOptions(fb, s.begin_mask, s.end_mask, 0, 0, s.shrink_mask);
  std::vector<flatbuffers::Offset<T::Operator>> ops = {
      T::CreateOperatorDirect(fb, 0, &ins, &outs, T::BuiltinOptions_StridedSliceOptions, opts.Union())};
  std::vector<flatbuffers::Offset<T::SubGraph>> sgs = {T::CreateSubGraphDirect(fb, &tensors, &model_in, &outs, &ops)};
  std::vector<flatbuffers::Offset<T::OperatorCode>> codes = {
      T::CreateOperatorCode(fb, T::BuiltinOperator_STRIDED_SLICE, 0, 1, T::BuiltinOperator_STRIDED_SLICE)};
  fb.Finish(T::CreateModelDirect(fb, 3, &codes, &sgs, "slice", &buffers), T::ModelIdentifier());
  return std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
}

// Runs the model on x[i][j] = 10 i + j and returns y.
std::vector<float> run_slice(const SliceSpec& s, Graph* imported = nullptr) {
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(slice_model(s)));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  if (imported) *imported = *g;
  auto sess = Session::create(std::move(*g), SessionOptions{});
  EXPECT_TRUE(sess.ok()) << sess.status().to_string();
  if (!sess.ok()) return {};
  std::vector<float> x(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) x[i * 6 + j] = static_cast<float>(10 * i + j);
  EXPECT_TRUE((*sess)->set_input(0, x.data(), 96).ok());
  Status st = (*sess)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto y = (*sess)->output(0);
  if (!y.ok()) return {};
  std::vector<float> v(y->size() / 4);
  std::memcpy(v.data(), y->data(), y->size());
  return v;
}

TEST(TfliteStridedSlice, EndMaskAndNegativeStride) {
  // x[1:, -1::-2] (end_mask on dim 0; dim 1 from the last column backwards, stride 2).
  SliceSpec s{{1, -1}, {0, 0}, {1, -2}, 0, 0b11, 0, {3, 3}};
  Graph g;
  auto y = run_slice(s, &g);
  EXPECT_EQ(y, (std::vector<float>{15, 13, 11, 25, 23, 21, 35, 33, 31}));
  const Node& n = g.nodes()[0];
  EXPECT_EQ(n.get(attr::begin), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(n.get(attr::end), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(n.get(attr::strides), (std::vector<int64_t>{1, -2}));
}

TEST(TfliteStridedSlice, BeginMaskAndShrinkAxis) {
  // x[2, :4] with begin_mask on dim 1 and dim 0 shrunk away.
  SliceSpec s{{2, 3}, {3, 4}, {1, 1}, 0b10, 0, 0b01, {4}};
  auto y = run_slice(s);
  EXPECT_EQ(y, (std::vector<float>{20, 21, 22, 23}));
}

TEST(TfliteStridedSlice, OutOfRangeEndIsClamped) {
  // x[-3:100:2, 1:2]: negative begin and an end past the dim.
  SliceSpec s{{-3, 1}, {100, 2}, {2, 1}, 0, 0, 0, {2, 1}};
  auto y = run_slice(s);
  EXPECT_EQ(y, (std::vector<float>{11, 31}));
}

TEST(TfliteStridedSlice, DeclaredShapeMismatchIsReportedAtTheOperator) {
  SliceSpec s{{0, 0}, {4, 6}, {1, 1}, 0, 0, 0, {4, 5}};
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(slice_model(s)));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("op 0 (STRIDED_SLICE v1)"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("declared [4,5]"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera

#endif  // the TFLite schema is available
