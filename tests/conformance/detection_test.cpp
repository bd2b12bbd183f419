// Conformance cases: detection_postprocess (SSD box decoding and non-maximum suppression),
// with a reference computed in double: decoded boxes, IoU and the NMS order. Output 0 (the
// boxes) is compared; the inputs keep scores apart (random floats) so that double and the
// kernel's float choose the same boxes.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

struct BoxD {
  double ymin, xmin, ymax, xmax;
};

double iou(const BoxD& a, const BoxD& b) {
  const double aa = (a.ymax - a.ymin) * (a.xmax - a.xmin), ab = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (aa <= 0 || ab <= 0) return 0;
  const double h = std::max(0.0, std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin));
  const double w = std::max(0.0, std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin));
  return h * w / (aa + ab - h * w);
}

// Greedy NMS over `scores` (>= threshold, decreasing), at most `limit` boxes.
std::vector<int> nms(const std::vector<BoxD>& boxes, const std::vector<double>& scores, double threshold, double iou_max,
                     int limit) {
  std::vector<int> order;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] >= threshold) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  std::vector<int> kept;
  for (int i : order) {
    if (static_cast<int>(kept.size()) >= limit) break;
    bool ok = true;
    for (int k : kept) ok = ok && iou(boxes[i], boxes[k]) <= iou_max;
    if (ok) kept.push_back(i);
  }
  return kept;
}

TESSERA_CONFORMANCE_CASES(detection_postprocess) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 2; ++variant) {
    const bool regular = variant == 1;
    const int64_t n = 12, classes = 3, cols = classes + 1, max_det = 4;
    const double score_min = 0.3, iou_max = 0.5, ys = 10, xs = 10, hs = 5, ws = 5;
    const std::vector<float> enc = uniform(rng, n * 4, -1.0f, 1.0f);
    const std::vector<float> scores = uniform(rng, n * cols, 0.0f, 1.0f);
    std::vector<float> anchors;
    for (int64_t i = 0; i < n; ++i) {  // y, x, h, w on a 3 x 4 grid, overlapping neighbours
      anchors.push_back(0.2f + 0.3f * static_cast<float>(i / 4));
      anchors.push_back(0.15f + 0.23f * static_cast<float>(i % 4));
      anchors.push_back(0.4f);
      anchors.push_back(0.35f);
    }
    CaseGraph cg;
    const TensorId e = cg.input_f32("box_encodings", {1, n, 4}, enc);
    const TensorId s = cg.input_f32("class_scores", {1, n, cols}, scores);
    const TensorId a = cg.weight("anchors", {n, 4}, DType::f32, bytes_of(anchors));
    Case c = cg.finish(std::string("detection_postprocess ") + (regular ? "regular" : "fast") + " 12 boxes",
                       OpKind::detection_postprocess, {e, s, a},
                       {{"max_detections", max_det}, {"max_classes_per_detection", int64_t{1}},
                        {"detections_per_class", int64_t{2}}, {"use_regular_nms", int64_t{regular}},
                        {"nms_score_threshold", score_min}, {"nms_iou_threshold", iou_max}, {"num_classes", classes},
                        {"y_scale", ys}, {"x_scale", xs}, {"h_scale", hs}, {"w_scale", ws}});
    // The op has four outputs; the harness made the first.
    Node& node = c.g.nodes().back();
    for (Shape sh : {Shape{1, max_det}, Shape{1, max_det}, Shape{1}}) {
      Tensor t;
      t.name = "under_test_" + std::to_string(node.outputs.size());
      t.shape = sh;
      t.dtype = DType::f32;
      node.outputs.push_back(c.g.add_tensor(t));
    }
    std::vector<BoxD> boxes(n);
    std::vector<double> box_mag(n * 2);  // |centre| + |half size| per box, y then x: a corner is their
                                         // difference, which can cancel far below either
    for (int64_t i = 0; i < n; ++i) {
      const double yc = enc[i * 4] / ys * anchors[i * 4 + 2] + anchors[i * 4];
      const double xc = enc[i * 4 + 1] / xs * anchors[i * 4 + 3] + anchors[i * 4 + 1];
      const double hh = 0.5 * std::exp(enc[i * 4 + 2] / hs) * anchors[i * 4 + 2];
      const double hw = 0.5 * std::exp(enc[i * 4 + 3] / ws) * anchors[i * 4 + 3];
      boxes[i] = {yc - hh, xc - hw, yc + hh, xc + hw};
      box_mag[i * 2] = std::fabs(yc) + std::fabs(hh);
      box_mag[i * 2 + 1] = std::fabs(xc) + std::fabs(hw);
    }
    auto score = [&](int64_t b, int64_t cls) { return static_cast<double>(scores[b * cols + 1 + cls]); };
    std::vector<int> picked;  // box per output row
    if (!regular) {
      std::vector<double> best(n);
      for (int64_t b = 0; b < n; ++b) best[b] = std::max({score(b, 0), score(b, 1), score(b, 2)});
      picked = nms(boxes, best, score_min, iou_max, static_cast<int>(max_det));
    } else {
      std::vector<std::pair<double, int>> all;  // (score, box), best first, stable
      for (int64_t cls = 0; cls < classes; ++cls) {
        std::vector<double> s1(n);
        for (int64_t b = 0; b < n; ++b) s1[b] = score(b, cls);
        for (int b : nms(boxes, s1, score_min, iou_max, 2)) all.push_back({s1[b], b});
        std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        if (static_cast<int64_t>(all.size()) > max_det) all.resize(max_det);
      }
      for (const auto& p : all) picked.push_back(p.second);
    }
    c.expected.assign(static_cast<size_t>(max_det * 4), 0.0);
    c.magnitude.assign(static_cast<size_t>(max_det * 4), 0.0);
    for (size_t r = 0; r < picked.size(); ++r) {
      const BoxD& b = boxes[picked[r]];
      for (int k = 0; k < 4; ++k) c.magnitude[r * 4 + k] = box_mag[picked[r] * 2 + k % 2];
      c.expected[r * 4 + 0] = b.ymin;
      c.expected[r * 4 + 1] = b.xmin;
      c.expected[r * 4 + 2] = b.ymax;
      c.expected[r * 4 + 3] = b.xmax;
    }
    c.accum = 4;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
