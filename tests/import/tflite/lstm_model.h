// Test helper: a one-operator UNIDIRECTIONAL_SEQUENCE_LSTM model (single_op_model.h) with
// seeded weights and biases: f32, or the integer 8x8_16 form (i8 input, weights and hidden
// state, i32 biases, i16 cell state with a power-of-two scale, and the five intermediate
// tensors the converter writes). Inputs 9-11, 16-17 and 20-23 are absent. Used by the
// oracle test (values) and the importer test (refusals, after editing the model). Also a
// one-operator BIDIRECTIONAL_SEQUENCE_LSTM model (f32), bilstm_model.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "import/tflite/single_op_model.h"

namespace tessera::testing {

namespace T = ::tflite;

inline std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Seeded random bytes, never all zero.
inline std::vector<uint8_t> seeded_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 24);
  if (!v.empty()) v[0] |= 1;
  return v;
}

struct LstmCase {
  std::string name;
  bool integer = false;
  int32_t batch = 1, steps = 1, features = 1, cells = 1;
  bool time_major = false;
  bool cifg = false;  // no input gate
  T::ActivationFunctionType activation = T::ActivationFunctionType_TANH;
  float cell_clip = 0.0f;
  // Integer form only.
  int64_t x_zero_point = 0, h_zero_point = 0, hidden_zero_point = 0;
  int cell_shift = -11;  // cell state scale 2^cell_shift
  uint32_t seed = 1;
};

inline constexpr float kXScale = 0.05f, kWeightScale = 0.006f, kHScale = 1.0f / 128.0f;

inline std::vector<int32_t> x_shape(const LstmCase& c, int32_t steps) {
  return c.time_major ? std::vector<int32_t>{steps, c.batch, c.features} : std::vector<int32_t>{c.batch, steps, c.features};
}

// The model of case `c` over `steps` steps.
inline SingleOpModel lstm_model(const LstmCase& c, int32_t steps) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM;
  const auto ft = T::TensorType_FLOAT32;
  const auto wt = c.integer ? T::TensorType_INT8 : ft;
  uint32_t seed = c.seed * 100;
  auto weights = [&](const std::string& name, int32_t cols) {
    const size_t n = static_cast<size_t>(c.cells) * static_cast<size_t>(cols);
    OpTensor t;
    if (c.integer) {
      t = constant(name, wt, {c.cells, cols}, seeded_bytes(n, seed++));
      t.scale = kWeightScale * (1.0f + 0.1f * static_cast<float>(seed % 7));
    } else {
      t = constant(name, wt, {c.cells, cols}, float_bytes(random_floats(n, seed++, -0.6f, 0.6f)));
    }
    return t;
  };
  auto bias = [&](const std::string& name) {
    const size_t n = static_cast<size_t>(c.cells);
    if (!c.integer) return constant(name, ft, {c.cells}, float_bytes(random_floats(n, seed++, -0.5f, 0.5f)));
    std::vector<int32_t> v(n);
    std::mt19937 rng(seed++);
    for (auto& b : v) b = static_cast<int32_t>(rng() % 4001) - 2000;
    OpTensor t = constant(name, T::TensorType_INT32, {c.cells}, int32_bytes(v));
    t.scale = kXScale * kWeightScale;
    return t;
  };
  OpTensor x = activation("x", c.integer ? T::TensorType_INT8 : ft, x_shape(c, steps));
  OpTensor h = activation("hidden_state", c.integer ? T::TensorType_INT8 : ft, {c.batch, c.cells});
  OpTensor cs = activation("cell_state", c.integer ? T::TensorType_INT16 : ft, {c.batch, c.cells});
  h.variable = cs.variable = true;
  OpTensor y = activation("y", x.type, c.time_major ? std::vector<int32_t>{steps, c.batch, c.cells}
                                                              : std::vector<int32_t>{c.batch, steps, c.cells});
  if (c.integer) {
    x.scale = kXScale;
    x.zero_point = c.x_zero_point;
    h.scale = y.scale = kHScale;
    h.zero_point = y.zero_point = c.h_zero_point;
    cs.scale = std::ldexp(1.0f, c.cell_shift);
  }
  std::vector<int32_t> in(24, -1);
  auto push = [&](OpTensor t) {
    m.tensors.push_back(std::move(t));
    return static_cast<int32_t>(m.tensors.size() - 1);
  };
  in[0] = push(x);
  for (int k = c.cifg ? 1 : 0; k < 4; ++k) {
    in[1 + k] = push(weights("w" + std::to_string(k), c.features));
    in[5 + k] = push(weights("r" + std::to_string(k), c.cells));
    in[12 + k] = push(bias("b" + std::to_string(k)));
  }
  in[18] = push(h);
  in[19] = push(cs);
  m.op_inputs = in;
  m.op_outputs = {push(y)};
  if (c.integer) {
    // The converter's five intermediates: four unquantized (layer norm only), then the
    // hidden value's scale and zero point.
    for (int k = 0; k < 4; ++k) m.intermediates.push_back(push(activation("intermediate" + std::to_string(k), ft, {0})));
    OpTensor hidden = activation("hidden_intermediate", T::TensorType_INT8, {0});
    hidden.scale = kHScale;
    hidden.zero_point = c.hidden_zero_point;
    m.intermediates.push_back(push(hidden));
  }
  const LstmCase cc = c;
  m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_UnidirectionalSequenceLSTMOptions,
                          T::CreateUnidirectionalSequenceLSTMOptions(fb, cc.activation, cc.cell_clip, 0.0f, cc.time_major)
                              .Union());
  };
  return m;
}

