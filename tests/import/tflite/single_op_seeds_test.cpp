// The one-op fuzz seeds of the builtins added with reductions and data movement
// (fuzz/regressions/tflite_fuzz/): SUM (i8), REDUCE_MAX (f32), REDUCE_MIN (u8), REDUCE_PROD
// (i16), DEPTH_TO_SPACE (u8), SPACE_TO_DEPTH (i8), MIRROR_PAD (u8 REFLECT), TILE (i8), BROADCAST_TO (f32), FILL (f32), ZEROS_LIKE (i32),
// SHAPE (i32), PRELU (i8), ELU (i8), GELU (u8), LOG_SOFTMAX (i8), L2_NORMALIZATION (u8),
// CUMSUM (i32), BATCH_MATMUL (i8), hybrid FULLY_CONNECTED and BATCH_MATMUL with asymmetric
// input quantization, a WHILE loop (refused by name), and the 16x8 LOGISTIC, TANH, SOFTMAX, MEAN, MUL,
// AVERAGE_POOL_2D, power-of-two-scale SUB (i16) and MUL i16 -> u8, written by single_op_model.h, and UNIDIRECTIONAL_SEQUENCE_LSTM with
// peephole weights, projection and layer norm (f32, i8 and hybrid) and BIDIRECTIONAL_SEQUENCE_LSTM
// with peephole weights and projection (f32), written by lstm_model.h. The test checks each file is the
// model this code writes (so a seed can be regenerated: TESSERA_WRITE_FUZZ_SEEDS=1 writes
// them) and that it imports and runs. Their agreement
// with the interpreter is tests/oracle/reduce_oracle_test.cpp's and
// depth_space_oracle_test.cpp's, mirror_pad_oracle_test.cpp's and
// tile_broadcast_oracle_test.cpp's, fill_shape_oracle_test.cpp's, activation_oracle_test.cpp's,
// batch_matmul_oracle_test.cpp's, the int16_*_oracle_test.cpp files' and
// lstm_oracle_test.cpp's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fixtures.h"
#include "import/tflite/lstm_model.h"
#include "import/tflite/graph_model.h"
#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

namespace T = ::tflite;
namespace fs = std::filesystem;
using testing::OpTensor;
using testing::SingleOpModel;

SingleOpModel reduce_model(T::BuiltinOperator code, int version, T::TensorType type, float scale, int64_t zp) {
  SingleOpModel m;
  m.tensors = {testing::activation("x", type, {2, 3, 4}), testing::constant("axes", T::TensorType_INT32, {2}, testing::int32_bytes({0, -1})),
               testing::activation("y", type, {1, 3, 1})};
  if (type != T::TensorType_FLOAT32)
    for (size_t i : {0u, 2u}) {
      m.tensors[i].scale = scale;
      m.tensors[i].zero_point = zp;
    }
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = code;
  m.version = version;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_ReducerOptions, T::CreateReducerOptions(fb, true).Union());
  };
  return m;
}

// x [1, 2, 2, 8] <-> y [1, 4, 4, 2], block 2.
SingleOpModel depth_space_model(bool to_space, T::TensorType type) {
  SingleOpModel m;
  const std::vector<int32_t> deep = {1, 2, 2, 8}, wide = {1, 4, 4, 2};
  m.tensors = {testing::activation("x", type, to_space ? deep : wide), testing::activation("y", type, to_space ? wide : deep)};
  for (auto& t : m.tensors) {
    t.scale = 0.03f;
    t.zero_point = type == T::TensorType_UINT8 ? 128 : 1;
  }
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = to_space ? T::BuiltinOperator_DEPTH_TO_SPACE : T::BuiltinOperator_SPACE_TO_DEPTH;
  m.version = type == T::TensorType_INT8 ? 2 : 1;
  m.options = [to_space](flatbuffers::FlatBufferBuilder& fb) {
    if (to_space) return std::make_pair(T::BuiltinOptions_DepthToSpaceOptions, T::CreateDepthToSpaceOptions(fb, 2).Union());
    return std::make_pair(T::BuiltinOptions_SpaceToDepthOptions, T::CreateSpaceToDepthOptions(fb, 2).Union());
  };
  return m;
}

