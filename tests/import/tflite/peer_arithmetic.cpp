// The peer's float arithmetic, op by op (see peer_arithmetic.h for what each op does and
// why). Compiled with -ffp-contract=off (tests/CMakeLists.txt) so that a * b + c is two
// roundings unless PeerOptions::fused_multiply_add asks for std::fma.
#include "import/tflite/peer_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace tessera::testing {
namespace {

Status fail(const Node& n, const std::string& what) {
  return error(StatusCode::unsupported, "[peer emulation] ", n.label(), ": ", what);
}

bool is_q8(const Tensor& t) { return (t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty(); }

int stored(const std::vector<uint8_t>& bytes, DType dtype, int64_t i) {
  return dtype == DType::i8 ? static_cast<int8_t>(bytes[i]) : bytes[i];
}

// The peer's dequantize: the integer difference converted to float, times the scale.
float decode(int q, float scale, int64_t zero_point) {
  return static_cast<float>(q - static_cast<int>(zero_point)) * scale;
}

// The peer's quantize: float division, round half away from zero, add the zero point and
// clamp in float, then convert.
uint8_t encode(float v, const Tensor& t) {
  const float lo = t.dtype == DType::u8 ? 0.0f : -128.0f;
  const float hi = t.dtype == DType::u8 ? 255.0f : 127.0f;
  const float r = std::round(v / t.quant.scale[0]);
  const float c = std::min(std::max(static_cast<float>(t.quant.zero_point[0]) + r, lo), hi);
  return static_cast<uint8_t>(static_cast<int>(c));
}

// All elements of a u8/i8 tensor decoded to float; per-axis scales along quant.axis.
std::vector<float> decode_all(const Tensor& t, const std::vector<uint8_t>& bytes) {
  const int64_t n = t.elements();
  std::vector<float> out(static_cast<size_t>(n));
  int64_t inner = 1, dim = 1;
  if (t.quant.per_axis()) {
    dim = t.shape[t.quant.axis];
    for (size_t d = static_cast<size_t>(t.quant.axis) + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i / inner) % dim;
    out[i] = decode(stored(bytes, t.dtype, i), t.quant.scale_at(c), t.quant.zero_point_at(c));
  }
  return out;
}

std::vector<uint8_t> weight_bytes(const Tensor& t) { return {t.data->data, t.data->data + t.data->size}; }

// i32 bias [OC] -> float(b) * scale of its channel (the bias tensor's own scales).
Result<std::vector<float>> decode_bias(const Graph& g, const Node& n, int64_t channels) {
  std::vector<float> bias(static_cast<size_t>(channels), 0.0f);
  if (n.inputs.size() < 3 || n.inputs[2] == kNoTensor) return bias;
  const Tensor& b = g.tensor(n.inputs[2]);
  if (b.dtype != DType::i32 || !b.data || b.quant.empty() || b.elements() != channels)
    return fail(n, "bias '" + b.name + "' must be a constant i32 [" + std::to_string(channels) + "] with scales");
  for (int64_t c = 0; c < channels; ++c) {
    int32_t v;
    std::memcpy(&v, b.data->data + 4 * c, 4);
    bias[c] = static_cast<float>(v) * b.quant.scale_at(c);
  }
  return bias;
}

// acc += w * x, with one rounding (fused) or two.
template <bool kFused>
inline float madd(float w, float x, float acc) {
  if constexpr (kFused) {
    return std::fma(w, x, acc);
  } else {
    return acc + w * x;
  }
}

// A fused activation: the peer's separate activation layer on the already encoded output.
Status activate(const Node& n, const Tensor& y, std::vector<uint8_t>& out) {
  const std::string act = n.get(attr::activation);
  if (act == "none") return Status::Ok();
  if (act != "relu" && act != "relu6") return fail(n, "fused activation '" + act + "' is not emulated");
  constexpr float kRelu6Max = 6.0f;  // BoundedReLu's upper bound for TFLite RELU6
  for (size_t i = 0; i < out.size(); ++i) {
    float v = decode(stored(out, y.dtype, static_cast<int64_t>(i)), y.quant.scale[0], y.quant.zero_point[0]);
    v = act == "relu" ? std::max(0.0f, v) : std::min(kRelu6Max, std::max(0.0f, v));
    out[i] = encode(v, y);
  }
  return Status::Ok();
}

// conv2d: x [N,H,W,IC], w [OC,KH,KW,IC]; depthwise: w [1,KH,KW,C*M]; y [N,OH,OW,OC].
template <bool kFused>
Status convolution(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &wt = g.tensor(n.inputs[1]), &yt = g.tensor(n.outputs[0]);
  if (!is_q8(xt) || !is_q8(wt) || !is_q8(yt) || !wt.data || xt.quant.per_axis() || yt.quant.per_axis())
    return fail(n, "needs u8/i8 per-tensor input/output and constant u8/i8 filters");
  const bool depthwise = n.op == OpKind::depthwise_conv2d;
  const int64_t N = xt.shape[0], H = xt.shape[1], W = xt.shape[2], IC = xt.shape[3];
  const int64_t OH = yt.shape[1], OW = yt.shape[2], OC = yt.shape[3], KH = wt.shape[1], KW = wt.shape[2];
  const int64_t sh = n.get(attr::stride_h), sw = n.get(attr::stride_w);
  const int64_t dh = n.get(attr::dilation_h), dw = n.get(attr::dilation_w);
  const int64_t pt = n.get(attr::pad_top), pl = n.get(attr::pad_left);
  const int64_t M = depthwise ? OC / IC : 1;
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  const std::vector<float> w = decode_all(wt, weight_bytes(wt));
  TS_ASSIGN_OR_RETURN(const std::vector<float> bias, decode_bias(g, n, OC));
  // Filters as [taps][OC] (conv2d taps ordered ic, ky, kx; depthwise ky, kx), so that the
  // innermost loop runs over independent output channels, each summed in the peer's order.
  const int64_t taps = depthwise ? KH * KW : IC * KH * KW;
  std::vector<float> wk(static_cast<size_t>(taps * OC));
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t ic = 0; ic < (depthwise ? 1 : IC); ++ic)
      for (int64_t k = 0; k < KH * KW; ++k) {
        const int64_t tap = ic * KH * KW + k;
        wk[tap * OC + o] =
            depthwise ? w[k * OC + o] : w[(o * KH * KW + k) * IC + ic];
      }
  std::vector<uint8_t> out(static_cast<size_t>(yt.elements()));
  std::vector<float> acc(static_cast<size_t>(OC)), xin(static_cast<size_t>(OC));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t ic = 0; ic < (depthwise ? 1 : IC); ++ic)
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * sh + ky * dh - pt;
            if (iy < 0 || iy >= H) continue;  // padding: the tap adds w * 0.0f, which changes nothing
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * sw + kx * dw - pl;
              if (ix < 0 || ix >= W) continue;
              const float* wrow = &wk[((ic * KH + ky) * KW + kx) * OC];
              const float* xrow = &x[((b * H + iy) * W + ix) * IC];
              if (depthwise) {
                for (int64_t o = 0; o < OC; ++o) xin[o] = xrow[o / M];
                for (int64_t o = 0; o < OC; ++o)
                  acc[o] = madd<kFused>(wrow[o], xin[o], acc[o]);
              } else {
                const float xv = xrow[ic];
                for (int64_t o = 0; o < OC; ++o)
                  acc[o] = madd<kFused>(wrow[o], xv, acc[o]);
              }
            }
          }
        uint8_t* dst = &out[((b * OH + oy) * OW + ox) * OC];
        for (int64_t o = 0; o < OC; ++o) dst[o] = encode(acc[o] + bias[o], yt);
      }
  TS_RETURN_IF_ERROR(activate(n, yt, out));
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// x [..., K] read as [R, K]; w [OC, K]; y [R, OC].
template <bool kFused>
Status fully_connected(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &wt = g.tensor(n.inputs[1]), &yt = g.tensor(n.outputs[0]);
  if (!is_q8(xt) || !is_q8(wt) || !is_q8(yt) || !wt.data || xt.quant.per_axis() || yt.quant.per_axis())
    return fail(n, "needs u8/i8 per-tensor input/output and constant u8/i8 weights");
  const int64_t OC = wt.shape[0], K = wt.shape[1], R = xt.elements() / K;
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  const std::vector<float> w = decode_all(wt, weight_bytes(wt));
  TS_ASSIGN_OR_RETURN(const std::vector<float> bias, decode_bias(g, n, OC));
  std::vector<float> wk(static_cast<size_t>(K * OC));  // [K][OC]
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t k = 0; k < K; ++k) wk[k * OC + o] = w[o * K + k];
  std::vector<uint8_t> out(static_cast<size_t>(R * OC));
  std::vector<float> acc(static_cast<size_t>(OC));
  for (int64_t r = 0; r < R; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float xv = x[r * K + k];
      const float* wrow = &wk[k * OC];
      for (int64_t o = 0; o < OC; ++o) acc[o] = madd<kFused>(wrow[o], xv, acc[o]);
    }
    for (int64_t o = 0; o < OC; ++o)
      out[r * OC + o] = encode(acc[o] + bias[o], yt);
  }
  TS_RETURN_IF_ERROR(activate(n, yt, out));
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// x [N,H,W,C] -> y [N,OH,OW,C]; the divisor counts the window's cells inside the input.
Status average_pool(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  const int64_t N = xt.shape[0], H = xt.shape[1], W = xt.shape[2], C = xt.shape[3], OH = yt.shape[1], OW = yt.shape[2];
  const int64_t fh = n.get(attr::filter_h), fw = n.get(attr::filter_w);
  const int64_t sh = n.get(attr::stride_h), sw = n.get(attr::stride_w);
  const int64_t pt = n.get(attr::pad_top), pl = n.get(attr::pad_left);
  const int64_t pb = n.get(attr::pad_bottom), pr = n.get(attr::pad_right);
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  std::vector<uint8_t> out(static_cast<size_t>(yt.elements()));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const int64_t y0 = std::max<int64_t>(oy * sh - pt, 0), y1 = std::min(oy * sh - pt + fh, H + pb);
          const int64_t x0 = std::max<int64_t>(ox * sw - pl, 0), x1 = std::min(ox * sw - pl + fw, W + pr);
          const int64_t ye = std::min(y1, H), xe = std::min(x1, W);
          float sum = 0.0f;
          for (int64_t iy = y0; iy < ye; ++iy)
            for (int64_t ix = x0; ix < xe; ++ix) sum += x[((b * H + iy) * W + ix) * C + c];
          const int64_t cells = (ye - y0) * (xe - x0);
          const float result = cells > 0 ? sum / static_cast<float>(cells) : 0.0f;
          out[((b * OH + oy) * OW + ox) * C + c] = encode(result, yt);
        }
  TS_RETURN_IF_ERROR(activate(n, yt, out));
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// Sums in the input's row-major order into the output element the reduced index maps to.
Status mean(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : n.get(attr::axes)) reduced[a < 0 ? a + rank : a] = true;
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  std::vector<float> sum(static_cast<size_t>(yt.elements()), 0.0f);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) count *= xt.shape[d];
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < xt.elements(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) o = o * xt.shape[d] + index[d];
    sum[o] += x[i];
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == xt.shape[d]; --d)
      index[d] = 0;
  }
  std::vector<uint8_t> out(sum.size());
  for (size_t o = 0; o < sum.size(); ++o) out[o] = encode(sum[o] / static_cast<float>(count), yt);
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// Along the last axis: max, sum of exp((x - max) * beta) in order, exp(...) / sum.
Status softmax(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  const int64_t axis = n.get(attr::axis);
  if (n.inputs.size() > 1 || (axis != -1 && axis != static_cast<int64_t>(xt.shape.size()) - 1))
    return fail(n, "only a softmax along the last axis without a mask is emulated");
  const float beta = static_cast<float>(n.get(attr::beta));
  const int64_t D = xt.shape.back(), rows = xt.elements() / D;
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  std::vector<uint8_t> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * D];
    float mx = std::numeric_limits<float>::lowest();
    for (int64_t i = 0; i < D; ++i) mx = std::max(mx, row[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < D; ++i) sum += std::exp((row[i] - mx) * beta);
    for (int64_t i = 0; i < D; ++i) out[r * D + i] = encode(std::exp((row[i] - mx) * beta) / sum, yt);
  }
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