// A one-operator BIDIRECTIONAL_SEQUENCE_LSTM model (f32): forward and backward weights and
// biases seeded, four variable state tensors, no auxiliary input, peephole or projection.
struct BiLstmCase {
  std::string name;
  int32_t batch = 1, steps = 1, features = 1, cells_fw = 1, cells_bw = 1;
  bool time_major = true;  // the operator's default
  bool merge = false;      // merge_outputs: one output [.., cells_fw + cells_bw]
  bool cifg = false;
  T::ActivationFunctionType activation = T::ActivationFunctionType_TANH;
  float cell_clip = 0.0f;
  uint32_t seed = 1;
};

inline SingleOpModel bilstm_model(const BiLstmCase& c) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM;
  const auto ft = T::TensorType_FLOAT32;
  uint32_t seed = c.seed * 100;
  auto push = [&](OpTensor t) {
    m.tensors.push_back(std::move(t));
    return static_cast<int32_t>(m.tensors.size() - 1);
  };
  auto matrix = [&](const std::string& name, int32_t rows, int32_t cols) {
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    return constant(name, ft, {rows, cols}, float_bytes(random_floats(n, seed++, -0.6f, 0.6f)));
  };
  auto seq = [&](int32_t width) {
    return c.time_major ? std::vector<int32_t>{c.steps, c.batch, width} : std::vector<int32_t>{c.batch, c.steps, width};
  };
  std::vector<int32_t> in(48, -1);
  in[0] = push(activation("x", ft, seq(c.features)));
  for (int dir = 0; dir < 2; ++dir) {
    const int32_t cells = dir == 0 ? c.cells_fw : c.cells_bw;
    const int w0 = dir == 0 ? 1 : 18, r0 = dir == 0 ? 5 : 22, b0 = dir == 0 ? 12 : 29;
    const std::string p = dir == 0 ? "fw_" : "bw_";
    for (int k = c.cifg ? 1 : 0; k < 4; ++k) {
      in[w0 + k] = push(matrix(p + "w" + std::to_string(k), cells, c.features));
      in[r0 + k] = push(matrix(p + "r" + std::to_string(k), cells, cells));
      in[b0 + k] = push(constant(p + "b" + std::to_string(k), ft, {cells},
                                 float_bytes(random_floats(static_cast<size_t>(cells), seed++, -0.5f, 0.5f))));
    }
    OpTensor h = activation(p + "hidden_state", ft, {c.batch, cells});
    OpTensor cs = activation(p + "cell_state", ft, {c.batch, cells});
    h.variable = cs.variable = true;
    in[dir == 0 ? 35 : 37] = push(h);
    in[dir == 0 ? 36 : 38] = push(cs);
  }
  m.op_inputs = in;
  if (c.merge) {
    m.op_outputs = {push(activation("y", ft, seq(c.cells_fw + c.cells_bw)))};
  } else {
    m.op_outputs = {push(activation("y_fw", ft, seq(c.cells_fw)))};
    m.op_outputs.push_back(push(activation("y_bw", ft, seq(c.cells_bw))));
  }
  const BiLstmCase cc = c;
  m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_BidirectionalSequenceLSTMOptions,
                          T::CreateBidirectionalSequenceLSTMOptions(fb, cc.activation, cc.cell_clip, 0.0f, cc.merge,
                                                                    cc.time_major)
                              .Union());
  };
  return m;
}

}  // namespace tessera::testing
