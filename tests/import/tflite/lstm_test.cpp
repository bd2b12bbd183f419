// UNIDIRECTIONAL_SEQUENCE_LSTM on hand-built models (lstm_model.h): the lstm node it
// becomes (state tensors, attributes), the variants Tessera refuses with an error naming
// the operator and the tensor (wrong input rank, state of the wrong size, malformed
// peephole weights, projection or layer-norm coefficients, hybrid weights, a state that is
// not a variable tensor, a cell state scale that is not a power of two), and devices
// without an lstm kernel falling back to the cpu. The values are judged against the TFLite interpreter in
// tests/oracle/lstm_oracle_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>

#include "import/tflite/lstm_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/backend/device.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

using testing::LstmCase;
using testing::lstm_model;
using testing::SingleOpModel;

const LstmCase kFloat{"f32", false, 2, 3, 4, 5, false, false, ::tflite::ActivationFunctionType_TANH, 10.0f};
const LstmCase kInt8{"i8", true, 1, 4, 6, 3, false, false, ::tflite::ActivationFunctionType_TANH, 10.0f, -128, 2, 2};

Result<Graph> load(const SingleOpModel& m) { return tflite::load_tflite_buffer(ConstData::from_vector(m.bytes())); }

// The index in m.tensors of the op's TFLite input k.
size_t input_tensor(const SingleOpModel& m, int k) { return static_cast<size_t>(m.op_inputs[static_cast<size_t>(k)]); }

// Expects the model to be refused (at import, or at Session::create for kernel checks) with
// an error that names the operator and contains every phrase.
void expect_refused(const SingleOpModel& m, const std::vector<std::string>& phrases) {
  std::string msg;
  auto g = load(m);
  if (g.ok()) {
    SessionOptions so;
    so.device = "cpu";
    auto s = Session::create(std::move(*g), so);
    ASSERT_FALSE(s.ok()) << "the model was accepted";
    msg = s.status().to_string();
  } else {
    msg = g.status().to_string();
  }
  EXPECT_TRUE(msg.find("lstm") != std::string::npos || msg.find("DIRECTIONAL_SEQUENCE_LSTM") != std::string::npos)
      << msg;
  for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  std::printf("[refused] %s\n", msg.c_str());
}

