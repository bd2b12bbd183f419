// Hybrid kernels: f32 activations, int8 weights, f32 bias and output, with TFLite's
// arithmetic (its builtin CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED for a float input
// and an int8 filter). The float input is quantized to int8 on the fly, one set of
// parameters per batch row (a whole image for the convolutions, one row of IC values for
// fully_connected):
//  * symmetric: range = max(|min|, |max|); scale = range / 127 (float); codes =
//    roundf(x * (127 / range)) clamped to [-127, 127], offset 0; an all-zero row gets
//    scale 1 and zero codes;
//  * asymmetric: rmin = min(0, min), rmax = max(0, max) in double; scale = (rmax - rmin) /
//    255; the zero point is -128 - rmin / scale or 127 - rmax / scale, whichever has the
//    smaller error (|qmin| + |rmin / scale| against |qmax| + |rmax / scale|), clamped to
//    [-128, 127] and rounded; the scale is stored as float; codes = roundf(offset + x *
//    (1 / scale)) clamped to [-128, 127]; rmin == rmax gives scale 1, offset 0.
// Which one: per-tensor CONV_2D symmetric; per-channel CONV_2D (scales not all equal) and
// DEPTHWISE_CONV_2D asymmetric; FULLY_CONNECTED (and BATCH_MATMUL, SVDF) symmetric unless the
// model sets asymmetric_quantize_inputs (the node's hybrid_inputs = "asymmetric"). The
// integer sum over the taps inside the input is acc = sum w * (code - offset) (taps in the
// padding count as real zeros); TFLite computes it as sum w * code - row_sum(w) * offset,
// equal in int32. The output is float(acc) * (row scale * filter scale) + bias, then the
// fused activation.
#include "backend/cpu/kernels/hybrid.h"

#include <cmath>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

struct RowQuant {
  float scale = 1.0f;
  int32_t offset = 0;
};

// A float rounded half away from zero and clamped to [lo, hi] (NaN gives 0), as an int.
int32_t round_clamp(float v, int32_t lo, int32_t hi) {
  const float r = std::round(v);
  if (!(r >= static_cast<float>(lo))) return std::isnan(r) ? 0 : lo;
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(r);
}

}  // namespace

HybridQuant hybrid_quant(float mn, float mx, bool asymmetric) {
  HybridQuant h;
  if (!asymmetric) {
    const float range = std::max(std::fabs(mn), std::fabs(mx));
    if (range == 0.0f) return h;
    h.zero = false;
    h.scale = range / 127.0f;
    h.inv = 127.0f / range;
    h.lo = -127;
    return h;
  }
  const double rmin = std::fmin(0.0, static_cast<double>(mn)), rmax = std::fmax(0.0, static_cast<double>(mx));
  if (rmin == rmax || !std::isfinite(rmax - rmin)) return h;
  const double qmin = -128.0, qmax = 127.0;
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / scale, zp_from_max = qmax - rmax / scale;
  const double err_min = std::fabs(qmin) + std::fabs(rmin / scale), err_max = std::fabs(qmax) + std::fabs(rmax / scale);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  h.zero = false;
  h.offset = zp <= qmin ? -128 : zp >= qmax ? 127 : static_cast<int32_t>(std::round(zp));
  h.scale = static_cast<float>(scale);
  h.inv = static_cast<float>(1.0 / static_cast<double>(h.scale));
  h.add = static_cast<float>(h.offset);
  h.lo = -128;
  return h;
}

int32_t hybrid_code(float v, const HybridQuant& h) { return round_clamp(h.add + v * h.inv, h.lo, h.hi); }

namespace {

void min_max(const float* v, int64_t n, float* mn, float* mx) {
  *mn = v[0];
  *mx = v[0];
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] < *mn) *mn = v[i];
    if (*mx < v[i]) *mx = v[i];
  }
}

RowQuant quantize_symmetric(const float* v, int64_t n, int8_t* q) {
  float mn = 0, mx = 0;
  if (n > 0) min_max(v, n, &mn, &mx);
  const HybridQuant h = hybrid_quant(mn, mx, false);
  if (h.zero) {
    std::fill(q, q + n, int8_t{0});
    return RowQuant{h.scale, h.offset};
  }
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(hybrid_code(v[i], h));
  return RowQuant{h.scale, h.offset};
}

}  // namespace

float quantize_symmetric_row(const float* v, int64_t n, int8_t* codes) { return quantize_symmetric(v, n, codes).scale; }

