// Reference kernels: reductions (mean, sum, reduce_max, reduce_min, reduce_prod over attr
// axes), softmax with an optional additive mask, log_softmax, l2_norm, cumsum, arg_max and
// arg_min. Sums and products are
// accumulated in double, except the float softmax without a mask (ops/softmax_f32.h, the
// TFLite interpreter's bits).
#include <limits>
#include <type_traits>

#include "backend/cpu/kernels/kernel_util.h"
#include "convert/simd.h"
#include "ops/softmax_f32.h"

namespace tessera::cpu {

#if defined(__x86_64__)
namespace x86 {
// x86/unary_avx2.cpp and x86/unary_avx512.cpp: ops::softmax_f32_row on contiguous rows, the same bits
void softmax_rows_avx2(const float* x, float* y, int64_t rows, int64_t len, float beta);
void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t len, float beta);
}  // namespace x86
#endif

namespace {

// For every input element, the index of the output element it reduces into. Nothing on
// the heap (DimList): a run allocates nothing.
class ReduceMap {
 public:
  ReduceMap(const Shape& in, const DimList& reduced) : in_(in), out_strides_(in.size()) {
    int64_t stride = 1;
    for (size_t i = in.size(); i-- > 0;) {
      out_strides_[i] = reduced[i] ? 0 : stride;
      if (!reduced[i]) stride *= in[i];
    }
    out_elements_ = stride;
    count_ = num_elements(in) / std::max<int64_t>(out_elements_, 1);
  }
  int64_t out_elements() const { return out_elements_; }
  int64_t count() const { return count_; }  // input elements per output element
  // Calls f(input index, output index) for every input element in row-major order.
  template <typename F>
  void for_each(F f) const {
    int rank = static_cast<int>(in_.size());
    DimList idx(static_cast<size_t>(rank));
    int64_t o = 0;
    for (int64_t i = 0, n = num_elements(in_); i < n; ++i) {
      f(i, o);
      for (int d = rank - 1; d >= 0; --d) {
        o += out_strides_[d];
        if (++idx[d] < in_[d]) break;
        o -= out_strides_[d] * in_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  const Shape& in_;
  DimList out_strides_;
  int64_t out_elements_ = 0;
  int64_t count_ = 0;
};

// 1 for each reduced axis of the input (attr "axes", negative from the end).
Result<DimList> reduced_axes(const KernelContext& c) {
  const size_t rank = c.in[0].shape().size();
  DimList red(rank);
  std::vector<int64_t> holder;
  for (int64_t a : c.n.get(attr::axes)) {
    int64_t ax = a < 0 ? a + static_cast<int64_t>(rank) : a;
    if (ax < 0 || ax >= static_cast<int64_t>(rank)) return kernel_error(c.n, "axis " + std::to_string(a) + " out of range");
    red[static_cast<size_t>(ax)] = 1;
  }
  return red;
}

enum class Reduce { mean, sum, max, min, prod };

template <Reduce kind>
Status reduce(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  TS_ASSIGN_OR_RETURN(auto red, reduced_axes(c));
  ReduceMap map(c.in[0].shape(), red);
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double init = kind == Reduce::max ? -kInf : kind == Reduce::min ? kInf : kind == Reduce::prod ? 1.0 : 0.0;
  thread_local std::vector<double> acc;  // capacity kept: a run allocates nothing
  acc.assign(static_cast<size_t>(map.out_elements()), init);
  map.for_each([&](int64_t i, int64_t o) {
    if constexpr (kind == Reduce::max) acc[o] = std::max(acc[o], static_cast<double>(x[i]));
    else if constexpr (kind == Reduce::min) acc[o] = std::min(acc[o], static_cast<double>(x[i]));
    else if constexpr (kind == Reduce::prod) acc[o] *= x[i];
    else acc[o] += x[i];
  });
  for (int64_t o = 0; o < map.out_elements(); ++o)
    y[o] = static_cast<float>(kind == Reduce::mean ? acc[o] / static_cast<double>(map.count()) : acc[o]);
  return Status::Ok();
}

// Splits a shape around `axis`: outer x len x inner.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const Shape& s, int axis) {
  AxisSplit a;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    if (i < axis) a.outer *= s[i];
    else if (i == axis) a.len = s[i];
    else a.inner *= s[i];
  }
  return a;
}

Result<int> axis_attr(const KernelContext& c, int64_t fallback) {
  const int64_t rank = static_cast<int64_t>(c.in[0].shape().size());
  int64_t a = c.n.get(attr::axis);
  int64_t ax = a < 0 ? a + rank : a;
  if (ax < 0 || ax >= std::max<int64_t>(rank, 1)) return kernel_error(c.n, "axis " + std::to_string(a) + " out of range");
  return static_cast<int>(ax);
}

using SoftmaxRowsFn = void (*)(const float* x, float* y, int64_t rows, int64_t len, float beta);

// The vector rows of the float softmax on this CPU at the current SIMD level (AVX-512 where the
// CPU has it, else AVX2), or null.
SoftmaxRowsFn softmax_vector_rows() {
#if defined(__x86_64__)
  if (!convert::use_avx2()) return nullptr;
  static const bool zmm = convert::cpu_avx512();
  return zmm ? x86::softmax_rows_avx512 : x86::softmax_rows_avx2;
#else
  return nullptr;
#endif
}

// Without a mask: ops::softmax_f32_row on every slice along the axis (TFLite's float SOFTMAX,
// bit for bit). Contiguous rows (the last axis) take the vector rows where the CPU has them,
// split over the pool by rows: each row is computed by one thread, so the bits do not depend on
// the thread count.
void softmax_rows(KernelContext& c, int axis, float beta) {
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  const AxisSplit a = split_at(c.in[0].shape(), axis);
  if (a.len == 0) return;
  const int64_t rows = a.outer * a.inner;
  const int64_t min_rows = std::max<int64_t>(1, (int64_t{1} << 13) / a.len);
  const SoftmaxRowsFn vec = a.inner == 1 ? softmax_vector_rows() : nullptr;
  parallel_rows(c, rows, [&](int64_t r0, int64_t r1) {
    if (vec) {
      vec(x + r0 * a.len, y + r0 * a.len, r1 - r0, a.len, beta);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = r / a.inner * a.len * a.inner + r % a.inner;
      ops::softmax_f32_row(x + base, y + base, a.len, beta, a.inner);
    }
  }, min_rows);
}

// y = softmax(beta * x + mask) along attr axis; the mask (in 1, optional) broadcasts to x.
// Without a mask the interpreter's float form (softmax_rows); with one the textbook form below,
// the sums in double, where a slice whose inputs are all -inf (fully masked) gives zeros.
Status softmax(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0, 1}));
  TS_ASSIGN_OR_RETURN(int axis, axis_attr(c, -1));
  const Shape& s = c.in[0].shape();
  const double beta = c.n.get(attr::beta);
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  const bool has_mask = c.in.size() > 1 && c.in[1];
  if (!has_mask) {
    softmax_rows(c, axis, static_cast<float>(beta));
    return Status::Ok();
  }
  // The mask value of every element, expanded through broadcasting (0 without a mask).
  thread_local std::vector<float> z;  // capacity kept: a run allocates nothing
  z.resize(static_cast<size_t>(c.in[0].elements()));
  {
    DimList ms = has_mask ? broadcast_strides(s, c.in[1].shape()) : DimList(s.size());
    const float* mask = has_mask ? c.in[1].as<float>() : nullptr;
    int rank = static_cast<int>(s.size());
    DimList idx(static_cast<size_t>(rank));
    int64_t mi = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(z.size()); ++i) {
      z[i] = static_cast<float>(beta * x[i]) + (mask ? mask[mi] : 0.0f);
      for (int d = rank - 1; d >= 0; --d) {
        mi += ms[d];
        if (++idx[d] < s[d]) break;
        mi -= ms[d] * s[d];
        idx[d] = 0;
      }
    }
  }
  AxisSplit a = split_at(s, axis);
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.len * a.inner + in;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < a.len; ++k) mx = std::max(mx, z[base + k * a.inner]);
      if (mx == -std::numeric_limits<float>::infinity()) {
        for (int64_t k = 0; k < a.len; ++k) y[base + k * a.inner] = 0.0f;
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < a.len; ++k) sum += std::exp(static_cast<double>(z[base + k * a.inner]) - mx);
      for (int64_t k = 0; k < a.len; ++k)
        y[base + k * a.inner] = static_cast<float>(std::exp(static_cast<double>(z[base + k * a.inner]) - mx) / sum);
    }
  }
  return Status::Ok();
}

