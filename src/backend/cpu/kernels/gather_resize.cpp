// Reference kernels: gather, get_rows (embedding lookup from f32/f16/bf16/GGUF block
// tables) and the NHWC resizes. Index and coordinate rules follow TFLite's reference
// kernels (resize: align_corners and half_pixel_centers as in TFLite's
// ResizeNearestNeighbor / ResizeBilinear).
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

Result<int64_t> index_at(const KernelContext& c, const TensorRef& idx, int64_t i, int64_t limit) {
  int64_t v = idx.dtype() == DType::i64 ? idx.as<int64_t>()[i] : idx.as<int32_t>()[i];
  if (v < 0 || v >= limit)
    return error(StatusCode::out_of_range, "[", op_name(c.n.op), "] ", c.n.label(), ": index ", v, " at position ", i,
                 " of '", idx.t->name, "' is outside [0, ", limit, ")");
  return v;
}

// out[outer, idx..., inner] = x[outer, indices[idx...], inner] for any fixed-size dtype.
Status gather(KernelContext& c) {
  const TensorRef &x = c.in[0], &idx = c.in[1];
  const int64_t es = dtype_size(x.dtype());
  if (es == 0) return kernel_error(c.n, std::string("gather of block dtype ") + dtype_name(x.dtype()) + "; use get_rows");
  if (c.out[0].dtype() != x.dtype()) return kernel_error(c.n, "output dtype differs from input dtype");
  const Shape& xs = x.shape();
  int64_t axis = c.n.get(attr::axis);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
    if (d < axis) outer *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  const int64_t n_idx = idx.elements(), len = xs[axis], run = inner * es;
  uint8_t* y = c.out[0].data;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n_idx; ++j) {
      TS_ASSIGN_OR_RETURN(int64_t k, index_at(c, idx, j, len));
      std::memcpy(y + (o * n_idx + j) * run, x.data + (o * len + k) * run, run);
    }
  return Status::Ok();
}

// y [T, D] f32 = table [N, D] rows ids [T], decoded from the table's dtype.
Status get_rows(KernelContext& c) {
  const TensorRef &tab = c.in[0], &ids = c.in[1];
  if (!is_row_dtype(tab.dtype()))
    return kernel_error(c.n, std::string("table dtype ") + dtype_name(tab.dtype()) +
                                 " (takes f32, f16, bf16 and the GGUF block types)");
  if (c.out[0].dtype() != DType::f32) return kernel_error(c.n, "output must be f32");
  const int64_t n = tab.shape()[0], d = tab.shape()[1];
  if (d % dtype_block_values(tab.dtype()) != 0)
    return kernel_error(c.n, std::string("a ") + dtype_name(tab.dtype()) + " table needs rows of a multiple of " +
                                 std::to_string(dtype_block_values(tab.dtype())) + " values, got " + std::to_string(d));
  const int64_t rb = row_bytes(tab.dtype(), d);
  float* y = c.out[0].as<float>();
  float chunk[kQBlock];
  for (int64_t t = 0; t < ids.elements(); ++t) {
    TS_ASSIGN_OR_RETURN(int64_t r, index_at(c, ids, t, n));
    const uint8_t* row = tab.data + r * rb;
    for (int64_t b = 0; b * kQBlock < d; ++b) {
      const int64_t len = std::min<int64_t>(kQBlock, d - b * kQBlock);
      load_chunk(tab.dtype(), row, b, len, chunk);
      std::memcpy(y + t * d + b * kQBlock, chunk, len * sizeof(float));
    }
  }
  return Status::Ok();
}

// TFLite: scale = (align_corners && out > 1) ? (in - 1) / (out - 1) : in / out.
float resize_scale(int64_t in, int64_t out, bool align_corners) {
  return (align_corners && out > 1) ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                    : static_cast<float>(in) / static_cast<float>(out);
}

struct ResizeAttrs {
  bool align_corners, half_pixel;
};
ResizeAttrs resize_attrs(const Node& n) {
  return {n.get(attr::align_corners) != 0, n.get(attr::half_pixel_centers) != 0};
}

