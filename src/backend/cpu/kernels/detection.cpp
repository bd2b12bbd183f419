// detection_postprocess: SSD post-processing as TFLite's TFLite_Detection_PostProcess
// defines it (tensorflow/lite/kernels/detection_postprocess.cc), float arithmetic in the
// same order so that the outputs are those of the interpreter:
//
// 1. Dequantize (u8/i8 inputs): float(q - zero_point) * scale.
// 2. Decode every box against its anchor (centre-size encoding y, x, h, w), in double:
//      yc = by / y_scale * ah + ay            xc = bx / x_scale * aw + ax
//      hh = 0.5 * exp(bh / h_scale) * ah      hw = 0.5 * exp(bw / w_scale) * aw
//    box = (yc - hh, xc - hw, yc + hh, xc + hw), each rounded to float first.
// 3. Non-maximum suppression, one of:
//    - fast (use_regular_nms = 0): each box keeps its best class score (and its
//      max_classes_per_detection best classes); one NMS pass over those scores.
//    - regular: NMS per class (at most detections_per_class each), merged into the
//      max_detections best.
//    NMS keeps scores >= nms_score_threshold, visits them in decreasing order (a stable
//    sort: ties keep the lower box index first) and drops a candidate whose intersection
//    over union with a kept box is above nms_iou_threshold.
// 4. Outputs: boxes [1, M, 4], classes [1, M] (class index without the background
//    column), scores [1, M], count [1] (fast NMS: boxes kept, each filling
//    max_classes_per_detection rows; regular: rows). Rows not filled are zero.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

struct Corner {
  float ymin, xmin, ymax, xmax;
};

struct Options {
  int max_detections, per_detection, per_class, num_classes;
  bool regular;
  float score_threshold, iou_threshold;
  float y_scale, x_scale, h_scale, w_scale;
};

Options options_of(const Node& n) {
  Options o;
  o.max_detections = static_cast<int>(n.attr_int("max_detections", 0));
  o.per_detection = static_cast<int>(n.attr_int("max_classes_per_detection", 1));
  o.per_class = static_cast<int>(n.attr_int("detections_per_class", 100));
  o.num_classes = static_cast<int>(n.attr_int("num_classes", 0));
  o.regular = n.attr_int("use_regular_nms", 0) != 0;
  o.score_threshold = static_cast<float>(n.attr_float("nms_score_threshold", 0.0));
  o.iou_threshold = static_cast<float>(n.attr_float("nms_iou_threshold", 0.0));
  o.y_scale = static_cast<float>(n.attr_float("y_scale", 1.0));
  o.x_scale = static_cast<float>(n.attr_float("x_scale", 1.0));
  o.h_scale = static_cast<float>(n.attr_float("h_scale", 1.0));
  o.w_scale = static_cast<float>(n.attr_float("w_scale", 1.0));
  return o;
}

// The tensor's values as float: f32 as is, u8/i8 as float(q - zero_point) * scale.
std::vector<float> dequantized(const TensorRef& t) {
  const int64_t n = t.elements();
  std::vector<float> v(static_cast<size_t>(n));
  if (t.dtype() == DType::f32) {
    std::memcpy(v.data(), t.data, static_cast<size_t>(n) * sizeof(float));
    return v;
  }
  const float scale = t.t->quant.scale_at(0);
  const float zp = static_cast<float>(t.t->quant.zero_point_at(0));
  for (int64_t i = 0; i < n; ++i) {
    const float q = t.dtype() == DType::u8 ? static_cast<float>(t.data[i]) : static_cast<float>(int8_t(t.data[i]));
    v[i] = (q - zp) * scale;
  }
  return v;
}

