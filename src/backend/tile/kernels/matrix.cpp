// Matrix-engine kernels: matmul, fully_connected, and conv2d / depthwise_conv2d lowered
// to tile matmuls by im2col. in0 is always the activation side, in1 the weight side
// (the operand the fidelity truncates to 5 bits per pass); see numerics.h.
//
// Quantized models (u8/i8 input, weights and output): the integer path. The operands are
// the codes minus their zero points, integers of at most 9 bits that bf16 and the source
// registers hold exactly, so at HiFi4 (the default fidelity) every product is exact and
// the fp32 destination sums them exactly while the sum stays below 2^24 (TFLite's int32
// sum). The vector engine adds the bias (i32 codes) and requantizes in fp32 with TFLite's
// multiplier and rounding (numerics.h Requantizer), then adds the output zero point and
// clamps to the fused activation's code range. Dequantized real values would instead enter
// the source registers truncated to 11 significant bits, losing the low bits of every
// operand.
#include <algorithm>
#include <cmath>

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

// ---- the integer path's operands and epilogue ----

// A conv / fully connected on codes: input, weights and output quantized (input and
// output per tensor), bias (if any) i32.
bool integer_path(const KernelContext& c) {
  return is_quantized(c.in(0)) && is_quantized(c.in(1)) && is_quantized(c.out(0)) &&
         c.in(0).quant.scale.size() == 1 && c.out(0).quant.scale.size() == 1 &&
         (!c.has_in(2) || c.in(2).dtype == DType::i32);
}

// What turns the fp32 destination sums of output channel o into stored values: bias and
// fused activation (float path), or bias, requantization and the activation's code range
// (integer path).
struct Epilogue {
  bool integer = false;
  std::string act;
  std::vector<float> bias;  // real values, or i32 codes on the integer path
  std::vector<Requantizer> requant;  // per output channel: s_in x s_w / s_out
  float zero_point = 0, lo = 0, hi = 0;

  float operator()(float sum, int64_t o) const {
    float v = sum + (bias.empty() ? 0.0f : bias[static_cast<size_t>(o)]);
    if (!integer) return apply_activation(v, act);
    float code = requant[static_cast<size_t>(o)].apply(v) + zero_point;
    return std::min(std::max(code, lo), hi);
  }
};

// Loads input i as the path wants it: real values, or centred codes.
Result<std::vector<float>> load_operand(KernelContext& c, bool integer, int input) {
  return integer ? c.io.load_centred(input) : c.io.load(input);
}

Result<Epilogue> make_epilogue(KernelContext& c, int64_t oc) {
  Epilogue e;
  e.integer = integer_path(c);
  e.act = c.n.get(attr::activation);
  if (c.has_in(2)) {
    TS_ASSIGN_OR_RETURN(e.bias, load_operand(c, e.integer, 2));
    if (static_cast<int64_t>(e.bias.size()) != oc)
      return tile_kernel_error(c.n, "bias has " + std::to_string(e.bias.size()) + " values for " + std::to_string(oc) +
                                        " output channels");
  }
  if (!e.integer) return e;
  const QuantParams& xq = c.in(0).quant;
  const QuantParams& wq = c.in(1).quant;
  const Tensor& y = c.out(0);
  if (wq.scale.size() != 1 && static_cast<int64_t>(wq.scale.size()) != oc)
    return tile_kernel_error(c.n, "weight '" + c.in(1).name + "' has " + std::to_string(wq.scale.size()) +
                                      " scales for " + std::to_string(oc) + " output channels");
  // The multipliers, derived on the host as TFLite derives them: from the float product of
  // the input and weight scales for per-tensor weights of uint8 convolutions and of every
  // fully connected, else from the double product. TFLite's int8 CONV_2D and
  // FULLY_CONNECTED (ruy) round once, DEPTHWISE_CONV_2D and uint8 models twice.
  const bool u8 = c.in(0).dtype == DType::u8;
  const bool float_product = wq.scale.size() == 1 && (c.n.op == OpKind::fully_connected || u8);
  const bool single_round = c.n.op != OpKind::depthwise_conv2d && !u8;
  const float in_s = xq.scale[0], out_s = y.quant.scale[0];
  e.requant.resize(static_cast<size_t>(oc));
  for (int64_t o = 0; o < oc; ++o) {
    const float w_s = wq.scale_at(wq.scale.size() == 1 ? 0 : o);
    const double real = float_product ? static_cast<double>(in_s * w_s) / static_cast<double>(out_s)
                                      : static_cast<double>(in_s) * static_cast<double>(w_s) / static_cast<double>(out_s);
    e.requant[static_cast<size_t>(o)] = make_requantizer(real, single_round);
  }
  // The fused activation as a code range (TFLite's CalculateActivationRangeQuantized).
  const float s = y.quant.scale[0];
  const int64_t zp = y.quant.zero_point_at(0);
  e.zero_point = static_cast<float>(zp);
  auto code = [&](float real) { return static_cast<float>(zp + static_cast<int64_t>(std::round(real / s))); };
  e.lo = y.dtype == DType::u8 ? 0.0f : -128.0f;
  e.hi = y.dtype == DType::u8 ? 255.0f : 127.0f;
  if (e.act == "relu" || e.act == "relu6") e.lo = std::max(e.lo, code(0.0f));
  if (e.act == "relu6") e.hi = std::min(e.hi, code(6.0f));
  if (e.act == "relu_n1_to_1") {
    e.lo = std::max(e.lo, code(-1.0f));
    e.hi = std::min(e.hi, code(1.0f));
  }
  return e;
}