// x u8 [3, 4] padded (1, 2) and (2, 1), REFLECT.
SingleOpModel mirror_pad_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_UINT8, {3, 4}),
               testing::constant("paddings", T::TensorType_INT32, {2, 2}, testing::int32_bytes({1, 2, 2, 1})),
               testing::activation("y", T::TensorType_UINT8, {6, 7})};
  for (size_t i : {0u, 2u}) {
    m.tensors[i].scale = 0.02f;
    m.tensors[i].zero_point = 100;
  }
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_MIRROR_PAD;
  m.version = 1;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_MirrorPadOptions, T::CreateMirrorPadOptions(fb, T::MirrorPadMode_REFLECT).Union());
  };
  return m;
}

// TILE i8 [2, 3] by (2, 1); BROADCAST_TO f32 [3, 1] to [2, 3, 4].
SingleOpModel tile_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_INT8, {2, 3}),
               testing::constant("multiples", T::TensorType_INT32, {2}, testing::int32_bytes({2, 1})),
               testing::activation("y", T::TensorType_INT8, {4, 3})};
  for (size_t i : {0u, 2u}) {
    m.tensors[i].scale = 0.02f;
    m.tensors[i].zero_point = -5;
  }
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_TILE;
  m.version = 2;
  return m;
}
SingleOpModel broadcast_to_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {3, 1}),
               testing::constant("shape", T::TensorType_INT32, {3}, testing::int32_bytes({2, 3, 4})),
               testing::activation("y", T::TensorType_FLOAT32, {2, 3, 4})};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_BROADCAST_TO;
  m.version = 2;
  return m;
}

// FILL f32 [2, 3] from a run-time scalar; ZEROS_LIKE i32 [4, 2]; SHAPE of f32 [2, 5, 3] as i32.
SingleOpModel fill_model() {
  SingleOpModel m;
  m.tensors = {testing::constant("dims", T::TensorType_INT32, {2}, testing::int32_bytes({2, 3})),
               testing::activation("value", T::TensorType_FLOAT32, {}), testing::activation("y", T::TensorType_FLOAT32, {2, 3})};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_FILL;
  m.version = 1;
  return m;
}
SingleOpModel unary_model(T::BuiltinOperator code, T::TensorType in, std::vector<int32_t> x, std::vector<int32_t> y) {
  SingleOpModel m;
  m.tensors = {testing::activation("x", in, x), testing::activation("y", T::TensorType_INT32, y)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = code;
  m.version = 1;
  if (code == T::BuiltinOperator_SHAPE)
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_ShapeOptions, T::CreateShapeOptions(fb, T::TensorType_INT32).Union());
    };
  return m;
}

