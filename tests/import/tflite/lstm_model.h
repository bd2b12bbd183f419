// Test helper: a one-operator UNIDIRECTIONAL_SEQUENCE_LSTM model (single_op_model.h) with
// seeded weights and biases: f32, or the integer 8x8_16 form (i8 input, weights and hidden
// state, i32 biases, i16 cell state with a power-of-two scale, and the five intermediate
// tensors the converter writes), optionally with peephole weights (9-11), a projection
// (16-17) and layer-norm coefficients (20-23; in the integer form the intermediates 0-3
// then carry the gates' scales). Used by the oracle test (values) and the importer test
// (refusals, after editing the model). With `hybrid`, TFLite's dynamic-range form: f32 x,
// state, biases and layer-norm coefficients with i8 weights (per-tensor scales). Also a one-operator BIDIRECTIONAL_SEQUENCE_LSTM
// model (f32 or hybrid, optionally with peephole weights and projection), bilstm_model.
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
  bool peephole = false;
  int32_t projection = 0;  // > 0: projection to this many outputs
  bool projection_bias = false;
  float proj_clip = 0.0f;
  bool layer_norm = false;
  bool hybrid = false;      // f32 x with i8 weights (integer = false)
  bool asymmetric = false;  // hybrid: asymmetric_quantize_inputs
  int32_t outputs() const { return projection > 0 ? projection : cells; }
};

// Quantization of the integer form's optional parts: projection weights i8 and the hidden
// state's scale with a projection; peephole weights and layer-norm coefficients i16; the
// layer-norm gates' accumulator scales (intermediates 0-3).
inline constexpr float kProjectionScale = 0.01f, kProjectedHScale = 1.0f / 40.0f;
inline constexpr float kPeepholeScale = 0.5f / 32768.0f, kLayerNormScale = 1.0f / 16384.0f;
inline constexpr float kGateAccScale[4] = {0.0007f, 0.0009f, 0.0005f, 0.0008f};

// Seeded int16 codes in [lo, hi].
inline std::vector<uint8_t> i16_codes(size_t n, uint32_t seed, int32_t lo, int32_t hi) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const int16_t v = static_cast<int16_t>(lo + static_cast<int32_t>(rng() % static_cast<uint32_t>(hi - lo + 1)));
    std::memcpy(b.data() + 2 * i, &v, 2);
  }
  return b;
}

inline constexpr float kXScale = 0.05f, kWeightScale = 0.006f, kHScale = 1.0f / 128.0f;

inline std::vector<int32_t> x_shape(const LstmCase& c, int32_t steps) {
  return c.time_major ? std::vector<int32_t>{steps, c.batch, c.features} : std::vector<int32_t>{c.batch, steps, c.features};
}

