// Kernels for the ops that only TFLite models bring in: floor_div (f32 / i32), sqrt (f32)
// and gather_nd (any dtype: it moves whole elements, so it serves quantized tensors too).
// They are registered from quant_registry.cpp together with the TFLite-exact kernels.
#include <cstring>

#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// FLOOR_DIV: floor(a / b). i32 rounds toward -infinity (TFLite floor_div.cc FloorDiv);
// an integer division by zero is an error, as in TFLite.
Status floor_div(KernelContext& c) {
  const DType t = c.in[0].dtype();
  if (t != c.in[1].dtype() || t != c.out[0].dtype() || (t != DType::f32 && t != DType::i32))
    return kernel_error(c.n, std::string("operands must both be f32 or both i32, got ") + dtype_name(t) + " and " +
                                 dtype_name(c.in[1].dtype()));
  const Shape& out = c.out[0].shape();
  auto as = broadcast_strides(out, c.in[0].shape()), bs = broadcast_strides(out, c.in[1].shape());
  const int rank = static_cast<int>(out.size());
  DimList idx(static_cast<size_t>(rank));
  for (int64_t i = 0, n = num_elements(out); i < n; ++i) {
    int64_t ia = 0, ib = 0;
    for (int d = 0; d < rank; ++d) {
      ia += idx[d] * as[d];
      ib += idx[d] * bs[d];
    }
    if (t == DType::f32) {
      c.out[0].as<float>()[i] = std::floor(c.in[0].as<float>()[ia] / c.in[1].as<float>()[ib]);
    } else {
      const int32_t a = c.in[0].as<int32_t>()[ia], b = c.in[1].as<int32_t>()[ib];
      if (b == 0) return kernel_error(c.n, "integer division by zero");
      int32_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      c.out[0].as<int32_t>()[i] = q;
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

Status sqrt_f32(KernelContext& c) {
  if (c.in[0].dtype() != DType::f32 || c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("sqrt takes f32, got ") + dtype_name(c.in[0].dtype()));
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) c.out[0].as<float>()[i] = std::sqrt(c.in[0].as<float>()[i]);
  return Status::Ok();
}

// GATHER_ND: out[i, ...] = params[indices[i, 0], ..., indices[i, k-1], ...]. An index
// outside params is an error naming the position (TFLite gather_nd.cc does the same).
Status gather_nd(KernelContext& c) {
  const Shape& ps = c.in[0].shape();
  const Shape& is = c.in[1].shape();
  const int64_t k = is.back();
  const int64_t tuples = num_elements(is) / std::max<int64_t>(k, 1);
  const int es = dtype_size(c.in[0].dtype());
  if (es == 0 || c.out[0].dtype() != c.in[0].dtype()) return kernel_error(c.n, "unsupported dtype");
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < ps.size(); ++d) slice *= ps[d];
  const DimList strides = row_major_dims(ps);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = c.in[1].dtype() == DType::i32 ? c.in[1].as<int32_t>()[t * k + j] : c.in[1].as<int64_t>()[t * k + j];
      if (v < 0 || v >= ps[j])
        return error(StatusCode::out_of_range, "[gather_nd] '", c.n.name, "': index ", v, " at tuple ", t,
                     " is outside dim ", j, " of size ", ps[j]);
      off += v * strides[j];
    }
    std::memcpy(c.out[0].data + t * slice * es, c.in[0].data + off * es, static_cast<size_t>(slice * es));
  }
  return Status::Ok();
}

}  // namespace

void register_tflite_extra_kernels(KernelTable& t) {
  t.add(OpKind::floor_div, KernelKind::plain, floor_div);
  t.add(OpKind::sqrt, KernelKind::plain, sqrt_f32);
  for (KernelKind k : {KernelKind::plain, KernelKind::quant}) t.add(OpKind::gather_nd, k, gather_nd);
}

}  // namespace tessera::cpu
