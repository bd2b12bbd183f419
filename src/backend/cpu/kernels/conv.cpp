// Reference kernels: conv2d (grouped when the input has a multiple of the filter's
// channels), depthwise_conv2d, avg_pool2d and max_pool2d, all NHWC f32 with explicit
// padding. Taps that fall into the padding contribute nothing (zero padding); average
// pooling divides by the number of taps inside the input, as TFLite does.
//
// conv2d and depthwise_conv2d split their output rows (N * OH) over the thread pool; each
// output value is summed by one thread in a fixed tap order, so results are bit-identical
// for any thread count. conv2d adds its products in the order of the TFLite interpreter's
// float GEMM (gemm_sum.h) and then the bias, so that its outputs are the interpreter's bits.
#include <limits>

#include "backend/cpu/kernels/conv_fast.h"
#include "backend/cpu/kernels/gemm_sum.h"
#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/hybrid_fast.h"
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// x [N,H,W,C], w [OC,KH,KW,IC], bias [OC] -> y [N,OH,OW,OC]; groups = C / IC.
Status conv2d(KernelContext& c) {
  if (c.prepared && is_hybrid_conv(c.prepared)) return run_hybrid_conv2d(c);  // hybrid_fast.h, same bits
  if (c.prepared) return run_float_conv2d(c);  // the packed fast path (conv_fast.h), same bits
  if (hybrid_weights(c)) return hybrid_conv2d(c);
  TS_RETURN_IF_ERROR(require_f32(c, {0, 1, 2}));
  const Shape &xs = c.in[0].shape(), &ws = c.in[1].shape(), &ys = c.out[0].shape();
  const Window win = window_of(c.n, ws[1], ws[2]);
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const int64_t H = xs[1], W = xs[2], C = xs[3];
  const int64_t OC = ws[0], KH = ws[1], KW = ws[2], IC = ws[3];
  const int64_t OH = ys[1], OW = ys[2];
  const int64_t groups = C / IC;
  if (OC % groups != 0)
    return kernel_error(c.n, std::to_string(OC) + " output channels do not split into " + std::to_string(groups) + " groups");
  const int64_t oc_per_group = OC / groups;
  const float* x = c.in[0].as<float>();
  const float* w = c.in[1].as<float>();
  const float* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  const GemmDepthBlocks depth_blocks(KH * KW * IC);
  const int64_t pixels = xs[0] * OH * OW;  // the GEMM's columns
  auto work = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox) {
        for (int64_t oc = 0; oc < OC; ++oc) {
          const int64_t c0 = (oc / oc_per_group) * IC;  // first input channel of the group
          // The products in the filter's order (k = (ky * KW + kx) * IC + ic; padding taps
          // are zeros), added as TFLite's GEMM adds them (gemm_sum), then the bias.
          GemmSum sum(depth_blocks, gemm_single_column((b * OH + oy) * OW + ox, pixels));
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
              const int64_t k0 = (ky * KW + kx) * IC;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) {
                continue;  // zeros
              }
              const float* xv = x + ((b * H + iy) * W + ix) * C + c0;
              const float* wv = w + ((oc * KH + ky) * KW + kx) * IC;
              sum.add(k0, xv, wv, IC);
            }
          }
          float acc = sum.total();
          if (bias) acc += bias[oc];
          y[((b * OH + oy) * OW + ox) * OC + oc] = activate(acc, act);
        }
      }
    }
  };
  parallel_rows(c, xs[0] * OH, work, min_rows_per_chunk(OW * OC * KH * KW * IC));
  return Status::Ok();
}