// Index of the first maximum along attr axis. Works on the stored values of any ordered
// dtype: for u8 / i8 / i16 with quantization the order of codes is the order of values
// (scale > 0), so the same kernel serves the quantized path.
// arg_min: the first minimum, the same way.
template <typename T>
void arg_max_loop(const T* x, const AxisSplit& a, bool min, const std::function<void(int64_t, int64_t)>& put) {
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.len * a.inner + in;
      int64_t best = 0;
      for (int64_t k = 1; k < a.len; ++k) {
        const T v = x[base + k * a.inner], b = x[base + best * a.inner];
        if (min ? v < b : v > b) best = k;
      }
      put(o * a.inner + in, best);
    }
}

Status arg_max(KernelContext& c) {
  TS_ASSIGN_OR_RETURN(int axis, axis_attr(c, -1));
  AxisSplit a = split_at(c.in[0].shape(), axis);
  const bool min = c.n.op == OpKind::arg_min;
  if (a.len == 0) return kernel_error(c.n, std::string(op_name(c.n.op)) + " over an empty axis");
  DType ot = c.out[0].dtype();
  if (ot != DType::i32 && ot != DType::i64) return kernel_error(c.n, "output must be i32 or i64");
  auto put = [&](int64_t i, int64_t v) {
    if (ot == DType::i32) c.out[0].as<int32_t>()[i] = static_cast<int32_t>(v);
    else c.out[0].as<int64_t>()[i] = v;
  };
  const uint8_t* x = c.in[0].data;
  switch (c.in[0].dtype()) {
    case DType::f32: arg_max_loop(reinterpret_cast<const float*>(x), a, min, put); break;
    case DType::i32: arg_max_loop(reinterpret_cast<const int32_t*>(x), a, min, put); break;
    case DType::i64: arg_max_loop(reinterpret_cast<const int64_t*>(x), a, min, put); break;
    case DType::u8: arg_max_loop(reinterpret_cast<const uint8_t*>(x), a, min, put); break;
    case DType::i8: arg_max_loop(reinterpret_cast<const int8_t*>(x), a, min, put); break;
    case DType::i16: arg_max_loop(reinterpret_cast<const int16_t*>(x), a, min, put); break;
    default:
      return kernel_error(c.n, std::string(op_name(c.n.op)) + " takes f32, i32, i64, u8, i8 or i16, got " +
                                   dtype_name(c.in[0].dtype()));
  }
  return Status::Ok();
}