float iou(const Corner& a, const Corner& b) {
  const float area_a = (a.ymax - a.ymin) * (a.xmax - a.xmin);
  const float area_b = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (area_a <= 0 || area_b <= 0) return 0.0f;
  const float ymin = std::max(a.ymin, b.ymin), xmin = std::max(a.xmin, b.xmin);
  const float ymax = std::min(a.ymax, b.ymax), xmax = std::min(a.xmax, b.xmax);
  const float inter = std::max(ymax - ymin, 0.0f) * std::max(xmax - xmin, 0.0f);
  return inter / (area_a + area_b - inter);
}

// Indices of `values` in decreasing order of value; ties keep their order.
std::vector<int> decreasing_order(const std::vector<float>& values) {
  std::vector<int> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return values[a] > values[b]; });
  return idx;
}

// NMS over one score per box; at most `limit` box indices, best first.
std::vector<int> nms_single(const std::vector<Corner>& boxes, const std::vector<float>& scores, int limit,
                            const Options& o) {
  std::vector<int> keep;
  std::vector<float> keep_scores;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] >= o.score_threshold) {
      keep.push_back(static_cast<int>(i));
      keep_scores.push_back(scores[i]);
    }
  const std::vector<int> order = decreasing_order(keep_scores);
  const size_t output_size = std::min(keep.size(), static_cast<size_t>(limit));
  std::vector<uint8_t> active(keep.size(), 1);
  size_t num_active = keep.size();
  std::vector<int> selected;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (num_active == 0 || selected.size() >= output_size) break;
    if (!active[i]) continue;
    const int bi = keep[order[i]];
    selected.push_back(bi);
    active[i] = 0;
    --num_active;
    for (size_t j = i + 1; j < keep.size(); ++j)
      if (active[j] && iou(boxes[bi], boxes[keep[order[j]]]) > o.iou_threshold) {
        active[j] = 0;
        --num_active;
      }
  }
  return selected;
}

struct Detection {
  int box, cls;
  float score;
};

std::vector<Detection> fast_nms(const std::vector<Corner>& boxes, const std::vector<float>& scores, int64_t stride,
                                int offset, const Options& o) {
  const size_t num_boxes = boxes.size();
  const int per_box = std::min(o.per_detection, o.num_classes);
  std::vector<float> max_scores(num_boxes);
  std::vector<std::vector<int>> best(num_boxes);
  for (size_t b = 0; b < num_boxes; ++b) {
    const float* s = scores.data() + b * stride + offset;
    std::vector<int> idx(static_cast<size_t>(o.num_classes));
    std::iota(idx.begin(), idx.end(), 0);
    if (per_box == 1) {  // the first best class
      idx.resize(1);
      idx[0] = static_cast<int>(std::max_element(s, s + o.num_classes) - s);
    } else {
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int c) { return s[a] > s[c]; });
      idx.resize(static_cast<size_t>(per_box));
    }
    max_scores[b] = s[idx[0]];
    best[b] = std::move(idx);
  }
  std::vector<Detection> out;
  for (int b : nms_single(boxes, max_scores, o.max_detections, o))
    for (int c : best[b]) out.push_back({b, c, scores[b * stride + offset + c]});
  return out;
}

std::vector<Detection> regular_nms(const std::vector<Corner>& boxes, const std::vector<float>& scores, int64_t stride,
                                   int offset, const Options& o) {
  std::vector<Detection> merged;  // the best so far, sorted by decreasing score
  std::vector<float> class_scores(boxes.size());
  for (int c = 0; c < o.num_classes; ++c) {
    for (size_t b = 0; b < boxes.size(); ++b) class_scores[b] = scores[b * stride + offset + c];
    std::vector<Detection> all = merged;
    for (int b : nms_single(boxes, class_scores, o.per_class, o)) all.push_back({b, c, class_scores[b]});
    std::vector<float> values(all.size());
    for (size_t i = 0; i < all.size(); ++i) values[i] = all[i].score;
    std::vector<int> order = decreasing_order(values);
    order.resize(std::min(order.size(), static_cast<size_t>(o.max_detections)));
    merged.clear();
    for (int i : order) merged.push_back(all[i]);
  }
  return merged;
}

