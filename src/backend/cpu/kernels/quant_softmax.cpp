// Quantized softmax (u8 / i8 in, u8 / i8 out, or i8 in and i16 out) computed the way the
// TFLite interpreter's builtin kernel does it for 8-bit inputs (its optimized path, not the
// gemmlowp reference; the i16 output is the same template, Softmax<int8_t, int16_t>).
//
// The interpreter's arithmetic, all in float32:
//  * once per operator: e[d] = expf(s * d) for every row-maximum difference d in 0..255,
//    where s = -input_scale * beta (input scale and beta as the file stores them, float);
//  * per row: m = the largest code; sum = e[m - x] accumulated left to right over the row;
//    inv = 1 / (sum * output_scale);
//  * per value: p = e[m - x] * inv, then the output code is roundf(p) + zero_point for i8
//    and i16 outputs and the truncation of p + 0.5f for u8 outputs (which ignores the zero point;
//    TFLite requires it to be 0), clamped to the output type's range.
// Every step is a single float operation with a fixed order, so the codes are the same
// bits as the interpreter's, given an expf that is correctly rounded where it matters (the
// platform's expf; glibc's and the interpreter's musl use the same algorithm).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

struct SoftmaxTable : PreparedKernel {
  float exp_of[256] = {};  // exp_of[d]: expf(-input_scale * beta * d)
};

SoftmaxTable softmax_table(float input_scale, float beta) {
  SoftmaxTable t;
  const float s = -input_scale * beta;
  for (int32_t d = 0; d < 256; ++d) t.exp_of[d] = std::exp(s * static_cast<float>(d));
  return t;
}

// Per-tensor 8-bit input (else nullptr: the kernel reports what is wrong).
Result<std::unique_ptr<PreparedKernel>> prepare_softmax(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  if (x.quant.scale.size() != 1 || (x.dtype != DType::u8 && x.dtype != DType::i8)) return std::unique_ptr<PreparedKernel>();
  return std::unique_ptr<PreparedKernel>(
      std::make_unique<SoftmaxTable>(softmax_table(x.quant.scale[0], static_cast<float>(n.get(attr::beta)))));
}

// The rows [r0, r1) of one softmax, typed (TI: u8 or i8 input; TO: u8, i8 or i16 output):
// the float operations above in their order, so any split of the rows gives the same bits.
struct Rows {
  const float* exp_of;
  float out_scale;
  int32_t out_zero, out_min, out_max;
  int64_t depth;
};

// The output code of p (>= 0, at most 1e9: the caller's guard): TFLite's roundf(p) +
// zero point for i8 / i16, the truncation of p + 0.5f for u8. roundf rounds halves away
// from zero; for p >= 0 that is trunc(p) + (p - trunc(p) >= 0.5), whose subtraction is
// exact (p and trunc(p) lie within a factor of two, or trunc(p) is 0; past 2^23 every
// float is whole), so the code is the same without a library call (checked against
// std::round on every float from 0 to 1e9, 1,315,859,241 of them: none differs).
template <typename TO>
inline int32_t softmax_code(float p, int32_t out_zero) {
  if constexpr (std::is_same_v<TO, uint8_t>) {
    return static_cast<int32_t>(p + 0.5f);
  } else {
    const int32_t t = static_cast<int32_t>(p);
    return t + (p - static_cast<float>(t) >= 0.5f ? 1 : 0) + out_zero;
  }
}

template <typename TO>
inline TO softmax_value(float e, float inv, const Rows& r) {
  float p = e * inv;
  // p lies in [0, 1 / out_scale] for any sane parameters; the guard keeps the
  // conversions defined for the rest (a NaN or huge p) without changing any other.
  if (!(p >= 0.0f)) p = 0.0f;
  p = std::min(p, 1e9f);
  return static_cast<TO>(std::clamp(softmax_code<TO>(p, r.out_zero), r.out_min, r.out_max));
}

