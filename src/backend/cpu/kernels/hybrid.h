// Hybrid (dynamic-range quantized) conv2d, depthwise_conv2d and fully_connected: f32
// activations with int8 weights (per-tensor or per-output-channel scales, zero points 0),
// computed the way the TFLite interpreter's builtin kernels do (hybrid.cpp).
#pragma once

#include "backend/cpu/kernel.h"

namespace tessera::cpu {

// True when the node's input 0 is f32 and its weights (input 1) are int8 with
// quantization parameters: the plain kernels hand such nodes to the functions below.
bool hybrid_weights(const KernelContext& c);

Status hybrid_conv2d(KernelContext& c);
Status hybrid_depthwise_conv2d(KernelContext& c);
Status hybrid_fully_connected(KernelContext& c);
// matmul of f32 a with int8 b (TFLite's hybrid BATCH_MATMUL; quant_matmul.cpp).
Status hybrid_matmul(KernelContext& c);

// TFLite's SymmetricQuantizeFloats: codes roundf(v * 127 / range) clamped to [-127, 127],
// range = max |v|; returns the scale range / 127 (1 for an all-zero vector, whose codes are 0).
float quantize_symmetric_row(const float* v, int64_t n, int8_t* codes);
// TFLite's AsymmetricQuantizeFloats (hybrid.cpp's file comment): codes in [-128, 127] with
// the zero point *offset; returns the scale (1, offset 0 and zero codes when min == max).
float quantize_asymmetric_row(const float* v, int64_t n, int8_t* codes, int32_t* offset);
// The on-the-fly quantization of one batch row from its minimum and maximum (the rules in
// hybrid.cpp's file comment), shared by the reference kernels and the fast conv path
// (hybrid_fast.cpp): code = hybrid_code(v) = round_clamp(add + v * inv) to [lo, hi]
// (float multiply, then float add, never fused; halves away from zero; NaN gives 0);
// `zero`: every code is 0 (scale 1, offset 0). The symmetric form has add = 0, which
// gives the same codes as v * inv alone (it changes only the sign of a zero).
struct HybridQuant {
  float scale = 1.0f;
  int32_t offset = 0;
  float inv = 0.0f, add = 0.0f;
  int32_t lo = -128, hi = 127;
  bool zero = true;
};
HybridQuant hybrid_quant(float mn, float mx, bool asymmetric);
int32_t hybrid_code(float v, const HybridQuant& h);

// True when the node asks for asymmetric on-the-fly input quantization (hybrid_inputs).
bool asymmetric_inputs(const Node& n);

}  // namespace tessera::cpu
