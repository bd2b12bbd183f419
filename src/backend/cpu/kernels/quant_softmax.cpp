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

template <typename TI, typename TO>
void softmax_rows(const Rows& r, const TI* x, TO* y, int64_t r0, int64_t r1) {
  const int64_t depth = r.depth;
  for (int64_t row = r0; row < r1; ++row) {
    const TI* xr = x + row * depth;
    TO* yr = y + row * depth;
    int32_t max_in_row = std::numeric_limits<TI>::min();
    for (int64_t i = 0; i < depth; ++i) max_in_row = std::max<int32_t>(max_in_row, xr[i]);
    const float* e = r.exp_of;
    float sum = 0.0f;
    for (int64_t i = 0; i < depth; ++i) sum += e[max_in_row - xr[i]];
    const float inv = 1.0f / (sum * r.out_scale);
    for (int64_t i = 0; i < depth; ++i) {
      float p = e[max_in_row - xr[i]] * inv;
      // p lies in [0, 1 / out_scale] for any sane parameters; the guard keeps the
      // conversions defined for the rest (a NaN or huge p) without changing any other.
      if (!(p >= 0.0f)) p = 0.0f;
      p = std::min(p, 1e9f);
      const int32_t code = std::is_same_v<TO, uint8_t> ? static_cast<int32_t>(p + 0.5f)
                                                       : static_cast<int32_t>(std::round(p)) + r.out_zero;
      yr[i] = static_cast<TO>(std::clamp(code, r.out_min, r.out_max));
    }
  }
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
