// The integer path of the tile device's quantized convolutions (kernels/matrix.cpp): codes
// minus zero points enter the matrix engine exactly, the fp32 destination sums them
// exactly, and the vector engine requantizes with TFLite's multiplier and rounding
// (numerics.h Requantizer). Judged against the cpu device, whose quantized kernels are
// byte-identical to the TFLite interpreter (oracle_tests).
#include <gtest/gtest.h>

#include <random>

#include "tile_test_util.h"
#if __has_include("import/tflite/tflite_importer.h") && __has_include("import/tflite/image.h")
#include "import/tflite/image.h"
#include "oracle/oracle.h"
#endif

namespace tessera {
namespace {

using tile_testing::add_input;
using tile_testing::add_raw_weight;
using tile_testing::mark_output;

std::vector<uint8_t> random_codes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 24);
  return v;
}

std::vector<uint8_t> random_bias(size_t n, uint32_t seed, int32_t range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(-range, range);
  std::vector<uint8_t> b(n * 4);
  for (size_t i = 0; i < n; ++i) {
    int32_t v = d(rng);
    std::memcpy(b.data() + 4 * i, &v, 4);
  }
  return b;
}

TensorId quant_input(Graph& g, const std::string& name, Shape shape, DType dt, QuantParams q) {
  TensorId id = add_input(g, name, std::move(shape), dt);
  g.tensor(id).quant = std::move(q);
  return id;
}

TensorId quant_weight(Graph& g, const std::string& name, Shape shape, DType dt, QuantParams q, uint32_t seed) {
  TensorId id = add_raw_weight(g, name, shape, dt, random_codes(static_cast<size_t>(num_elements(shape)), seed));
  g.tensor(id).quant = std::move(q);
  return id;
}

std::vector<std::vector<uint8_t>> run_bytes(const Graph& g, const std::string& device,
                                            const std::vector<std::vector<uint8_t>>& inputs,
                                            const DeviceOptions& opts = {}, bool* all_on_device = nullptr) {
  SessionOptions so;
  so.device = device;
  so.device_options = opts;
  auto s = Session::create(g, so);
  EXPECT_TRUE(s.ok()) << device << ": " << s.status().to_string();
  if (!s.ok()) return {};
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE((*s)->set_input(i, inputs[i].data(), inputs[i].size()).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << device << ": " << st.to_string();
  if (!st.ok()) return {};
  if (all_on_device) *all_on_device = tile_testing::all_nodes_on(**s, device);
  std::vector<std::vector<uint8_t>> outs;
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    auto out = (*s)->output(o);
    EXPECT_TRUE(out.ok());
    outs.push_back(out.ok() ? *out : std::vector<uint8_t>{});
  }
  return outs;
}

