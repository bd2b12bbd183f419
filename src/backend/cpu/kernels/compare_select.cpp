// Kernels: the comparisons (equal, not_equal, less, less_equal, greater, greater_equal) and
// select, with numpy broadcasting. Comparisons take f32, integers, and u8 / i8 with
// QuantParams, which TFLite compares after rescaling both operands (comparisons.cc
// ComparisonQuantized); the output is boolean (one byte, 0 or 1). select copies elements of
// any fixed-size dtype, so quantized operands pass through unchanged.
#include <array>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

// Calls f(i, offsets) for every output element i, with each input's element offset. The
// strides and the index live in per-thread buffers that keep their size, so a run
// allocates nothing once they have grown.
template <size_t N, typename F>
void for_each_broadcast_n(const Shape& out, const std::array<const Shape*, N>& ins, F&& f) {
  thread_local std::array<std::vector<int64_t>, N> st;
  thread_local std::vector<int64_t> idx;
  for (size_t k = 0; k < N; ++k) broadcast_strides_into(out, *ins[k], st[k]);
  const int rank = static_cast<int>(out.size());
  idx.assign(static_cast<size_t>(rank), 0);
  std::array<int64_t, N> off{};
  for (int64_t i = 0, total = num_elements(out); i < total; ++i) {
    f(i, off);
    for (int d = rank - 1; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
      if (++idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
bool compare(OpKind op, T a, T b) {
  switch (op) {
    case OpKind::equal: return a == b;
    case OpKind::not_equal: return a != b;
    case OpKind::less: return a < b;
    case OpKind::less_equal: return a <= b;
    case OpKind::greater: return a > b;
    default: return a >= b;  // greater_equal
  }
}

template <typename T, typename Value>
void compare_loop(KernelContext& c, Value value) {
  const T* a = c.in[0].as<T>();
  const T* b = c.in[1].as<T>();
  uint8_t* y = c.out[0].data;
  const OpKind op = c.n.op;
  for_each_broadcast_n<2>(c.out[0].shape(), {&c.in[0].shape(), &c.in[1].shape()}, [&](int64_t i, const auto& off) {
    y[i] = compare(op, value(0, a[off[0]]), value(1, b[off[1]])) ? 1 : 0;
  });
}

Status check_compare(const KernelContext& c) {
  if (c.in[0].dtype() != c.in[1].dtype())
    return kernel_error(c.n, std::string("operands must share one dtype, got ") + dtype_name(c.in[0].dtype()) + " and " +
                                 dtype_name(c.in[1].dtype()));
  if (c.out[0].dtype() != DType::boolean)
    return kernel_error(c.n, std::string("output must be boolean, got ") + dtype_name(c.out[0].dtype()));
  return Status::Ok();
}

// Stored values compared as they are: floats, integers, booleans.
Status compare_plain(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_compare(c));
  auto raw = [](int, auto v) { return v; };
  switch (c.in[0].dtype()) {
    case DType::f32: compare_loop<float>(c, raw); break;
    case DType::i32: compare_loop<int32_t>(c, raw); break;
    case DType::i64: compare_loop<int64_t>(c, raw); break;
    case DType::i16: compare_loop<int16_t>(c, raw); break;
    case DType::i8: compare_loop<int8_t>(c, raw); break;
    case DType::u8: case DType::boolean: compare_loop<uint8_t>(c, raw); break;
    default: return kernel_error(c.n, std::string("dtype ") + dtype_name(c.in[0].dtype()) + " is not supported");
  }
  return Status::Ok();
}

// u8 / i8 (comparisons.cc ComparisonQuantized, reference_ops ComparisonWithScaling): each
// operand (x - zero point) << 8, times its scale as a multiplier below one; int16 operands
// are compared as stored, as TFLite does.
Status compare_quant(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_compare(c));
  const DType t = c.in[0].dtype();
  if (t == DType::i16) {
    compare_loop<int16_t>(c, [](int, int16_t v) { return v; });
    return Status::Ok();
  }
  for (int k = 0; k < 2; ++k) TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[k].t));
  constexpr int kLeftShift = 8;  // comparisons.cc: "const int left_shift = 8;"
  q::Multiplier m[2];
  int32_t zp[2];
  for (int k = 0; k < 2; ++k) {
    const float s = c.in[k].t->quant.scale[0];
    if (!(s < 1.0f)) return kernel_error(c.n, "input '" + c.in[k].t->name + "' has scale >= 1 (TFLite needs a multiplier below one)");
    m[k] = q::quantize_multiplier(static_cast<double>(s));
    zp[k] = static_cast<int32_t>(c.in[k].t->quant.zero_point_at(0));
  }
  auto scaled = [&](int k, int32_t v) { return q::multiply((v - zp[k]) * (1 << kLeftShift), m[k]); };
  if (t == DType::i8) compare_loop<int8_t>(c, [&](int k, int8_t v) { return scaled(k, v); });
  else compare_loop<uint8_t>(c, [&](int k, uint8_t v) { return scaled(k, v); });
  return Status::Ok();
}

// select (TFLite SELECT_V2): y = cond ? a : b, element by element, by the element's bytes.
Status select(KernelContext& c) {
  if (c.in[0].dtype() != DType::boolean)
    return kernel_error(c.n, "condition '" + c.in[0].t->name + "' must be boolean, got " + dtype_name(c.in[0].dtype()));
  const DType t = c.out[0].dtype();
  if (c.in[1].dtype() != t || c.in[2].dtype() != t) return kernel_error(c.n, "inputs and output must share one dtype");
  if (c.in[1].t->quant != c.out[0].t->quant || c.in[2].t->quant != c.out[0].t->quant)
    return kernel_error(c.n, "inputs and output must share quantization parameters");
  const int es = dtype_size(t);
  if (es <= 0) return kernel_error(c.n, std::string("dtype ") + dtype_name(t) + " is not supported");
  const uint8_t *cond = c.in[0].data, *a = c.in[1].data, *b = c.in[2].data;
  uint8_t* y = c.out[0].data;
  for_each_broadcast_n<3>(c.out[0].shape(), {&c.in[0].shape(), &c.in[1].shape(), &c.in[2].shape()},
                          [&](int64_t i, const auto& off) {
                            const uint8_t* src = cond[off[0]] ? a + off[1] * es : b + off[2] * es;
                            std::memcpy(y + i * es, src, static_cast<size_t>(es));
                          });
  return Status::Ok();
}

}  // namespace

void register_compare_select_kernels(KernelTable& t) {
  for (OpKind op : {OpKind::equal, OpKind::not_equal, OpKind::less, OpKind::less_equal, OpKind::greater,
                    OpKind::greater_equal}) {
    t.add(op, KernelKind::plain, compare_plain);
    t.add(op, KernelKind::quant, compare_quant);
  }
  t.add(OpKind::select, KernelKind::plain, select);
}

}  // namespace tessera::cpu
