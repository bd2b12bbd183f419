// Test helper: a one-operator SVDF model (f32, or TFLite's integer form) with seeded random
// weights, and seeded inputs for several invokes. Used by the importer tests
// (tests/import/tflite/svdf_test.cpp) and the oracle tests (tests/oracle/svdf_oracle_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "import/tflite/single_op_model.h"

namespace tessera::testing {

// Seeded random bytes, never all zero.
inline std::vector<uint8_t> svdf_random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 24);
  if (!v.empty()) v[0] |= 1;
  return v;
}

struct SvdfCase {
  std::string name;
  bool integer;
  int batch, input, units, rank, memory;
  bool bias = true;
  ::tflite::ActivationFunctionType act = ::tflite::ActivationFunctionType_NONE;
  float state_gain = 1;  // integer: > 1 pushes the feature sums into int16 saturation
  float out_gain = 1;    // integer: > 1 spreads (and saturates) the int8 outputs
  bool hybrid = false;   // f32 (integer false): int8 weights_feature and weights_time
  bool asymmetric = false;  // hybrid: asymmetric_quantize_inputs (SVDF v4)
};

template <typename V>
inline std::vector<uint8_t> bytes_of(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The model (its description, for tests that alter it, and its bytes) and the seeded inputs
// of every invoke (invoke-major). Tensors: 0 x, 1 weights_feature, 2 weights_time, 3 bias,
// 4 the variable state, 5 y.
struct SvdfBuilt {
  SingleOpModel spec;
  std::vector<uint8_t> model;
  std::vector<std::vector<uint8_t>> inputs;
};

inline SvdfBuilt svdf_model(const SvdfCase& c, uint32_t seed, int invokes) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  auto uniform_in = [&](float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); };
  const int filters = c.units * c.rank;
  SingleOpModel m;
  m.code = ::tflite::BuiltinOperator_SVDF;
  m.version = c.integer ? 3 : c.asymmetric ? 4 : c.hybrid ? 2 : 1;
  SvdfBuilt b;
  if (!c.integer) {
    auto floats = [&](size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = uni(rng);
      return v;
    };
    OpTensor x = activation("x", ::tflite::TensorType_FLOAT32, {c.batch, c.input});
    OpTensor wf = constant("weights_feature", ::tflite::TensorType_FLOAT32, {filters, c.input},
                                    bytes_of(floats(static_cast<size_t>(filters * c.input))));
    OpTensor wt = constant("weights_time", ::tflite::TensorType_FLOAT32, {filters, c.memory},
                                    bytes_of(floats(static_cast<size_t>(filters * c.memory))));
    if (c.hybrid) {
      auto codes = [&](size_t n) {
        std::vector<int8_t> v(n);
        for (auto& q : v) q = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
        return v;
      };
      wf = constant("weights_feature", ::tflite::TensorType_INT8, {filters, c.input},
                    bytes_of(codes(static_cast<size_t>(filters * c.input))));
      wf.scale = uniform_in(0.002f, 0.02f);
      wt = constant("weights_time", ::tflite::TensorType_INT8, {filters, c.memory},
                    bytes_of(codes(static_cast<size_t>(filters * c.memory))));
      wt.scale = uniform_in(0.002f, 0.02f);
    }
    OpTensor bias = constant("bias", ::tflite::TensorType_FLOAT32, {c.units}, bytes_of(floats(static_cast<size_t>(c.units))));
    OpTensor st = activation("state", ::tflite::TensorType_FLOAT32, {c.batch, filters * c.memory});
    st.variable = true;
    OpTensor y = activation("y", ::tflite::TensorType_FLOAT32, {c.batch, c.units});
    m.tensors = {x, wf, wt, bias, st, y};
    for (int n = 0; n < invokes; ++n) {
      std::vector<float> x = floats(static_cast<size_t>(c.batch * c.input));
      // Asymmetric: batch rows all positive, all negative or mostly positive too (each row's
      // zero point then sits at an end of the int8 range or inside it).
      if (c.asymmetric)
        for (int r = 0; r < c.batch; ++r)
          for (int k = 0; k < c.input; ++k) {
            float& v = x[static_cast<size_t>(r * c.input + k)];
            const int kind = (r + n) % 4;
            v = kind == 1 ? 0.1f + std::fabs(v) : kind == 2 ? -0.05f - std::fabs(v) : kind == 3 ? 2.0f * v + 0.7f : v;
          }
      b.inputs.push_back(bytes_of(x));
    }
    // Hybrid: a zero batch row in invoke 2 and an all-zero invoke 3 (TFLite skips the feature
    // product for a zero input; a zero row quantizes with scale 1 and zero codes).
    if (c.hybrid && invokes > 2) std::fill_n(b.inputs[2].begin(), c.input * 4, uint8_t{0});
    if (c.hybrid && invokes > 3) std::fill(b.inputs[3].begin(), b.inputs[3].end(), uint8_t{0});
  } else {
    // Scales chosen so that the feature sums use much of the int16 state (and sometimes
    // saturate it) and the outputs spread over the int8 range.
    const float x_scale = uniform_in(0.005f, 0.1f), wf_scale = uniform_in(0.002f, 0.02f);
    const float state_scale =
        x_scale * wf_scale * uniform_in(2.0f, 40.0f) * std::sqrt(static_cast<float>(c.input)) / c.state_gain;
    const float wt_scale = uniform_in(1e-5f, 1e-4f);
    const double typical = 12000.0 * 16000.0 * std::sqrt(static_cast<double>(c.memory * c.rank));
    const float y_scale =
        static_cast<float>(state_scale * wt_scale * typical / 60.0 * uniform_in(0.5f, 2.0f) / c.out_gain);
    std::vector<int8_t> wf(static_cast<size_t>(filters * c.input));
    for (auto& v : wf) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    std::vector<int16_t> wt(static_cast<size_t>(filters * c.memory));
    for (auto& v : wt) v = static_cast<int16_t>(static_cast<int>(rng() % 65535) - 32767);
    std::vector<int32_t> bias(static_cast<size_t>(c.units));
    for (auto& v : bias) v = static_cast<int32_t>(uni(rng) * 3e8);
    OpTensor x = activation("x", ::tflite::TensorType_INT8, {c.batch, c.input});
    x.scale = x_scale;
    x.zero_point = static_cast<int64_t>(rng() % 41) - 20;
    OpTensor wft = constant("weights_feature", ::tflite::TensorType_INT8, {filters, c.input}, bytes_of(wf));
    wft.scale = wf_scale;
    OpTensor wtt = constant("weights_time", ::tflite::TensorType_INT16, {filters, c.memory}, bytes_of(wt));
    wtt.scale = wt_scale;
    OpTensor bt = constant("bias", ::tflite::TensorType_INT32, {c.units}, bytes_of(bias));
    bt.scale = state_scale * wt_scale;
    OpTensor st = activation("state", ::tflite::TensorType_INT16, {c.batch, filters * c.memory});
    st.scale = state_scale;
    st.variable = true;
    OpTensor y = activation("y", ::tflite::TensorType_INT8, {c.batch, c.units});
    y.scale = y_scale;
    y.zero_point = static_cast<int64_t>(rng() % 21) - 10;
    m.tensors = {x, wft, wtt, bt, st, y};
    for (int n = 0; n < invokes; ++n)
      b.inputs.push_back(svdf_random_bytes(static_cast<size_t>(c.batch * c.input), seed * 31 + static_cast<uint32_t>(n)));
  }
  m.op_inputs = {0, 1, 2, c.bias ? 3 : -1, 4};
  m.op_outputs = {5};
  m.model_inputs = {0};
  const int rank = c.rank;
  const ::tflite::ActivationFunctionType act = c.act;
  const bool asymmetric = c.asymmetric;
  m.options = [rank, act, asymmetric](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(::tflite::BuiltinOptions_SVDFOptions,
                          ::tflite::CreateSVDFOptions(fb, rank, act, asymmetric).Union());
  };
  b.model = m.bytes();
  b.spec = std::move(m);
  return b;
}

}  // namespace tessera::testing