// A uint8 model's conv (per-tensor, two roundings: TFLite's gemmlowp path) and depthwise,
// and an int8 per-channel conv (one rounding: ruy) and depthwise, fused activations, i32
// biases, padding (the zero point's code), strides, a depth multiplier, and fully
// connected layers; one output multiplier above 1 (a left shift).
Graph quantized_graph(DType dt, float out_scale) {
  const bool u8 = dt == DType::u8;
  const int64_t zp = u8 ? 131 : -7;
  Graph g;
  TensorId x = quant_input(g, "x", {1, 13, 11, 24}, dt, {{0.0213f}, {zp}, -1});
  // conv 3x3, stride 2, padding 1, 16 output channels, relu6.
  const int64_t oc = 16;
  QuantParams wq = u8 ? QuantParams{{0.0071f}, {119}, -1} : QuantParams{{}, {}, 0};
  if (!u8) {
    for (int64_t o = 0; o < oc; ++o) {
      wq.scale.push_back(0.002f + 0.0009f * static_cast<float>(o));
      wq.zero_point.push_back(0);
    }
  }
  TensorId w = quant_weight(g, "w", {oc, 3, 3, 24}, dt, wq, 31);
  TensorId b = add_raw_weight(g, "b", {oc}, DType::i32, random_bias(oc, 32, 4000));
  AttrMap conv = {{"stride_h", int64_t{2}}, {"stride_w", int64_t{2}},
                                           {"pad_top", int64_t{1}},  {"pad_bottom", int64_t{1}},
                                           {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}},
                                           {"activation", std::string("relu6")}};
  TensorId y = *g.add_op(OpKind::conv2d, {x, w, b}, conv, "conv", dt, {{out_scale}, {u8 ? 3 : -100}, -1});
  mark_output(g, y);
  // depthwise 3x3, multiplier 2, on the conv's output, no activation.
  QuantParams dq = u8 ? QuantParams{{0.0093f}, {127}, -1} : QuantParams{{}, {}, 3};
  if (!u8) {
    for (int64_t o = 0; o < 2 * oc; ++o) {
      dq.scale.push_back(0.004f + 0.0003f * static_cast<float>(o));
      dq.zero_point.push_back(0);
    }
  }
  TensorId dw = quant_weight(g, "dw", {1, 3, 3, 2 * oc}, dt, dq, 33);
  TensorId db = add_raw_weight(g, "db", {2 * oc}, DType::i32, random_bias(2 * oc, 34, 2000));
  AttrMap dconv = {{"depth_multiplier", int64_t{2}}, {"pad_top", int64_t{1}},
                                            {"pad_bottom", int64_t{1}},     {"pad_left", int64_t{1}},
                                            {"pad_right", int64_t{1}}};
  TensorId z = *g.add_op(OpKind::depthwise_conv2d, {y, dw, db}, dconv, "dw", dt, {{0.031f}, {u8 ? 120 : 5}, -1});
  mark_output(g, z);
  // fully connected on the input's first row of pixels (reshaped), relu.
  TensorId flat = *g.add_op(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{13, 11 * 24}}}, "flat", dt,
                            g.tensor(x).quant);
  TensorId fw = quant_weight(g, "fw", {40, 11 * 24}, dt, u8 ? QuantParams{{0.0044f}, {140}, -1} : QuantParams{{0.0044f}, {0}, -1}, 35);
  TensorId fb = add_raw_weight(g, "fb", {40}, DType::i32, random_bias(40, 36, 9000));
  TensorId f = *g.add_op(OpKind::fully_connected, {flat, fw, fb}, {{"activation", std::string("relu")}}, "fc", dt,
                         {{0.09f}, {u8 ? 10 : -128}, -1});
  mark_output(g, f);
  // A 1x1 conv whose output scale lies below input x weight scale: multipliers above 1 (a
  // left shift before the high multiply). Its input `s` stays within 2 codes of the zero
  // point, so the outputs do not all saturate.
  TensorId sx = quant_input(g, "s", {1, 5, 5, 2}, dt, {{0.0213f}, {zp}, -1});
  TensorId sw = quant_weight(g, "sw", {8, 1, 1, 2}, dt, u8 ? QuantParams{{0.0071f}, {119}, -1} : QuantParams{{0.0071f}, {0}, -1}, 37);
  TensorId sb = add_raw_weight(g, "sb", {8}, DType::i32, random_bias(8, 38, 30));
  mark_output(g, *g.add_op(OpKind::conv2d, {sx, sw, sb}, {}, "wide", dt, {{0.00009f}, {u8 ? 128 : 0}, -1}));
  return g;
}

TEST(TileQuantized, ConvolutionsEqualTheCpuByteForByte) {
  for (DType dt : {DType::u8, DType::i8})
    for (float out_scale : {0.023f, 0.0061f}) {
      Graph g = quantized_graph(dt, out_scale);
      for (uint32_t seed : {1u, 2u, 3u}) {
        std::vector<uint8_t> in = random_codes(13 * 11 * 24, seed), near = random_codes(5 * 5 * 2, seed + 10);
        const int zp = dt == DType::u8 ? 131 : -7;
        for (uint8_t& c : near) c = static_cast<uint8_t>(zp + c % 5 - 2);
        auto cpu = run_bytes(g, "cpu", {in, near});
        bool on_tile = false;
        auto tile = run_bytes(g, "tile", {in, near}, {}, &on_tile);
        ASSERT_EQ(cpu.size(), 4u);
        ASSERT_EQ(tile.size(), 4u);
        EXPECT_TRUE(on_tile) << dtype_name(dt);
        for (size_t o = 0; o < 4; ++o) {
          EXPECT_EQ(tile[o], cpu[o]) << dtype_name(dt) << " output " << o << " scale " << out_scale << " seed " << seed;
          // Not a constant output: the activations' ranges are exercised.
          std::vector<uint8_t> sorted = cpu[o];
          std::sort(sorted.begin(), sorted.end());
          EXPECT_GT(std::unique(sorted.begin(), sorted.end()) - sorted.begin(), 15) << o;
        }
      }
    }
}

