// Matrix-engine kernels: matmul, fully_connected, and conv2d / depthwise_conv2d lowered
// to tile matmuls by im2col. in0 is always the activation side, in1 the weight side
// (the operand the fidelity truncates to 5 bits per pass); see numerics.h.
#include <algorithm>

#include "backend/tile/kernel.h"

namespace tessera::tile {

namespace {

int64_t pad32(int64_t v) { return (std::max<int64_t>(v, 1) + kTileDim - 1) / kTileDim * kTileDim; }

// Row-major [rows][K] activations times in1 [N][K] (both split), into out [rows][N].
void matrix_rows(const SplitOperand& a, int64_t a_off, const SplitOperand& b, int64_t b_off, int64_t rows,
                 int64_t n, int64_t k, const MatrixNumerics& num, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) out[r * n + j] = tile_dot(a, a_off + r * k, b, b_off + j * k, k, num);
}

// ---- matmul: a [..., M, K] x b [..., K, N] (or [..., N, K] with transpose_b) ----

std::string matmul_check(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() < 2 || g.tensor(n.inputs[1]).shape.size() < 2)
    return "matmul operands of rank < 2 have no tile kernel";
  return "";
}

Status matmul(KernelContext& c) {
  const Shape& as = c.in(0).shape;
  const Shape& bs = c.in(1).shape;
  const Shape& os = c.out(0).shape;
  const bool tb = c.n.attr_int("transpose_b", 0) != 0;
  const int64_t m = as[as.size() - 2], k = as.back();
  const int64_t n = tb ? bs[bs.size() - 2] : bs.back();
  if ((tb ? bs.back() : bs[bs.size() - 2]) != k) return tile_kernel_error(c.n, "inner dimensions differ");
  TS_ASSIGN_OR_RETURN(std::vector<float> a, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> b, c.io.load(1));
  const int64_t b_batches = static_cast<int64_t>(b.size()) / std::max<int64_t>(k * n, 1);
  // in1 as [batch][N][K].
  std::vector<float> bt(b.size());
  for (int64_t q = 0; q < b_batches; ++q)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        bt[(q * n + j) * k + i] = tb ? b[(q * n + j) * k + i] : b[(q * k + i) * n + j];
  SplitOperand sa = split_in0(a.data(), static_cast<int64_t>(a.size()));
  SplitOperand sb = split_in1(bt.data(), static_cast<int64_t>(bt.size()));
  // Batch dims broadcast: map each output batch to an a batch and a b batch.
  Shape ob(os.begin(), os.end() - 2), ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  auto strides_for = [&](const Shape& in) {
    std::vector<int64_t> st(ob.size(), 0);
    auto rs = row_major_strides(in);
    size_t off = ob.size() - in.size();
    for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 ? 0 : rs[d];
    return st;
  };
  auto sa_st = strides_for(ab), sb_st = strides_for(bb);
  std::vector<float> y(static_cast<size_t>(num_elements(os)));
  const int64_t batches = num_elements(ob);
  std::vector<int64_t> idx(ob.size(), 0);
  for (int64_t q = 0; q < batches; ++q) {
    int64_t qa = 0, qb = 0;
    for (size_t d = 0; d < ob.size(); ++d) {
      qa += idx[d] * sa_st[d];
      qb += idx[d] * sb_st[d];
    }
    matrix_rows(sa, qa * m * k, sb, qb * n * k, m, n, k, c.matrix, y.data() + q * m * n);
    for (int d = static_cast<int>(ob.size()) - 1; d >= 0; --d) {
      if (++idx[d] < ob[d]) break;
      idx[d] = 0;
    }
  }
  return c.io.store(0, y);
}

KernelWork matmul_work(const Graph& g, const Node& n) {
  const Shape& as = g.tensor(n.inputs[0]).shape;
  const Shape& os = g.tensor(n.outputs[0]).shape;
  if (as.size() < 2 || os.size() < 2) return {};
  int64_t batches = num_elements(Shape(os.begin(), os.end() - 2));
  double flops = 2.0 * batches * pad32(os[os.size() - 2]) * pad32(os.back()) * pad32(as.back());
  return {flops, static_cast<double>(tiles_of(os))};
}

// ---- fully_connected: x [..., IC] x w [OC, IC]^T + bias [OC] ----