// One quantized (or float) tensor-in, tensor-out model of the builtins added with the
// activations: x and y [2, 3, 8] with the given quantization each.
SingleOpModel activation_model(T::BuiltinOperator code, int version, T::TensorType type, float xs, int64_t xz, float ys,
                               int64_t yz) {
  SingleOpModel m;
  m.tensors = {testing::activation("x", type, {2, 3, 8}), testing::activation("y", type, {2, 3, 8})};
  m.tensors[0].scale = xs;
  m.tensors[0].zero_point = xz;
  m.tensors[1].scale = ys;
  m.tensors[1].zero_point = yz;
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = code;
  m.version = version;
  if (code == T::BuiltinOperator_GELU)
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_GeluOptions, T::CreateGeluOptions(fb, true).Union());
    };
  return m;
}
// PRELU i8: x [2, 3, 8], a constant per-channel alpha [8].
SingleOpModel prelu_model() {
  SingleOpModel m = activation_model(T::BuiltinOperator_PRELU, 1, T::TensorType_INT8, 0.03f, -4, 0.02f, 5);
  testing::OpTensor a = testing::constant("alpha", T::TensorType_INT8, {8}, {3, 250, 17, 100, 0, 200, 64, 9});
  a.scale = 0.01f;
  a.zero_point = -20;
  m.tensors.insert(m.tensors.begin() + 1, a);
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  return m;
}
// CUMSUM i32 [4, 5] along axis 1, exclusive and reversed.
SingleOpModel cumsum_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_INT32, {4, 5}), testing::constant("axis", T::TensorType_INT32, {}, testing::int32_bytes({1})),
               testing::activation("y", T::TensorType_INT32, {4, 5})};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_CUMSUM;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_CumsumOptions, T::CreateCumsumOptions(fb, true, true).Union());
  };
  return m;
}
// Hybrid with asymmetric_quantize_inputs: FULLY_CONNECTED (v9, x f32 [3, 8], w i8 [4, 8]
// per channel, bias f32 [4]) or BATCH_MATMUL (v4, a f32 [3, 8] x constant b i8 [8, 4]).
SingleOpModel hybrid_asym_model(bool batch_matmul) {
  SingleOpModel m;
  std::vector<uint8_t> wb(32);
  for (size_t i = 0; i < wb.size(); ++i) wb[i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127));
  OpTensor w = testing::constant(batch_matmul ? "b" : "w", T::TensorType_INT8, batch_matmul ? std::vector<int32_t>{8, 4}
                                                                                               : std::vector<int32_t>{4, 8}, wb);
  if (batch_matmul) {
    w.scale = 0.02f;
  } else {
    w.scales = {0.01f, 0.02f, 0.015f, 0.03f};
    w.quantized_dimension = 0;
  }
  m.tensors = {testing::activation(batch_matmul ? "a" : "x", T::TensorType_FLOAT32, {3, 8}), w,
               testing::activation("y", T::TensorType_FLOAT32, {3, 4})};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  if (batch_matmul) {
    m.code = T::BuiltinOperator_BATCH_MATMUL;
    m.version = 4;
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_BatchMatMulOptions, T::CreateBatchMatMulOptions(fb, false, false, true).Union());
    };
  } else {
    std::vector<float> bias = {0.5f, -0.25f, 0.125f, 1.0f};
    std::vector<uint8_t> bb(16);
    std::memcpy(bb.data(), bias.data(), bb.size());
    m.tensors.insert(m.tensors.begin() + 2, testing::constant("bias", T::TensorType_FLOAT32, {4}, bb));
    m.op_inputs = {0, 1, 2};
    m.op_outputs = {3};
    m.code = T::BuiltinOperator_FULLY_CONNECTED;
    m.version = 9;
    m.options = [](flatbuffers::FlatBufferBuilder& fb) {
      T::FullyConnectedOptionsBuilder b(fb);
      b.fbb_.AddElement<uint8_t>(10, 1, 0);  // asymmetric_quantize_inputs (newer than the compiled schema)
      return std::make_pair(T::BuiltinOptions_FullyConnectedOptions, b.Finish().Union());
    };
  }
  return m;
}

// BATCH_MATMUL i8: a [2, 3, 4] x b [2, 5, 4] with adj_y.
SingleOpModel batch_matmul_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("a", T::TensorType_INT8, {2, 3, 4}), testing::activation("b", T::TensorType_INT8, {2, 5, 4}),
               testing::activation("y", T::TensorType_INT8, {2, 3, 5})};
  const float scales[] = {0.05f, 0.02f, 0.08f};
  const int64_t zps[] = {-3, 5, 10};
  for (size_t i = 0; i < 3; ++i) {
    m.tensors[i].scale = scales[i];
    m.tensors[i].zero_point = zps[i];
  }
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_BATCH_MATMUL;
  m.version = 2;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_BatchMatMulOptions, T::CreateBatchMatMulOptions(fb, false, true, false).Union());
  };
  return m;
}

