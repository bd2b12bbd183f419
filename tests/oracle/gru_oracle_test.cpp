// GRU cells as TFLite's converter lowers a Keras GRU (reset_after, the TF2 default) when the
// loop is unrolled: there is no GRU builtin; each time step is FULLY_CONNECTED (input and
// recurrent kernels), SPLIT into the z / r / candidate thirds, ADD, LOGISTIC, MUL, TANH,
// SUB (1 - z) and the final blend, the steps fed by UNPACK and gathered by PACK:
//   z = sigmoid(x Wz + bz + h Rz + cz), r = sigmoid(x Wr + br + h Rr + cr),
//   n = tanh(x Wn + bn + r * (h Rn + cn)), h' = z * h + (1 - z) * n.
// Multi-operator models written with the flatbuffers library (graph_model.h), seeded
// weights and inputs (sequence and initial state), judged by the TFLite interpreter bit for
// bit: f32 (the float TANH is the interpreter's, float_tanh_oracle_test.cpp), int8 and hybrid
// (f32 activations, int8 kernels; with and without asymmetric_quantize_inputs), where a state
// one ulp off could move an int8 code at the next step. Also: a WHILE loop (the converter's form
// without unrolling) is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "import/tflite/graph_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::GraphModel;
using testing::GraphSubgraph;
using testing::OpTensor;

enum class Form { f32, i8, hybrid, hybrid_asym };

struct GruCase {
  std::string name;
  Form form;
  int batch, steps, input, units;
};