Status fully_connected(KernelContext& c) {
  const int64_t ic = c.in(0).shape.back();
  const int64_t oc = c.in(1).shape[0];
  if (c.in(1).shape.size() != 2 || c.in(1).shape[1] != ic)
    return tile_kernel_error(c.n, "weight must be [OC, " + std::to_string(ic) + "], got " + shape_str(c.in(1).shape));
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, c.io.load(1));
  std::vector<float> bias;
  if (c.has_in(2)) {
    TS_ASSIGN_OR_RETURN(bias, c.io.load(2));
  }
  const int64_t rows = ic == 0 ? 0 : static_cast<int64_t>(x.size()) / ic;
  SplitOperand sx = split_in0(x.data(), static_cast<int64_t>(x.size()));
  SplitOperand sw = split_in1(w.data(), static_cast<int64_t>(w.size()));
  std::vector<float> y(static_cast<size_t>(rows * oc));
  matrix_rows(sx, 0, sw, 0, rows, oc, ic, c.matrix, y.data());
  const std::string act = c.n.attr_str("activation", "none");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < oc; ++j) {
      float v = y[r * oc + j] + (bias.empty() ? 0.0f : bias[j]);
      y[r * oc + j] = apply_activation(v, act);
    }
  return c.io.store(0, y);
}

KernelWork fc_work(const Graph& g, const Node& n) {
  const Shape& xs = g.tensor(n.inputs[0]).shape;
  const Shape& ws = g.tensor(n.inputs[1]).shape;
  int64_t ic = xs.empty() ? 1 : xs.back();
  int64_t rows = ic == 0 ? 0 : num_elements(xs) / ic;
  double flops = 2.0 * pad32(rows) * pad32(ws.empty() ? 1 : ws[0]) * pad32(ic);
  return {flops, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

// ---- convolutions (NHWC) by im2col ----

struct ConvGeom {
  int64_t n, h, w, ic, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
};

ConvGeom conv_geom(const Graph& g, const Node& n) {
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& wt = g.tensor(n.inputs[1]).shape;
  const Shape& y = g.tensor(n.outputs[0]).shape;
  return {x[0], x[1], x[2], x[3], y[1], y[2], wt[1], wt[2],
          n.attr_int("stride_h", 1), n.attr_int("stride_w", 1), n.attr_int("dilation_h", 1),
          n.attr_int("dilation_w", 1), n.attr_int("pad_top", 0), n.attr_int("pad_left", 0)};
}

std::string conv_check(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() != 4 || g.tensor(n.inputs[1]).shape.size() != 4)
    return "convolutions need rank-4 NHWC input and weights";
  return check_activation(n);
}

// Patch of input pixel window for output (b, oy, ox): values of channel range [c0, c0 + cn)
// for every (ky, kx), laid out [ky][kx][c]; zeros outside the image.
void im2col_row(const ConvGeom& q, const float* x, int64_t b, int64_t oy, int64_t ox, int64_t c0, int64_t cn,
                float* row) {
  for (int64_t ky = 0; ky < q.kh; ++ky)
    for (int64_t kx = 0; kx < q.kw; ++kx) {
      int64_t iy = oy * q.sh - q.pt + ky * q.dh, ix = ox * q.sw - q.pl + kx * q.dw;
      float* dst = row + (ky * q.kw + kx) * cn;
      if (iy < 0 || iy >= q.h || ix < 0 || ix >= q.w) {
        std::fill(dst, dst + cn, 0.0f);
        continue;
      }
      const float* src = x + ((b * q.h + iy) * q.w + ix) * q.ic + c0;
      std::copy(src, src + cn, dst);
    }
}

// Grouped when the weights hold fewer input channels than x (groups = IC / w_IC): each
// group is its own im2col matmul over its channel range.
Status conv2d(KernelContext& c) {
  ConvGeom q = conv_geom(c.g, c.n);
  const int64_t oc = c.in(1).shape[0], wic = c.in(1).shape[3];
  if (wic <= 0 || q.ic % wic != 0 || oc % (q.ic / wic) != 0)
    return tile_kernel_error(c.n, "weight input channels (" + std::to_string(wic) + ") do not divide the input's (" +
                                      std::to_string(q.ic) + ") into groups");
  const int64_t groups = q.ic / wic, ocg = oc / groups;
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, c.io.load(1));  // [OC][KH*KW*wIC]: already in1 order
  std::vector<float> bias;
  if (c.has_in(2)) {
    TS_ASSIGN_OR_RETURN(bias, c.io.load(2));
  }
  const int64_t k = q.kh * q.kw * wic, rows = q.n * q.oh * q.ow;
  SplitOperand sw = split_in1(w.data(), static_cast<int64_t>(w.size()));
  std::vector<float> y(static_cast<size_t>(rows * oc)), cols(static_cast<size_t>(rows * k)), part(rows * ocg);
  const std::string act = c.n.attr_str("activation", "none");
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t b = 0; b < q.n; ++b)
      for (int64_t oy = 0; oy < q.oh; ++oy)
        for (int64_t ox = 0; ox < q.ow; ++ox)
          im2col_row(q, x.data(), b, oy, ox, gi * wic, wic, cols.data() + ((b * q.oh + oy) * q.ow + ox) * k);
    SplitOperand sa = split_in0(cols.data(), static_cast<int64_t>(cols.size()));
    matrix_rows(sa, 0, sw, gi * ocg * k, rows, ocg, k, c.matrix, part.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < ocg; ++j) {
        int64_t o = gi * ocg + j;
        y[r * oc + o] = apply_activation(part[r * ocg + j] + (bias.empty() ? 0 : bias[o]), act);
      }
  }
  return c.io.store(0, y);
}