// The codes are exact only when the fidelity keeps all of their bits: at LoFi the matrix
// engine sees 7 bits of in0 and 5 of in1, so the same graph no longer matches.
TEST(TileQuantized, LowFidelityTruncatesTheCodes) {
  Graph g = quantized_graph(DType::u8, 0.023f);
  std::vector<uint8_t> in = random_codes(13 * 11 * 24, 1), near(5 * 5 * 2, 131);
  auto cpu = run_bytes(g, "cpu", {in, near});
  auto lofi = run_bytes(g, "tile", {in, near}, {{"fidelity", "LoFi"}});
  ASSERT_EQ(lofi.size(), 4u);
  EXPECT_NE(lofi[0], cpu[0]);
}

// Per-channel weights whose scale count is not the output channel count: a clear error
// naming the weight, not a read past the scales (the planner's canonicalize pass refuses
// it first; the kernel checks again).
TEST(TileQuantized, WrongPerChannelScaleCountIsAnError) {
  Graph g;
  TensorId x = quant_input(g, "x", {1, 4, 4, 8}, DType::i8, {{0.02f}, {-3}, -1});
  TensorId w = quant_weight(g, "w_bad", {6, 1, 1, 8}, DType::i8, {{0.01f, 0.02f, 0.03f}, {0, 0, 0}, 0}, 40);
  mark_output(g, *g.add_op(OpKind::conv2d, {x, w}, {}, "conv_bad", DType::i8, {{0.05f}, {0}, -1}));
  SessionOptions so;
  so.device = "tile";
  auto s = Session::create(g, so);
  Status st = s.ok() ? Status::Ok() : s.status();
  if (s.ok()) {
    std::vector<uint8_t> in = random_codes(4 * 4 * 8, 41);
    ASSERT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
    st = (*s)->run();
  }
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("w_bad"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("3 per-axis scales"), std::string::npos) << st.message();
}

#if __has_include("import/tflite/tflite_importer.h") && __has_include("import/tflite/image.h")
// The SSD backbone (every conv and depthwise, the reshapes, concatenations and the
// logistic, cut before the post-processing) on the tile device gives the cpu's bytes, on
// the photo and on a seeded random image: the detections follow (cli_tests DetectCli).
TEST(TileQuantized, SsdBackboneEqualsTheCpuByteForByte) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  const std::vector<uint8_t> model = testing::read_file(path);
  const int post = oracle::find_operator(model, ::tflite::BuiltinOperator_CUSTOM);
  ASSERT_GT(post, 0);
  auto backbone = oracle::cut_before(model, post);
  ASSERT_TRUE(backbone.ok()) << backbone.status().to_string();
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto img = tflite::read_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  auto photo = tflite::image_to_input(*img, g->tensor(g->inputs[0]));
  ASSERT_TRUE(photo.ok()) << photo.status().to_string();
  const std::vector<uint8_t> noise = oracle::random_bytes(photo->size(), 14);
  for (const auto& in : {*photo, noise}) {
    auto cpu = oracle::run_tessera(*backbone, {in}, "cpu");
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    auto tile = oracle::run_tessera(*backbone, {in}, "tile");
    ASSERT_TRUE(tile.ok()) << tile.status().to_string();
    ASSERT_EQ(tile->size(), cpu->size());
    for (size_t o = 0; o < cpu->size(); ++o) {
      int64_t differ = 0;
      for (size_t i = 0; i < (*cpu)[o].size(); ++i) differ += (*cpu)[o][i] != (*tile)[o][i];
      EXPECT_EQ(differ, 0) << "output " << o << ": " << differ << " of " << (*cpu)[o].size() << " codes differ";
    }
  }
}
#endif

}  // namespace
}  // namespace tessera