namespace {

RowQuant quantize_asymmetric(const float* v, int64_t n, int8_t* q) {
  float mn = 0, mx = 0;
  if (n > 0) min_max(v, n, &mn, &mx);
  const HybridQuant h = hybrid_quant(mn, mx, true);
  if (h.zero) {
    std::fill(q, q + n, int8_t{0});
    return RowQuant{h.scale, h.offset};
  }
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(hybrid_code(v[i], h));
  return RowQuant{h.scale, h.offset};
}

}  // namespace

float quantize_asymmetric_row(const float* v, int64_t n, int8_t* codes, int32_t* offset) {
  const RowQuant r = quantize_asymmetric(v, n, codes);
  *offset = r.offset;
  return r.scale;
}

bool asymmetric_inputs(const Node& n) { return n.get(attr::hybrid_inputs) == "asymmetric"; }

namespace {

// The filter's scale for output channel oc (per-tensor: the one scale).
struct FilterScales {
  const std::vector<float>* s = nullptr;
  float at(int64_t oc) const { return s->size() == 1 ? (*s)[0] : (*s)[static_cast<size_t>(oc)]; }
};

// Checks the parts of a hybrid node the importer already checks, so that a hand-built graph
// gets an error instead of a bad read: weights int8 with zero points 0 and one scale or
// one per output channel along `axis`, an f32 bias and output.
Status check_hybrid(const KernelContext& c, int64_t channels, int axis) {
  const Tensor& w = *c.in[1].t;
  const QuantParams& q = w.quant;
  if (q.scale.size() != 1 && static_cast<int64_t>(q.scale.size()) != channels)
    return kernel_error(c.n, "weights '" + w.name + "' have " + std::to_string(q.scale.size()) + " scales for " +
                                 std::to_string(channels) + " output channels");
  if (q.scale.size() > 1 && q.axis != axis)
    return kernel_error(c.n, "weights '" + w.name + "' are quantized along axis " + std::to_string(q.axis) +
                                 ", expected the output-channel axis " + std::to_string(axis));
  for (int64_t z : q.zero_point)
    if (z != 0) return kernel_error(c.n, "hybrid weights '" + w.name + "' need zero points 0");
  if (c.in.size() > 2 && c.in[2] && c.in[2].dtype() != DType::f32)
    return kernel_error(c.n, "the bias '" + c.in[2].t->name + "' of a hybrid operator must be f32");
  if (c.out[0].dtype() != DType::f32) return kernel_error(c.n, "the output of a hybrid operator must be f32");
  return Status::Ok();
}

bool scales_differ(const std::vector<float>& s) {
  for (float v : s)
    if (v != s[0]) return true;
  return false;
}

// conv2d and depthwise_conv2d: one quantized image per batch, then the window sums.
template <bool kDepthwise>
Status hybrid_conv(KernelContext& c) {
  const Shape &xs = c.in[0].shape(), &ws = c.in[1].shape(), &ys = c.out[0].shape();
  const int64_t H = xs[1], W = xs[2], C = xs[3], N = xs[0];
  const int64_t KH = ws[1], KW = ws[2];
  const int64_t OC = kDepthwise ? ws[3] : ws[0], IC = kDepthwise ? 1 : ws[3];
  const int64_t M = kDepthwise ? OC / std::max<int64_t>(C, 1) : 1;
  const int64_t OH = ys[1], OW = ys[2];
  TS_RETURN_IF_ERROR(check_hybrid(c, OC, kDepthwise ? 3 : 0));
  // Per tap the products are summed in int32: |w * (code - offset)| <= 128 * 255.
  if (IC > 65535) return kernel_error(c.n, std::to_string(IC) + " input channels are too many for a hybrid convolution");
  if (!kDepthwise && C != IC)
    return kernel_error(c.n, "grouped convolution (input channels " + std::to_string(C) + ", filter " +
                                 std::to_string(IC) + ") is not supported with hybrid weights");
  const Window win = window_of(c.n, KH, KW);
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const std::vector<float>& wscale = c.in[1].t->quant.scale;
  // TFLite: per-channel conv (scales not all equal) and depthwise quantize asymmetrically.
  const bool asymmetric = kDepthwise || scales_differ(wscale);
  const FilterScales fs{&wscale};
  const int64_t image = H * W * C;
  std::vector<int8_t> q(static_cast<size_t>(N * image));
  std::vector<RowQuant> rq(static_cast<size_t>(N));
  const float* x = c.in[0].as<float>();
  for (int64_t b = 0; b < N; ++b)
    rq[static_cast<size_t>(b)] = asymmetric ? quantize_asymmetric(x + b * image, image, q.data() + b * image)
                                            : quantize_symmetric(x + b * image, image, q.data() + b * image);
  const int8_t* w = c.in[1].as<int8_t>();
  const float* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  auto work = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      const RowQuant& rb = rq[static_cast<size_t>(b)];
      const int32_t off = rb.offset;
      const int8_t* qb = q.data() + b * image;
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t oc = 0; oc < OC; ++oc) {
          int64_t acc = 0;
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
              if (ix < 0 || ix >= W) continue;
              if (kDepthwise) {
                acc += static_cast<int32_t>(w[(ky * KW + kx) * OC + oc]) * (qb[(iy * W + ix) * C + oc / M] - off);
              } else {
                const int8_t* xv = qb + (iy * W + ix) * C;
                const int8_t* wv = w + ((oc * KH + ky) * KW + kx) * IC;
                int32_t s = 0;
                for (int64_t ic = 0; ic < IC; ++ic) s += static_cast<int32_t>(wv[ic]) * (xv[ic] - off);
                acc += s;
              }
            }
          }
          const float scale = asymmetric ? fs.at(oc) * rb.scale : rb.scale * fs.at(oc);
          float v = static_cast<float>(acc) * scale;
          if (bias) v += bias[oc];
          y[((b * OH + oy) * OW + ox) * OC + oc] = activate(v, act);
        }
    }
  };
  parallel_rows(c, N * OH, work, min_rows_per_chunk(OW * OC * KH * KW * IC));
  return Status::Ok();
}

}  // namespace

