// Internal to the TFLite importer: the state shared by the model reader (tensors,
// buffers, quantization) and the operator builders (one TFLite operator -> Tessera nodes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph.h"
#include "tflite_schema_generated.h"

namespace tessera::tflite {

struct ImportContext {
  const ::tflite::Model* model = nullptr;
  const ::tflite::SubGraph* subgraph = nullptr;
  ConstData file;  // the whole .tflite file; weights point into it
  Graph graph;
  // TFLite tensor index -> graph tensor id (kNoTensor until first used).
  std::vector<TensorId> ids;
  int num_tensors = 0;
  // Whether a load option changed a model input's shape (then the file's declared shapes
  // downstream are those of another input size).
  bool inputs_resized = false;
  // Per model input: the dims its file leaves dynamic (shape_signature -1).
  std::vector<std::vector<int64_t>> dynamic_dims;

  // The graph tensor for TFLite tensor `index` (created on first use: dtype, shape,
  // quantization and, for constants, the data). `what` names the use for errors.
  Result<TensorId> tensor(int32_t index, const std::string& what);
  // Values of a constant i32/i64 TFLite tensor (shape operands, axes, sizes).
  Result<std::vector<int64_t>> const_ints(int32_t index, const std::string& what);
  // Whether graph tensor `id` is one of the subgraph's outputs.
  bool is_model_output(TensorId id) const;
  // Whether dim `d` of graph tensor `id` is -1 in its file's shape_signature.
  bool dynamic_in_file(TensorId id, size_t d) const;
  // A fresh activation tensor (for ops the importer splits into several nodes).
  TensorId temp_tensor(const std::string& name, Shape shape, DType dtype, QuantParams q);
};

// Where one operator is being built: its index, builtin name and version, for errors.
struct OpSite {
  ImportContext& cx;
  const ::tflite::Operator* op;
  int index;
  ::tflite::BuiltinOperator code;
  int version;
  std::string label;  // "op 12 (CONV_2D v3)"

  Status fail(const std::string& msg) const;
  // Refuses quantized input/output scales whose ratio could overflow integer rescaling.
  Status check_rescale(const Node& n) const;
  // The operator's input / output count, and the graph tensor for input / output k.
  int num_inputs() const { return op->inputs() ? static_cast<int>(op->inputs()->size()) : 0; }
  int num_outputs() const { return op->outputs() ? static_cast<int>(op->outputs()->size()) : 0; }
  bool has_input(int k) const { return k < num_inputs() && op->inputs()->Get(k) >= 0; }
  Result<TensorId> input(int k);
  Result<TensorId> output(int k);
  Result<std::vector<int64_t>> const_input(int k);
  // Checks the input count is within [lo, hi] and the output count equals `outs`.
  Status expect_io(int lo, int hi, int outs) const;
  // Adds one node whose outputs are already-created tensors; checks shapes by inference.
  Status add(OpKind kind, std::vector<TensorId> inputs, std::vector<TensorId> outputs,
             AttrMap attrs = {}, const std::string& suffix = "");
};

// Folds node `n` (just added, the last node of cx.graph) when it is integer shape
// arithmetic on constants: its outputs become constants and the node is removed
// (shape_fold.cpp). Returns whether it folded.
Result<bool> fold_constant_node(ImportContext& cx);

// Builds the nodes for one operator (op_builder.cpp); an unsupported builtin, version or
// option is an error naming the operator.
Status build_operator(OpSite& site);

// TFLite's 16x8 parameters (int16 tensors, zero point 0, the scales the interpreter's
// Prepare demands) for an int16 operator of `kind` (op_builder_int16.cpp).
Status check_int16_operator(OpSite& s, OpKind kind, const std::vector<TensorId>& ins, TensorId out);
// Whether an int16 ADD / SUB takes TFLite's shift-only (pot_scale_int16) kernel.
bool int16_add_sub_is_pot(OpSite& s, const Tensor& a, const Tensor& b, const Tensor& y);

// The highest operator version the importer accepts for `code`; 0 when unsupported.
int max_supported_version(::tflite::BuiltinOperator code);

// Attribute helpers shared by the builders.
std::string activation_name(::tflite::ActivationFunctionType a, bool* ok);
// Explicit padding for TFLite's SAME / VALID (as TFLite's ComputePaddingHeightWidth).
void same_or_valid_padding(::tflite::Padding p, int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                           int64_t* before, int64_t* after);

}  // namespace tessera::tflite