TEST(TfliteLstm, BecomesOneLstmNodeWhoseStateOutputsUpdateTheVariableTensors) {
  for (const LstmCase& c : {kFloat, kInt8}) {
    SCOPED_TRACE(c.name);
    auto g = load(lstm_model(c, c.steps));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_EQ(g->nodes().size(), 1u);
    const Node& n = g->nodes()[0];
    EXPECT_EQ(n.op, OpKind::lstm);
    ASSERT_EQ(n.inputs.size(), 24u);
    ASSERT_EQ(n.outputs.size(), 3u);
    EXPECT_EQ(g->tensor(n.inputs[10]).name, "hidden_state");
    EXPECT_EQ(g->tensor(n.inputs[10]).role, Role::state);
    EXPECT_EQ(g->tensor(n.inputs[11]).name, "cell_state");
    EXPECT_EQ(g->tensor(n.inputs[11]).role, Role::state);
    EXPECT_EQ(g->tensor(n.inputs[12]).name, "w0");  // the input gate's, last
    EXPECT_EQ(g->tensor(n.outputs[0]).shape, (Shape{c.batch, c.steps, c.cells}));
    EXPECT_EQ(g->inputs.size(), 1u);  // the variable tensors are not model inputs
    EXPECT_EQ(n.get(attr::activation), "tanh");
    EXPECT_DOUBLE_EQ(n.get(attr::cell_clip), 10.0);
    if (c.integer) {
      EXPECT_EQ(n.get(attr::hidden_zero_point), 2);
      EXPECT_FLOAT_EQ(static_cast<float>(*n.find(attr::hidden_scale)), testing::kHScale);
    }
    for (size_t k = 0; k < 24; ++k) EXPECT_EQ(n.inputs[k] != kNoTensor, k < 15) << k;
  }
  // Peephole weights (TFLite 9-11), projection (16-17) and layer norm (20-23) go to their
  // lstm inputs (ops.def); the integer form's gate scales come from intermediates 0-3.
  LstmCase full = kInt8;
  full.peephole = full.layer_norm = full.projection_bias = true;
  full.projection = 3;
  full.proj_clip = 1.5f;
  auto g = load(lstm_model(full, full.steps));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Node& n = g->nodes()[0];
  const char* names[9] = {"p0", "p1", "p2", "projection", "projection_bias", "ln0", "ln1", "ln2", "ln3"};
  for (size_t k = 15; k < 24; ++k) {
    ASSERT_NE(n.inputs[k], kNoTensor) << k;
    EXPECT_EQ(g->tensor(n.inputs[k]).name, names[k - 15]);
  }
  EXPECT_DOUBLE_EQ(n.get(attr::proj_clip), 1.5);
  const std::vector<double> scales = n.get(attr::gate_scales);
  ASSERT_EQ(scales.size(), 4u);
  for (size_t k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(static_cast<float>(scales[k]), testing::kGateAccScale[k]);
}

TEST(TfliteLstm, AnInputThatIsNotRank3IsRefusedNamingTheTensor) {
  SingleOpModel m = lstm_model(kFloat, kFloat.steps);
  m.tensors[input_tensor(m, 0)].shape = {kFloat.batch * kFloat.steps, kFloat.features};
  m.tensors[static_cast<size_t>(m.op_outputs[0])].shape = {kFloat.batch * kFloat.steps, kFloat.cells};
  expect_refused(m, {"input 0 'x' [6,4]", "rank 3"});
}

TEST(TfliteLstm, ARecurrentStateOfTheWrongSizeIsRefusedNamingTheTensor) {
  for (int k : {18, 19}) {
    SingleOpModel m = lstm_model(kInt8, kInt8.steps);
    m.tensors[input_tensor(m, k)].shape = {kInt8.batch, kInt8.cells + 1};
    expect_refused(m, {k == 18 ? "(input 18 'hidden_state')" : "(input 19 'cell_state')",
                       k == 18 ? "must hold batch 1 x 3 outputs" : "must hold batch 1 x 3 cells"});
  }
}

// Peephole weights, projection and layer norm run (tests/oracle/lstm_oracle_test.cpp);
// given partly or with the wrong shapes, they are refused naming the tensor.
TEST(TfliteLstm, MalformedPeepholeProjectionAndLayerNormAreRefusedNamingTheTensor) {
  struct Variant {
    std::vector<int> inputs;
    std::vector<int32_t> shape;
    std::vector<std::string> phrases;
  };
  const Variant variants[] = {
      {{11}, {5}, {"peephole weights (input 11 'extra') are given without the forget gate's (input 10)"}},
      {{10, 11}, {5}, {"the input gate's peephole weights (input 9) are missing"}},
      {{9, 10, 11}, {4}, {"'extra' f32[4] (input gate's peephole weights) must be f32[5]"}},
      {{17}, {5}, {"projection bias (input 17 'extra') is given without projection weights (input 16)"}},
      {{16}, {5, 4}, {"'extra' f32[5,4] (projection weights) must be f32[P, 5]"}},
      {{21}, {5}, {"the input gate's layer-norm coefficients (input 20) are missing"}},
      {{21, 20, 22}, {5}, {"the output gate's layer-norm coefficients (input 23) are missing"}},
      {{20}, {5}, {"layer-norm coefficients without the forget gate's (input 20 'extra') are not supported"}}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.phrases[0]);
    SingleOpModel m = lstm_model(kFloat, kFloat.steps);
    size_t n = 1;
    for (int32_t d : v.shape) n *= static_cast<size_t>(d);
    m.tensors.push_back(testing::constant("extra", ::tflite::TensorType_FLOAT32, v.shape,
                                          testing::float_bytes(testing::random_floats(n, 3))));
    for (int k : v.inputs) m.op_inputs[static_cast<size_t>(k)] = static_cast<int32_t>(m.tensors.size() - 1);
    expect_refused(m, v.phrases);
  }
  // The integer form: peephole weights must be int16; with a projection to fewer outputs
  // than cells the interpreter's peephole product is not an LSTM's, so it is refused.
  LstmCase c = kInt8;
  c.peephole = true;
  SingleOpModel f32_peephole = lstm_model(c, c.steps);
  testing::OpTensor& p = f32_peephole.tensors[input_tensor(f32_peephole, 10)];
  p.type = ::tflite::TensorType_INT8;
  p.data.resize(p.data.size() / 2);
  expect_refused(f32_peephole, {"'p1' i8[3] (forget gate's peephole weights) must be i16[3]"});
  c.projection = 2;
  expect_refused(lstm_model(c, c.steps), {"peephole weights with a projection to 2 outputs from 3 cells", "not supported"});
  LstmCase ln = kInt8;
  ln.layer_norm = true;
  SingleOpModel no_scale = lstm_model(ln, ln.steps);
  no_scale.tensors[static_cast<size_t>(no_scale.intermediates[2])].scale = 0.0f;
  expect_refused(no_scale, {"(the cell gate's, layer norm) needs one positive scale"});
}

