// UNIDIRECTIONAL_SEQUENCE_LSTM on hand-built models (lstm_model.h): the lstm node it
// becomes (state tensors, attributes), the variants Tessera refuses with an error naming
// the operator and the tensor (wrong input rank, state of the wrong size, peephole,
// projection, layer norm, hybrid weights, a state that is not a variable tensor, a cell
// state scale that is not a power of two), and devices without an lstm kernel falling back
// to the cpu. The values are judged against the TFLite interpreter in
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
    ASSERT_EQ(n.inputs.size(), 15u);
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
    for (size_t k = 0; k < 15; ++k) EXPECT_NE(n.inputs[k], kNoTensor);
  }
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
    expect_refused(m, {k == 18 ? "(input 18 'hidden_state')" : "(input 19 'cell_state')", "must hold batch 1 x 3 cells"});
  }
}

TEST(TfliteLstm, PeepholeProjectionAndLayerNormAreRefusedNamingTheTensor) {
  struct Variant {
    int input;
    std::vector<int32_t> shape;
    const char* phrase;
  };
  const Variant variants[] = {{9, {5}, "peephole weights (input 9 'extra')"},
                              {11, {5}, "peephole weights (input 11 'extra')"},
                              {16, {5, 5}, "projection weights and bias (input 16 'extra')"},
                              {21, {5}, "layer-norm coefficients (input 21 'extra')"}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.phrase);
    SingleOpModel m = lstm_model(kFloat, kFloat.steps);
    size_t n = 1;
    for (int32_t d : v.shape) n *= static_cast<size_t>(d);
    m.tensors.push_back(testing::constant("extra", ::tflite::TensorType_FLOAT32, v.shape,
                                          testing::float_bytes(testing::random_floats(n, 3))));
    m.op_inputs[static_cast<size_t>(v.input)] = static_cast<int32_t>(m.tensors.size() - 1);
    expect_refused(m, {v.phrase, "not supported"});
  }
}

TEST(TfliteLstm, HybridWeightsAreRefused) {
  SingleOpModel m = lstm_model(kFloat, kFloat.steps);
  for (int k = 1; k <= 8; ++k) {
    testing::OpTensor& w = m.tensors[input_tensor(m, k)];
    w.type = ::tflite::TensorType_INT8;
    w.data.resize(w.data.size() / 4);
    w.scale = 0.01f;
  }
  expect_refused(m, {"hybrid LSTM", "'x'", "'w3'"});
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
  for (const Variant& v : {Variant{39, "auxiliary inputs and their weights (input 39 'extra')"},
                           Variant{27, "peephole weights (input 27 'extra')"},
                           Variant{33, "projection weights and bias (input 33 'extra')"}}) {
    SCOPED_TRACE(v.phrase);
    SingleOpModel m = testing::bilstm_model(c);
    m.tensors.push_back(testing::constant("extra", ::tflite::TensorType_FLOAT32, {5},
                                          testing::float_bytes(testing::random_floats(5, 3))));
    m.op_inputs[static_cast<size_t>(v.input)] = static_cast<int32_t>(m.tensors.size() - 1);
    expect_refused(m, {v.phrase, "not supported"});
  }
  SingleOpModel hybrid = testing::bilstm_model(c);
  testing::OpTensor& w = hybrid.tensors[input_tensor(hybrid, 21)];  // the backward output gate's weights
  w.type = ::tflite::TensorType_INT8;
  w.data.resize(w.data.size() / 4);
  w.scale = 0.01f;
  expect_refused(hybrid, {"hybrid LSTM", "'bw_w3'"});
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
  for (const LstmCase& c : {kFloat, kInt8}) {
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
