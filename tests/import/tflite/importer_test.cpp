// The TFLite importer: every shared model loads with its inputs/outputs intact, and
// malformed files (truncated, wrong identifier, out-of-range indices, short buffers,
// unsupported operators) give clear errors instead of crashes.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "import/tflite/tflite_importer.h"

#if __has_include("tflite_schema_generated.h")
#include "tflite_schema_generated.h"

namespace tessera {
namespace {

using tflite::load_tflite_buffer;
using tflite::load_tflite_file;

Result<Graph> load_bytes(std::vector<uint8_t> bytes) { return load_tflite_buffer(ConstData::from_vector(std::move(bytes))); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct ModelCase {
  const char* file;
  Shape input;
  DType input_dtype;
  Shape output;
  DType output_dtype;
  bool quantized_input = true;  // MoveNet takes plain u8 pixels and casts them itself
};

TEST(TfliteImporter, EverySharedModelLoadsWithItsInterface) {
  const ModelCase cases[] = {
      {"mobilenet_v1_0.25_128_quant", {1, 128, 128, 3}, DType::u8, {1, 1001}, DType::u8},
      {"mobilenet_v2_1.0_224_quant", {1, 224, 224, 3}, DType::u8, {1, 1001}, DType::u8},
      {"tf2_mobilenet_v2_1.0_224_ptq", {1, 224, 224, 3}, DType::u8, {1, 1001}, DType::u8},
      {"mobilenet_v2_quantized_1x3x224x224", {1, 3, 224, 224}, DType::i8, {1, 1000}, DType::i8},
      {"person_detect", {1, 96, 96, 1}, DType::i8, {1, 2}, DType::i8},
      {"deeplabv3_mnv2_dm05_pascal_quant", {1, 513, 513, 3}, DType::u8, {1, 513, 513}, DType::i64},
      {"movenet_single_pose_lightning_ptq", {1, 192, 192, 3}, DType::u8, {1, 1, 17, 3}, DType::f32, false},
      {"mobilenet_v1_1.0_224_quant_embedding_extractor", {1, 224, 224, 3}, DType::u8, {1, 1, 1, 1024}, DType::u8},
      {"hello_world_int8", {1, 1}, DType::i8, {1, 1}, DType::i8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    TESSERA_REQUIRE_FIXTURE(path, std::string("models/tflite/") + c.file + ".tflite");
    auto g = load_tflite_file(path);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_EQ(g->inputs.size(), 1u);
    ASSERT_EQ(g->outputs.size(), 1u);
    const Tensor& in = g->tensor(g->inputs[0]);
    const Tensor& out = g->tensor(g->outputs[0]);
    EXPECT_EQ(in.shape, c.input);
    EXPECT_EQ(in.dtype, c.input_dtype);
    EXPECT_EQ(in.role, Role::input);
    EXPECT_EQ(out.shape, c.output);
    EXPECT_EQ(out.dtype, c.output_dtype);
    EXPECT_EQ(out.role, Role::output);
    EXPECT_FALSE(in.name.empty());
    EXPECT_EQ(in.quant.empty(), !c.quantized_input) << "input quantization";
    EXPECT_TRUE(g->validate().ok());
  }
}

TEST(TfliteImporter, KeepsNamesQuantizationAndExplicitPadding) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto g = load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Tensor& in = g->tensor(g->inputs[0]);
  EXPECT_EQ(in.name, "input");
  ASSERT_EQ(in.quant.scale.size(), 1u);
  EXPECT_EQ(in.quant.zero_point[0], 128);
  // First op: 3x3 stride-2 SAME conv on 128x128 -> 64x64 needs 1 pixel after, 0 before
  // (TFLite puts the odd padding pixel at the end).
  const Node& conv = g->nodes()[0];
  EXPECT_EQ(conv.op, OpKind::conv2d);
  EXPECT_EQ(conv.get(attr::pad_top), 0);
  EXPECT_EQ(conv.get(attr::pad_bottom), 1);
  EXPECT_EQ(conv.get(attr::activation), "relu6");
  EXPECT_EQ(g->tensor(conv.inputs[1]).role, Role::weight);
  EXPECT_TRUE(contains(conv.name, "CONV_2D"));
}

class CorruptModel : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = testing::shared_path("models/tflite/mobilenet_v1_0.25_128_quant.tflite");
    if (path.empty()) {
      if (testing::fixtures_required()) FAIL() << "missing fixture";
      GTEST_SKIP() << "fixture models/tflite/mobilenet_v1_0.25_128_quant.tflite is absent";
    }
    bytes_ = testing::read_file(path);
    model_ = ::tflite::GetModel(bytes_.data());
  }
  // Byte offset of a pointer into bytes_.
  size_t offset_of(const void* p) const { return static_cast<const uint8_t*>(p) - bytes_.data(); }
  Status load_error(std::vector<uint8_t> b) {
    auto g = load_bytes(std::move(b));
    return g.ok() ? Status::Ok() : g.status();
  }
  std::vector<uint8_t> bytes_;
  const ::tflite::Model* model_ = nullptr;
};

TEST_F(CorruptModel, TruncatedFilesAreRejected) {
  for (size_t len : {size_t{0}, size_t{7}, size_t{64}, bytes_.size() / 2, bytes_.size() * 3 / 4}) {
    SCOPED_TRACE(len);
    Status s = load_error(std::vector<uint8_t>(bytes_.begin(), bytes_.begin() + len));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::invalid_argument);
    EXPECT_TRUE(contains(s.message(), "too short") || contains(s.message(), "verifier") ||
                contains(s.message(), "not a TFLite"))
        << s.message();
  }
}