bool hybrid_weights(const KernelContext& c) {
  return c.in.size() > 1 && c.in[0] && c.in[1] && c.in[0].dtype() == DType::f32 && c.in[1].dtype() == DType::i8 &&
         !c.in[1].t->quant.empty();
}

Status hybrid_conv2d(KernelContext& c) { return hybrid_conv<false>(c); }
Status hybrid_depthwise_conv2d(KernelContext& c) { return hybrid_conv<true>(c); }

// y [M, OC] = act(x [M, IC] w [OC, IC]^T * scales + bias): each row of x quantized alone.
Status hybrid_fully_connected(KernelContext& c) {
  const Shape& ws = c.in[1].shape();
  const int64_t OC = ws[0], IC = ws[1];
  TS_RETURN_IF_ERROR(check_hybrid(c, OC, 0));
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const int64_t rows = IC ? c.in[0].elements() / IC : 0;
  if (rows * IC != c.in[0].elements())
    return kernel_error(c.n, "input '" + c.in[0].t->name + "' does not split into rows of " + std::to_string(IC));
  const bool asymmetric = asymmetric_inputs(c.n);
  const FilterScales fs{&c.in[1].t->quant.scale};
  std::vector<int8_t> q(static_cast<size_t>(rows * IC));
  std::vector<RowQuant> rq(static_cast<size_t>(rows));
  const float* x = c.in[0].as<float>();
  for (int64_t m = 0; m < rows; ++m)
    rq[static_cast<size_t>(m)] = asymmetric ? quantize_asymmetric(x + m * IC, IC, q.data() + m * IC)
                                            : quantize_symmetric(x + m * IC, IC, q.data() + m * IC);
  const int8_t* w = c.in[1].as<int8_t>();
  const float* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  auto work = [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      const RowQuant& rm = rq[static_cast<size_t>(m)];
      const int8_t* qm = q.data() + m * IC;
      for (int64_t o = 0; o < OC; ++o) {
        const int8_t* wo = w + o * IC;
        int64_t acc = 0;
        for (int64_t i = 0; i < IC; ++i) acc += static_cast<int32_t>(wo[i]) * (qm[i] - rm.offset);
        // TFLite folds the filter scale into the row scale first (per-tensor filters).
        const float scale = rm.scale * fs.at(o);
        const float v = (bias ? bias[o] : 0.0f) + static_cast<float>(acc) * scale;
        y[m * OC + o] = activate(v, act);
      }
    }
  };
  parallel_rows(c, rows, work, min_rows_per_chunk(OC * IC));
  return Status::Ok();
}

}  // namespace tessera::cpu