Status detection_postprocess(KernelContext& c) {
  if (c.in.size() != 3 || c.out.size() != 4 || !c.in[0] || !c.in[1] || !c.in[2])
    return kernel_error(c.n, "needs 3 inputs (box encodings, class scores, anchors) and 4 outputs, got " +
                                 std::to_string(c.in.size()) + " and " + std::to_string(c.out.size()));
  const Options o = options_of(c.n);
  const int64_t num_boxes = c.in[0].shape()[1];
  const int64_t box_len = c.in[0].shape()[2];
  const int64_t stride = c.in[1].shape()[2];
  const int offset = static_cast<int>(stride - o.num_classes);  // background columns first
  const std::vector<float> enc = dequantized(c.in[0]);
  const std::vector<float> scores = dequantized(c.in[1]);
  const std::vector<float> anchors = dequantized(c.in[2]);
  std::vector<Corner> boxes(static_cast<size_t>(num_boxes));
  for (int64_t i = 0; i < num_boxes; ++i) {
    const float* e = enc.data() + i * box_len;  // y, x, h, w
    const float* a = anchors.data() + i * 4;    // y, x, h, w
    const float yc = static_cast<float>(double{e[0]} / double{o.y_scale} * double{a[2]} + double{a[0]});
    const float xc = static_cast<float>(double{e[1]} / double{o.x_scale} * double{a[3]} + double{a[1]});
    const float hh = static_cast<float>(0.5 * std::exp(double{e[2]} / double{o.h_scale}) * double{a[2]});
    const float hw = static_cast<float>(0.5 * std::exp(double{e[3]} / double{o.w_scale}) * double{a[3]});
    boxes[i] = {yc - hh, xc - hw, yc + hh, xc + hw};
    // TFLite's ValidateBoxes: a decoded box must not be inverted (a negative anchor size).
    if (!(boxes[i].ymin <= boxes[i].ymax && boxes[i].xmin <= boxes[i].xmax))
      return kernel_error(c.n, "anchors '" + c.in[2].t->name + "': box " + std::to_string(i) +
                                   " decodes to an inverted or invalid box (anchor height/width " +
                                   std::to_string(a[2]) + ", " + std::to_string(a[3]) + ")");
  }
  const std::vector<Detection> dets =
      o.regular ? regular_nms(boxes, scores, stride, offset, o) : fast_nms(boxes, scores, stride, offset, o);
  float* out_boxes = c.out[0].as<float>();
  float* out_classes = c.out[1].as<float>();
  float* out_scores = c.out[2].as<float>();
  const int64_t m = c.out[1].elements();
  std::fill(out_boxes, out_boxes + 4 * m, 0.0f);
  std::fill(out_classes, out_classes + m, 0.0f);
  std::fill(out_scores, out_scores + m, 0.0f);
  const int64_t count = std::min<int64_t>(m, static_cast<int64_t>(dets.size()));
  for (int64_t i = 0; i < count; ++i) {
    const Corner& b = boxes[dets[i].box];
    out_boxes[4 * i + 0] = b.ymin;
    out_boxes[4 * i + 1] = b.xmin;
    out_boxes[4 * i + 2] = b.ymax;
    out_boxes[4 * i + 3] = b.xmax;
    out_classes[i] = static_cast<float>(dets[i].cls);
    out_scores[i] = dets[i].score;
  }
  // The count is of detections: with fast NMS, of boxes, each filling per_box rows.
  const int64_t per_box = o.regular ? 1 : std::min(o.per_detection, o.num_classes);
  c.out[3].as<float>()[0] = static_cast<float>(count / per_box);
  return Status::Ok();
}

}  // namespace

void register_detection_kernels(KernelTable& t) {
  t.add(OpKind::detection_postprocess, KernelKind::plain, detection_postprocess);
  t.add(OpKind::detection_postprocess, KernelKind::quant, detection_postprocess);
}

}  // namespace tessera::cpu