// log_softmax along the last axis: x - max - log(sum e^(x - max)), the sum in double.
Status log_softmax(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * depth;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < depth; ++i) mx = std::max(mx, xr[i]);
    double sum = 0;
    for (int64_t i = 0; i < depth; ++i) sum += std::exp(static_cast<double>(xr[i]) - mx);
    const double log_sum = std::log(sum);
    for (int64_t i = 0; i < depth; ++i) y[r * depth + i] = static_cast<float>(static_cast<double>(xr[i]) - mx - log_sum);
  }
  return Status::Ok();
}

// l2_norm along the last axis: x / max(sqrt(sum x^2), eps), the sum in double.
Status l2_norm(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const int64_t depth = c.in[0].shape().back();
  const int64_t rows = depth ? c.in[0].elements() / depth : 0;
  const double eps = c.n.get(attr::eps);
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * depth;
    double sq = 0;
    for (int64_t i = 0; i < depth; ++i) sq += static_cast<double>(xr[i]) * xr[i];
    const double norm = std::max(std::sqrt(sq), eps);
    for (int64_t i = 0; i < depth; ++i) y[r * depth + i] = static_cast<float>(xr[i] / norm);
  }
  return Status::Ok();
}

// cumsum along attr axis, in the input's type, added in order along the axis (as TFLite's
// CUMSUM, so float sums round the same way): exclusive leaves each element's own value
// out, reverse runs from the end. Integer sums wrap around (two's complement) rather than
// overflow.
template <typename T>
T cumsum_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
void cumsum_loop(const T* x, T* y, const AxisSplit& a, bool exclusive, bool reverse) {
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.len * a.inner + in;
      T acc = 0;
      for (int64_t j = 0; j < a.len; ++j) {
        const int64_t k = reverse ? a.len - 1 - j : j;
        const int64_t i = base + k * a.inner;
        if (exclusive) {
          y[i] = acc;
          acc = cumsum_add(acc, x[i]);
        } else {
          acc = cumsum_add(acc, x[i]);
          y[i] = acc;
        }
      }
    }
}

