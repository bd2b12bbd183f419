// A test-only emulation of the arithmetic of the peer implementation behind
// ../shared/reference/*.armnn-output.bin: Arm NN's CpuRef backend running a model read by
// Arm NN's TFLite parser. It exists to show, element by element, why those outputs differ
// from TFLite's own integer arithmetic (which the cpu device reproduces).
//
// The peer's arithmetic, as read from its source (facts, not code):
// - Every quantized operand is decoded to float: real = float(q - zero_point) * scale, one
//   float multiply (per-channel filters use their channel's scale; an i32 bias decodes as
//   float(b) * bias_scale with the bias tensor's own scale from the file).
// - CONV_2D / DEPTHWISE_CONV_2D: per output element, one float accumulator starting at 0,
//   summed in the order input channel (outermost), filter row, filter column; a tap in the
//   convolution's own padding contributes real 0; the bias is added after the loop.
//   FULLY_CONNECTED: the same over the input features, bias after.
// - Every layer's float result is encoded as clamp(round(x / scale) + zero_point), with a
//   float division and rounding half away from zero.
// - A fused activation is a separate layer on the encoded output of its op: decode, clamp
//   in float (relu: max(0, x); relu6: min(6, max(0, x))), encode again.
// - ADD: float sum of the two decoded operands. AVERAGE_POOL_2D: float sum of the window
//   (row, then column) divided by the number of cells inside the input. MEAN: float sums in
//   the input's row-major order, divided by the element count. SOFTMAX: float max, then the
//   sum of std::exp((x - max) * beta) in order, then exp(...) / sum. QUANTIZE of an integer
//   input: decode, encode. RESHAPE and TRANSPOSE move the stored bytes.
// - PAD of a quantized tensor fills the border with the stored value 0, not the zero point
//   (that version's parser left the pad value at its default of 0, later ones set the zero
//   point, and the pad kernel writes the value unscaled). A PAD feeding a CONV_2D is folded into the convolution's own padding by the
//   graph optimizer, and so acts as padding with real 0 (the zero point). Both are options.
//
// The emulation is plain C++ compiled with floating-point contraction off; whether the
// multiply-add of the accumulation is fused (one rounding, as an aarch64 compiler emits it)
// is an explicit option. The defaults are the choices that reproduce the reference outputs
// byte for byte (tests/import/tflite/peer_arithmetic_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "tessera/graph.h"
#include "tessera/status.h"

namespace tessera::testing {

struct PeerOptions {
  // Accumulate with std::fma (one rounding per multiply-add) instead of a float multiply
  // followed by a float add.
  bool fused_multiply_add = false;
  // PAD of a quantized tensor fills its border with the stored value 0 (the peer's
  // behaviour); false: with the output's zero point (TFLite's pad.cc).
  bool pad_with_raw_zero = true;
  // A PAD whose only consumer is a conv2d pads with the zero point whatever
  // pad_with_raw_zero says (the peer's optimizer folds it into the convolution).
  bool fold_pad_into_conv2d = true;
};

// Tensor values by id: row-major bytes in the tensor's dtype (the peer's stored values).
using TensorValues = std::map<TensorId, std::vector<uint8_t>>;

// Computes node `n` of `g` the peer's way from the values of its non-constant inputs in
// `values` (weights are read from the graph) and stores its output there. Errors name the
// node for ops, dtypes or attributes the emulation does not cover.
Status run_peer_node(const Graph& g, const Node& n, TensorValues& values, const PeerOptions& options);

// Runs every node of `g` in order from the model input bytes `input` (g.inputs[0], the
// only input). Returns the values of the input and of every node's output.
Result<TensorValues> run_peer_graph(const Graph& g, const std::vector<uint8_t>& input,
                                    const PeerOptions& options);

}  // namespace tessera::testing
