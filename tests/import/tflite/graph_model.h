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
      for (const OpTensor& t : sg.tensors) ts.push_back(write_tensor(fb, t, buffers));
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

// The converter's loop form, small: WHILE over (i, x) with cond subgraph `cond` (i < 3) and
// body subgraph `body` (i + 1, x + x); the main subgraph's input is x f32 [1, 4], its
// output the final x (8 x). WhileOptions (union type 93: cond_subgraph_index,
// body_subgraph_index) is newer than the compiled schema: written as a raw table.
inline GraphModel while_model(int32_t cond_index = 1, int32_t body_index = 2) {
  namespace T = ::tflite;
  const auto i32 = T::TensorType_INT32, f32 = T::TensorType_FLOAT32;
  GraphSubgraph main, cond, body;
  main.name = "main";
  const int32_t x = main.add(activation("x", f32, {1, 4}));
  const int32_t i0 = main.add(constant("i0", i32, {}, int32_bytes({0})));
  const int32_t i_end = main.add(activation("i_end", i32, {}));
  const int32_t y = main.add(activation("y", f32, {1, 4}));
  main.inputs = {x};
  main.outputs = {y};
  main.op(T::BuiltinOperator_WHILE, {i0, x}, {i_end, y}, [cond_index, body_index](flatbuffers::FlatBufferBuilder& fb) {
    const auto start = fb.StartTable();
    fb.AddElement<int32_t>(4, cond_index, 0);
    fb.AddElement<int32_t>(6, body_index, 0);
    return std::make_pair(static_cast<T::BuiltinOptions>(93), flatbuffers::Offset<void>(fb.EndTable(start)));
  });
  cond.name = "cond";
  const int32_t ci = cond.add(activation("i", i32, {}));
  const int32_t cx = cond.add(activation("x", f32, {1, 4}));
  const int32_t n = cond.add(constant("n", i32, {}, int32_bytes({3})));
  const int32_t lt = cond.add(activation("continue", T::TensorType_BOOL, {}));
  cond.inputs = {ci, cx};
  cond.outputs = {lt};
  cond.op(T::BuiltinOperator_LESS, {ci, n}, {lt});
  body.name = "body";
  const int32_t bi = body.add(activation("i", i32, {}));
  const int32_t bx = body.add(activation("x", f32, {1, 4}));
  const int32_t one = body.add(constant("one", i32, {}, int32_bytes({1})));
  const int32_t bi2 = body.add(activation("i_next", i32, {}));
  const int32_t bx2 = body.add(activation("x_next", f32, {1, 4}));
  body.inputs = {bi, bx};
  body.outputs = {bi2, bx2};
  body.op(T::BuiltinOperator_ADD, {bi, one}, {bi2});
  body.op(T::BuiltinOperator_ADD, {bx, bx}, {bx2});
  GraphModel m;
  m.subgraphs = {main, cond, body};
  return m;
}

}  // namespace tessera::testing
