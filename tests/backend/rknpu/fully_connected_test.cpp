// Fully connected on the rknpu device model, lowered as a 1x1 conv whose width is the rows
// (lower.cpp lower_fc), against the cpu's TFLite-exact kernel: u8 per-tensor and i8
// per-channel weights, output counts that are not multiples of 16, activations, several
// rows; more rows than the CNA's width limit fall back with the reason.
#include <gtest/gtest.h>

#include <set>

#include "backend/rknpu/rknpu_test_util.h"
#include "fixtures.h"
#include "import/tflite/tflite_importer.h"

namespace tessera::rknpu_test {
namespace {

struct FcSpec {
  int64_t rows, ic, oc;
  DType dtype;
  bool per_channel;
  const char* activation;
  uint32_t seed;
};

Graph build_fc(const FcSpec& s, std::vector<uint8_t>& input) {
  std::mt19937 rng(s.seed);
  const bool u8 = s.dtype == DType::u8;
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {s.rows, s.ic};
  x.dtype = s.dtype;
  x.quant = {{0.05f}, {u8 ? 110 : -20}};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  input = random_codes(static_cast<size_t>(s.rows * s.ic), rng, u8 ? 0 : -128, u8 ? 255 : 127);
  QuantParams wq;
  if (s.per_channel) {
    for (int64_t c = 0; c < s.oc; ++c) {
      wq.scale.push_back(0.001f * (1.0f + float(c % 5)));
      wq.zero_point.push_back(0);
    }
    wq.axis = 0;
  } else {
    wq = {{0.004f}, {u8 ? 131 : 0}};
  }
  TensorId wi = add_const(g, "w", {s.oc, s.ic}, s.dtype, wq,
                          random_codes(static_cast<size_t>(s.oc * s.ic), rng, u8 ? 0 : -127, u8 ? 255 : 127));
  QuantParams bq;
  for (int64_t c = 0; c < s.oc; ++c) bq.scale.push_back(0.05f * wq.scale_at(c));
  bq.zero_point.assign(bq.scale.size(), 0);
  std::vector<uint8_t> bias(static_cast<size_t>(s.oc) * 4);
  for (int64_t c = 0; c < s.oc; ++c) {
    int32_t b = static_cast<int32_t>(rng() % 4001) - 2000;
    std::memcpy(bias.data() + 4 * c, &b, 4);
  }
  TensorId bi = add_const(g, "b", {s.oc}, DType::i32, bq, bias);
  // Output range: a product of two centred random codes has a spread of about 73 * 73, a sum
  // of IC of them sqrt(IC) times that; 256 steps cover about +-3 of those spreads.
  const float oscale = 0.05f * wq.scale_at(0) * 73.0f * 73.0f * std::sqrt(float(s.ic)) * 6.0f / 256.0f;
  auto y = g.add_op(OpKind::fully_connected, {xi, wi, bi}, {{"activation", std::string(s.activation)}}, "fc", s.dtype,
                    QuantParams{{oscale}, {u8 ? 120 : -8}});
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {*y};
  return g;
}

TEST(RknpuFullyConnected, OneRowRunsOnTheNpuLikeTheCpu) {
  const FcSpec specs[] = {{1, 1280, 1001, DType::u8, false, "none", 1},  // MobileNet classifier shape
                          {1, 64, 10, DType::i8, true, "none", 2},       // per-channel, linear (two passes)
                          {1, 100, 24, DType::i8, false, "relu", 3},
                          {1, 16, 1, DType::i8, true, "relu6", 4}};
  int64_t values = 0, exact = 0;
  for (const FcSpec& s : specs) {
    SCOPED_TRACE(std::to_string(s.ic) + "->" + std::to_string(s.oc) + " " + dtype_name(s.dtype));
    std::vector<uint8_t> input;
    Graph g = build_fc(s, input);
    Compare r = run_and_compare(g, input);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    EXPECT_LE(r.max_diff, 1);
    // The outputs spread over the quantized range (the comparison is not of saturated values).
    auto cpu = Session::create(g, SessionOptions{});
    ASSERT_TRUE(cpu.ok());
    ASSERT_TRUE((*cpu)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
    ASSERT_TRUE((*cpu)->run().ok());
    auto out = (*cpu)->output(0);
    ASSERT_TRUE(out.ok());
    std::set<uint8_t> distinct(out->begin(), out->end());
    EXPECT_GE(distinct.size(), std::min<size_t>(out->size() / 2, 20)) << "outputs mostly saturated";
    values += r.n;
    exact += r.exact;
  }
  std::printf("[rknpu fc] %lld values, %lld exact\n", static_cast<long long>(values), static_cast<long long>(exact));
  EXPECT_GE(exact * 1000, values * 999);
}

// Rows become the conv's width: a batch of rows runs as one line of pixels; more rows than
// the CNA's 2047-pixel width fall back with the reason.
TEST(RknpuFullyConnected, RowsAreTheWidthUpToTheCnaLimit) {
  std::vector<uint8_t> input;
  Graph g = build_fc({7, 48, 40, DType::u8, false, "relu6", 5}, input);
  Compare r = run_and_compare(g, input);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.all_on_npu) << r.fallback;
  EXPECT_LE(r.max_diff, 1);
  EXPECT_EQ(r.n, 7 * 40);
  Graph wide = build_fc({2048, 16, 8, DType::i8, false, "none", 6}, input);
  Compare w = run_and_compare(wide, input);
  ASSERT_TRUE(w.error.empty()) << w.error;
  EXPECT_FALSE(w.all_on_npu);
  EXPECT_NE(w.fallback.find("2047"), std::string::npos) << w.fallback;
  EXPECT_EQ(w.max_diff, 0);  // the cpu ran it
}

// An input of rank 3 (TFLite flattens it) is not rows [N, IC]: the cpu runs it, and says why.
TEST(RknpuFullyConnected, InputsThatAreNotRowsFallBackWithTheReason) {
  std::vector<uint8_t> input;
  Graph g = build_fc({6, 16, 8, DType::i8, false, "none", 7}, input);
  Tensor& x = g.tensor(g.inputs[0]);
  x.shape = {2, 3, 16};
  auto y = g.add_op(OpKind::fully_connected, {g.inputs[0], g.nodes()[0].inputs[1], g.nodes()[0].inputs[2]},
                    {{"activation", std::string("none")}}, "fc3", DType::i8, g.tensor(g.outputs[0]).quant);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(g.outputs[0]).role = Role::activation;
  g.nodes().erase(g.nodes().begin());
  g.outputs = {*y};
  g.tensor(*y).role = Role::output;
  Compare r = run_and_compare(g, input);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_FALSE(r.all_on_npu);
  EXPECT_NE(r.fallback.find("is not rows [N, 16]"), std::string::npos) << r.fallback;
  EXPECT_EQ(r.max_diff, 0);
}

TEST(RknpuFullyConnected, HelloWorldRunsEntirelyOnTheNpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/hello_world_int8.tflite");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  for (int code : {-128, -100, -60, -1, 40, 127}) {
    std::vector<uint8_t> input{static_cast<uint8_t>(static_cast<int8_t>(code))};
    Compare r = run_and_compare(*g, input);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    // Within one step of the cpu (= the interpreter): measured exact but for input code 40
    // (-91 where the interpreter gives -90, a near-tie of the last, linear layer).
    EXPECT_LE(r.max_diff, 1) << "input code " << code;
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
