// Float CONV_2D bit for bit against the TFLite interpreter: the cpu's conv2d adds the
// products in the order of the interpreter's float GEMM (src/backend/cpu/kernels/gemm_sum.h:
// even/odd partial sums over each block's first multiple of 8 terms, then the rest, blocks
// of at most 816 terms, then the bias). Single-operator models over depths one block and
// several blocks deep, SAME padding (zero taps), strides, dilation, pixel counts that are
// not multiples of 4, with a bias (the interpreter requires one). A textbook sequential sum misses most outputs,
// which the test also checks, so it can tell the orders apart.
#include <gtest/gtest.h>

#include <cmath>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;

struct ConvCase {
  int32_t h, w, ic, oc, k, stride, dilation;
  T::Padding padding;
  bool bias;
};

std::vector<uint8_t> floats(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(TfliteOracle, FloatConvIsTheInterpretersBitForBit) {
  TESSERA_REQUIRE_ORACLE(script);
  const auto same = T::Padding_SAME, valid = T::Padding_VALID;
  const std::vector<ConvCase> cases = {
      {9, 9, 3, 16, 3, 2, 1, valid, true},     // depth 27 (YOLOv8n's first convolution)
      {7, 6, 3, 16, 3, 1, 1, same, true},      // padding taps
      {6, 5, 5, 20, 3, 1, 1, valid, true},     // depth 45, 12 pixels
      {5, 5, 16, 7, 3, 1, 2, same, true},      // dilation, depth 144
      {5, 7, 64, 12, 3, 2, 1, same, true},     // depth 576
      {3, 5, 816, 9, 1, 1, 1, valid, true},    // depth 816: one block
      {3, 3, 820, 9, 1, 1, 1, valid, true},    // depth 820: two blocks
      {4, 4, 100, 6, 3, 1, 1, same, true},     // depth 900
      {4, 5, 150, 5, 3, 1, 1, valid, true},    // depth 1350
      {3, 4, 200, 4, 3, 1, 1, same, true},     // depth 1800: three blocks
  };
  TempDir dir("float_conv");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  uint32_t seed = 4400;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    const int32_t eff = (c.k - 1) * c.dilation + 1;
    const int32_t oh = c.padding == same ? (c.h + c.stride - 1) / c.stride : (c.h - eff + c.stride) / c.stride;
    const int32_t ow = c.padding == same ? (c.w + c.stride - 1) / c.stride : (c.w - eff + c.stride) / c.stride;
    testing::SingleOpModel m;
    m.tensors = {testing::activation("x", T::TensorType_FLOAT32, {1, c.h, c.w, c.ic}),
                 testing::constant("w", T::TensorType_FLOAT32, {c.oc, c.k, c.k, c.ic},
                                   floats(testing::random_floats(static_cast<size_t>(c.oc * c.k * c.k * c.ic), seed += 3, -1, 1))),
                 testing::constant("b", T::TensorType_FLOAT32, {c.oc}, floats(testing::random_floats(static_cast<size_t>(c.oc), seed += 3, -1, 1))),
                 testing::activation("y", T::TensorType_FLOAT32, {1, oh, ow, c.oc})};
    m.op_inputs = {0, 1, c.bias ? 2 : -1};
    m.op_outputs = {3};
    m.code = T::BuiltinOperator_CONV_2D;
    const ConvCase cc = c;
    m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_Conv2DOptions,
                            T::CreateConv2DOptions(fb, cc.padding, cc.stride, cc.stride, T::ActivationFunctionType_NONE, cc.dilation, cc.dilation).Union());
    };
    models.push_back(m.bytes());
    const std::string name = "conv" + std::to_string(i);
    write_bytes(dir.path / (name + ".tflite"), models.back());
    jobs.push_back(Job{name, (dir.path / (name + ".tflite")).string(),
                       {floats(testing::random_floats(static_cast<size_t>(c.h * c.w * c.ic), seed += 3, -2, 2))}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i) + ": depth " + std::to_string(c.k * c.k * c.ic));
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    const std::vector<uint8_t>& got = (*outs)[0];
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    ASSERT_EQ(got.size(), want.size());
    const size_t n = got.size() / 4;
    size_t differ = 0;
    for (size_t k = 0; k < n; ++k) differ += std::memcmp(&got[4 * k], &want[4 * k], 4) != 0;
    EXPECT_EQ(differ, 0u) << differ << " of " << n << " outputs differ from the interpreter's";
    std::printf("[oracle] float CONV_2D depth %4d: %zu outputs bit-identical\n", c.k * c.k * c.ic, n - differ);
  }
  // The textbook order (bias, then every product in turn) on the deepest single-block case.
  {
    const ConvCase& c = cases[4];
    std::vector<float> x(static_cast<size_t>(c.h * c.w * c.ic)), want(jobs[4].outputs[0].size() / 4);
    std::memcpy(x.data(), jobs[4].inputs[0].data(), x.size() * 4);
    std::memcpy(want.data(), jobs[4].outputs[0].data(), want.size() * 4);
    const ::tflite::Model* model = ::tflite::GetModel(models[4].data());
    const auto* wbuf = model->buffers()->Get(model->subgraphs()->Get(0)->tensors()->Get(1)->buffer())->data();
    const auto* bbuf = model->buffers()->Get(model->subgraphs()->Get(0)->tensors()->Get(2)->buffer())->data();
    std::vector<float> w(wbuf->size() / 4), b(bbuf->size() / 4);
    std::memcpy(w.data(), wbuf->data(), wbuf->size());
    std::memcpy(b.data(), bbuf->data(), bbuf->size());
    const int32_t oh = (c.h + 1) / 2, ow = (c.w + 1) / 2, pad = 1;  // SAME, stride 2, 3x3: total padding 2, 1 before
    int textbook_differ = 0;
    for (int32_t oy = 0; oy < oh; ++oy)
      for (int32_t ox = 0; ox < ow; ++ox)
        for (int32_t o = 0; o < c.oc; ++o) {
          float acc = b[o];
          for (int32_t ky = 0; ky < 3; ++ky)
            for (int32_t kx = 0; kx < 3; ++kx) {
              const int32_t iy = oy * 2 - pad + ky, ix = ox * 2 - pad + kx;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int32_t ci = 0; ci < c.ic; ++ci)
                acc += x[(iy * c.w + ix) * c.ic + ci] * w[((o * 3 + ky) * 3 + kx) * c.ic + ci];
            }
          textbook_differ += acc != want[(oy * ow + ox) * c.oc + o];
        }
    EXPECT_GT(textbook_differ, static_cast<int>(want.size()) / 4) << "the textbook order should miss many outputs";
  }
}

}  // namespace
}  // namespace tessera::oracle
