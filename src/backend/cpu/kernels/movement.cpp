// Reference kernels: data movement (reshape, transpose, concat, slice, strided_slice, pad,
// scatter_rows) and cast. These move stored elements without arithmetic, so they work for
// every dtype with a fixed element size (reshape and scatter_rows also for GGUF blocks);
// the byte-moving ones serve the quantized path too (quantized values move unchanged).
#include <limits>

#include "backend/cpu/kernels/kernel_util.h"
#include "convert/dtype.h"
#include "convert/gguf_blocks.h"

namespace tessera::cpu {

namespace {

Result<int64_t> elem_size(const KernelContext& c, const TensorRef& r) {
  int s = dtype_size(r.dtype());
  if (s == 0) return kernel_error(c.n, "'" + r.t->name + "' has block dtype " + dtype_name(r.dtype()) + ", which cannot be moved element by element");
  return static_cast<int64_t>(s);
}

Status same_dtype(const KernelContext& c) {
  if (c.in[0].dtype() != c.out[0].dtype())
    return kernel_error(c.n, std::string("output dtype ") + dtype_name(c.out[0].dtype()) + " differs from input dtype " +
                                 dtype_name(c.in[0].dtype()));
  return Status::Ok();
}

// Copies elements of `es` bytes: out[idx] = in[sum_d (start[d] + idx[d] * step[d])] over the
// row-major index space `ext`; `step` is in input elements.
template <typename T>
void copy_strided(const uint8_t* in, uint8_t* out, int64_t n, int64_t step) {
  const T* src = reinterpret_cast<const T*>(in);
  T* dst = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i, src + i * step, sizeof(T));
}

// A transpose whose output rows gather with a large stride while another output axis `d`
// reads the input contiguously (a 2-D transpose inside, as NHWC -> NCHW or YOLOv8's
// [1, 16, 4, 8400] -> [1, 4, 8400, 16]): blocks of kBlock positions along d, each copied as
// `inner` contiguous input runs of kBlock elements, so that every input cache line read is
// used whole instead of once per output row. Same elements to the same places as the row
// gather. False (nothing copied) where the shape is not of that kind.
template <typename T>
bool transpose_blocked(const uint8_t* in_bytes, uint8_t* out_bytes, const Shape& ext, int64_t start,
                       const int64_t* step) {
  constexpr int64_t kBlock = 64;
  const int rank = static_cast<int>(ext.size());
  if (rank < 2) return false;
  const int64_t inner = ext[rank - 1], inner_step = step[rank - 1];
  int d = -1;
  for (int k = rank - 2; k >= 0; --k)
    if (step[k] == 1 && ext[k] >= kBlock) d = k;
  if (d < 0 || inner < 2 || inner_step < kBlock) return false;
  const T* in = reinterpret_cast<const T*>(in_bytes);
  T* out = reinterpret_cast<T*>(out_bytes);
  // Output strides (row-major over ext), and the outer index space without d and the
  // innermost axis.
  int64_t ost[8];
  if (rank > 8) return false;
  ost[rank - 1] = 1;
  for (int k = rank - 2; k >= 0; --k) ost[k] = ost[k + 1] * ext[k + 1];
  int64_t outer = 1;
  for (int k = 0; k < rank - 1; ++k)
    if (k != d) outer *= ext[k];
  int64_t idx[8] = {0};
  for (int64_t o = 0; o < outer; ++o) {
    int64_t src0 = start, dst0 = 0;
    for (int k = 0; k < rank - 1; ++k) src0 += idx[k] * step[k], dst0 += idx[k] * ost[k];
    for (int64_t j0 = 0; j0 < ext[d]; j0 += kBlock) {
      const int64_t nj = std::min(kBlock, ext[d] - j0);
      for (int64_t i = 0; i < inner; ++i) {
        const T* src = in + src0 + j0 + i * inner_step;
        T* dst = out + dst0 + j0 * ost[d] + i;
        for (int64_t j = 0; j < nj; ++j) dst[j * ost[d]] = src[j];
      }
    }
    for (int k = rank - 2; k >= 0; --k) {
      if (k == d) continue;
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
  return true;
}

void gather_box(const uint8_t* in, uint8_t* out, int64_t es, const Shape& ext, int64_t start,
                const int64_t* step) {
  const int rank = static_cast<int>(ext.size());
  if (rank == 0) {
    std::memcpy(out, in + start * es, es);
    return;
  }
  if ((es == 1 && transpose_blocked<uint8_t>(in, out, ext, start, step)) ||
      (es == 2 && transpose_blocked<uint16_t>(in, out, ext, start, step)) ||
      (es == 4 && transpose_blocked<uint32_t>(in, out, ext, start, step)))
    return;
  // Rows of the innermost dimension, each a strided copy; outer indices advance per row.
  const int64_t inner = ext[rank - 1], inner_step = step[rank - 1];
  const int64_t rows = inner > 0 ? num_elements(ext) / inner : 0;
  thread_local std::vector<int64_t> idx;  // keeps its capacity: no allocation per call
  idx.assign(rank, 0);
  int64_t off = start;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = in + off * es;
    uint8_t* dst = out + r * inner * es;
    if (inner_step == 1) std::memcpy(dst, src, inner * es);
    else if (es == 1) copy_strided<uint8_t>(src, dst, inner, inner_step);
    else if (es == 2) copy_strided<uint16_t>(src, dst, inner, inner_step);
    else if (es == 4) copy_strided<uint32_t>(src, dst, inner, inner_step);
    else
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dst + i * es, src + i * inner_step * es, es);
    for (int d = rank - 2; d >= 0; --d) {
      off += step[d];
      if (++idx[d] < ext[d]) break;
      off -= step[d] * ext[d];
      idx[d] = 0;
    }
  }
}

Status reshape(KernelContext& c) {
  TS_RETURN_IF_ERROR(same_dtype(c));
  TS_ASSIGN_OR_RETURN(int64_t bytes, c.out[0].t->host_bytes());
  if (c.out[0].data != c.in[0].data) std::memmove(c.out[0].data, c.in[0].data, bytes);
  return Status::Ok();
}

Status transpose(KernelContext& c) {
  TS_RETURN_IF_ERROR(same_dtype(c));
  TS_ASSIGN_OR_RETURN(int64_t es, elem_size(c, c.in[0]));
  std::vector<int64_t> holder;  // a perm stored as a single int (rank 1)
  const std::vector<int64_t>& perm = c.n.get(attr::perm);
  const Shape& xs = c.in[0].shape();
  if (perm.size() != xs.size()) return kernel_error(c.n, "perm must list " + std::to_string(xs.size()) + " axes");
  // Strides and steps in per-thread buffers that keep their size (decode steps transpose
  // every layer's K and V): no allocation per call.
  thread_local std::vector<int64_t> st, step;
  st.assign(xs.size(), 1);
  for (int i = static_cast<int>(xs.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * xs[i + 1];
  step.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) step[i] = st[perm[i]];
  gather_box(c.in[0].data, c.out[0].data, es, c.out[0].shape(), 0, step.data());
  return Status::Ok();
}

Status concat(KernelContext& c) {
  TS_ASSIGN_OR_RETURN(int64_t es, elem_size(c, c.out[0]));
  const Shape& os = c.out[0].shape();
  int64_t axis = c.n.get(attr::axis);
  if (axis < 0) axis += static_cast<int64_t>(os.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(os.size()); ++d) {
    if (d < axis) outer *= os[d];
    if (d > axis) inner *= os[d];
  }
  for (const TensorRef& r : c.in)
    if (r.dtype() != c.out[0].dtype())
      return kernel_error(c.n, "input '" + r.t->name + "' is " + dtype_name(r.dtype()) + ", output is " + dtype_name(c.out[0].dtype()));
  const int64_t out_row = os[axis] * inner * es;
  int64_t col = 0;
  for (const TensorRef& r : c.in) {
    const int64_t row = r.shape()[axis] * inner * es;
    for (int64_t o = 0; o < outer; ++o) std::memcpy(c.out[0].data + o * out_row + col, r.data + o * row, row);
    col += row;
  }
  return Status::Ok();
}

Status slice(KernelContext& c) {
  TS_RETURN_IF_ERROR(same_dtype(c));
  TS_ASSIGN_OR_RETURN(int64_t es, elem_size(c, c.in[0]));
  std::vector<int64_t> holder;
  const std::vector<int64_t>& begin = c.n.get(attr::begin);
  const DimList st = row_major_dims(c.in[0].shape());
  if (begin.size() != st.size()) return kernel_error(c.n, "begin must list " + std::to_string(st.size()) + " indices");
  int64_t start = 0;
  for (size_t d = 0; d < st.size(); ++d) start += begin[d] * st[d];
  gather_box(c.in[0].data, c.out[0].data, es, c.out[0].shape(), start, st.data());
  return Status::Ok();
}

// begin/end/strides are normalised by the frontend (one entry per dim, begin is the first
// index taken); shrink axes have length 1 and are dropped from the output shape, which
// leaves the row-major element order unchanged.
Status strided_slice(KernelContext& c) {
  TS_RETURN_IF_ERROR(same_dtype(c));
  TS_ASSIGN_OR_RETURN(int64_t es, elem_size(c, c.in[0]));
  std::vector<int64_t> hb, he, hs;
  const std::vector<int64_t>& b = c.n.get(attr::begin);
  const std::vector<int64_t>& e = c.n.get(attr::end);
  const std::vector<int64_t>& s = c.n.get(attr::strides);
  const Shape& xs = c.in[0].shape();
  if (b.size() != xs.size() || e.size() != xs.size() || s.size() != xs.size())
    return kernel_error(c.n, "begin, end and strides must list " + std::to_string(xs.size()) + " entries each");
  const DimList st = row_major_dims(xs);
  thread_local Shape ext;  // the box's extent; a kept per-thread buffer (no allocation per call)
  ext.assign(xs.size(), 0);
  DimList step(xs.size());
  int64_t start = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    ext[d] = s[d] > 0 ? (e[d] > b[d] ? (e[d] - b[d] + s[d] - 1) / s[d] : 0)
                      : (b[d] > e[d] ? (b[d] - e[d] - s[d] - 1) / -s[d] : 0);
    if (ext[d] > 0 && (b[d] < 0 || b[d] >= xs[d] || b[d] + (ext[d] - 1) * s[d] < 0 || b[d] + (ext[d] - 1) * s[d] >= xs[d]))
      return kernel_error(c.n, "strided slice leaves dim " + std::to_string(d) + " of " + shape_str(xs));
    start += b[d] * st[d];
    step[d] = s[d] * st[d];
  }
  if (num_elements(ext) != c.out[0].elements()) return kernel_error(c.n, "output size does not match the slice");
  gather_box(c.in[0].data, c.out[0].data, es, ext, start, step.data());
  return Status::Ok();
}

// Writes `v` as one element of dtype t.
Status store_scalar(const Node& n, DType t, double v, uint8_t* dst) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  switch (t) {
    case DType::f32: put(static_cast<float>(v)); break;
    case DType::f16: put(f32_to_f16(static_cast<float>(v))); break;
    case DType::bf16: put(f32_to_bf16(static_cast<float>(v))); break;
    case DType::i8: put(static_cast<int8_t>(v)); break;
    case DType::u8: put(static_cast<uint8_t>(v)); break;
    case DType::boolean: put(static_cast<uint8_t>(v != 0)); break;
    case DType::i16: put(static_cast<int16_t>(v)); break;
    case DType::i32: put(static_cast<int32_t>(v)); break;
    case DType::i64: put(static_cast<int64_t>(v)); break;
    default: return kernel_error(n, std::string("cannot store a scalar of dtype ") + dtype_name(t));
  }
  return Status::Ok();
}