// The hybrid form (f32 x with i8 weights) runs (tests/oracle/lstm_oracle_test.cpp); other
// weight types and weights without one scale and zero point 0 are refused.
TEST(TfliteLstm, HybridWeightsOtherThanPerTensorInt8AreRefused) {
  SingleOpModel m = lstm_model(kFloat, kFloat.steps);
  for (int k = 1; k <= 8; ++k) {
    testing::OpTensor& w = m.tensors[input_tensor(m, k)];
    w.type = ::tflite::TensorType_UINT8;
    w.data.resize(w.data.size() / 4);
    w.scale = 0.01f;
  }
  expect_refused(m, {"hybrid LSTM", "'x'", "'w3'", "int8 weights only"});
  LstmCase h = kFloat;
  h.hybrid = true;
  ASSERT_TRUE(load(lstm_model(h, h.steps)).ok());
  SingleOpModel zp = lstm_model(h, h.steps);
  zp.tensors[input_tensor(zp, 6)].zero_point = 3;
  expect_refused(zp, {"hybrid LSTM weights 'r1' need one quantization scale and zero point 0"});
  SingleOpModel per_channel = lstm_model(h, h.steps);
  per_channel.tensors[input_tensor(per_channel, 2)].scale = 0.0f;
  per_channel.tensors[input_tensor(per_channel, 2)].scales = {0.01f, 0.02f, 0.01f, 0.02f, 0.01f};
  expect_refused(per_channel, {"hybrid LSTM weights 'w1' need one quantization scale"});
}