template <typename V>
std::vector<uint8_t> raw(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct Built {
  std::vector<uint8_t> model;
  std::vector<std::vector<uint8_t>> inputs;  // x [B, T, I], h0 [B, U]
};

// Quantization of an int8 activation (zero point 0 unless given).
OpTensor act(const std::string& name, std::vector<int32_t> shape, Form form, float scale, int64_t zp = 0) {
  OpTensor t = testing::activation(name, form == Form::i8 ? T::TensorType_INT8 : T::TensorType_FLOAT32, std::move(shape));
  if (form == Form::i8) {
    t.scale = scale;
    t.zero_point = zp;
  }
  return t;
}

Built gru_model(const GruCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const int B = c.batch, S = c.steps, I = c.input, U = c.units;
  const bool quant_weights = c.form != Form::f32;
  const bool i8 = c.form == Form::i8;
  GraphSubgraph g;
  g.name = "main";
  // Scales (int8): x in [-2, 2), h in [-1, 1), the FC outputs in [-4, 4), the gate sums in
  // [-8, 8), the sigmoid / tanh outputs at TFLite's fixed int8 scales.
  const float sx = 1.0f / 64, sh = 1.0f / 128, sg = 1.0f / 32, ssum = 1.0f / 16;
  const int32_t x = g.add(act("x", {B, S, I}, c.form, sx));
  const int32_t h0 = g.add(act("h0", {B, U}, c.form, sh));
  g.inputs = {x, h0};
  // Kernels [3U, in] (FULLY_CONNECTED's [out, in]) and biases [3U], as the converter folds
  // Keras' kernel [in, 3U] (transposed) and bias.
  // Per-tensor kernel scales: the oracle's interpreter predates per-channel hybrid
  // FULLY_CONNECTED.
  auto kernel = [&](const std::string& name, int in, float range) {
    if (!quant_weights) {
      std::vector<float> w(static_cast<size_t>(3 * U * in));
      for (float& v : w) v = uni(rng) * range;
      return testing::constant(name, T::TensorType_FLOAT32, {3 * U, in}, raw(w));
    }
    std::vector<int8_t> w(static_cast<size_t>(3 * U * in));
    for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    OpTensor t = testing::constant(name, T::TensorType_INT8, {3 * U, in}, raw(w));
    t.scale = range / 127;
    return t;
  };
  const float wrange = 1.5f / std::sqrt(static_cast<float>(I)), rrange = 1.5f / std::sqrt(static_cast<float>(U));
  const int32_t W = g.add(kernel("kernel", I, wrange));
  const int32_t R = g.add(kernel("recurrent_kernel", U, rrange));
  auto bias = [&](const std::string& name, float in_scale, float w_scale) {
    std::vector<float> b(static_cast<size_t>(3 * U));
    for (float& v : b) v = 0.3f * uni(rng);
    if (!i8) return testing::constant(name, T::TensorType_FLOAT32, {3 * U}, raw(b));
    std::vector<int32_t> q(b.size());
    for (size_t k = 0; k < b.size(); ++k) q[k] = static_cast<int32_t>(std::lround(b[k] / (in_scale * w_scale)));
    OpTensor t = testing::constant(name, T::TensorType_INT32, {3 * U}, raw(q));
    t.scale = in_scale * w_scale;
    return t;
  };
  const int32_t Wb = g.add(bias("bias", sx, g.tensors[static_cast<size_t>(W)].scale));
  const int32_t Rb = g.add(bias("recurrent_bias", sh, g.tensors[static_cast<size_t>(R)].scale));
  const int32_t axis = g.add(testing::constant("split_axis", T::TensorType_INT32, {}, testing::int32_bytes({1})));
  OpTensor one_t = i8 ? testing::constant("one", T::TensorType_INT8, {1}, {127}) : testing::constant("one", T::TensorType_FLOAT32, {1}, raw(std::vector<float>{1.0f}));
  if (i8) one_t.scale = 1.0f / 127;
  const int32_t one = g.add(one_t);

  const bool asym = c.form == Form::hybrid_asym;
  const int fc_version = i8 ? 4 : asym ? 9 : quant_weights ? 3 : 1;
  auto fc_options = [asym](flatbuffers::FlatBufferBuilder& fb) {
    T::FullyConnectedOptionsBuilder b(fb);
    if (asym) b.fbb_.AddElement<uint8_t>(10, 1, 0);  // asymmetric_quantize_inputs (newer than the compiled schema)
    return std::make_pair(T::BuiltinOptions_FullyConnectedOptions, b.Finish().Union());
  };
  auto split3 = [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_SplitOptions, T::CreateSplitOptions(fb, 3).Union());
  };
  const T::BuiltinOperator kAdd = T::BuiltinOperator_ADD, kMul = T::BuiltinOperator_MUL;
  const int ev = i8 ? 2 : 1;  // elementwise versions: v2 adds int8

  std::vector<int32_t> xs;
  for (int t = 0; t < S; ++t) xs.push_back(g.add(act("x_" + std::to_string(t), {B, I}, c.form, sx)));
  g.op(T::BuiltinOperator_UNPACK, {x}, xs,
       [S](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_UnpackOptions, T::CreateUnpackOptions(fb, S, 1).Union());
       },
       ev);
  int32_t h = h0;
  std::vector<int32_t> hs;
  for (int t = 0; t < S; ++t) {
    const std::string p = "step" + std::to_string(t) + "/";
    auto T3 = [&](const std::string& n, float scale, int64_t zp = 0) { return g.add(act(p + n, {B, U}, c.form, scale, zp)); };
    const int32_t gx = g.add(act(p + "gx", {B, 3 * U}, c.form, sg));
    const int32_t gh = g.add(act(p + "gh", {B, 3 * U}, c.form, sg));
    g.op(T::BuiltinOperator_FULLY_CONNECTED, {xs[static_cast<size_t>(t)], W, Wb}, {gx}, fc_options, fc_version);
    g.op(T::BuiltinOperator_FULLY_CONNECTED, {h, R, Rb}, {gh}, fc_options, fc_version);
    const int32_t xz = T3("xz", sg), xr = T3("xr", sg), xn = T3("xn", sg);
    const int32_t hz = T3("hz", sg), hr = T3("hr", sg), hn = T3("hn", sg);
    g.op(T::BuiltinOperator_SPLIT, {axis, gx}, {xz, xr, xn}, split3, ev);
    g.op(T::BuiltinOperator_SPLIT, {axis, gh}, {hz, hr, hn}, split3, ev);
    const int32_t zs = T3("z_sum", ssum), rs = T3("r_sum", ssum);
    g.op(kAdd, {xz, hz}, {zs}, {}, ev);
    g.op(kAdd, {xr, hr}, {rs}, {}, ev);
    const int32_t z = T3("z", 1.0f / 256, -128), r = T3("r", 1.0f / 256, -128);
    g.op(T::BuiltinOperator_LOGISTIC, {zs}, {z}, {}, ev);
    g.op(T::BuiltinOperator_LOGISTIC, {rs}, {r}, {}, ev);
    const int32_t rh = T3("r_hn", sg);
    g.op(kMul, {r, hn}, {rh}, {}, ev);
    const int32_t ns = T3("n_sum", ssum);
    g.op(kAdd, {xn, rh}, {ns}, {}, ev);
    const int32_t n = T3("n", 1.0f / 128);
    g.op(T::BuiltinOperator_TANH, {ns}, {n}, {}, ev);
    const int32_t zh = T3("z_h", sh);
    g.op(kMul, {z, h}, {zh}, {}, ev);
    const int32_t omz = T3("one_minus_z", 1.0f / 256, -128);
    g.op(T::BuiltinOperator_SUB, {one, z}, {omz}, {}, ev);
    const int32_t omzn = T3("one_minus_z_n", sh);
    g.op(kMul, {omz, n}, {omzn}, {}, ev);
    const int32_t hn2 = T3("h", sh);
    g.op(kAdd, {zh, omzn}, {hn2}, {}, ev);
    h = hn2;
    hs.push_back(h);
  }
  const int32_t seq = g.add(act("sequence", {B, S, U}, c.form, sh));
  g.op(T::BuiltinOperator_PACK, hs, {seq},
       [S](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_PackOptions, T::CreatePackOptions(fb, S, 1).Union());
       },
       ev);
  g.outputs = {seq, h};
  GraphModel m;
  m.subgraphs.push_back(std::move(g));
  Built b;
  b.model = m.bytes();
  // Inputs: the sequence (rows of mixed signs and all-positive rows) and the initial state.
  if (i8) {
    std::vector<int8_t> xv(static_cast<size_t>(B * S * I)), hv(static_cast<size_t>(B * U));
    for (int8_t& v : xv) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    for (int8_t& v : hv) v = static_cast<int8_t>(static_cast<int>(rng() % 200) - 100);
    b.inputs = {raw(xv), raw(hv)};
  } else {
    std::vector<float> xv(static_cast<size_t>(B * S * I)), hv(static_cast<size_t>(B * U));
    for (size_t k = 0; k < xv.size(); ++k) {
      const float v = 2.0f * uni(rng);
      xv[k] = (k / static_cast<size_t>(I)) % 3 == 1 ? std::fabs(v) + 0.05f : v;  // every third row all positive
    }
    for (float& v : hv) v = 0.8f * uni(rng);
    b.inputs = {raw(xv), raw(hv)};
  }
  return b;
}

