// Hostile TFLite files (issue 18): a shape whose element count wraps modulo 2^64, and the
// structured corruptions of the corpus generator (tests/hostile_models.h). Every file either
// imports into a graph that validates, and then runs or fails with a Status on the cpu, or
// is refused with a message; the sanitizer builds (scripts/fuzz.sh) replay the same files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "fixtures.h"
#include "hostile_models.h"
#include "import/tflite/graph_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

#ifdef TESSERA_HOSTILE_TFLITE  // the schema-generated header is present

namespace tessera {
namespace {

namespace hostile = testing::hostile;

TEST(HostileTflite, ShapeWhoseElementCountWrapsIsRefusedNamingTheTensor) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  const hostile::Bytes model = testing::read_file(path);
  auto found = hostile::find_tflite_tensor(model, hostile::kWrapOriginal);
  ASSERT_TRUE(found.has_value()) << "no [64,1,1,32] tensor";
  const auto& site = *found;
  ASSERT_TRUE(tflite::load_tflite_buffer(ConstData::from_vector(model)).ok());

  // 64 x 160465489 x 898107057 x 32 = 2^64 + 2048: the product that used to match the
  // 2048-byte buffer and reach the conv kernel.
  auto bad = hostile::with_tflite_shape(model, site, hostile::kWrapShape);
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(bad));
  ASSERT_FALSE(g.ok()) << "a wrapped shape was accepted";
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("tensor " + std::to_string(site.index) + " '" + site.name + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("elements"), std::string::npos) << msg;
}

// Shape inference multiplies dims: two operands within the file limit (2^40 elements) can
// make an output beyond it, which a later operator's inference would overflow on (found by
// quantize_fuzz as a signed overflow in FULLY_CONNECTED's inference after such an output).
TEST(HostileTflite, InferredShapesBeyondTheElementLimitAreRefused) {
  using testing::activation;
  testing::GraphModel m;
  testing::GraphSubgraph& sg = m.subgraphs.emplace_back();
  const int32_t a = sg.add(activation("a", ::tflite::TensorType_FLOAT32, {1, 1 << 20, 1}));
  const int32_t b = sg.add(activation("b", ::tflite::TensorType_FLOAT32, {1, 1, 1 << 21}));
  const int32_t y = sg.add(activation("y", ::tflite::TensorType_FLOAT32, {1, 1, 1}));  // a placeholder shape
  sg.inputs = {a, b};
  sg.outputs = {y};
  sg.op(::tflite::BuiltinOperator_BATCH_MATMUL, {a, b}, {y});
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(m.bytes()));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("[1,1048576,2097152]: more than 1099511627776 elements"), std::string::npos)
      << g.status().to_string();
}

// A FULLY_CONNECTED bias shorter than the output channels (the kernels read one per
// channel; found by quantize_fuzz reading past such a bias) is refused at import.
TEST(HostileTflite, AFullyConnectedBiasOfTheWrongLengthIsRefused) {
  using testing::activation;
  testing::GraphModel m;
  testing::GraphSubgraph& sg = m.subgraphs.emplace_back();
  const int32_t x = sg.add(activation("x", ::tflite::TensorType_FLOAT32, {1, 4}));
  testing::OpTensor w = activation("w", ::tflite::TensorType_FLOAT32, {3, 4});
  w.data.assign(3 * 4 * 4, 0x3c);
  testing::OpTensor b = activation("b", ::tflite::TensorType_FLOAT32, {2});
  b.data.assign(2 * 4, 0x3c);
  const int32_t wi = sg.add(w), bi = sg.add(b);
  const int32_t y = sg.add(activation("y", ::tflite::TensorType_FLOAT32, {1, 3}));
  sg.inputs = {x};
  sg.outputs = {y};
  sg.op(::tflite::BuiltinOperator_FULLY_CONNECTED, {x, wi, bi}, {y});
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(m.bytes()));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("bias 'b' has 2 values for 3 output channels"), std::string::npos)
      << g.status().to_string();
}