// Pads with attr value (stored units: TFLite PADV2's constant_values) when given, otherwise
// with the output's zero point when it is quantized (TFLite pad.cc), otherwise with 0.
Status pad(KernelContext& c) {
  TS_RETURN_IF_ERROR(same_dtype(c));
  TS_ASSIGN_OR_RETURN(int64_t es, elem_size(c, c.in[0]));
  const QuantParams& q = !c.out[0].t->quant.empty() ? c.out[0].t->quant : c.in[0].t->quant;
  const double zero = q.empty() ? 0.0 : static_cast<double>(q.zero_point_at(0));
  const double fill = c.n.find(attr::value).value_or(zero);
  uint8_t fill_bytes[8];
  TS_RETURN_IF_ERROR(store_scalar(c.n, c.out[0].dtype(), fill, fill_bytes));
  for (int64_t i = 0, n = c.out[0].elements(); i < n; ++i) std::memcpy(c.out[0].data + i * es, fill_bytes, es);
  // Scatter the input into the interior: output offset of input index idx is
  // sum_d (idx[d] + before[d]) * out_stride[d].
  std::vector<int64_t> holder;
  const std::vector<int64_t>& p = c.n.get(attr::paddings);
  const Shape& xs = c.in[0].shape();
  if (p.size() != 2 * xs.size()) return kernel_error(c.n, "paddings must list 2 x " + std::to_string(xs.size()) + " entries");
  const DimList os = row_major_dims(c.out[0].shape());
  int64_t start = 0;
  for (size_t d = 0; d < xs.size(); ++d) start += p[2 * d] * os[d];
  int rank = static_cast<int>(xs.size());
  DimList idx(static_cast<size_t>(rank));
  int64_t off = start;
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    std::memcpy(c.out[0].data + off * es, c.in[0].data + i * es, es);
    for (int d = rank - 1; d >= 0; --d) {
      off += os[d];
      if (++idx[d] < xs[d]) break;
      off -= os[d] * xs[d];
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

// ---- cast: value conversion. Float -> integer truncates toward zero and saturates at
// the target's range (NaN -> 0); integer -> integer saturates; bool is (v != 0).

bool is_int(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i16 || t == DType::i32 || t == DType::i64 || t == DType::boolean;
}

double load_float(DType t, const uint8_t* p) {
  float f;
  uint16_t h;
  switch (t) {
    case DType::f32: std::memcpy(&f, p, 4); return f;
    case DType::f16: std::memcpy(&h, p, 2); return f16_to_f32(h);
    default: std::memcpy(&h, p, 2); return bf16_to_f32(h);  // bf16
  }
}

int64_t load_int(DType t, const uint8_t* p) {
  switch (t) {
    case DType::i8: return *reinterpret_cast<const int8_t*>(p);
    case DType::u8: case DType::boolean: return *p;
    case DType::i16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    default: { int64_t v; std::memcpy(&v, p, 8); return v; }  // i64
  }
}

// Range of an integer dtype, as doubles for saturation.
std::pair<double, double> int_range(DType t) {
  switch (t) {
    case DType::i8: return {-128, 127};
    case DType::u8: return {0, 255};
    case DType::boolean: return {0, 1};
    case DType::i16: return {-32768, 32767};
    case DType::i32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {-9223372036854775808.0, 9223372036854774784.0};  // largest doubles inside i64
  }
}

// Values per chunk when a cast is split over the thread pool.
constexpr int64_t kCastChunkValues = 1 << 14;

Status cast(KernelContext& c) {
  DType ti = c.in[0].dtype(), to = c.out[0].dtype();
  if (ti == DType::f32 && to == DType::q8_0) {
    // Rows of 32-value blocks (the q8_0 KV cache): ggml's reference rounding, per block.
    const Shape& s = c.in[0].shape();
    if (s.empty() || s.back() % kQBlock != 0)
      return kernel_error(c.n, "cast to q8_0 needs rows of a multiple of 32 values, got shape " + shape_str(s));
    const int64_t blocks = c.in[0].elements() / kQBlock;
    const float* x = c.in[0].as<float>();
    uint8_t* y = c.out[0].data;
    parallel_rows(c, blocks, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) convert::quant_q8_0_block(x + b * kQBlock, y + b * kQ8_0BlockBytes);
    }, kCastChunkValues / kQBlock);
    return Status::Ok();
  }
  // f32 <-> f16 (the KV cache's new rows): the row converters give the bits of the per-value
  // path below (f32_to_f16 / f16_to_f32, exact through double), split over the pool.
  if ((ti == DType::f32 && to == DType::f16) || (ti == DType::f16 && to == DType::f32)) {
    const uint8_t* src = c.in[0].data;
    uint8_t* dst = c.out[0].data;
    const bool down = ti == DType::f32;
    parallel_rows(c, c.in[0].elements(), [&](int64_t i0, int64_t i1) {
      if (down)
        convert::f32_to_f16_n(reinterpret_cast<const float*>(src) + i0, reinterpret_cast<uint16_t*>(dst) + i0, i1 - i0);
      else
        convert::f16_to_f32_n(reinterpret_cast<const uint16_t*>(src) + i0, reinterpret_cast<float*>(dst) + i0, i1 - i0);
    }, kCastChunkValues);
    return Status::Ok();
  }
  if (dtype_is_block(ti) || dtype_is_block(to))
    return kernel_error(c.n, "cast does not take block dtypes (other than f32 -> q8_0); use dequantize");
  const int64_t si = dtype_size(ti), so = dtype_size(to);
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) {
    const uint8_t* src = c.in[0].data + i * si;
    uint8_t* dst = c.out[0].data + i * so;
    if (is_int(ti) && is_int(to)) {
      int64_t v = load_int(ti, src);
      auto [lo, hi] = int_range(to);
      if (to == DType::boolean) v = v != 0;
      else if (to != DType::i64) v = std::clamp<int64_t>(v, static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      TS_RETURN_IF_ERROR(store_scalar(c.n, to, static_cast<double>(v), dst));
      if (to == DType::i64) std::memcpy(dst, &v, 8);  // exact beyond 2^53
    } else if (is_int(ti)) {
      TS_RETURN_IF_ERROR(store_scalar(c.n, to, static_cast<double>(load_int(ti, src)), dst));
    } else {
      double v = load_float(ti, src);
      if (is_int(to)) {
        auto [lo, hi] = int_range(to);
        v = to == DType::boolean ? (v != 0) : (std::isnan(v) ? 0.0 : std::clamp(std::trunc(v), lo, hi));
      }
      TS_RETURN_IF_ERROR(store_scalar(c.n, to, v, dst));
    }
  }
  return Status::Ok();
}

