// Test helper: a .tflite model of several operators and subgraphs, written with the
// flatbuffers library against the project's schema (single_op_model.h's tensors and options
// writers). For patterns the converter emits as several builtins (a GRU cell unrolled over
// time steps) and for control flow (WHILE's cond and body subgraphs).
#pragma once

#include <string>
#include <vector>

#include "import/tflite/single_op_model.h"

namespace tessera::testing {

struct GraphOp {
  ::tflite::BuiltinOperator code;
  int version = 1;
  std::vector<int32_t> inputs, outputs;  // indices into the subgraph's tensors (-1: absent)
  OptionsWriter options;                 // empty: no options
};

struct GraphSubgraph {
  std::string name;
  std::vector<OpTensor> tensors;
  std::vector<int32_t> inputs, outputs;
  std::vector<GraphOp> ops;

  // Adds a tensor; returns its index.
  int32_t add(OpTensor t) {
    tensors.push_back(std::move(t));
    return static_cast<int32_t>(tensors.size() - 1);
  }
  void op(::tflite::BuiltinOperator code, std::vector<int32_t> in, std::vector<int32_t> out, OptionsWriter options = {},
          int version = 1) {
    ops.push_back(GraphOp{code, version, std::move(in), std::move(out), std::move(options)});
  }
};

struct GraphModel {
  std::vector<GraphSubgraph> subgraphs;  // 0 is the main one

  std::vector<uint8_t> bytes() const {
    namespace T = ::tflite;
    flatbuffers::FlatBufferBuilder fb;
    std::vector<flatbuffers::Offset<T::Buffer>> buffers = {T::CreateBufferDirect(fb)};
    std::vector<flatbuffers::Offset<T::OperatorCode>> codes;
    std::vector<std::pair<T::BuiltinOperator, int>> code_keys;
    auto code_index = [&](T::BuiltinOperator c, int v) {
      for (size_t i = 0; i < code_keys.size(); ++i)
        if (code_keys[i] == std::make_pair(c, v)) return static_cast<uint32_t>(i);
      const int8_t deprecated = static_cast<int8_t>(c < 127 ? c : 127);
      codes.push_back(T::CreateOperatorCode(fb, deprecated, 0, v, c));
      code_keys.emplace_back(c, v);
      return static_cast<uint32_t>(codes.size() - 1);
    };
    std::vector<flatbuffers::Offset<T::SubGraph>> sgs;
    for (const GraphSubgraph& sg : subgraphs) {
      std::vector<flatbuffers::Offset<T::Tensor>> ts;
      for (const OpTensor& t : sg.tensors) {
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
        ts.push_back(T::CreateTensorDirect(fb, &t.shape, t.type, buffer, t.name.c_str(), q, t.variable));
      }
      std::vector<flatbuffers::Offset<T::Operator>> ops;
      for (const GraphOp& o : sg.ops) {
        auto opts = o.options ? o.options(fb) : std::make_pair(T::BuiltinOptions_NONE, flatbuffers::Offset<void>());
        ops.push_back(T::CreateOperatorDirect(fb, code_index(o.code, o.version), &o.inputs, &o.outputs, opts.first, opts.second));
      }
      sgs.push_back(T::CreateSubGraphDirect(fb, &ts, &sg.inputs, &sg.outputs, &ops, sg.name.c_str()));
    }
    fb.Finish(T::CreateModelDirect(fb, 3, &codes, &sgs, "graph", &buffers), T::ModelIdentifier());
    return std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
  }
};

}  // namespace tessera::testing