// x [N,H,W,C], w [1,KH,KW,C*M], bias [C*M] -> y [N,OH,OW,C*M]; output channel oc reads
// input channel oc / M.
Status depthwise_conv2d(KernelContext& c) {
  if (hybrid_weights(c)) return hybrid_depthwise_conv2d(c);
  TS_RETURN_IF_ERROR(require_f32(c, {0, 1, 2}));
  const Shape &xs = c.in[0].shape(), &ws = c.in[1].shape(), &ys = c.out[0].shape();
  const Window win = window_of(c.n, ws[1], ws[2]);
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const int64_t H = xs[1], W = xs[2], C = xs[3];
  const int64_t KH = ws[1], KW = ws[2], OC = ws[3], M = OC / C;
  const int64_t OH = ys[1], OW = ys[2];
  const float* x = c.in[0].as<float>();
  const float* w = c.in[1].as<float>();
  const float* bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  auto work = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t oc = 0; oc < OC; ++oc) {
          float acc = bias ? bias[oc] : 0.0f;
          for (int64_t ky = 0; ky < KH; ++ky) {
            const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
              if (ix < 0 || ix >= W) continue;
              acc += x[((b * H + iy) * W + ix) * C + oc / M] * w[(ky * KW + kx) * OC + oc];
            }
          }
          y[((b * OH + oy) * OW + ox) * OC + oc] = activate(acc, act);
        }
    }
  };
  parallel_rows(c, xs[0] * OH, work, min_rows_per_chunk(OW * OC * KH * KW));
  return Status::Ok();
}

// Each output pixel's window taps in order, every channel's running max (or sum) kept over
// a row of C contiguous values: the same operations per channel, in the same order, as one
// channel at a time, so that the compiler's vectors change no bit (std::max is the ordered
// (a < b) ? b : a, NaN taps ignored as there). Output rows split over the thread pool.
template <bool kMax>
Status pool(KernelContext& c) {
  TS_RETURN_IF_ERROR(require_f32(c, {0}));
  const Shape &xs = c.in[0].shape(), &ys = c.out[0].shape();
  const Window win = window_of(c.n, c.n.get(attr::filter_h), c.n.get(attr::filter_w));
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const int64_t H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2];
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  const float start = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  auto work = [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> acc_buf;
    if (static_cast<int64_t>(acc_buf.size()) < C) acc_buf.resize(static_cast<size_t>(C));
    float* acc = acc_buf.data();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / OH, oy = r % OH;
      for (int64_t ox = 0; ox < OW; ++ox) {
        std::fill(acc, acc + C, start);
        int64_t taps = 0;
        for (int64_t ky = 0; ky < win.kh; ++ky) {
          const int64_t iy = oy * win.sh - win.pad_top + ky * win.dh;
          if (iy < 0 || iy >= H) continue;
          for (int64_t kx = 0; kx < win.kw; ++kx) {
            const int64_t ix = ox * win.sw - win.pad_left + kx * win.dw;
            if (ix < 0 || ix >= W) continue;
            const float* v = x + ((b * H + iy) * W + ix) * C;
            if constexpr (kMax) {
              for (int64_t ch = 0; ch < C; ++ch) acc[ch] = std::max(acc[ch], v[ch]);
            } else {
              for (int64_t ch = 0; ch < C; ++ch) acc[ch] += v[ch];
            }
            ++taps;
          }
        }
        float* yo = y + ((b * OH + oy) * OW + ox) * C;
        if (taps == 0) {  // a window entirely in the padding
          for (int64_t ch = 0; ch < C; ++ch) yo[ch] = activate(0.0f, act);
        } else {
          const float n = static_cast<float>(taps);
          for (int64_t ch = 0; ch < C; ++ch) yo[ch] = activate(kMax ? acc[ch] : acc[ch] / n, act);
        }
      }
    }
  };
  parallel_rows(c, xs[0] * OH, work, min_rows_per_chunk(OW * C * win.kh * win.kw));
  return Status::Ok();
}

// The packed fast paths of conv2d: hybrid (f32 input, int8 filter) or float, each
// returning nullptr for nodes it does not take.
Result<std::unique_ptr<PreparedKernel>> prepare_conv2d(const Graph& g, const Node& n) {
  if (n.inputs.size() > 1 && g.tensor(n.inputs[1]).dtype == DType::i8) return prepare_hybrid_conv2d(g, n);
  return prepare_float_conv2d(g, n);
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.add(OpKind::conv2d, KernelKind::plain, conv2d, prepare_conv2d);
  t.add(OpKind::depthwise_conv2d, KernelKind::plain, depthwise_conv2d);
  t.add(OpKind::avg_pool2d, KernelKind::plain, pool<false>);
  t.add(OpKind::max_pool2d, KernelKind::plain, pool<true>);
}

}  // namespace tessera::cpu
