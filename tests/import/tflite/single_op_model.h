// Test helper: a .tflite model of one builtin operator, written with the flatbuffers
// library against the project's schema (constant tensors carry their bytes; the others are
// activations). Used by the importer tests and, through the oracle, to judge new operators.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tflite_schema_generated.h"

namespace tessera::testing {

struct OpTensor {
  std::string name;
  ::tflite::TensorType type = ::tflite::TensorType_FLOAT32;
  std::vector<int32_t> shape;
  std::vector<uint8_t> data;  // non-empty: a constant
  float scale = 0;            // > 0: per-tensor quantization
  int64_t zero_point = 0;
  std::vector<float> scales;  // non-empty: per-channel quantization (zero points 0)
  int32_t quantized_dimension = 0;
  bool variable = false;      // a variable tensor (state the interpreter keeps between runs)
  std::vector<int32_t> shape_signature;  // non-empty: -1 marks a dynamic dim (`shape` holds 1 there)
};

// An activation tensor, and a constant one.
inline OpTensor activation(std::string name, ::tflite::TensorType type, std::vector<int32_t> shape) {
  OpTensor t;
  t.name = std::move(name);
  t.type = type;
  t.shape = std::move(shape);
  return t;
}
inline OpTensor constant(std::string name, ::tflite::TensorType type, std::vector<int32_t> shape, std::vector<uint8_t> data) {
  OpTensor t = activation(std::move(name), type, std::move(shape));
  t.data = std::move(data);
  return t;
}
// An int16 activation tensor (TFLite's 16x8 form) with its scale and zero point.
inline OpTensor i16_tensor(std::string name, std::vector<int32_t> shape, float scale, int64_t zero_point = 0) {
  OpTensor t = activation(std::move(name), ::tflite::TensorType_INT16, std::move(shape));
  t.scale = scale;
  t.zero_point = zero_point;
  return t;
}

inline std::vector<uint8_t> int32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Writes `t` into `fb`: its constant bytes as a new buffer (appended to `buffers`), its
// quantization (per tensor, or per channel with zero points 0), its shape signature.
inline flatbuffers::Offset<::tflite::Tensor> write_tensor(flatbuffers::FlatBufferBuilder& fb, const OpTensor& t,
                                                          std::vector<flatbuffers::Offset<::tflite::Buffer>>& buffers) {
  namespace T = ::tflite;
  uint32_t buffer = 0;
  if (!t.data.empty()) {
    buffer = static_cast<uint32_t>(buffers.size());
    buffers.push_back(T::CreateBufferDirect(fb, &t.data));
  }
  flatbuffers::Offset<T::QuantizationParameters> q = 0;
  if (!t.scales.empty()) {
    std::vector<int64_t> z(t.scales.size(), 0);
    q = T::CreateQuantizationParametersDirect(fb, nullptr, nullptr, &t.scales, &z, T::QuantizationDetails_NONE, 0,
                                              t.quantized_dimension);
  } else if (t.scale > 0) {
    std::vector<float> s = {t.scale};
    std::vector<int64_t> z = {t.zero_point};
    q = T::CreateQuantizationParametersDirect(fb, nullptr, nullptr, &s, &z);
  }
  return T::CreateTensorDirect(fb, &t.shape, t.type, buffer, t.name.c_str(), q, t.variable, 0,
                               t.shape_signature.empty() ? nullptr : &t.shape_signature);
}

// The operator's options: its union type and the table written into `fb`.
using OptionsWriter = std::function<std::pair<::tflite::BuiltinOptions, flatbuffers::Offset<void>>(flatbuffers::FlatBufferBuilder&)>;

// An operator that runs before the model's main one (for operators fed by another).
struct OpBefore {
  ::tflite::BuiltinOperator code;
  int version = 1;
  std::vector<int32_t> inputs, outputs;
};

struct SingleOpModel {
  std::vector<OpBefore> before;  // run first, without options
  ::tflite::BuiltinOperator code = ::tflite::BuiltinOperator_ADD;
  int version = 1;
  std::vector<OpTensor> tensors;
  std::vector<int32_t> op_inputs, op_outputs;  // indices into tensors
  std::vector<int32_t> model_inputs;           // default: the op's non-constant, non-variable inputs
  std::vector<int32_t> intermediates;          // the main operator's intermediate tensors
  OptionsWriter options;

  std::vector<uint8_t> bytes() const {
    namespace T = ::tflite;
    flatbuffers::FlatBufferBuilder fb;
    std::vector<flatbuffers::Offset<T::Buffer>> buffers = {T::CreateBufferDirect(fb)};
    std::vector<flatbuffers::Offset<T::Tensor>> ts;
    for (const OpTensor& t : tensors) ts.push_back(write_tensor(fb, t, buffers));
    std::vector<int32_t> ins = model_inputs;
    if (ins.empty())
      for (int32_t i : op_inputs)
        if (i >= 0 && tensors[static_cast<size_t>(i)].data.empty() && !tensors[static_cast<size_t>(i)].variable)
          ins.push_back(i);
    auto opts = options ? options(fb) : std::make_pair(T::BuiltinOptions_NONE, flatbuffers::Offset<void>());
    std::vector<flatbuffers::Offset<T::Operator>> ops;
    std::vector<flatbuffers::Offset<T::OperatorCode>> codes;
    auto add_code = [&](T::BuiltinOperator c, int v) {
      const int8_t deprecated = static_cast<int8_t>(c < 127 ? c : 127);
      codes.push_back(T::CreateOperatorCode(fb, deprecated, 0, v, c));
      return static_cast<uint32_t>(codes.size() - 1);
    };
    for (const OpBefore& b : before)
      ops.push_back(T::CreateOperatorDirect(fb, add_code(b.code, b.version), &b.inputs, &b.outputs));
    ops.push_back(T::CreateOperatorDirect(fb, add_code(code, version), &op_inputs, &op_outputs, opts.first, opts.second,
                                          nullptr, T::CustomOptionsFormat_FLEXBUFFERS, nullptr,
                                          intermediates.empty() ? nullptr : &intermediates));
    std::vector<flatbuffers::Offset<T::SubGraph>> sgs = {T::CreateSubGraphDirect(fb, &ts, &ins, &op_outputs, &ops)};
    fb.Finish(T::CreateModelDirect(fb, 3, &codes, &sgs, "single op", &buffers), T::ModelIdentifier());
    return std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
  }
};

}  // namespace tessera::testing