Status add(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &at = g.tensor(n.inputs[0]), &bt = g.tensor(n.inputs[1]), &yt = g.tensor(n.outputs[0]);
  if (at.shape != bt.shape) return fail(n, "broadcasting add is not emulated");
  const std::vector<float> a = decode_all(at, values.at(n.inputs[0])), b = decode_all(bt, values.at(n.inputs[1]));
  std::vector<uint8_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = encode(a[i] + b[i], yt);
  TS_RETURN_IF_ERROR(activate(n, yt, out));
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

Status requantize(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  std::vector<uint8_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = encode(x[i], yt);
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// Moves elements of one byte (u8/i8): y[j] = x[i] with y's index the permuted x index.
Status transpose(const Graph& g, const Node& n, TensorValues& values) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  const std::vector<int64_t> perm = n.get(attr::perm);
  const std::vector<uint8_t>& x = values.at(n.inputs[0]);
  const std::vector<int64_t> xs = row_major_strides(xt.shape);
  const size_t rank = yt.shape.size();
  std::vector<uint8_t> out(x.size());
  std::vector<int64_t> index(rank, 0);
  for (int64_t j = 0; j < yt.elements(); ++j) {
    int64_t i = 0;
    for (size_t d = 0; d < rank; ++d) i += index[d] * xs[perm[d]];
    out[j] = x[i];
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0 && ++index[d] == yt.shape[d]; --d)
      index[d] = 0;
  }
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

// Only consumer of `t` when there is exactly one.
const Node* sole_consumer(const Graph& g, TensorId t) {
  const Node* found = nullptr;
  for (const Node& m : g.nodes())
    for (TensorId in : m.inputs)
      if (in == t) {
        if (found) return nullptr;
        found = &m;
      }
  return found;
}

Status pad(const Graph& g, const Node& n, TensorValues& values, const PeerOptions& options) {
  const Tensor &xt = g.tensor(n.inputs[0]), &yt = g.tensor(n.outputs[0]);
  if (n.has(attr::value)) return fail(n, "a pad with constant_values is not emulated");
  const std::vector<int64_t> pads = n.get(attr::paddings);
  const size_t rank = xt.shape.size();
  const Node* consumer = sole_consumer(g, n.outputs[0]);
  const bool spatial_only = rank == 4 && pads[0] == 0 && pads[1] == 0 && pads[6] == 0 && pads[7] == 0;
  const bool folded = options.fold_pad_into_conv2d && consumer && consumer->op == OpKind::conv2d && spatial_only;
  const uint8_t border = options.pad_with_raw_zero && !folded ? uint8_t{0} : encode(0.0f, yt);
  std::vector<uint8_t> out(static_cast<size_t>(yt.elements()), border);
  const std::vector<float> x = decode_all(xt, values.at(n.inputs[0]));
  const std::vector<int64_t> ys = row_major_strides(yt.shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < xt.elements(); ++i) {
    int64_t j = 0;
    for (size_t d = 0; d < rank; ++d) j += (index[d] + pads[2 * d]) * ys[d];
    out[j] = encode(x[i], yt);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0 && ++index[d] == xt.shape[d]; --d)
      index[d] = 0;
  }
  values[n.outputs[0]] = std::move(out);
  return Status::Ok();
}

}  // namespace

