// TFLite-exact quantized pooling and mean: avg_pool2d, max_pool2d (NHWC, input and output
// share quantization, as TFLite requires; u8, i8 and int16 with zero point 0, whose
// reference_integer_ops kernels compute the same) and mean over axes.
#include <algorithm>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

// int16 (16x8): zero points 0 (pooling.cc), and windows whose int32 sum of int16 codes
// cannot overflow (reference_integer_ops::AveragePool sums in int32).
constexpr int64_t kMaxInt16Window = 65536;

Status check_pool(const KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t, /*allow_i16=*/true));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t, /*allow_i16=*/true));
  if (c.in[0].dtype() != c.out[0].dtype()) return kernel_error(c.n, "input and output must have the same dtype");
  if (c.in[0].t->quant != c.out[0].t->quant)
    return kernel_error(c.n, "input and output must share quantization parameters (TFLite pooling)");
  if (c.in[0].dtype() == DType::i16) {
    if (c.in[0].t->quant.zero_point_at(0) != 0)
      return kernel_error(c.n, "int16 tensor '" + c.in[0].t->name + "' has a non-zero zero point (TFLite's 16x8 form needs 0)");
    if (c.n.get(attr::filter_h) * c.n.get(attr::filter_w) > kMaxInt16Window)
      return kernel_error(c.n, "int16 pooling windows are limited to 65536 values (an int32 sum)");
  }
  return Status::Ok();
}

// Average: sum over the window clipped to the input, divided by the clipped count with
// rounding half away from zero (reference_integer_ops::AveragePool; for u8 the sum is
// never negative and reference_ops::AveragePool's (sum + n/2) / n is the same).
Status pool(KernelContext& c, bool average) {
  TS_RETURN_IF_ERROR(check_pool(c));
  const Shape& xs = c.in[0].shape();
  const Shape& ys = c.out[0].shape();
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2];
  const Window win = window_of(c.n, c.n.get(attr::filter_h), c.n.get(attr::filter_w));
  const DType t = c.in[0].dtype();
  const q::Range r = q::activation_range(c.n.get(attr::activation), t, c.out[0].t->quant.scale[0],
                                         static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0)));
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  parallel_rows(c, N * OH, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<int32_t> acc;  // grown once: a run allocates nothing
    if (acc.size() < static_cast<size_t>(C)) acc.resize(static_cast<size_t>(C));
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t b = row / OH, oy = row % OH;
      for (int64_t ox = 0; ox < OW; ++ox) {
        const int64_t y0 = std::max<int64_t>(oy * win.sh - win.pad_top, 0);
        const int64_t y1 = std::min<int64_t>(oy * win.sh - win.pad_top + win.kh, H);
        const int64_t x0 = std::max<int64_t>(ox * win.sw - win.pad_left, 0);
        const int64_t x1 = std::min<int64_t>(ox * win.sw - win.pad_left + win.kw, W);
        const int32_t count = static_cast<int32_t>((y1 - y0) * (x1 - x0));
        std::fill(acc.begin(), acc.begin() + C, average ? 0 : q::qmin(t));
        int32_t* a = acc.data();
        // One pixel's channels into the sums or maxima: the dtype and the operation chosen
        // outside the channel loop, which the compiler then vectorises.
        auto take = [&](const auto* px) {
          if (average)
            for (int64_t ch = 0; ch < C; ++ch) a[ch] += px[ch];
          else
            for (int64_t ch = 0; ch < C; ++ch) a[ch] = std::max<int32_t>(a[ch], px[ch]);
        };
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) {
            const int64_t base = ((b * H + iy) * W + ix) * C;
            if (t == DType::u8)
              take(x + base);
            else if (t == DType::i8)
              take(reinterpret_cast<const int8_t*>(x) + base);
            else
              take(reinterpret_cast<const int16_t*>(x) + base);  // q::load's other case
          }
        const int64_t out = ((b * OH + oy) * OW + ox) * C;
        for (int64_t ch = 0; ch < C; ++ch) {
          int32_t v = acc[ch];
          if (average && count > 0) v = v > 0 ? (v + count / 2) / count : (v - count / 2) / count;
          q::store(y, t, out + ch, q::clamp(v, r.lo, r.hi));
        }
      }
    }
  }, 1);
  return Status::Ok();
}
Status avg_pool2d(KernelContext& c) { return pool(c, true); }
Status max_pool2d(KernelContext& c) { return pool(c, false); }