// The model of case `c` over `steps` steps.
inline SingleOpModel lstm_model(const LstmCase& c, int32_t steps) {
  SingleOpModel m;
  m.code = T::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM;
  const auto ft = T::TensorType_FLOAT32;
  const bool i8_weights = c.integer || c.hybrid;
  const auto wt = i8_weights ? T::TensorType_INT8 : ft;
  uint32_t seed = c.seed * 100;
  auto weights = [&](const std::string& name, int32_t cols, int32_t rows = 0) {
    if (rows == 0) rows = c.cells;
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    OpTensor t;
    if (i8_weights) {
      t = constant(name, wt, {rows, cols}, seeded_bytes(n, seed++));
      t.scale = kWeightScale * (1.0f + 0.1f * static_cast<float>(seed % 7));
    } else {
      t = constant(name, wt, {rows, cols}, float_bytes(random_floats(n, seed++, -0.6f, 0.6f)));
    }
    return t;
  };
  // A [C] vector: peephole weights (f32 or i16) or layer-norm coefficients (around 1).
  auto diagonal = [&](const std::string& name, bool norm) {
    const size_t n = static_cast<size_t>(c.cells);
    if (c.hybrid && !norm) {  // the hybrid form's peephole weights are int8
      OpTensor t = constant(name, T::TensorType_INT8, {c.cells}, seeded_bytes(n, seed++));
      t.scale = 0.004f;
      return t;
    }
    if (!c.integer)
      return constant(name, ft, {c.cells},
                      float_bytes(norm ? random_floats(n, seed++, 0.5f, 1.5f) : random_floats(n, seed++, -0.5f, 0.5f)));
    OpTensor t = norm ? constant(name, T::TensorType_INT16, {c.cells}, i16_codes(n, seed++, 8000, 24000))
                      : constant(name, T::TensorType_INT16, {c.cells}, i16_codes(n, seed++, -32000, 32000));
    t.scale = norm ? kLayerNormScale : kPeepholeScale;
    return t;
  };
  // Gate biases [C] (with layer norm in the integer form at the coefficients' scale / 1024,
  // where the interpreter adds them), and the projection's [P].
  auto bias = [&](const std::string& name, int32_t rows = 0, float scale = kXScale * kWeightScale) {
    if (rows == 0) rows = c.cells;
    const size_t n = static_cast<size_t>(rows);
    if (!c.integer) return constant(name, ft, {rows}, float_bytes(random_floats(n, seed++, -0.5f, 0.5f)));
    std::vector<int32_t> v(n);
    std::mt19937 rng(seed++);
    const bool norm = c.layer_norm && rows == c.cells && scale == kXScale * kWeightScale;
    const uint32_t span = norm ? 8000001u : 4001u;
    for (auto& b : v) b = static_cast<int32_t>(rng() % span) - static_cast<int32_t>(span / 2);
    OpTensor t = constant(name, T::TensorType_INT32, {rows}, int32_bytes(v));
    t.scale = norm ? kLayerNormScale / 1024.0f : scale;
    return t;
  };
  OpTensor x = activation("x", c.integer ? T::TensorType_INT8 : ft, x_shape(c, steps));
  const int32_t P = c.outputs();
  OpTensor h = activation("hidden_state", c.integer ? T::TensorType_INT8 : ft, {c.batch, P});
  OpTensor cs = activation("cell_state", c.integer ? T::TensorType_INT16 : ft, {c.batch, c.cells});
  h.variable = cs.variable = true;
  OpTensor y = activation("y", x.type, c.time_major ? std::vector<int32_t>{steps, c.batch, P}
                                                              : std::vector<int32_t>{c.batch, steps, P});
  if (c.integer) {
    x.scale = kXScale;
    x.zero_point = c.x_zero_point;
    h.scale = y.scale = c.projection > 0 ? kProjectedHScale : kHScale;
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
    in[5 + k] = push(weights("r" + std::to_string(k), P));
    in[12 + k] = push(bias("b" + std::to_string(k)));
    if (c.layer_norm) in[20 + k] = push(diagonal("ln" + std::to_string(k), true));
  }
  if (c.peephole)  // TFLite's order: input (not with CIFG), forget, output
    for (int k = c.cifg ? 1 : 0; k < 3; ++k) in[9 + k] = push(diagonal("p" + std::to_string(k), false));
  if (c.projection > 0) {
    OpTensor wp = weights("projection", c.cells, P);
    if (i8_weights) wp.scale = kProjectionScale;
    in[16] = push(wp);
    if (c.projection_bias) in[17] = push(bias("projection_bias", P, kProjectionScale * kHScale));
  }
  in[18] = push(h);
  in[19] = push(cs);
  m.op_inputs = in;
  m.op_outputs = {push(y)};
  if (c.integer) {
    // The converter's five intermediates: four unquantized (layer norm only), then the
    // hidden value's scale and zero point.
    for (int k = 0; k < 4; ++k) {
      if (!c.layer_norm) {
        m.intermediates.push_back(push(activation("intermediate" + std::to_string(k), ft, {0})));
        continue;
      }
      OpTensor acc = activation("intermediate" + std::to_string(k), T::TensorType_INT16, {0});
      acc.scale = kGateAccScale[k];
      m.intermediates.push_back(push(acc));
    }
    OpTensor hidden = activation("hidden_intermediate", T::TensorType_INT8, {0});
    hidden.scale = kHScale;
    hidden.zero_point = c.hidden_zero_point;
    m.intermediates.push_back(push(hidden));
  }
  const LstmCase cc = c;
  m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_UnidirectionalSequenceLSTMOptions,
                          T::CreateUnidirectionalSequenceLSTMOptions(fb, cc.activation, cc.cell_clip, cc.proj_clip, cc.time_major,
                                                                     cc.asymmetric)
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
  bool peephole = false;
  int32_t projection = 0;  // > 0: both directions project to this many outputs
  bool projection_bias = false;
  float proj_clip = 0.0f;
  bool hybrid = false;      // int8 weights (peephole and projection too)
  bool asymmetric = false;  // hybrid: asymmetric_quantize_inputs
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
    if (c.hybrid) {
      OpTensor t = constant(name, T::TensorType_INT8, {rows, cols}, seeded_bytes(n, seed++));
      t.scale = kWeightScale;
      return t;
    }
    return constant(name, ft, {rows, cols}, float_bytes(random_floats(n, seed++, -0.6f, 0.6f)));
  };
  auto seq = [&](int32_t width) {
    return c.time_major ? std::vector<int32_t>{c.steps, c.batch, width} : std::vector<int32_t>{c.batch, c.steps, width};
  };
  std::vector<int32_t> in(48, -1);
  in[0] = push(activation("x", ft, seq(c.features)));
  for (int dir = 0; dir < 2; ++dir) {
    const int32_t cells = dir == 0 ? c.cells_fw : c.cells_bw;
    const int32_t outputs = c.projection > 0 ? c.projection : cells;
    const int w0 = dir == 0 ? 1 : 18, r0 = dir == 0 ? 5 : 22, b0 = dir == 0 ? 12 : 29;
    const int p0 = dir == 0 ? 9 : 26, proj0 = dir == 0 ? 16 : 33;
    const std::string p = dir == 0 ? "fw_" : "bw_";
    for (int k = c.cifg ? 1 : 0; k < 4; ++k) {
      in[w0 + k] = push(matrix(p + "w" + std::to_string(k), cells, c.features));
      in[r0 + k] = push(matrix(p + "r" + std::to_string(k), cells, outputs));
      in[b0 + k] = push(constant(p + "b" + std::to_string(k), ft, {cells},
                                 float_bytes(random_floats(static_cast<size_t>(cells), seed++, -0.5f, 0.5f))));
    }
    if (c.peephole)
      for (int k = c.cifg ? 1 : 0; k < 3; ++k)
        in[p0 + k] = push(c.hybrid ? matrix(p + "p" + std::to_string(k), 1, cells)
                                   : constant(p + "p" + std::to_string(k), ft, {cells},
                                              float_bytes(random_floats(static_cast<size_t>(cells), seed++, -0.5f, 0.5f))));
    if (c.peephole && c.hybrid)  // [C], not [1, C]
      for (int k = c.cifg ? 1 : 0; k < 3; ++k) m.tensors[static_cast<size_t>(in[p0 + k])].shape = {cells};
    if (c.projection > 0) {
      in[proj0] = push(matrix(p + "projection", outputs, cells));
      if (c.projection_bias)
        in[proj0 + 1] = push(constant(p + "projection_bias", ft, {outputs},
                                      float_bytes(random_floats(static_cast<size_t>(outputs), seed++, -0.5f, 0.5f))));
    }
    OpTensor h = activation(p + "hidden_state", ft, {c.batch, outputs});
    OpTensor cs = activation(p + "cell_state", ft, {c.batch, cells});
    h.variable = cs.variable = true;
    in[dir == 0 ? 35 : 37] = push(h);
    in[dir == 0 ? 36 : 38] = push(cs);
  }
  m.op_inputs = in;
  const int32_t out_fw = c.projection > 0 ? c.projection : c.cells_fw;
  const int32_t out_bw = c.projection > 0 ? c.projection : c.cells_bw;
  if (c.merge) {
    m.op_outputs = {push(activation("y", ft, seq(out_fw + out_bw)))};
  } else {
    m.op_outputs = {push(activation("y_fw", ft, seq(out_fw)))};
    m.op_outputs.push_back(push(activation("y_bw", ft, seq(out_bw))));
  }
  const BiLstmCase cc = c;
  m.options = [cc](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_BidirectionalSequenceLSTMOptions,
                          T::CreateBidirectionalSequenceLSTMOptions(fb, cc.activation, cc.cell_clip, cc.proj_clip, cc.merge,
                                                                    cc.time_major, cc.asymmetric)
                              .Union());
  };
  return m;
}

}  // namespace tessera::testing