TEST(HostileTflite, PerAxisArraysAreReadFromAnyAlignment) {
  // The flatbuffer verifier aligns a vector's length to 4 bytes, not its 8-byte elements, so
  // a file may place per-axis zero points (int64) at any multiple of 4. Loading the model
  // 4 bytes past an aligned address puts every one of them there: the import must read them
  // without misaligned loads (UBSan builds check) and find the same values.
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/person_detect.tflite");
  const hostile::Bytes model = testing::read_file(path);
  auto aligned = tflite::load_tflite_buffer(ConstData::from_vector(model));
  ASSERT_TRUE(aligned.ok()) << aligned.status().to_string();
  auto storage = std::make_shared<std::vector<uint64_t>>(model.size() / 8 + 2);
  uint8_t* shifted = reinterpret_cast<uint8_t*>(storage->data()) + 4;
  std::memcpy(shifted, model.data(), model.size());
  auto moved = tflite::load_tflite_buffer(ConstData{shifted, static_cast<int64_t>(model.size()), storage});
  ASSERT_TRUE(moved.ok()) << moved.status().to_string();
  ASSERT_EQ(aligned->tensors().size(), moved->tensors().size());
  int per_axis = 0;
  for (size_t i = 0; i < aligned->tensors().size(); ++i) {
    EXPECT_EQ(aligned->tensors()[i].quant, moved->tensors()[i].quant) << aligned->tensors()[i].name;
    per_axis += aligned->tensors()[i].quant.scale.size() > 1;
  }
  EXPECT_GT(per_axis, 10);  // person_detect is quantized per channel
}

TEST(HostileTflite, ScalesThatCanOverflowTheAccumulatorAreRefused) {
  // Found by tflite_fuzz: hello_world's first FULLY_CONNECTED with an output scale shrunk so
  // that in_scale * w_scale / out_scale is about 8e9; the int32 rescaling in the kernel then
  // overflowed (UBSan: signed overflow adding the output zero point). Refused at import.
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/hello_world_int8.tflite");
  hostile::Bytes model = testing::read_file(path);
  const auto* m = ::tflite::GetModel(model.data());
  const auto* sg = m->subgraphs()->Get(0);
  const auto* out = sg->tensors()->Get(sg->operators()->Get(0)->outputs()->Get(0));
  ASSERT_TRUE(out->quantization() && out->quantization()->scale() && out->quantization()->scale()->size() == 1);
  const size_t at = static_cast<size_t>(out->quantization()->scale()->Data() - model.data());
  ASSERT_TRUE(tflite::load_tflite_buffer(ConstData::from_vector(model)).ok());
  const float tiny = 1e-12f;
  std::memcpy(&model[at], &tiny, 4);
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(model));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("overflow the int32 accumulator"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("FULLY_CONNECTED"), std::string::npos) << g.status().message();
}

TEST(HostileTflite, RescalesThatCanOverflowAreRefused) {
  // person_detect's AVERAGE_POOL_2D with its output scale shrunk to 1e-12: the pool kernel
  // would rescale by 10^10. Refused at import, naming the op and both tensors.
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/person_detect.tflite");
  hostile::Bytes model = testing::read_file(path);
  const auto* m = ::tflite::GetModel(model.data());
  const auto* sg = m->subgraphs()->Get(0);
  const ::tflite::Tensor* out = nullptr;
  for (const auto* op : *sg->operators()) {
    const auto* code = m->operator_codes()->Get(op->opcode_index());
    if (std::max<int32_t>(code->deprecated_builtin_code(), code->builtin_code()) == ::tflite::BuiltinOperator_AVERAGE_POOL_2D)
      out = sg->tensors()->Get(op->outputs()->Get(0));
  }
  ASSERT_NE(out, nullptr) << "person_detect has no AVERAGE_POOL_2D";
  const size_t at = static_cast<size_t>(out->quantization()->scale()->Data() - model.data());
  const float tiny = 1e-12f;
  std::memcpy(&model[at], &tiny, 4);
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(model));
  ASSERT_FALSE(g.ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("AVERAGE_POOL_2D"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the integer rescaling could overflow"), std::string::npos) << msg;
}

// Imports `bytes`; if that succeeds the graph must validate and, when `run` is set, run on
// the cpu (or fail with a Status). Returns whether it imported.
bool import_and_run(const hostile::Variant& v, bool run) {
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(v.bytes));
  if (!g.ok()) {
    EXPECT_FALSE(g.status().message().empty()) << v.name;
    return false;
  }
  Status valid = g->validate();
  EXPECT_TRUE(valid.ok()) << v.name << ": imported but does not validate: " << valid.to_string();
  if (!run || !valid.ok()) return true;
  auto s = Session::create(std::move(*g), SessionOptions{});
  if (!s.ok()) return true;
  for (size_t i = 0; i < (*s)->graph().inputs.size(); ++i) {
    const Tensor& t = (*s)->graph().tensor((*s)->graph().inputs[i]);
    auto bytes = t.host_bytes();
    if (!bytes.ok() || *bytes > (int64_t{1} << 24)) return true;
    std::vector<uint8_t> in(static_cast<size_t>(*bytes));
    for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<uint8_t>(k * 131 + 7);
    if (!(*s)->set_input(i, in.data(), *bytes).ok()) return true;
  }
  (void)(*s)->run();
  return true;
}

