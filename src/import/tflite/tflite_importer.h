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
//   tensor becomes `requantize`, SQUEEZE/RESHAPE become `reshape` to the file's static
//   output shape, PACK/UNPACK become reshape + concat / slice + reshape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph.h"

namespace tessera::tflite {

// False when the library was built without the TFLite schema (then every load fails
// with "built without TFLite support").
bool tflite_available();

// Reads and imports a .tflite file.
Result<Graph> load_tflite_file(const std::string& path);

// Imports a model held in memory. `bytes` must stay valid: weights point into it, and the
// graph holds `bytes.owner` so that it lives as long as the graph.
Result<Graph> load_tflite_buffer(const ConstData& bytes);

}  // namespace tessera::tflite