Status cumsum(KernelContext& c) {
  TS_ASSIGN_OR_RETURN(int axis, axis_attr(c, 0));
  const AxisSplit a = split_at(c.in[0].shape(), axis);
  const bool exclusive = c.n.get(attr::exclusive) != 0, reverse = c.n.get(attr::reverse) != 0;
  if (c.out[0].dtype() != c.in[0].dtype()) return kernel_error(c.n, "output dtype must equal the input's");
  switch (c.in[0].dtype()) {
    case DType::f32: cumsum_loop(c.in[0].as<float>(), c.out[0].as<float>(), a, exclusive, reverse); break;
    case DType::i32: cumsum_loop(c.in[0].as<int32_t>(), c.out[0].as<int32_t>(), a, exclusive, reverse); break;
    case DType::i64: cumsum_loop(c.in[0].as<int64_t>(), c.out[0].as<int64_t>(), a, exclusive, reverse); break;
    default:
      return kernel_error(c.n, std::string("cumsum takes f32, i32 or i64, got ") + dtype_name(c.in[0].dtype()));
  }
  return Status::Ok();
}

}  // namespace

void register_reduce_kernels(KernelTable& t) {
  t.add(OpKind::mean, KernelKind::plain, reduce<Reduce::mean>);
  t.add(OpKind::sum, KernelKind::plain, reduce<Reduce::sum>);
  t.add(OpKind::reduce_max, KernelKind::plain, reduce<Reduce::max>);
  t.add(OpKind::reduce_min, KernelKind::plain, reduce<Reduce::min>);
  t.add(OpKind::reduce_prod, KernelKind::plain, reduce<Reduce::prod>);
  t.add(OpKind::softmax, KernelKind::plain, softmax);
  t.add(OpKind::arg_max, KernelKind::plain, arg_max);
  t.add(OpKind::arg_max, KernelKind::quant, arg_max);  // compares codes: valid for any scale > 0
  t.add(OpKind::arg_min, KernelKind::plain, arg_max);
  t.add(OpKind::arg_min, KernelKind::quant, arg_max);
  t.add(OpKind::log_softmax, KernelKind::plain, log_softmax);
  t.add(OpKind::l2_norm, KernelKind::plain, l2_norm);
  t.add(OpKind::cumsum, KernelKind::plain, cumsum);
}

}  // namespace tessera::cpu
