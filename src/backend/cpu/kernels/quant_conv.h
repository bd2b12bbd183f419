// Quantization parameters of TFLite's conv2d, depthwise_conv2d and fully_connected, shared
// by the reference kernels (quant_conv.cpp) and the packed fast path (quant_conv_fast.cpp)
// so that both requantize with the same multipliers, rounding and clamp range.
#pragma once

#include <vector>

#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

struct ConvQuant {
  int32_t x_zp = 0, y_zp = 0;
  std::vector<int32_t> w_zp;        // per output channel
  std::vector<q::Multiplier> mult;  // per output channel
  q::Range range{};
  // Requantize with q::multiply_single_round instead of the double-rounding q::multiply.
  bool single_round = false;
};

// Multipliers and zero points of a conv-like node `n` with input x, filter w, output y,
// `oc` output channels (weights quantized along the channel axis when per-channel),
// `bias` the optional i32 bias tensor. `float_product` selects TFLite's legacy form of
// the multiplier for per-tensor weights: double(float(in_s * w_s)) / out_s.
Result<ConvQuant> conv_quant(const Node& n, const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                             int64_t oc, bool float_product);

// Requantizes one accumulator of output channel o as TFLite does.
inline int32_t conv_requantize(int32_t acc, int64_t o, const int32_t* bias, const ConvQuant& p) {
  acc += bias ? bias[o] : 0;
  const q::Multiplier& m = p.mult[o];
  const int32_t v = p.single_round ? q::multiply_single_round(acc, m.multiplier, m.shift) : q::multiply(acc, m);
  return q::clamp(v + p.y_zp, p.range.lo, p.range.hi);
}

// The packed fast path (quant_conv_fast.cpp): PrepareFns that pack a node's constant
// weights (nullptr when they are not constants, or for shapes the path does not take:
// grouped conv, depth multiplier), and the kernel that runs a prepared node.
Result<std::unique_ptr<PreparedKernel>> prepare_packed_conv2d(const Graph& g, const Node& n);
Result<std::unique_ptr<PreparedKernel>> prepare_packed_depthwise(const Graph& g, const Node& n);
Result<std::unique_ptr<PreparedKernel>> prepare_packed_fully_connected(const Graph& g, const Node& n);
Status run_packed_conv(KernelContext& c);

// TFLite's 16x8 form (int16 activations, int8 weights, int64 or int32 bias; the reference
// kernels, quant_conv16.cpp). Quant16 holds a node's multipliers, clamp range and bias;
// quant16 checks the operands (filter in 1 with `oc` output channels, bias in 2) and makes
// it; `float_product` as for conv_quant.
struct Quant16 {
  std::vector<q::Multiplier> mult;  // per output channel
  q::Range range{};
  const int64_t* bias64 = nullptr;  // [OC] or null
  const int32_t* bias32 = nullptr;  // [OC] or null
  int64_t bias(int64_t o) const { return bias64 ? bias64[o] : bias32 ? bias32[o] : 0; }
  // TFLite's kernels are templated on the bias type: an int64 bias gets an int64 accumulator
  // and the int64 rescale; an int32 bias, or none, an int32 accumulator (wrapping as
  // TFLite's does) and the 32-bit double-rounding rescale.
  int16_t requantize(int64_t acc, int64_t o) const {
    int32_t v;
    if (bias64) {
      v = q::multiply_int64(acc + bias64[o], mult[o]);
    } else {
      const uint32_t wrapped = static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias32 ? bias32[o] : 0);
      v = q::multiply(static_cast<int32_t>(wrapped), mult[o]);
    }
    return static_cast<int16_t>(q::clamp(v, range.lo, range.hi));
  }
};
Result<Quant16> quant16(const KernelContext& c, int64_t oc, bool float_product);
Status conv2d_16x8(KernelContext& c);
Status depthwise_conv2d_16x8(KernelContext& c);
Status fully_connected_16x8(KernelContext& c);

}  // namespace tessera::cpu
