// Reference kernels: quantize (f32 -> u8 / i8 / i16) and dequantize (u8 / i8 / i16 with
// quantization parameters, f16, bf16, q8_0, q4_0 -> f32).
//
// Affine quantization follows TFLite's reference AffineQuantize / Dequantize:
//   q = clamp(round(x / scale) + zero_point, qmin, qmax), round half away from zero, the
//   division in double (TFLite holds the scale as a double there, so that x / scale landing
//   on a float tie such as -50.5 rounds as the exact quotient does);
//   x = scale * (q - zero_point).
// Per-axis parameters use the scale and zero point of the element's index along `axis`.
#include <limits>

#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// Index along the quantization axis of each element: (i / inner) % len.
struct AxisIndex {
  int64_t inner = 1, len = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const { return per_axis ? (i / inner) % len : 0; }
};

Result<AxisIndex> axis_index(const KernelContext& c, const QuantParams& q, const Shape& s) {
  AxisIndex a;
  if (!q.per_axis()) return a;
  const int64_t ax = q.axis;
  if (ax < 0 || ax >= static_cast<int64_t>(s.size()))
    return kernel_error(c.n, "quantization axis " + std::to_string(q.axis) + " outside rank " + std::to_string(s.size()));
  a.per_axis = true;
  a.len = s[ax];
  for (size_t d = ax + 1; d < s.size(); ++d) a.inner *= s[d];
  if (static_cast<int64_t>(q.scale.size()) != a.len)
    return kernel_error(c.n, std::to_string(q.scale.size()) + " scales for " + std::to_string(a.len) + " channels");
  return a;
}

template <typename T>
void quantize_loop(const float* x, T* y, int64_t n, const QuantParams& q, const AxisIndex& ax) {
  const int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ch = ax(i);
    // Clamped before the integer conversion so that huge or infinite inputs saturate.
    const double r = std::clamp(std::round(static_cast<double>(x[i]) / static_cast<double>(q.scale_at(ch))), -1e9, 1e9);
    const int64_t v = static_cast<int64_t>(r) + q.zero_point_at(ch);
    y[i] = static_cast<T>(std::clamp(v, lo, hi));
  }
}

Status quantize(KernelContext& c) {
  if (c.in[0].dtype() != DType::f32) return kernel_error(c.n, std::string("input must be f32, got ") + dtype_name(c.in[0].dtype()));
  const QuantParams& q = c.out[0].t->quant;
  if (q.empty()) return kernel_error(c.n, "output '" + c.out[0].t->name + "' has no quantization parameters");
  TS_ASSIGN_OR_RETURN(AxisIndex ax, axis_index(c, q, c.out[0].shape()));
  const float* x = c.in[0].as<float>();
  const int64_t n = c.in[0].elements();
  switch (c.out[0].dtype()) {
    case DType::u8: quantize_loop(x, c.out[0].as<uint8_t>(), n, q, ax); break;
    case DType::i8: quantize_loop(x, c.out[0].as<int8_t>(), n, q, ax); break;
    case DType::i16: quantize_loop(x, c.out[0].as<int16_t>(), n, q, ax); break;
    default: return kernel_error(c.n, std::string("output must be u8, i8 or i16, got ") + dtype_name(c.out[0].dtype()));
  }
  return Status::Ok();
}

template <typename T>
void dequantize_loop(const T* x, float* y, int64_t n, const QuantParams& q, const AxisIndex& ax) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ch = ax(i);
    y[i] = static_cast<float>(static_cast<double>(q.scale_at(ch)) * static_cast<double>(x[i] - q.zero_point_at(ch)));
  }
}

Status dequantize(KernelContext& c) {
  const TensorRef& x = c.in[0];
  if (c.out[0].dtype() != DType::f32) return kernel_error(c.n, "output must be f32");
  float* y = c.out[0].as<float>();
  const int64_t n = x.elements();
  const DType t = x.dtype();
  if (t == DType::f16 || t == DType::bf16 || dtype_is_block(t)) {
    // Rows along the last dim, decoded 32 values at a time.
    const int64_t d = x.shape().empty() ? 1 : x.shape().back();
    if (dtype_is_block(t) && d % kQBlock != 0) return kernel_error(c.n, "block rows must be a multiple of 32 values");
    const int64_t rows = d == 0 ? 0 : n / d, rb = row_bytes(t, d);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b * kQBlock < d; ++b)
        load_chunk(t, x.data + r * rb, b, std::min<int64_t>(kQBlock, d - b * kQBlock), y + r * d + b * kQBlock);
    return Status::Ok();
  }
  const QuantParams& q = x.t->quant;
  if (q.empty()) return kernel_error(c.n, "input '" + x.t->name + "' has no quantization parameters");
  TS_ASSIGN_OR_RETURN(AxisIndex ax, axis_index(c, q, x.shape()));
  switch (t) {
    case DType::u8: dequantize_loop(x.as<uint8_t>(), y, n, q, ax); break;
    case DType::i8: dequantize_loop(x.as<int8_t>(), y, n, q, ax); break;
    case DType::i16: dequantize_loop(x.as<int16_t>(), y, n, q, ax); break;
    case DType::i32: dequantize_loop(x.as<int32_t>(), y, n, q, ax); break;
    default: return kernel_error(c.n, std::string("cannot dequantize ") + dtype_name(t));
  }
  return Status::Ok();
}

}  // namespace

void register_quant_plain_kernels(KernelTable& t) {
  t.add(OpKind::quantize, KernelKind::plain, quantize);
  t.add(OpKind::dequantize, KernelKind::plain, dequantize);
  // An int input with quantization parameters selects the quantized kind; dequantizing is
  // exact arithmetic, so this kernel serves it unless the quantized family registers its own.
  t.add(OpKind::dequantize, KernelKind::quant, dequantize);
}

}  // namespace tessera::cpu