// Rows [row, row + kBlock) of depth D (a compile-time depth when D > 0, else r.depth):
// each row's sum still adds its terms left to right, but the block's rows are independent
// chains the cpu overlaps (one row's sum alone waits on every addition in turn); the bits
// are the one-row loop's.
template <typename TI, typename TO, int kBlock, int64_t D>
void softmax_block(const Rows& r, const TI* xr, TO* yr) {
  const int64_t depth = D > 0 ? D : r.depth;
  const float* e = r.exp_of;
  int32_t m[kBlock];
  float sum[kBlock], inv[kBlock];
  for (int k = 0; k < kBlock; ++k) {
    int32_t v = std::numeric_limits<TI>::min();
    for (int64_t i = 0; i < depth; ++i) v = std::max<int32_t>(v, xr[k * depth + i]);
    m[k] = v;
    sum[k] = 0.0f;
  }
  for (int64_t i = 0; i < depth; ++i)
    for (int k = 0; k < kBlock; ++k) sum[k] += e[m[k] - xr[k * depth + i]];
  for (int k = 0; k < kBlock; ++k) inv[k] = 1.0f / (sum[k] * r.out_scale);
  for (int k = 0; k < kBlock; ++k)
    for (int64_t i = 0; i < depth; ++i) yr[k * depth + i] = softmax_value<TO>(e[m[k] - xr[k * depth + i]], inv[k], r);
}

template <typename TI, typename TO>
void softmax_rows(const Rows& r, const TI* x, TO* y, int64_t r0, int64_t r1) {
  constexpr int kBlock = 8;
  const int64_t depth = r.depth;
  int64_t row = r0;
  for (; row + kBlock <= r1; row += kBlock) {
    if (depth == 16)  // YOLOv8's DFL: 16 bins per box side
      softmax_block<TI, TO, kBlock, 16>(r, x + row * depth, y + row * depth);
    else
      softmax_block<TI, TO, kBlock, 0>(r, x + row * depth, y + row * depth);
  }
  for (; row < r1; ++row) softmax_block<TI, TO, 1, 0>(r, x + row * depth, y + row * depth);
}

Status softmax(KernelContext& c) {
  if (c.in[0].dtype() == DType::i16) return q::softmax_i16(c);  // quant_int16.cpp
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t, /*allow_i16=*/true));
  if (c.out[0].dtype() != c.in[0].dtype() && !(c.in[0].dtype() == DType::i8 && c.out[0].dtype() == DType::i16))
    return kernel_error(c.n, std::string("a ") + dtype_name(c.in[0].dtype()) + " input needs an output of the same dtype (or i16 for i8), got " +
                                 dtype_name(c.out[0].dtype()));
  if (c.in.size() > 1 && c.in[1]) return kernel_error(c.n, "a mask is not supported for quantized softmax");
  const int64_t rank = static_cast<int64_t>(c.in[0].shape().size());
  const int64_t axis = c.n.get(attr::axis);
  if (axis != -1 && axis != rank - 1) return kernel_error(c.n, "quantized softmax runs along the last axis only");
  const DType ti = c.in[0].dtype(), to = c.out[0].dtype();
  const float out_scale = c.out[0].t->quant.scale[0];
  if (!(out_scale > 0) || !std::isfinite(out_scale))
    return kernel_error(c.n, "output '" + c.out[0].t->name + "' has scale " + std::to_string(out_scale) +
                                 "; softmax needs a positive one");
  const int32_t out_zero = static_cast<int32_t>(c.out[0].t->quant.zero_point[0]);
  SoftmaxTable made;
  if (!c.prepared) made = softmax_table(c.in[0].t->quant.scale[0], static_cast<float>(c.n.get(attr::beta)));
  const float* exp_of = (c.prepared ? static_cast<const SoftmaxTable&>(*c.prepared) : made).exp_of;
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const Rows r{exp_of, out_scale, out_zero, q::qmin(to), q::qmax(to), depth};
  auto run = [&](auto in_tag, auto out_tag) {
    using TI = decltype(in_tag);
    using TO = decltype(out_tag);
    const TI* x = reinterpret_cast<const TI*>(c.in[0].data);
    TO* y = reinterpret_cast<TO*>(c.out[0].data);
    parallel_rows(c, rows, [&](int64_t r0, int64_t r1) { softmax_rows<TI, TO>(r, x, y, r0, r1); },
                  min_rows_per_chunk(4 * depth));
  };
  if (ti == DType::u8) run(uint8_t{}, uint8_t{});
  else if (to == DType::i16) run(int8_t{}, int16_t{});
  else run(int8_t{}, int8_t{});
  return Status::Ok();
}

}  // namespace

void register_quant_softmax_kernels(KernelTable& t) { t.add(OpKind::softmax, KernelKind::quant, softmax, prepare_softmax); }

}  // namespace tessera::cpu