// TFLite's nearest source index for output index o.
int64_t nearest_source(int64_t o, int64_t in, int64_t out, const ResizeAttrs& a) {
  const float scale = resize_scale(in, out, a.align_corners);
  const float offset = a.half_pixel ? 0.5f : 0.0f;
  const float v = (static_cast<float>(o) + offset) * scale;
  int64_t s = a.align_corners ? static_cast<int64_t>(std::round(v)) : static_cast<int64_t>(std::floor(v));
  s = std::min(s, in - 1);
  if (a.half_pixel) s = std::max<int64_t>(s, 0);
  return s;
}

Status resize_nearest(KernelContext& c) {
  const TensorRef& x = c.in[0];
  const int64_t es = dtype_size(x.dtype());
  if (es == 0 || c.out[0].dtype() != x.dtype()) return kernel_error(c.n, "input and output must share a fixed-size dtype");
  const Shape &xs = x.shape(), &ys = c.out[0].shape();
  const ResizeAttrs a = resize_attrs(c.n);
  const int64_t ch = xs[3] * es;
  for (int64_t b = 0; b < ys[0]; ++b)
    for (int64_t oy = 0; oy < ys[1]; ++oy) {
      const int64_t sy = nearest_source(oy, xs[1], ys[1], a);
      for (int64_t ox = 0; ox < ys[2]; ++ox) {
        const int64_t sx = nearest_source(ox, xs[2], ys[2], a);
        std::memcpy(c.out[0].data + ((b * ys[1] + oy) * ys[2] + ox) * ch, x.data + ((b * xs[1] + sy) * xs[2] + sx) * ch, ch);
      }
    }
  return Status::Ok();
}

// TFLite's bilinear source coordinate: the lower and upper neighbours and the weight of
// the upper one.
struct Lerp {
  int64_t lo, hi;
  float frac;
};
Lerp bilinear_source(int64_t o, int64_t in, int64_t out, const ResizeAttrs& a) {
  const float scale = resize_scale(in, out, a.align_corners);
  const float v = a.half_pixel ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
  Lerp l;
  l.lo = std::max<int64_t>(static_cast<int64_t>(std::floor(v)), 0);
  l.hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(v)), in - 1);
  l.frac = v - static_cast<float>(l.lo);
  return l;
}

Status resize_bilinear(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const Shape &xs = c.in[0].shape(), &ys = c.out[0].shape();
  const ResizeAttrs a = resize_attrs(c.n);
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  const int64_t C = xs[3];
  auto at = [&](int64_t b, int64_t iy, int64_t ix, int64_t ch) { return x[((b * xs[1] + iy) * xs[2] + ix) * C + ch]; };
  for (int64_t b = 0; b < ys[0]; ++b)
    for (int64_t oy = 0; oy < ys[1]; ++oy) {
      const Lerp ly = bilinear_source(oy, xs[1], ys[1], a);
      for (int64_t ox = 0; ox < ys[2]; ++ox) {
        const Lerp lx = bilinear_source(ox, xs[2], ys[2], a);
        for (int64_t ch = 0; ch < C; ++ch) {
          const float v = at(b, ly.lo, lx.lo, ch) * (1 - ly.frac) * (1 - lx.frac) +
                          at(b, ly.hi, lx.lo, ch) * ly.frac * (1 - lx.frac) +
                          at(b, ly.lo, lx.hi, ch) * (1 - ly.frac) * lx.frac + at(b, ly.hi, lx.hi, ch) * ly.frac * lx.frac;
          y[((b * ys[1] + oy) * ys[2] + ox) * C + ch] = v;
        }
      }
    }
  return Status::Ok();
}

}  // namespace

void register_gather_resize_kernels(KernelTable& t) {
  for (KernelKind k : {KernelKind::plain, KernelKind::quant}) {
    t.add(OpKind::gather, k, gather);
    t.add(OpKind::resize_nearest, k, resize_nearest);
  }
  t.add(OpKind::get_rows, KernelKind::plain, get_rows);
  t.add(OpKind::resize_bilinear, KernelKind::plain, resize_bilinear);
}

}  // namespace tessera::cpu