Status store_output(KernelContext& c, const Epilogue& e, const std::vector<float>& y) {
  return e.integer ? c.io.store_codes(0, y) : c.io.store(0, y);
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
  const bool tb = c.n.get(attr::transpose_b) != 0;
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
  // x is rows of IC values (keep_dims 0 flattens e.g. [1, 50, 80] into [1, 4000] rows).
  if (c.in(1).shape.size() != 2 || c.in(1).shape[1] == 0 || num_elements(c.in(0).shape) % c.in(1).shape[1] != 0)
    return tile_kernel_error(c.n, "weight " + shape_str(c.in(1).shape) + " does not take rows of input " + shape_str(c.in(0).shape));
  const int64_t ic = c.in(1).shape[1];
  const int64_t oc = c.in(1).shape[0];
  const bool integer = integer_path(c);
  TS_ASSIGN_OR_RETURN(std::vector<float> x, load_operand(c, integer, 0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, load_operand(c, integer, 1));
  TS_ASSIGN_OR_RETURN(Epilogue epi, make_epilogue(c, oc));
  const int64_t rows = ic == 0 ? 0 : static_cast<int64_t>(x.size()) / ic;
  SplitOperand sx = split_in0(x.data(), static_cast<int64_t>(x.size()));
  SplitOperand sw = split_in1(w.data(), static_cast<int64_t>(w.size()));
  std::vector<float> y(static_cast<size_t>(rows * oc));
  matrix_rows(sx, 0, sw, 0, rows, oc, ic, c.matrix, y.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < oc; ++j) y[r * oc + j] = epi(y[r * oc + j], j);
  return store_output(c, epi, y);
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
          n.get(attr::stride_h), n.get(attr::stride_w), n.get(attr::dilation_h),
          n.get(attr::dilation_w), n.get(attr::pad_top), n.get(attr::pad_left)};
}

// Hybrid nodes (a float input with int8 weights, TFLite's dynamic-range quantization)
// quantize their input per run: the cpu runs them.
std::string hybrid_check(const Graph& g, const Node& n) {
  if (n.inputs.size() > 1 && g.tensor(n.inputs[0]).dtype == DType::f32 && g.tensor(n.inputs[1]).dtype == DType::i8)
    return "hybrid (float input, int8 weights) runs on the cpu";
  return "";
}

std::string conv_check(const Graph& g, const Node& n) {
  if (std::string h = hybrid_check(g, n); !h.empty()) return h;
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
  const bool integer = integer_path(c);
  // Padding is 0: a real zero, or on the integer path the zero point's centred code.
  TS_ASSIGN_OR_RETURN(std::vector<float> x, load_operand(c, integer, 0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, load_operand(c, integer, 1));  // [OC][KH*KW*wIC]: already in1 order
  TS_ASSIGN_OR_RETURN(Epilogue epi, make_epilogue(c, oc));
  const int64_t k = q.kh * q.kw * wic, rows = q.n * q.oh * q.ow;
  SplitOperand sw = split_in1(w.data(), static_cast<int64_t>(w.size()));
  std::vector<float> y(static_cast<size_t>(rows * oc)), cols(static_cast<size_t>(rows * k)), part(rows * ocg);
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
        y[r * oc + o] = epi(part[r * ocg + j], o);
      }
  }
  return store_output(c, epi, y);
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
  const bool integer = integer_path(c);
  TS_ASSIGN_OR_RETURN(std::vector<float> x, load_operand(c, integer, 0));
  TS_ASSIGN_OR_RETURN(std::vector<float> w, load_operand(c, integer, 1));  // [1][KH][KW][OC]
  TS_ASSIGN_OR_RETURN(Epilogue epi, make_epilogue(c, oc));
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
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < oc; ++o) y[r * oc + o] = epi(tile_dot(sa, (r * q.ic + o / mult) * k, sw, o * k, k, c.matrix), o);
  return store_output(c, epi, y);
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
  k.push_back({OpKind::fully_connected, 0, 1u << 1, [](const Graph& g, const Node& n) {
                 std::string h = hybrid_check(g, n);
                 return h.empty() ? check_activation(n) : h;
               },
               fully_connected, fc_work});
  k.push_back({OpKind::conv2d, 0, 0, conv_check, conv2d, conv_work});
  k.push_back({OpKind::depthwise_conv2d, 0, 0, conv_check, depthwise_conv2d, dw_work});
}

}  // namespace tessera::tile
