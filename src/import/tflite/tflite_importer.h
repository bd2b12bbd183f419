// The TFLite frontend: a .tflite flatbuffer in, a tessera::Graph out.
//
// Contract:
// - The flatbuffers verifier runs first; then every index, shape, buffer size,
//   quantization parameter and operator version that the importer uses is checked.
//   A malformed or unsupported file gives a Status naming what is wrong (the tensor, the
//   operator with its index, builtin name and version); it never crashes the process.
// - Subgraph 0 is imported. Constant tensors become Role::weight tensors whose ConstData
//   points into the file's bytes (kept alive by ConstData::owner). The model's inputs and
//   outputs keep their TFLite names, shapes, dtypes and quantization.
// - Operators map to Tessera ops (src/ops/ops.def): SAME/VALID padding becomes explicit
//   pad_* attributes, fused activations become attr `activation`, QUANTIZE of an integer
//   tensor becomes `requantize`, SQUEEZE/RESHAPE/EXPAND_DIMS become `reshape` (RESHAPE to
//   its shape operand when that is constant, as the interpreter reads it), PACK/UNPACK
//   become reshape + concat / slice + reshape.
// - Shapes: an intermediate tensor takes the shape Tessera's inference gives its operator
//   (files carry placeholders there). Integer shape arithmetic on constants (SHAPE, then
//   STRIDED_SLICE, SLICE, PACK, CONCATENATION, GATHER, RESHAPE, CAST, ADD, SUB, MUL, DIV,
//   FLOOR_DIV, MAXIMUM, MINIMUM on i32/i64) is folded at import into constants, so that a
//   RESHAPE fed by such a chain gets a constant shape (shape_fold.cpp).
// - Dynamic inputs: a model input whose Tensor.shape_signature holds -1 has those dims
//   dynamic (ImportReport::dynamic_dims). It runs at its declared shape unless
//   ImportOptions::input_shapes sets them (as TFLite's ResizeInputTensor); a dim the file
//   fixes, a rank change, a size below 1 or too many elements is an error naming the
//   input and the dim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph.h"

namespace tessera::tflite {

// A shape for one model input: `input` is its name, or its index in decimal.
struct InputShapeOverride {
  std::string input;
  Shape shape;
};

// Load-time options of the importer.
struct ImportOptions {
  // Shapes for model inputs with dynamic dims (shape_signature -1); dims the file fixes
  // must keep their size. Every entry must name a model input, at most once.
  std::vector<InputShapeOverride> input_shapes;
  // True: any dim of a named input may change, not only the dynamic ones (TFLite's
  // ResizeInputTensor rather than ResizeInputTensorStrict); the rank must still agree.
  bool any_dim = false;
};

// What the importer found beyond the graph.
struct ImportReport {
  // Per model input (Graph::inputs order): the dims its file leaves dynamic
  // (shape_signature -1), ascending.
  std::vector<std::vector<int64_t>> dynamic_dims;
  // Subgraph 0's TFLite tensor index -> the graph tensor made of it (kNoTensor: none, e.g.
  // a tensor no imported operator uses).
  std::vector<TensorId> tensor_ids;
  // The class names the file carries (embedded_files.h: Ultralytics' metadata, or a labels
  // file packed by TFLite's metadata writer), one per line as written; empty if none.
  std::vector<std::string> labels;
  std::string labels_source;  // the packed file they came from
  // Why the packed files could not be read (a malformed archive: the model still loads).
  std::string labels_note;
};

// Parses "NAME=D0,D1,..." (or "INDEX=...") as the CLI's --input-shape takes it.
Result<InputShapeOverride> parse_input_shape(const std::string& spec);

// False when the library was built without the TFLite schema (then every load fails
// with "built without TFLite support").
bool tflite_available();

// Reads and imports a .tflite file.
Result<Graph> load_tflite_file(const std::string& path, const ImportOptions& opts = {},
                               ImportReport* report = nullptr);

// Imports a model held in memory. `bytes` must stay valid: weights point into it, and the
// graph holds `bytes.owner` so that it lives as long as the graph.
Result<Graph> load_tflite_buffer(const ConstData& bytes, const ImportOptions& opts = {},
                                 ImportReport* report = nullptr);

}  // namespace tessera::tflite