TEST_F(CorruptModel, WrongIdentifierIsNamed) {
  auto b = bytes_;
  std::memcpy(&b[4], "GGUF", 4);
  Status s = load_error(b);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "identifier 'GGUF'")) << s.message();
}

TEST_F(CorruptModel, OutOfRangeTensorIndexInAnOperator) {
  const auto* op = model_->subgraphs()->Get(0)->operators()->Get(3);
  auto b = bytes_;
  int32_t bad = 100000;
  std::memcpy(&b[offset_of(op->inputs()->data())], &bad, 4);
  Status s = load_error(b);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::out_of_range);
  EXPECT_TRUE(contains(s.message(), "op 3")) << s.message();
  EXPECT_TRUE(contains(s.message(), "tensor index 100000")) << s.message();
}

TEST_F(CorruptModel, OutOfRangeModelInputIndex) {
  const auto* sg = model_->subgraphs()->Get(0);
  auto b = bytes_;
  int32_t bad = -7;
  std::memcpy(&b[offset_of(sg->inputs()->data())], &bad, 4);
  Status s = load_error(b);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "model input 0")) << s.message();
  EXPECT_TRUE(contains(s.message(), "-7")) << s.message();
}

TEST_F(CorruptModel, BufferShorterThanItsTensor) {
  // Shrink the length prefix of the first conv filter's buffer: still a valid flatbuffer,
  // but the tensor no longer has the bytes its shape needs.
  const auto* sg = model_->subgraphs()->Get(0);
  const auto* filter = sg->tensors()->Get(sg->operators()->Get(0)->inputs()->Get(1));
  const auto* data = model_->buffers()->Get(filter->buffer())->data();
  ASSERT_NE(data, nullptr);
  auto b = bytes_;
  uint32_t shorter = data->size() - 5;
  std::memcpy(&b[offset_of(data->data()) - 4], &shorter, 4);
  Status s = load_error(b);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "bytes, the tensor needs")) << s.message();
  EXPECT_TRUE(contains(s.message(), filter->name()->str())) << s.message();
}

TEST_F(CorruptModel, RandomByteFlipsNeverCrash) {
  // Seeded corruption of single bytes all over the file: each load either succeeds or
  // fails with a message; none may crash (run under the sanitizers in CI).
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    auto b = bytes_;
    size_t at = rng() % b.size();
    b[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    auto g = load_bytes(b);
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
    }
  }
}

// A one-operator model built with the flatbuffers builder: `code` at `version`, inputs
// and outputs of [1, 4] f32.
std::vector<uint8_t> one_op_model(::tflite::BuiltinOperator code, int version) {
  flatbuffers::FlatBufferBuilder fb;
  std::vector<int32_t> shape = {1, 4};
  std::vector<flatbuffers::Offset<::tflite::Tensor>> tensors = {
      ::tflite::CreateTensorDirect(fb, &shape, ::tflite::TensorType_FLOAT32, 0, "x"),
      ::tflite::CreateTensorDirect(fb, &shape, ::tflite::TensorType_FLOAT32, 0, "y")};
  std::vector<int32_t> ins = {0}, outs = {1};
  std::vector<flatbuffers::Offset<::tflite::Operator>> ops = {::tflite::CreateOperatorDirect(fb, 0, &ins, &outs)};
  std::vector<flatbuffers::Offset<::tflite::SubGraph>> sgs = {
      ::tflite::CreateSubGraphDirect(fb, &tensors, &ins, &outs, &ops, "main")};
  std::vector<flatbuffers::Offset<::tflite::OperatorCode>> codes = {
      ::tflite::CreateOperatorCode(fb, static_cast<int8_t>(std::min<int>(code, 127)), 0, version, code)};
  std::vector<flatbuffers::Offset<::tflite::Buffer>> buffers = {::tflite::CreateBufferDirect(fb)};
  fb.Finish(::tflite::CreateModelDirect(fb, 3, &codes, &sgs, "test", &buffers), ::tflite::ModelIdentifier());
  return std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
}

TEST(TfliteImporter, UnsupportedOperatorIsNamedWithIndexAndVersion) {
  auto g = load_bytes(one_op_model(::tflite::BuiltinOperator_LSH_PROJECTION, 1));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::unsupported);
  EXPECT_TRUE(contains(g.status().message(), "op 0")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "LSH_PROJECTION")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "version 1")) << g.status().message();
}

TEST(TfliteImporter, TooNewOperatorVersionIsRejected) {
  auto g = load_bytes(one_op_model(::tflite::BuiltinOperator_RELU, 99));
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(contains(g.status().message(), "RELU version 99")) << g.status().message();
}

TEST(TfliteImporter, HandBuiltModelImports) {
  auto g = load_bytes(one_op_model(::tflite::BuiltinOperator_RELU, 1));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0].op, OpKind::relu);
}

TEST(TfliteImporter, MissingFileIsNotFound) {
  auto g = load_tflite_file("/nonexistent/model.tflite");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::not_found);
}

}  // namespace
}  // namespace tessera

#endif