KernelWork conv_work(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() != 4 || g.tensor(n.inputs[1]).shape.size() != 4) return {};
  ConvGeom q = conv_geom(g, n);
  int64_t oc = g.tensor(n.outputs[0]).shape[3], wic = std::max<int64_t>(g.tensor(n.inputs[1]).shape[3], 1);
  int64_t groups = std::max<int64_t>(q.ic / wic, 1);
  double flops = 2.0 * groups * pad32(q.n * q.oh * q.ow) * pad32(oc / groups) * pad32(q.kh * q.kw * wic);
  return {flops, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

// Depthwise: output channel o reads input channel o / M; each channel is an
// [N*OH*OW, KH*KW] x [KH*KW] matmul (a single-column tile matmul per channel).
Status depthwise_conv2d(KernelContext& c) {
  ConvGeom q = conv_geom(c.g, c.n);
  const int64_t oc = c.out(0).shape[3];
  const int64_t mult = q.ic == 0 ? 0 : oc / q.ic;
  if (mult * q.ic != oc || c.in(1).shape[3] != oc) return tile_kernel_error(c.n, "channel multiplier mismatch");
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, c.io.load(1));  // [1][KH][KW][OC]
  std::vector<float> bias;
  if (c.has_in(2)) {
    TS_ASSIGN_OR_RETURN(bias, c.io.load(2));
  }
  const int64_t k = q.kh * q.kw, rows = q.n * q.oh * q.ow;
  // in1 per output channel: [OC][KH*KW].
  std::vector<float> wt(static_cast<size_t>(oc * k));
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t t = 0; t < k; ++t) wt[o * k + t] = w[t * oc + o];
  SplitOperand sw = split_in1(wt.data(), static_cast<int64_t>(wt.size()));
  // im2col for every input channel: [rows][IC][KH*KW].
  std::vector<float> cols(static_cast<size_t>(rows * q.ic * k));
  std::vector<float> patch(static_cast<size_t>(k * q.ic));
  for (int64_t b = 0; b < q.n; ++b)
    for (int64_t oy = 0; oy < q.oh; ++oy)
      for (int64_t ox = 0; ox < q.ow; ++ox) {
        int64_t r = (b * q.oh + oy) * q.ow + ox;
        im2col_row(q, x.data(), b, oy, ox, 0, q.ic, patch.data());  // [KH*KW][IC]
        for (int64_t ch = 0; ch < q.ic; ++ch)
          for (int64_t t = 0; t < k; ++t) cols[(r * q.ic + ch) * k + t] = patch[t * q.ic + ch];
      }
  SplitOperand sa = split_in0(cols.data(), static_cast<int64_t>(cols.size()));
  std::vector<float> y(static_cast<size_t>(rows * oc));
  const std::string act = c.n.attr_str("activation", "none");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < oc; ++o) {
      float v = tile_dot(sa, (r * q.ic + o / mult) * k, sw, o * k, k, c.matrix);
      y[r * oc + o] = apply_activation(v + (bias.empty() ? 0 : bias[o]), act);
    }
  return c.io.store(0, y);
}

KernelWork dw_work(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() != 4 || g.tensor(n.inputs[1]).shape.size() != 4) return {};
  ConvGeom q = conv_geom(g, n);
  int64_t oc = g.tensor(n.outputs[0]).shape[3];
  // One single-column matmul per channel: the N dim pads from 1 to a whole tile.
  double flops = 2.0 * oc * pad32(q.n * q.oh * q.ow) * kTileDim * pad32(q.kh * q.kw);
  return {flops, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

}  // namespace

void add_matrix_kernels(std::vector<TileKernel>& k) {
  k.push_back({OpKind::matmul, 0, 0, matmul_check, matmul, matmul_work});
  k.push_back({OpKind::fully_connected, 0, 1u << 1, [](const Graph&, const Node& n) { return check_activation(n); },
               fully_connected, fc_work});
  k.push_back({OpKind::conv2d, 0, 0, conv_check, conv2d, conv_work});
  k.push_back({OpKind::depthwise_conv2d, 0, 0, conv_check, depthwise_conv2d, dw_work});
}

}  // namespace tessera::tile