TEST(TfliteOracle, UnrolledGruMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<GruCase> cases = {
      {"gru_f32_b1_t3_i4_u3", Form::f32, 1, 3, 4, 3},
      {"gru_f32_b2_t5_i8_u6", Form::f32, 2, 5, 8, 6},
      {"gru_f32_b3_t4_i16_u16", Form::f32, 3, 4, 16, 16},
      {"gru_i8_b1_t3_i4_u3", Form::i8, 1, 3, 4, 3},
      {"gru_i8_b2_t5_i8_u6", Form::i8, 2, 5, 8, 6},
      {"gru_i8_b3_t4_i16_u16", Form::i8, 3, 4, 16, 16},
      {"gru_hybrid_b2_t4_i8_u6", Form::hybrid, 2, 4, 8, 6},
      {"gru_hybrid_asym_b2_t4_i8_u6", Form::hybrid_asym, 2, 4, 8, 6},
      {"gru_hybrid_asym_b3_t6_i20_u12", Form::hybrid_asym, 3, 6, 20, 12},
  };
  TempDir dir("gru");
  std::vector<Job> jobs;
  std::vector<Built> built;
  for (size_t i = 0; i < cases.size(); ++i) {
    built.push_back(gru_model(cases[i], 5100 + 7 * static_cast<uint32_t>(i)));
    const fs::path file = dir.path / (cases[i].name + ".tflite");
    write_bytes(file, built.back().model);
    jobs.push_back(Job{cases[i].name, file.string(), built.back().inputs, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(built[i].model, jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 2u);
    ASSERT_EQ(jobs[i].outputs.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const std::vector<uint8_t>& got = (*outs)[k];
      const std::vector<uint8_t>& want = jobs[i].outputs[k];
      ASSERT_EQ(got.size(), want.size());
      int64_t differ = 0;
      const size_t w = cases[i].form == Form::i8 ? 1 : 4;
      for (size_t j = 0; j < got.size(); j += w) differ += std::memcmp(&got[j], &want[j], w) != 0;
      EXPECT_EQ(differ, 0) << "output " << k << ": " << differ << " of " << got.size() / w << " values differ";
      // Not degenerate: the interpreter's output bytes take more than one value.
      EXPECT_NE(std::count(want.begin(), want.end(), want[0]), static_cast<std::ptrdiff_t>(want.size()));
    }
    std::printf("[oracle] %-32s sequence and final state bit-identical (%zu bytes)\n", cases[i].name.c_str(), (*outs)[0].size());
  }
}

// The converter's loop form: WHILE with cond and body subgraphs (here the counter i < 3 and
// a body that doubles the state). The interpreter runs it (8 x); Tessera refuses it by
// operator and subgraph names.
TEST(TfliteOracle, WhileLoopIsRefusedByName) {
  const std::vector<uint8_t> model = testing::while_model().bytes();
  const std::vector<float> xv = {0.5f, -1.25f, 2.0f, 0.125f};
  if (const std::string script = oracle_script(); !script.empty()) {
    TempDir dir("while");
    write_bytes(dir.path / "while.tflite", model);
    std::vector<Job> jobs = {Job{"while", (dir.path / "while.tflite").string(), {raw(xv)}, {}}};
    ASSERT_EQ(run_batch(script, dir.path, jobs), "");
    ASSERT_EQ(jobs[0].outputs.size(), 1u);
    std::vector<float> got(4);
    ASSERT_EQ(jobs[0].outputs[0].size(), 16u);
    std::memcpy(got.data(), jobs[0].outputs[0].data(), 16);
    for (size_t k = 0; k < 4; ++k) EXPECT_EQ(got[k], 8 * xv[k]);  // the interpreter ran three iterations
  }
  auto r = run_tessera(model, {raw(xv)}, "cpu");
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().to_string();
  for (const char* p : {"operator WHILE", "cond subgraph 1 'cond'", "body subgraph 2 'body'", "control flow"})
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace
}  // namespace tessera::oracle