Status run_peer_node(const Graph& g, const Node& n, TensorValues& values, const PeerOptions& options) {
  for (TensorId in : n.inputs)
    if (in != kNoTensor && !g.tensor(in).data && !values.count(in))
      return error(StatusCode::invalid_argument, "[peer emulation] ", n.label(), ": input '", g.tensor(in).name,
                   "' has no value");
  for (TensorId t : n.inputs) {
    if (t == kNoTensor || g.tensor(t).data) continue;
    if (!is_q8(g.tensor(t)) || g.tensor(t).quant.per_axis())
      return fail(n, "input '" + g.tensor(t).name + "' is not a u8/i8 per-tensor quantized tensor");
  }
  if (!is_q8(g.tensor(n.outputs[0])) || g.tensor(n.outputs[0]).quant.per_axis())
    return fail(n, "output '" + g.tensor(n.outputs[0]).name + "' is not a u8/i8 per-tensor quantized tensor");
  const bool fused = options.fused_multiply_add;
  switch (n.op) {
    case OpKind::conv2d:
    case OpKind::depthwise_conv2d:
      return fused ? convolution<true>(g, n, values) : convolution<false>(g, n, values);
    case OpKind::fully_connected:
      return fused ? fully_connected<true>(g, n, values) : fully_connected<false>(g, n, values);
    case OpKind::avg_pool2d: return average_pool(g, n, values);
    case OpKind::mean: return mean(g, n, values);
    case OpKind::softmax: return softmax(g, n, values);
    case OpKind::add: return add(g, n, values);
    case OpKind::requantize: return requantize(g, n, values);
    case OpKind::transpose: return transpose(g, n, values);
    case OpKind::pad: return pad(g, n, values, options);
    case OpKind::reshape:
      values[n.outputs[0]] = values.at(n.inputs[0]);
      return Status::Ok();
    default: return fail(n, std::string("op '") + op_name(n.op) + "' is not emulated");
  }
}

Result<TensorValues> run_peer_graph(const Graph& g, const std::vector<uint8_t>& input, const PeerOptions& options) {
  if (g.inputs.size() != 1) return error(StatusCode::unsupported, "[peer emulation] the model must have one input");
  const Tensor& in = g.tensor(g.inputs[0]);
  if (static_cast<int64_t>(input.size()) != in.elements() || dtype_size(in.dtype) != 1)
    return error(StatusCode::invalid_argument, "[peer emulation] input '", in.name, "' needs ", in.elements(),
                 " one-byte elements, got ", input.size(), " bytes");
  TensorValues values{{g.inputs[0], input}};
  for (const Node& n : g.nodes()) TS_RETURN_IF_ERROR(run_peer_node(g, n, values, options));
  return values;
}

}  // namespace tessera::testing
