// Shape inference: convolution, linear and pooling ops.
#include "core/checked.h"
#include "ops/op_infer.h"

namespace tessera::ops {

namespace {
struct Window {
  int64_t kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
};
Window window(const Node& n, int64_t kh, int64_t kw) {
  return {kh,
          kw,
          n.get(attr::stride_h),
          n.get(attr::stride_w),
          // Pools have no dilation (ops.def declares it for the convolutions only).
          attr::declares(n.op, attr::dilation_h) ? n.get(attr::dilation_h) : 1,
          attr::declares(n.op, attr::dilation_w) ? n.get(attr::dilation_w) : 1,
          n.get(attr::pad_top),
          n.get(attr::pad_bottom),
          n.get(attr::pad_left),
          n.get(attr::pad_right)};
}
Result<Shape> window_out(const Node& n, const Shape& x, const Window& w, int64_t oc) {
  if (w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1) return fail(n, "strides and dilations must be >= 1");
  if (w.pt < 0 || w.pb < 0 || w.pl < 0 || w.pr < 0) return fail(n, "negative padding");
  int64_t eh = (w.kh - 1) * w.dh + 1, ew = (w.kw - 1) * w.dw + 1;
  int64_t ih = x[1] + w.pt + w.pb, iw = x[2] + w.pl + w.pr;
  if (ih < eh || iw < ew)
    return fail(n, "window " + std::to_string(eh) + "x" + std::to_string(ew) + " larger than padded input " +
                       std::to_string(ih) + "x" + std::to_string(iw));
  return Shape{x[0], (ih - eh) / w.sh + 1, (iw - ew) / w.sw + 1, oc};
}
}  // namespace

InferResult infer_conv2d(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& w = in(g, n, 1);
  if (x.shape.size() != 4) return fail(n, "input '" + x.name + "' must be NHWC rank 4, got " + shape_str(x.shape));
  if (w.shape.size() != 4) return fail(n, "filter '" + w.name + "' must be [OC,KH,KW,IC], got " + shape_str(w.shape));
  if (w.shape[3] == 0 || x.shape[3] % w.shape[3] != 0)
    return fail(n, "input channels " + std::to_string(x.shape[3]) + " do not match filter " + shape_str(w.shape));
  if (has_in(n, 2) && num_elements(in(g, n, 2).shape) != w.shape[0])
    return fail(n, "bias '" + in(g, n, 2).name + "' has " + std::to_string(num_elements(in(g, n, 2).shape)) +
                       " values for " + std::to_string(w.shape[0]) + " output channels");
  TS_ASSIGN_OR_RETURN(Shape s, window_out(n, x.shape, window(n, w.shape[1], w.shape[2]), w.shape[0]));
  return one(s, x.dtype);
}

InferResult infer_depthwise_conv2d(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& w = in(g, n, 1);
  if (x.shape.size() != 4) return fail(n, "input '" + x.name + "' must be NHWC rank 4, got " + shape_str(x.shape));
  if (w.shape.size() != 4 || w.shape[0] != 1)
    return fail(n, "filter '" + w.name + "' must be [1,KH,KW,C*M], got " + shape_str(w.shape));
  int64_t m = n.get(attr::depth_multiplier);
  const Size channels = Size(x.shape[3]) * m;  // m comes from the file: checked
  if (m < 1 || !channels.ok() || channels.value_or_zero() != w.shape[3])
    return fail(n, "filter channels " + std::to_string(w.shape[3]) + " != input channels " +
                       std::to_string(x.shape[3]) + " x depth multiplier " + std::to_string(m));
  TS_ASSIGN_OR_RETURN(Shape s, window_out(n, x.shape, window(n, w.shape[1], w.shape[2]), w.shape[3]));
  return one(s, x.dtype);
}

InferResult infer_transpose_conv2d(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& w = in(g, n, 1);
  if (x.shape.size() != 4) return fail(n, "input '" + x.name + "' must be NHWC rank 4, got " + shape_str(x.shape));
  if (w.shape.size() != 4) return fail(n, "filter '" + w.name + "' must be [OC,KH,KW,IC], got " + shape_str(w.shape));
  if (w.shape[3] != x.shape[3])
    return fail(n, "input channels " + std::to_string(x.shape[3]) + " do not match filter " + shape_str(w.shape));
  if (has_in(n, 2) && num_elements(in(g, n, 2).shape) != w.shape[0])
    return fail(n, "bias '" + in(g, n, 2).name + "' has " + std::to_string(num_elements(in(g, n, 2).shape)) +
                       " values for " + std::to_string(w.shape[0]) + " output channels");
  if (has_in(n, 3)) {
    const Tensor& os = in(g, n, 3);
    if (os.dtype != DType::i32 || num_elements(os.shape) != 4)
      return fail(n, "output shape '" + os.name + "' must be i32 [4], got " + dtype_name(os.dtype) + " " + shape_str(os.shape));
  }
  const int64_t oh = n.get(attr::out_h), ow = n.get(attr::out_w);
  const int64_t sh = n.get(attr::stride_h), sw = n.get(attr::stride_w);
  const int64_t pt = n.get(attr::pad_top), pl = n.get(attr::pad_left);
  // The full (uncropped) output spans (H - 1) * stride + KH rows; a forward convolution of
  // the output with these strides must give the input back, so the cropped output may pass
  // that by at most stride - 1 rows (which only the bias reaches).
  const int64_t full_h = (x.shape[1] - 1) * sh + w.shape[1], full_w = (x.shape[2] - 1) * sw + w.shape[2];
  if (pt + oh > full_h + sh - 1 || pl + ow > full_w + sw - 1)
    return fail(n, "output " + std::to_string(oh) + "x" + std::to_string(ow) + " with padding " + std::to_string(pt) +
                       "," + std::to_string(pl) + " does not fit input " + shape_str(x.shape) + ", filter " +
                       shape_str(w.shape) + " and strides " + std::to_string(sh) + "," + std::to_string(sw));
  return one(Shape{x.shape[0], oh, ow, w.shape[0]}, x.dtype);
}

InferResult infer_fully_connected(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& w = in(g, n, 1);
  if (w.shape.size() != 2) return fail(n, "weights '" + w.name + "' must be [OC, IC], got " + shape_str(w.shape));
  int64_t ic = w.shape[1];
  if (x.shape.empty() || ic == 0 || num_elements(x.shape) % ic != 0)
    return fail(n, "input '" + x.name + "' " + shape_str(x.shape) + " does not match weights " + shape_str(w.shape));
  // One bias per output channel: the kernels read bias[oc] for every oc (found by
  // quantize_fuzz: a shorter bias was read past its end).
  if (has_in(n, 2) && num_elements(in(g, n, 2).shape) != w.shape[0])
    return fail(n, "bias '" + in(g, n, 2).name + "' has " + std::to_string(num_elements(in(g, n, 2).shape)) +
                       " values for " + std::to_string(w.shape[0]) + " output channels");
  Shape s;
  if (n.get(attr::keep_dims) && x.shape.back() == ic) {
    s = x.shape;
    s.back() = w.shape[0];
  } else {
    s = {num_elements(x.shape) / ic, w.shape[0]};
  }
  DType t = x.dtype;
  return one(s, t);
}

InferResult infer_matmul(const Graph& g, const Node& n) {
  const Tensor& a = in(g, n, 0);
  const Tensor& b = in(g, n, 1);
  if (a.shape.size() < 2 || b.shape.size() < 2) return fail(n, "operands must have rank >= 2");
  bool tb = n.get(attr::transpose_b) != 0;
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back();
  int64_t kb = tb ? b.shape.back() : b.shape[b.shape.size() - 2];
  int64_t nn = tb ? b.shape[b.shape.size() - 2] : b.shape.back();
  if (k != kb) return fail(n, "inner dims differ: " + shape_str(a.shape) + " x " + shape_str(b.shape) + (tb ? " (transpose_b)" : ""));
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  auto bs = broadcast_shapes(ba, bb);
  if (!bs.ok()) return fail(n, "batch dims: " + bs.status().message());
  Shape s = *bs;
  s.push_back(m);
  s.push_back(nn);
  return one(s, dtype_is_block(a.dtype) ? DType::f32 : a.dtype);
}

static InferResult infer_pool(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (x.shape.size() != 4) return fail(n, "input must be NHWC rank 4, got " + shape_str(x.shape));
  int64_t fh = n.get(attr::filter_h), fw = n.get(attr::filter_w);
  if (fh < 1 || fw < 1) return fail(n, "filter_h and filter_w must be >= 1");
  TS_ASSIGN_OR_RETURN(Shape s, window_out(n, x.shape, window(n, fh, fw), x.shape[3]));
  return one(s, x.dtype);
}
InferResult infer_avg_pool2d(const Graph& g, const Node& n) { return infer_pool(g, n); }
InferResult infer_max_pool2d(const Graph& g, const Node& n) { return infer_pool(g, n); }

}  // namespace tessera::ops
