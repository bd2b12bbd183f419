// Test helper: .tflite models of several operators, each with its options, written with
// the flatbuffers library (tensors as in single_op_model.h, shape_signature included), and
// the shape-arithmetic chains converters emit in front of RESHAPE, with a dynamic input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "import/tflite/single_op_model.h"

namespace tessera::testing {

struct ModelOp {
  ::tflite::BuiltinOperator code;
  std::vector<int32_t> inputs, outputs;
  OptionsWriter options;  // empty: none
  int version = 1;
};

struct MultiOpModel {
  std::vector<OpTensor> tensors;
  std::vector<ModelOp> ops;
  std::vector<int32_t> inputs, outputs;

  std::vector<uint8_t> bytes() const {
    namespace T = ::tflite;
    flatbuffers::FlatBufferBuilder fb;
    std::vector<flatbuffers::Offset<T::Buffer>> buffers = {T::CreateBufferDirect(fb)};
    std::vector<flatbuffers::Offset<T::Tensor>> ts;
    for (const OpTensor& t : tensors) ts.push_back(write_tensor(fb, t, buffers));
    std::vector<flatbuffers::Offset<T::Operator>> ops_fb;
    std::vector<flatbuffers::Offset<T::OperatorCode>> codes;
    for (const ModelOp& op : ops) {
      const int8_t deprecated = static_cast<int8_t>(op.code < 127 ? op.code : 127);
      codes.push_back(T::CreateOperatorCode(fb, deprecated, 0, op.version, op.code));
      auto opts = op.options ? op.options(fb) : std::make_pair(T::BuiltinOptions_NONE, flatbuffers::Offset<void>());
      ops_fb.push_back(T::CreateOperatorDirect(fb, static_cast<uint32_t>(codes.size() - 1), &op.inputs, &op.outputs,
                                               opts.first, opts.second));
    }
    std::vector<flatbuffers::Offset<T::SubGraph>> sgs = {T::CreateSubGraphDirect(fb, &ts, &inputs, &outputs, &ops_fb)};
    fb.Finish(T::CreateModelDirect(fb, 3, &codes, &sgs, "multi op", &buffers), T::ModelIdentifier());
    return std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
  }
};

inline OpTensor i32_const(std::string name, std::vector<int32_t> shape, const std::vector<int32_t>& v) {
  return constant(std::move(name), ::tflite::TensorType_INT32, std::move(shape), int32_bytes(v));
}

// x f32 [B,L,6] -> SHAPE -> s [3]; GATHER(s, [0]) -> b [1]; STRIDED_SLICE(s, 1:2, shrink)
// -> l (); MUL(l, 2) -> l2 (); PACK(l2, 3) -> tail [2]; CONCATENATION(b, tail) -> shape [3];
// RESHAPE(x, shape) -> r [B,2L,3]; ADD(r, bias [3]) -> y [B,2L,3]: every step of the
// shape arithmetic converters emit before a RESHAPE of a dynamic tensor. `dynamic`: the
// file declares B and L as placeholders (shape_signature -1) and its intermediate shapes
// at the declared size, as a converter writes them; otherwise B, L are the real sizes.
inline MultiOpModel reshape_chain_model(int32_t B, int32_t L, bool dynamic) {
  namespace T = ::tflite;
  MultiOpModel m;
  OpTensor x = activation("x", T::TensorType_FLOAT32, {B, L, 6});
  OpTensor r = activation("r", T::TensorType_FLOAT32, {B, 2 * L, 3});
  OpTensor y = activation("y", T::TensorType_FLOAT32, {B, 2 * L, 3});
  if (dynamic) {
    x.shape_signature = {-1, -1, 6};
    r.shape_signature = {-1, -1, 3};
    y.shape_signature = {-1, -1, 3};
  }
  const std::vector<float> bias = {0.25f, -1.5f, 3.0f};
  std::vector<uint8_t> bias_bytes(12);
  std::memcpy(bias_bytes.data(), bias.data(), 12);
  m.tensors = {x,                                                                  // 0
               activation("s", T::TensorType_INT32, {3}),                          // 1
               i32_const("first", {1}, {0}),                                       // 2
               activation("b", T::TensorType_INT32, {1}),                          // 3
               i32_const("begin", {1}, {1}),                                       // 4
               i32_const("end", {1}, {2}),                                         // 5
               i32_const("stride", {1}, {1}),                                      // 6
               activation("l", T::TensorType_INT32, {}),                           // 7
               i32_const("two", {}, {2}),                                          // 8
               activation("l2", T::TensorType_INT32, {}),                          // 9
               i32_const("three", {}, {3}),                                        // 10
               activation("tail", T::TensorType_INT32, {2}),                       // 11
               activation("shape", T::TensorType_INT32, {3}),                      // 12
               r,                                                                  // 13
               constant("bias", T::TensorType_FLOAT32, {3}, bias_bytes),           // 14
               y};                                                                 // 15
  m.ops = {
      {T::BuiltinOperator_SHAPE, {0}, {1},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_ShapeOptions, T::CreateShapeOptions(fb, T::TensorType_INT32).Union());
       }},
      {T::BuiltinOperator_GATHER, {1, 2}, {3},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_GatherOptions, T::CreateGatherOptions(fb, 0).Union());
       }},
      {T::BuiltinOperator_STRIDED_SLICE, {1, 4, 5, 6}, {7},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_StridedSliceOptions,
                               T::CreateStridedSliceOptions(fb, 0, 0, 0, 0, /*shrink_axis_mask=*/1).Union());
       }},
      {T::BuiltinOperator_MUL, {7, 8}, {9},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_MulOptions, T::CreateMulOptions(fb).Union());
       }},
      {T::BuiltinOperator_PACK, {9, 10}, {11},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_PackOptions, T::CreatePackOptions(fb, 2, 0).Union());
       }},
      {T::BuiltinOperator_CONCATENATION, {3, 11}, {12},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_ConcatenationOptions, T::CreateConcatenationOptions(fb, 0).Union());
       }},
      {T::BuiltinOperator_RESHAPE, {0, 12}, {13}, {}},
      {T::BuiltinOperator_ADD, {13, 14}, {15},
       [](flatbuffers::FlatBufferBuilder& fb) {
         return std::make_pair(T::BuiltinOptions_AddOptions, T::CreateAddOptions(fb).Union());
       }},
  };
  m.inputs = {0};
  m.outputs = {15};
  return m;
}

}  // namespace tessera::testing