// scatter_rows: the output aliases the state (in 0); rows [pos, pos + T) along attr axis
// are overwritten with the values (in 1). A position outside the state is an error.
Status scatter_rows(KernelContext& c) {
  const TensorRef &st = c.in[0], &v = c.in[1];
  if (v.dtype() != st.dtype() || c.out[0].dtype() != st.dtype())
    return kernel_error(c.n, std::string("values dtype ") + dtype_name(v.dtype()) + " differs from state dtype " +
                                 dtype_name(st.dtype()));
  const Shape& ss = st.shape();
  int64_t axis = c.n.get(attr::axis);
  if (axis < 0) axis += static_cast<int64_t>(ss.size());
  const int64_t pos = c.in[2].as<int32_t>()[0];
  const int64_t rows = v.shape()[axis], len = ss[axis];
  if (pos < 0 || pos + rows > len)
    return error(StatusCode::out_of_range, "[scatter_rows] ", c.n.label(), ": rows [", pos, ", ", pos + rows,
                 ") outside state '", st.t->name, "' of ", len, " rows");
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ss[d];
  TS_ASSIGN_OR_RETURN(int64_t total, st.t->host_bytes());
  const int64_t row_bytes = total / (outer * len);  // bytes of one row (all dims after axis)
  if (c.out[0].data != st.data) std::memcpy(c.out[0].data, st.data, total);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(c.out[0].data + (o * len + pos) * row_bytes, v.data + o * rows * row_bytes, rows * row_bytes);
  return Status::Ok();
}

}  // namespace

void register_movement_kernels(KernelTable& t) {
  // Byte moves: the same kernel for plain and quantized tensors.
  for (KernelKind k : {KernelKind::plain, KernelKind::quant}) {
    t.add(OpKind::reshape, k, reshape);
    t.add(OpKind::transpose, k, transpose);
    t.add(OpKind::slice, k, slice);
    t.add(OpKind::strided_slice, k, strided_slice);
    t.add(OpKind::pad, k, pad);
    t.add(OpKind::cast, k, cast);
    t.add(OpKind::scatter_rows, k, scatter_rows);
  }
  // Quantized concat requantizes its inputs: it lives with the quantized kernels.
  t.add(OpKind::concat, KernelKind::plain, concat);
}

}  // namespace tessera::cpu