// MUL i16: a [2, 3, 8] x b [8] (broadcast), RELU, zero points 0.
SingleOpModel mul_i16_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("a", T::TensorType_INT16, {2, 3, 8}), testing::activation("b", T::TensorType_INT16, {8}),
               testing::activation("y", T::TensorType_INT16, {2, 3, 8})};
  const float scales[] = {0.001f, 0.002f, 0.0005f};
  for (size_t i = 0; i < 3; ++i) m.tensors[i].scale = scales[i];
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_MUL;
  m.version = 4;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_MulOptions, T::CreateMulOptions(fb, T::ActivationFunctionType_RELU).Union());
  };
  return m;
}
// MUL i16 x i16 -> u8 (the legacy Q0.7 product): a, b [3, 5], output zero point 128.
SingleOpModel mul_i16_u8_model() {
  SingleOpModel m = mul_i16_model();
  for (auto& t : m.tensors) t.shape = {3, 5};
  m.tensors[0].scale = m.tensors[1].scale = 1.0f / 32768;
  m.tensors[2].type = T::TensorType_UINT8;
  m.tensors[2].scale = 1.0f / 128;
  m.tensors[2].zero_point = 128;
  return m;
}
// SUB i16 with power-of-two scales (the shift-only kernel): a [2, 3, 8] at 2^-10 minus
// b [8] (broadcast) at 2^-13, output 2^-10.
SingleOpModel sub_pot_i16_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("a", T::TensorType_INT16, {2, 3, 8}), testing::activation("b", T::TensorType_INT16, {8}),
               testing::activation("y", T::TensorType_INT16, {2, 3, 8})};
  const float scales[] = {1.0f / 1024, 1.0f / 8192, 1.0f / 1024};
  for (size_t i = 0; i < 3; ++i) m.tensors[i].scale = scales[i];
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_SUB;
  m.version = 3;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SubOptions, T::CreateSubOptions(fb, T::ActivationFunctionType_NONE, true).Union());
  };
  return m;
}
// AVERAGE_POOL_2D i16: x [1, 5, 5, 3], 3x3 window, stride 2, SAME.
SingleOpModel avg_pool_i16_model() {
  SingleOpModel m;
  m.tensors = {testing::activation("x", T::TensorType_INT16, {1, 5, 5, 3}), testing::activation("y", T::TensorType_INT16, {1, 3, 3, 3})};
  for (auto& t : m.tensors) t.scale = 1.0f / 4096;
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = T::BuiltinOperator_AVERAGE_POOL_2D;
  m.version = 3;
  m.options = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_Pool2DOptions, T::CreatePool2DOptions(fb, T::Padding_SAME, 2, 2, 3, 3).Union());
  };
  return m;
}

// An LSTM with every optional part: peephole weights, projection with bias and clipping,
// layer norm (f32 or the integer 8x8_16 form).
SingleOpModel lstm_variants_model(bool integer, bool hybrid = false) {
  testing::LstmCase c;
  c.name = integer ? "lstm_i8" : "lstm_f32";
  c.integer = integer;
  c.hybrid = c.asymmetric = hybrid;
  c.batch = 2;
  c.steps = 3;
  c.features = 4;
  c.cells = 5;
  c.cell_clip = 3.0f;
  c.x_zero_point = integer ? 3 : 0;
  c.peephole = c.layer_norm = c.projection_bias = true;
  c.projection = integer ? 5 : 3;  // the integer peephole needs P = C
  c.proj_clip = 0.5f;
  c.seed = 61;
  return testing::lstm_model(c, c.steps);
}

