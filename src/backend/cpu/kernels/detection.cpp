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
#include <limits>
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
  o.max_detections = static_cast<int>(n.get(attr::max_detections));
  o.per_detection = static_cast<int>(n.get(attr::max_classes_per_detection));
  o.per_class = static_cast<int>(n.get(attr::detections_per_class));
  o.num_classes = static_cast<int>(n.get(attr::num_classes));
  o.regular = n.get(attr::use_regular_nms) != 0;
  o.score_threshold = static_cast<float>(n.get(attr::nms_score_threshold));
  o.iou_threshold = static_cast<float>(n.get(attr::nms_iou_threshold));
  o.y_scale = static_cast<float>(n.get(attr::y_scale));
  o.x_scale = static_cast<float>(n.get(attr::x_scale));
  o.h_scale = static_cast<float>(n.get(attr::h_scale));
  o.w_scale = static_cast<float>(n.get(attr::w_scale));
  return o;
}

// The tensor's values as float into v: f32 as is, u8/i8 as float(q - zero_point) * scale.
void dequantize_into(const TensorRef& t, std::vector<float>& v) {
  const int64_t n = t.elements();
  v.resize(static_cast<size_t>(n));
  if (t.dtype() == DType::f32) {
    std::memcpy(v.data(), t.data, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const float scale = t.t->quant.scale_at(0);
  const float zp = static_cast<float>(t.t->quant.zero_point_at(0));
  for (int64_t i = 0; i < n; ++i) {
    const float q = t.dtype() == DType::u8 ? static_cast<float>(t.data[i]) : static_cast<float>(int8_t(t.data[i]));
    v[i] = (q - zp) * scale;
  }
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

// Indices 0..n-1 of `values` in decreasing order of value; ties keep their order (the
// order of a stable sort, by an unstable one that breaks ties on the index: std::sort
// needs no buffer, where std::stable_sort allocates one on every call). A NaN (only a
// float model's scores can hold one) orders as -infinity, keeping the order strict.
void decreasing_order(const float* values, size_t n, std::vector<int>& idx) {
  idx.resize(n);
  std::iota(idx.begin(), idx.end(), 0);
  auto key = [&](int i) { return std::isnan(values[i]) ? -std::numeric_limits<float>::infinity() : values[i]; };
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    const float va = key(a), vb = key(b);
    return va > vb || (va == vb && a < b);
  });
}

struct Detection {
  int box, cls;
  float score;
};

// Every buffer of one run, kept per thread between runs: after a network's first run the
// kernel allocates nothing (sizes depend on the tensors' shapes and the scores only).
struct Scratch {
  std::vector<float> enc, scores, anchors, max_scores, class_scores, keep_scores, values;
  std::vector<Corner> boxes;
  std::vector<int> keep, order, selected, best, order2;
  std::vector<uint8_t> active;
  std::vector<Detection> dets, all;
};

// NMS over one score per box; at most `limit` box indices, best first, into s.selected.
void nms_single(const std::vector<Corner>& boxes, const float* scores, size_t num_boxes, int limit, const Options& o,
                Scratch& s) {
  s.keep.clear();
  s.keep_scores.clear();
  for (size_t i = 0; i < num_boxes; ++i)
    if (scores[i] >= o.score_threshold) {
      s.keep.push_back(static_cast<int>(i));
      s.keep_scores.push_back(scores[i]);
    }
  decreasing_order(s.keep_scores.data(), s.keep_scores.size(), s.order);
  const size_t n = s.keep.size();
  const size_t output_size = std::min(n, static_cast<size_t>(std::max(limit, 0)));
  s.active.assign(n, 1);
  size_t num_active = n;
  s.selected.clear();
  for (size_t i = 0; i < n; ++i) {
    if (num_active == 0 || s.selected.size() >= output_size) break;
    if (!s.active[i]) continue;
    const int bi = s.keep[s.order[i]];
    s.selected.push_back(bi);
    s.active[i] = 0;
    --num_active;
    for (size_t j = i + 1; j < n; ++j)
      if (s.active[j] && iou(boxes[bi], boxes[s.keep[s.order[j]]]) > o.iou_threshold) {
        s.active[j] = 0;
        --num_active;
      }
  }
}

// Fast NMS into s.dets.
void fast_nms(int64_t stride, int offset, const Options& o, Scratch& s) {
  const size_t num_boxes = s.boxes.size();
  const size_t per_box = static_cast<size_t>(std::min(o.per_detection, o.num_classes));
  s.max_scores.resize(num_boxes);
  s.best.resize(num_boxes * per_box);  // each box's per_box best classes, best first
  for (size_t b = 0; b < num_boxes; ++b) {
    const float* sc = s.scores.data() + b * stride + offset;
    int* best = s.best.data() + b * per_box;
    if (per_box == 1) {  // the first best class
      best[0] = static_cast<int>(std::max_element(sc, sc + o.num_classes) - sc);
    } else {
      decreasing_order(sc, static_cast<size_t>(o.num_classes), s.order2);
      std::copy(s.order2.begin(), s.order2.begin() + static_cast<std::ptrdiff_t>(per_box), best);
    }
    s.max_scores[b] = sc[best[0]];
  }
  nms_single(s.boxes, s.max_scores.data(), num_boxes, o.max_detections, o, s);
  s.dets.clear();
  for (int b : s.selected)
    for (size_t k = 0; k < per_box; ++k) {
      const int c = s.best[b * per_box + k];
      s.dets.push_back({b, c, s.scores[b * stride + offset + c]});
    }
}

// Regular (per-class) NMS into s.dets: the best so far, sorted by decreasing score.
void regular_nms(int64_t stride, int offset, const Options& o, Scratch& s) {
  const size_t num_boxes = s.boxes.size();
  s.dets.clear();
  s.class_scores.resize(num_boxes);
  for (int c = 0; c < o.num_classes; ++c) {
    for (size_t b = 0; b < num_boxes; ++b) s.class_scores[b] = s.scores[b * stride + offset + c];
    s.all.assign(s.dets.begin(), s.dets.end());
    nms_single(s.boxes, s.class_scores.data(), num_boxes, o.per_class, o, s);
    for (int b : s.selected) s.all.push_back({b, c, s.class_scores[b]});
    s.values.resize(s.all.size());
    for (size_t i = 0; i < s.all.size(); ++i) s.values[i] = s.all[i].score;
    decreasing_order(s.values.data(), s.values.size(), s.order2);
    const size_t kept = std::min(s.order2.size(), static_cast<size_t>(std::max(o.max_detections, 0)));
    s.dets.clear();
    for (size_t i = 0; i < kept; ++i) s.dets.push_back(s.all[s.order2[i]]);
  }
}

struct PreparedDetection : PreparedKernel {
  Options o;
};

Result<std::unique_ptr<PreparedKernel>> prepare_detection(const Graph&, const Node& n) {
  auto p = std::make_unique<PreparedDetection>();
  p->o = options_of(n);
  return std::unique_ptr<PreparedKernel>(std::move(p));
}

Status detection_postprocess(KernelContext& c) {
  if (c.in.size() != 3 || c.out.size() != 4 || !c.in[0] || !c.in[1] || !c.in[2])
    return kernel_error(c.n, "needs 3 inputs (box encodings, class scores, anchors) and 4 outputs, got " +
                                 std::to_string(c.in.size()) + " and " + std::to_string(c.out.size()));
  const auto* prepared = dynamic_cast<const PreparedDetection*>(c.prepared);
  const Options o = prepared ? prepared->o : options_of(c.n);
  const int64_t num_boxes = c.in[0].shape()[1];
  const int64_t box_len = c.in[0].shape()[2];
  const int64_t stride = c.in[1].shape()[2];
  const int offset = static_cast<int>(stride - o.num_classes);  // background columns first
  thread_local Scratch s;
  dequantize_into(c.in[0], s.enc);
  dequantize_into(c.in[1], s.scores);
  dequantize_into(c.in[2], s.anchors);
  s.boxes.resize(static_cast<size_t>(num_boxes));
  for (int64_t i = 0; i < num_boxes; ++i) {
    const float* e = s.enc.data() + i * box_len;  // y, x, h, w
    const float* a = s.anchors.data() + i * 4;    // y, x, h, w
    const float yc = static_cast<float>(double{e[0]} / double{o.y_scale} * double{a[2]} + double{a[0]});
    const float xc = static_cast<float>(double{e[1]} / double{o.x_scale} * double{a[3]} + double{a[1]});
    const float hh = static_cast<float>(0.5 * std::exp(double{e[2]} / double{o.h_scale}) * double{a[2]});
    const float hw = static_cast<float>(0.5 * std::exp(double{e[3]} / double{o.w_scale}) * double{a[3]});
    s.boxes[i] = {yc - hh, xc - hw, yc + hh, xc + hw};
    // TFLite's ValidateBoxes: a decoded box must not be inverted (a negative anchor size).
    if (!(s.boxes[i].ymin <= s.boxes[i].ymax && s.boxes[i].xmin <= s.boxes[i].xmax))
      return kernel_error(c.n, "anchors '" + c.in[2].t->name + "': box " + std::to_string(i) +
                                   " decodes to an inverted or invalid box (anchor height/width " +
                                   std::to_string(a[2]) + ", " + std::to_string(a[3]) + ")");
  }
  if (o.regular)
    regular_nms(stride, offset, o, s);
  else
    fast_nms(stride, offset, o, s);
  float* out_boxes = c.out[0].as<float>();
  float* out_classes = c.out[1].as<float>();
  float* out_scores = c.out[2].as<float>();
  const int64_t m = c.out[1].elements();
  std::fill(out_boxes, out_boxes + 4 * m, 0.0f);
  std::fill(out_classes, out_classes + m, 0.0f);
  std::fill(out_scores, out_scores + m, 0.0f);
  const int64_t count = std::min<int64_t>(m, static_cast<int64_t>(s.dets.size()));
  for (int64_t i = 0; i < count; ++i) {
    const Corner& b = s.boxes[s.dets[i].box];
    out_boxes[4 * i + 0] = b.ymin;
    out_boxes[4 * i + 1] = b.xmin;
    out_boxes[4 * i + 2] = b.ymax;
    out_boxes[4 * i + 3] = b.xmax;
    out_classes[i] = static_cast<float>(s.dets[i].cls);
    out_scores[i] = s.dets[i].score;
  }
  // The count is of detections: with fast NMS, of boxes, each filling per_box rows.
  const int64_t per_box = o.regular ? 1 : std::min(o.per_detection, o.num_classes);
  c.out[3].as<float>()[0] = static_cast<float>(count / per_box);
  return Status::Ok();
}

}  // namespace

void register_detection_kernels(KernelTable& t) {
  t.add(OpKind::detection_postprocess, KernelKind::plain, detection_postprocess, prepare_detection);
  t.add(OpKind::detection_postprocess, KernelKind::quant, detection_postprocess, prepare_detection);
}

}  // namespace tessera::cpu