// MEAN. TFLite's builtin reduce.cc takes two paths, reproduced here:
//  - 4-D, axes {1, 2}, keep_dims, u8 or int8: the optimized Mean (raw sum, multiplier
//    in_s / (count * out_s), bias out_zp - round(in_zp * in_s / out_s) in float). The
//    interpreter takes it for int8 too, not reference_integer_ops::Mean (sum of x - zp,
//    multiplier in_s / out_s, then a rounded division by the count), which differs by one
//    step on some values (measured with the TFLite oracle on tf2_mobilenet_v2 and the NCHW
//    MobileNetV2);
//  - otherwise, with equal input and output parameters, reference_ops::Mean: the integer
//    sum of the codes over the count, truncated (measured with the oracle);
//  - otherwise QuantizedMeanOrSum: float mean of the raw values, rescaled and rounded.
//  int16 (16x8, zero points 0) takes the last two, whatever the axes (the interpreter's
//  reduce.cc has no spatial path for int16; measured with the oracle).
Status mean(KernelContext& c) {
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.in[0].t, /*allow_i16=*/true));
  TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *c.out[0].t, /*allow_i16=*/true));
  const DType t = c.in[0].dtype();
  if (c.out[0].dtype() != t) return kernel_error(c.n, "input and output must have the same dtype");
  const bool i16 = t == DType::i16;
  if (i16 && (c.in[0].t->quant.zero_point_at(0) != 0 || c.out[0].t->quant.zero_point_at(0) != 0))
    return kernel_error(c.n, "int16 tensors need zero point 0 (TFLite's 16x8 form)");
  if (i16 && c.out[0].elements() > 0 && c.in[0].elements() / c.out[0].elements() > kMaxInt16Window)
    return kernel_error(c.n, "int16 mean over more than 65536 values (TFLite sums int16 codes in int32)");
  const Shape& xs = c.in[0].shape();
  const int rank = static_cast<int>(xs.size());
  DimList red(static_cast<size_t>(rank));  // 1 for a reduced axis
  std::vector<int64_t> holder;  // axes stored as a single int
  const std::vector<int64_t>& axes = c.n.get(attr::axes);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return kernel_error(c.n, "axis " + std::to_string(a) + " outside rank " + std::to_string(rank));
    red[static_cast<size_t>(a < 0 ? a + rank : a)] = 1;
  }
  const float si = c.in[0].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const int32_t zi = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t zo = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  const bool spatial = rank == 4 && red[1] && red[2] && !red[0] && !red[3] && c.n.get(attr::keep_dims) != 0;
  if (spatial && !i16) {  // (int16 takes the general path below)
    const int64_t N = xs[0], HW = xs[1] * xs[2], C = xs[3];
    const int32_t count = static_cast<int32_t>(HW);
    float temp = zi * si / so;
    temp = temp > 0 ? temp + 0.5f : temp - 0.5f;
    const int32_t bias = zo - static_cast<int32_t>(temp);
    const float count_f = static_cast<float>(count);
    const q::Multiplier m = q::quantize_multiplier(static_cast<double>(si / (count_f * so)));
    // Raw sums per channel, pixel by pixel (the rows are contiguous).
    thread_local std::vector<int32_t> acc;  // grown once: a run allocates nothing
    if (acc.size() < static_cast<size_t>(C)) acc.resize(static_cast<size_t>(C));
    for (int64_t b = 0; b < N; ++b) {
      std::fill(acc.begin(), acc.begin() + C, 0);
      for (int64_t i = 0; i < HW; ++i) {
        const uint8_t* row = x + (b * HW + i) * C;
        if (t == DType::u8)
          for (int64_t ch = 0; ch < C; ++ch) acc[ch] += row[ch];
        else
          for (int64_t ch = 0; ch < C; ++ch) acc[ch] += static_cast<int8_t>(row[ch]);
      }
      for (int64_t ch = 0; ch < C; ++ch)
        q::store(y, t, b * C + ch, q::clamp(q::multiply(acc[ch], m) + bias, q::qmin(t), q::qmax(t)));
    }
    return Status::Ok();
  }
  // General axes: sum raw values per output position, walking the input in order with the
  // output index advanced by per-dimension strides (0 along the reduced axes).
  const int64_t total = c.in[0].elements(), outs = c.out[0].elements();
  thread_local std::vector<int64_t> sums;  // capacity kept: a run allocates nothing
  sums.assign(static_cast<size_t>(outs), 0);
  DimList ostride(static_cast<size_t>(rank)), idx(static_cast<size_t>(rank));
  int64_t count = 1, st = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (red[d]) {
      count *= xs[d];
    } else {
      ostride[d] = st;
      st *= xs[d];
    }
  }
  for (int64_t i = 0, o = 0; i < total; ++i) {
    sums[o] += q::load(x, t, i);
    for (int d = rank - 1; d >= 0; --d) {
      o += ostride[d];
      if (++idx[d] < xs[d]) break;
      o -= ostride[d] * xs[d];
      idx[d] = 0;
    }
  }
  if (si == so && zi == zo) {  // reference_ops::Mean: the integer sum over the count, truncated
    for (int64_t o = 0; o < outs; ++o) q::store(y, t, o, static_cast<int32_t>(sums[o] / count));
    return Status::Ok();
  }
  const float scale = si / so;
  const float bias = -zi * scale;
  for (int64_t o = 0; o < outs; ++o) {
    const float m = static_cast<float>(sums[o]) / static_cast<float>(count);
    const int32_t v = static_cast<int32_t>(std::round(m * scale + bias)) + zo;
    q::store(y, t, o, q::clamp(v, q::qmin(t), q::qmax(t)));
  }
  return Status::Ok();
}

}  // namespace

void register_quant_pool_kernels(KernelTable& t) {
  t.add(OpKind::avg_pool2d, KernelKind::quant, avg_pool2d);
  t.add(OpKind::max_pool2d, KernelKind::quant, max_pool2d);
  t.add(OpKind::mean, KernelKind::quant, mean);
}

}  // namespace tessera::cpu