// BIDIRECTIONAL_SEQUENCE_LSTM: two lstm nodes (the second reverse = 1) and a concat when
// the outputs merge; what it cannot run is refused by name.
TEST(TfliteLstm, BidirectionalBecomesTwoLstmNodesAndItsRefusalsNameTheInput) {
  testing::BiLstmCase c{"bi", 2, 4, 3, 5, 5, true, true, false, ::tflite::ActivationFunctionType_TANH, 0.0f, 7};
  {
    const std::vector<uint8_t> bytes = testing::bilstm_model(c).bytes();
    auto owner = std::make_shared<std::vector<uint8_t>>(bytes);
    auto g = tflite::load_tflite_buffer(ConstData{owner->data(), static_cast<int64_t>(owner->size()), owner});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    std::vector<int64_t> reverse;
    int concats = 0;
    for (const Node& n : g->nodes()) {
      if (n.op == OpKind::lstm) reverse.push_back(n.get(attr::reverse));
      if (n.op == OpKind::concat) ++concats;
    }
    EXPECT_EQ(reverse, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(concats, 1);
    EXPECT_EQ(g->tensor(g->outputs[0]).shape, (Shape{4, 2, 10}));
  }
  struct Variant {
    int input;
    const char* phrase;
  };
  for (const Variant& v : {Variant{39, "auxiliary inputs and their weights (input 39 'extra')"}}) {
    SCOPED_TRACE(v.phrase);
    SingleOpModel m = testing::bilstm_model(c);
    m.tensors.push_back(testing::constant("extra", ::tflite::TensorType_FLOAT32, {5},
                                          testing::float_bytes(testing::random_floats(5, 3))));
    m.op_inputs[static_cast<size_t>(v.input)] = static_cast<int32_t>(m.tensors.size() - 1);
    expect_refused(m, {v.phrase, "not supported"});
  }
  // Hybrid (int8 weights) runs; other weight types, and a direction mixing f32 and int8
  // weights, are refused naming the tensor.
  SingleOpModel hybrid = testing::bilstm_model(c);
  testing::OpTensor& w = hybrid.tensors[input_tensor(hybrid, 21)];  // the backward output gate's weights
  w.type = ::tflite::TensorType_UINT8;
  w.data.resize(w.data.size() / 4);
  w.scale = 0.01f;
  expect_refused(hybrid, {"hybrid LSTM", "'bw_w3'", "int8 weights only"});
  w.type = ::tflite::TensorType_INT8;
  expect_refused(hybrid, {"'bw_w0' f32[5,3] (input gate) must be i8[5,3]"});
  testing::BiLstmCase batch_major = c;
  batch_major.time_major = false;
  expect_refused(testing::bilstm_model(batch_major), {"merge_outputs with a batch-major"});
  testing::BiLstmCase uneven = c;
  uneven.cells_bw = 6;
  expect_refused(testing::bilstm_model(uneven), {"forward and backward LSTMs have 5 and 6 cells"});
  SingleOpModel stateless = testing::bilstm_model(c);
  stateless.tensors[input_tensor(stateless, 38)].variable = false;
  expect_refused(stateless, {"cell state (input 38 'bw_cell_state') must be a variable tensor"});
}

TEST(TfliteLstm, AStateThatIsNotAVariableTensorIsRefused) {
  SingleOpModel m = lstm_model(kFloat, kFloat.steps);
  m.tensors[input_tensor(m, 19)].variable = false;
  expect_refused(m, {"cell state (input 19 'cell_state') must be a variable tensor"});
}

TEST(TfliteLstm, TheIntegerFormNeedsItsIntermediatesAndAPowerOfTwoCellScale) {
  SingleOpModel m = lstm_model(kInt8, kInt8.steps);
  m.intermediates.clear();
  expect_refused(m, {"5 intermediate tensors"});
  SingleOpModel m2 = lstm_model(kInt8, kInt8.steps);
  m2.tensors[input_tensor(m2, 19)].scale = 0.0003f;
  expect_refused(m2, {"cell state (input 19 'cell_state') has scale 0.000300", "power of two"});
}

// Devices without an lstm kernel (tile, rknpu) run it on the cpu: the same bytes. So does
// the cpu's reference mode, where the integer parameters are not prepared but made per run.
TEST(TfliteLstm, DevicesWithoutAnLstmKernelFallBackToTheCpu) {
  LstmCase full = kInt8;  // every optional part of the integer form
  full.name = "i8 peephole layer norm projection";
  full.peephole = full.layer_norm = full.projection_bias = true;
  full.projection = 3;
  full.proj_clip = 2.0f;
  LstmCase hybrid = kFloat;
  hybrid.name = "hybrid asymmetric peephole projection";
  hybrid.hybrid = hybrid.asymmetric = hybrid.peephole = true;
  hybrid.projection = 4;
  for (const LstmCase& c : {kFloat, kInt8, full, hybrid}) {
    const SingleOpModel m = lstm_model(c, c.steps);
    const size_t n = static_cast<size_t>(c.batch * c.steps * c.features) * (c.integer ? 1 : 4);
    const std::vector<uint8_t> x = testing::seeded_bytes(n, 11);
    std::vector<uint8_t> want;
    for (const char* device : {"cpu", "tile", "rknpu", "cpu reference"}) {
      SCOPED_TRACE(std::string(c.name) + " on " + device);
      auto g = load(m);
      ASSERT_TRUE(g.ok()) << g.status().to_string();
      SessionOptions so;
      so.device = std::string(device).substr(0, std::string(device).find(' '));
      if (std::string(device) == "cpu reference") so.device_options["kernels"] = "reference";
      auto s = Session::create(std::move(*g), so);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      const Plan& plan = (*s)->plan();
      for (size_t i = 0; i < plan.graph.nodes().size(); ++i)
        if (plan.graph.nodes()[i].op == OpKind::lstm)
          EXPECT_EQ(plan.devices[static_cast<size_t>(plan.nodes[i].device)]->name(), "cpu");
      EXPECT_EQ(plan.devices[0]->name().rfind(so.device, 0), 0u);  // the preferred device is the one asked for
      std::vector<uint8_t> in = x;
      if (!c.integer)  // finite floats in [-1, 1)
        in = testing::float_bytes(testing::random_floats(n / 4, 11));
      ASSERT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
      ASSERT_TRUE((*s)->run().ok());
      auto out = (*s)->output(0);
      ASSERT_TRUE(out.ok());
      if (want.empty()) want = *out;
      EXPECT_EQ(*out, want);
    }
  }
}

}  // namespace
}  // namespace tessera
