// Post-training quantization of float TFLite models: a float (or fp16-weight, or hybrid)
// .tflite in, a full-integer .tflite out, in the scheme TensorFlow Lite's converter writes
// for `representative_dataset` + int8 (docs/quantize.md):
//  - activations: int8, one scale and zero point per tensor, from the range [min(0, lo),
//    max(0, hi)] the calibration runs reach (scale = range / 255);
//  - convolution and depthwise filters: int8, symmetric, one scale per output channel
//    (max |w| / 127); fully connected weights: one symmetric scale per tensor; biases:
//    int32 at input scale x filter scale;
//  - LOGISTIC / SOFTMAX outputs at 1/256, zero point -128, TANH at 1/128, 0 (the int8
//    kernels' fixed ranges); pooling, reshapes, slices, transposes, pads and nearest
//    resizes keep their input's parameters (TFLite's kernels require it); a concatenation's
//    inputs and output share the union of their ranges (as the converter does), and by
//    default an ADD's too (`shared_add_params`, for the NPU);
//  - other float constants (the operands of ADD / SUB / MUL...): int8, one asymmetric scale
//    per tensor; a concatenation's constant inputs at its output's parameters.
// The model keeps float inputs and outputs (QUANTIZE after each input, DEQUANTIZE before
// each output, as the converter's "integer_quant") unless `int8_io` asks for int8 ones
// ("full_integer_quant"). The calibration runs execute the float model on the cpu
// reference kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct TESSERA_API QuantizeOptions {
  bool int8_io = false;  // int8 model inputs and outputs instead of float ones
  // An ADD's inputs and output share one set of parameters (the union of their ranges,
  // where the inputs' producers are free to take it), as a concatenation's do: the rknpu
  // device's element-wise stage then adds exactly as TFLite's int8 ADD does (with three
  // different scales its 16-bit encodings miss a few input pairs). False: each keeps its
  // own range, as TensorFlow Lite's converter quantizes.
  bool shared_add_params = true;
};

struct TESSERA_API QuantizeReport {
  int calibration_runs = 0;
  int ops = 0;                 // operators of the written model
  int tensors_quantized = 0;   // activations and constants given int8 / int32 parameters
  int64_t bytes = 0;           // the written model's size
  std::vector<std::string> notes;  // e.g. fp16 weights folded, a tensor the runs never left 0
};

// One calibration run: the raw bytes of each model input (float32 row-major, in the
// model's input order), as the float model takes them.
using CalibrationRun = std::vector<std::vector<uint8_t>>;

// Quantizes the float model in `model` (the .tflite file's bytes). `progress(done, total)`
// is called after each calibration run. Errors: not a TFLite model, no float activations
// (already quantized), an operator outside the supported set (named with its index), a
// calibration run whose input sizes do not match, no calibration run.
TESSERA_API Result<std::vector<uint8_t>> quantize_tflite(const std::vector<uint8_t>& model,
                                                         const std::vector<CalibrationRun>& calibration,
                                                         const QuantizeOptions& opts = {}, QuantizeReport* report = nullptr,
                                                         const std::function<void(int, int)>& progress = {});

}  // namespace tessera