TEST(TfliteSingleOpSeeds, FuzzSeedsAreTheSingleOpModelsAndRun) {
  const char* env = std::getenv("TESSERA_SOURCE_DIR");
  const fs::path dir = (env ? fs::path(env) : fs::path(TESSERA_BINARY_DIR).parent_path()) / "fuzz/regressions/tflite_fuzz";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is absent (set TESSERA_SOURCE_DIR)";
  const bool write = std::getenv("TESSERA_WRITE_FUZZ_SEEDS") != nullptr;
  const std::vector<std::pair<std::string, SingleOpModel>> seeds = {
      {"reduce_sum_i8", reduce_model(T::BuiltinOperator_SUM, 2, T::TensorType_INT8, 0.05f, -3)},
      {"reduce_max_f32", reduce_model(T::BuiltinOperator_REDUCE_MAX, 1, T::TensorType_FLOAT32, 0, 0)},
      {"reduce_min_u8", reduce_model(T::BuiltinOperator_REDUCE_MIN, 1, T::TensorType_UINT8, 0.02f, 128)},
      {"reduce_prod_i16", reduce_model(T::BuiltinOperator_REDUCE_PROD, 2, T::TensorType_INT16, 0.001f, 0)},
      {"depth_to_space_u8", depth_space_model(true, T::TensorType_UINT8)},
      {"space_to_depth_i8", depth_space_model(false, T::TensorType_INT8)},
      {"mirror_pad_u8", mirror_pad_model()},
      {"tile_i8", tile_model()},
      {"broadcast_to_f32", broadcast_to_model()},
      {"fill_f32", fill_model()},
      {"zeros_like_i32", unary_model(T::BuiltinOperator_ZEROS_LIKE, T::TensorType_INT32, {4, 2}, {4, 2})},
      {"shape_i32", unary_model(T::BuiltinOperator_SHAPE, T::TensorType_FLOAT32, {2, 5, 3}, {3})},
      {"prelu_i8", prelu_model()},
      {"elu_i8", activation_model(T::BuiltinOperator_ELU, 2, T::TensorType_INT8, 0.05f, 10, 0.04f, 3)},
      {"gelu_u8", activation_model(T::BuiltinOperator_GELU, 2, T::TensorType_UINT8, 0.03f, 130, 0.025f, 20)},
      {"log_softmax_i8", activation_model(T::BuiltinOperator_LOG_SOFTMAX, 2, T::TensorType_INT8, 0.05f, -3, 16.0f / 256, 127)},
      {"l2_norm_u8", activation_model(T::BuiltinOperator_L2_NORMALIZATION, 1, T::TensorType_UINT8, 0.02f, 77, 1.0f / 128, 128)},
      {"cumsum_i32", cumsum_model()},
      {"batch_matmul_i8", batch_matmul_model()},
      {"logistic_i16", activation_model(T::BuiltinOperator_LOGISTIC, 3, T::TensorType_INT16, 0.0007f, 0, 1.0f / 32768, 0)},
      {"tanh_i16", activation_model(T::BuiltinOperator_TANH, 3, T::TensorType_INT16, 1.0f / 4096, 0, 1.0f / 32768, 0)},
      {"softmax_i16", activation_model(T::BuiltinOperator_SOFTMAX, 3, T::TensorType_INT16, 0.0005f, 0, 1.0f / 32768, 0)},
      {"mean_i16", reduce_model(T::BuiltinOperator_MEAN, 3, T::TensorType_INT16, 0.001f, 0)},
      {"mul_i16", mul_i16_model()},
      {"avg_pool_i16", avg_pool_i16_model()},
      {"sub_pot_i16", sub_pot_i16_model()},
      {"mul_i16_u8", mul_i16_u8_model()},
      {"lstm_peephole_projection_layer_norm_f32", lstm_variants_model(false)},
      {"lstm_peephole_projection_layer_norm_i8", lstm_variants_model(true)},
      {"lstm_hybrid_asymmetric_peephole_projection_layer_norm", lstm_variants_model(false, true)},
      {"bilstm_peephole_projection_f32",
       testing::bilstm_model({"bilstm", 2, 3, 4, 4, 4, true, true, false, T::ActivationFunctionType_TANH, 2.0f, 62, true, 3,
                              true, 0.5f})},
      {"fully_connected_hybrid_asym", hybrid_asym_model(false)},
      {"batch_matmul_hybrid_asym", hybrid_asym_model(true)},
  };
  for (const auto& [name, m] : seeds) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = m.bytes();
    const fs::path file = dir / name;
    if (write) {
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    std::ifstream f(file, std::ios::binary);
    ASSERT_TRUE(f) << file << " is missing (TESSERA_WRITE_FUZZ_SEEDS=1 writes it)";
    const std::vector<uint8_t> stored((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(stored, bytes) << file << " differs from the model this test writes";
    auto g = tflite::load_tflite_buffer(ConstData::from_vector(stored));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    SessionOptions so;
    so.device = "cpu";
    auto s = Session::create(std::move(*g), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
  }
  // WHILE (control flow): refused naming the operator and its subgraphs, also when its
  // options point past the file's subgraphs.
  const std::vector<uint8_t> loop = testing::while_model().bytes();
  const fs::path file = dir / "while_f32";
  if (write) std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(loop.data()), static_cast<std::streamsize>(loop.size()));
  std::ifstream f(file, std::ios::binary);
  ASSERT_TRUE(f) << file << " is missing (TESSERA_WRITE_FUZZ_SEEDS=1 writes it)";
  EXPECT_EQ(std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), loop);
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(loop));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("operator WHILE (cond subgraph 1 'cond', body subgraph 2 'body') is not supported"),
            std::string::npos)
      << g.status().to_string();
  auto bad = tflite::load_tflite_buffer(ConstData::from_vector(testing::while_model(7, -1).bytes()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(cond subgraph 7, body subgraph -1)"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// MIRROR_PAD, TILE, BROADCAST_TO, FILL and ZEROS_LIKE become gathers with one constant index per output position
// along an axis: an axis longer than 16,777,216 (from the file's multiples, target shape or
// input dims) is refused by name before any index is allocated (a fuzzed BROADCAST_TO target of
// 2^30 once asked for 6.6 GB, a ZEROS_LIKE 3 GB: fuzz/regressions/tflite_fuzz/*_huge_axis_oom).
TEST(TfliteSingleOpSeeds, HugeGatherAxesAreRefusedBeforeAllocating) {
  auto refused = [](SingleOpModel m, const std::string& op, const std::string& what) {
    auto g = tflite::load_tflite_buffer(ConstData::from_vector(m.bytes()));
    ASSERT_FALSE(g.ok()) << op;
    const std::string msg = g.status().to_string();
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_NE(msg.find("more than 16777216 along one axis"), std::string::npos) << msg;
  };
  SingleOpModel b = broadcast_to_model();
  b.tensors[1] = testing::constant("shape", T::TensorType_INT32, {3}, testing::int32_bytes({1 << 30, 3, 4}));
  b.tensors[2].shape = {1 << 30, 3, 4};
  refused(b, "BROADCAST_TO", "the broadcast axis 0 would have 1073741824 positions");
  SingleOpModel t = tile_model();
  t.tensors[1] = testing::constant("multiples", T::TensorType_INT32, {2}, testing::int32_bytes({(1 << 23) + 1, 1}));
  t.tensors[2].shape = {(1 << 24) + 2, 3};
  refused(t, "TILE", "the tiled axis 0 would have 16777218 positions");
  SingleOpModel p = mirror_pad_model();
  p.tensors[0].shape = {3, 1 << 24};
  p.tensors[2].shape = {6, (1 << 24) + 3};
  refused(p, "MIRROR_PAD", "the padded axis 1 would have 16777219 positions");
  SingleOpModel z = unary_model(T::BuiltinOperator_ZEROS_LIKE, T::TensorType_INT32, {4, (1 << 24) + 1}, {4, (1 << 24) + 1});
  refused(z, "ZEROS_LIKE", "the output's axis 1 would have 16777217 positions");
  // At the limit itself the broadcast imports.
  SingleOpModel ok = broadcast_to_model();
  ok.tensors[1] = testing::constant("shape", T::TensorType_INT32, {3}, testing::int32_bytes({1 << 24, 3, 1}));
  ok.tensors[0].shape = {3, 1};
  ok.tensors[2].shape = {1 << 24, 3, 1};
  EXPECT_TRUE(tflite::load_tflite_buffer(ConstData::from_vector(ok.bytes())).ok());
}

}  // namespace
}  // namespace tessera