TEST(HostileTflite, StructuredCorruptionsOfTheSmallModelsFailCleanly) {
  TESSERA_REQUIRE_FIXTURE(hello, "models/tflite/hello_world_int8.tflite");
  TESSERA_REQUIRE_FIXTURE(person, "models/tflite/person_detect.tflite");
  std::vector<hostile::Variant> small, large;
  const hostile::Bytes h = testing::read_file(hello);
  hostile::add_tflite_edits(h, 1000, small);
  hostile::add_truncations(h, 40, small);
  hostile::add_bit_flips(h, 200, 18, small);
  hostile::add_tflite_edits(testing::read_file(person), 24, large);
  ASSERT_GT(small.size(), 200u);
  int imported = 0, refused = 0;
  for (const auto& v : small) (import_and_run(v, true) ? imported : refused)++;
  for (const auto& v : large) (import_and_run(v, false) ? imported : refused)++;
  // Both outcomes occur: the edits reach the checks, and flips in weights still import.
  EXPECT_GT(refused, 100);
  EXPECT_GT(imported, 10);
}

// The same corruptions of the corpus's small LSTM models (UNIDIRECTIONAL_SEQUENCE_LSTM with
// variable state tensors and, in the integer one, intermediate tensors), each imported and
// run on the cpu.
TEST(HostileTflite, StructuredCorruptionsOfTheLstmModelsFailCleanly) {
  TESSERA_REQUIRE_FIXTURE(i8, "models/tflite/corpus/micro_trained_lstm_int8.tflite");
  TESSERA_REQUIRE_FIXTURE(f32, "models/tflite/corpus/micro_trained_lstm.tflite");
  std::vector<hostile::Variant> variants;
  uint32_t seed = 31;
  for (const std::string& path : {i8, f32}) {
    const hostile::Bytes m = testing::read_file(path);
    hostile::add_tflite_edits(m, 1000, variants);
    hostile::add_truncations(m, 40, variants);
    hostile::add_bit_flips(m, 200, seed++, variants);
  }
  int imported = 0, refused = 0;
  for (const auto& v : variants) (import_and_run(v, true) ? imported : refused)++;
  std::printf("[hostile] LSTM models: %d variants imported, %d refused\n", imported, refused);
  EXPECT_GT(refused, 100);
  EXPECT_GT(imported, 10);
}

// The same corruptions of the one-op fuzz seeds of the reductions and data-movement
// builtins (fuzz/regressions/tflite_fuzz, written by single_op_seeds_test.cpp): SUM,
// REDUCE_*, DEPTH_TO_SPACE, MIRROR_PAD, TILE, BROADCAST_TO, FILL, ZEROS_LIKE, SHAPE.
TEST(HostileTflite, StructuredCorruptionsOfTheSingleOpSeedsFailCleanly) {
  const char* env = std::getenv("TESSERA_SOURCE_DIR");
  const std::filesystem::path dir =
      (env ? std::filesystem::path(env) : std::filesystem::path(TESSERA_BINARY_DIR).parent_path()) / "fuzz/regressions/tflite_fuzz";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent (set TESSERA_SOURCE_DIR)";
  std::vector<hostile::Variant> variants;
  uint32_t seed = 77;
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("unidirectional_sequence_lstm", 0) == 0) continue;  // the LSTM test's
    const hostile::Bytes m = testing::read_file(e.path().string());
    hostile::add_tflite_edits(m, 200, variants);
    hostile::add_truncations(m, 10, variants);
    hostile::add_bit_flips(m, 60, seed++, variants);
    ++seeds;
  }
  ASSERT_GE(seeds, 12);
  int imported = 0, refused = 0;
  for (const auto& v : variants) (import_and_run(v, true) ? imported : refused)++;
  std::printf("[hostile] %d single-op seeds: %d variants imported, %d refused\n", seeds, imported, refused);
  EXPECT_GT(refused, 100);
  EXPECT_GT(imported, 10);
}

}  // namespace
}  // namespace tessera

#endif  // TESSERA_HOSTILE_TFLITE
