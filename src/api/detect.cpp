// Detector outputs decoded (include/tessera/detect.h): SSD post-process outputs and YOLOv8 /
// YOLOv5 exports, as their users decode them.
#include "tessera/detect.h"

#include <algorithm>
#include <cmath>

#include "import/tflite/image.h"
#include "tessera/session.h"

namespace tessera {

const char* detector_kind_name(DetectorKind k) {
  switch (k) {
    case DetectorKind::ssd: return "ssd";
    case DetectorKind::yolov8: return "yolov8";
    case DetectorKind::yolov5: return "yolov5";
  }
  return "?";
}

Result<DetectorInfo> detector_info(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.op == OpKind::detection_postprocess && g.outputs.size() == 4 && n.outputs.size() == 4) {
      bool same = true;
      for (size_t k = 0; k < 4; ++k) same = same && n.outputs[k] == g.outputs[k];
      if (same) return DetectorInfo{DetectorKind::ssd, n.get(attr::num_classes), 0};
    }
  if (g.outputs.size() == 1) {
    const std::vector<int64_t>& s = g.tensor(g.outputs[0]).shape;
    if (s.size() == 3 && s[0] == 1 && s[1] >= 5 && s[2] > s[1]) return DetectorInfo{DetectorKind::yolov8, s[1] - 4, s[2]};
    if (s.size() == 3 && s[0] == 1 && s[2] >= 6 && s[1] > s[2]) return DetectorInfo{DetectorKind::yolov5, s[2] - 5, s[1]};
  }
  return error(StatusCode::unsupported,
               "the model is not an object detector: its outputs are neither the four outputs (boxes, classes, scores, count) of "
               "TFLite_Detection_PostProcess nor one YOLO output ([1, 4 + classes, anchors] as YOLOv8's, "
               "[1, anchors, 5 + classes] as YOLOv5's)");
}

namespace {

Result<std::vector<Detection>> ssd_detections(const Session& s, int image_w, int image_h, const DetectOptions& o) {
  TS_ASSIGN_OR_RETURN(std::vector<float> boxes, s.output_values(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> classes, s.output_values(1));
  TS_ASSIGN_OR_RETURN(std::vector<float> scores, s.output_values(2));
  TS_ASSIGN_OR_RETURN(std::vector<float> count, s.output_values(3));
  const int64_t rows = std::min<int64_t>(static_cast<int64_t>(scores.size()),
                                         std::min<int64_t>(static_cast<int64_t>(classes.size()),
                                                           static_cast<int64_t>(boxes.size()) / 4));
  const float fc = count.empty() ? 0.0f : count[0];
  const int64_t n = std::isfinite(fc) ? std::clamp<int64_t>(static_cast<int64_t>(fc), 0, rows) : 0;
  const float w = static_cast<float>(image_w), h = static_cast<float>(image_h);
  std::vector<Detection> out;
  for (int64_t i = 0; i < n; ++i) {
    if (!(scores[i] >= o.threshold)) continue;
    auto px = [](float v, float size) { return std::clamp(v, 0.0f, 1.0f) * size; };
    out.push_back({static_cast<int64_t>(classes[i]), scores[i], px(boxes[i * 4 + 1], w), px(boxes[i * 4], h),
                   px(boxes[i * 4 + 3], w), px(boxes[i * 4 + 2], h)});
  }
  std::stable_sort(out.begin(), out.end(), [](const Detection& x, const Detection& y) { return x.score > y.score; });
  return out;
}

Result<std::vector<Detection>> yolo_detections(const Session& s, const DetectorInfo& d, int image_w, int image_h,
                                               const DetectOptions& o) {
  TS_ASSIGN_OR_RETURN(std::vector<float> v, s.output_values(0));
  const int64_t C = d.classes, N = d.anchors;
  const bool v8 = d.kind == DetectorKind::yolov8;
  if (static_cast<int64_t>(v.size()) != N * (C + (v8 ? 4 : 5)))
    return error(StatusCode::internal, "YOLO output holds ", v.size(), " values, not ", N, " anchors x ", C + (v8 ? 4 : 5));
  // Value `f` (0..3 box, then the objectness (v5) and the class scores) of anchor a.
  auto at = [&](int64_t f, int64_t a) { return v8 ? v[static_cast<size_t>(f * N + a)] : v[static_cast<size_t>(a * (5 + C) + f)]; };
  struct Cand {
    int64_t cls;
    float score, cx, cy, w, h;
  };
  std::vector<Cand> cand;
  float largest = 0;
  for (int64_t a = 0; a < N; ++a) {
    const int64_t first = v8 ? 4 : 5;
    int64_t best = 0;
    float score = at(first, a);
    for (int64_t c = 1; c < C; ++c)
      if (at(first + c, a) > score) score = at(first + c, a), best = c;
    if (!v8) score *= at(4, a);
    if (!(score >= o.threshold)) continue;
    cand.push_back({best, score, at(0, a), at(1, a), at(2, a), at(3, a)});
    for (float x : {cand.back().cx, cand.back().cy, cand.back().w, cand.back().h}) largest = std::max(largest, std::fabs(x));
  }
  // Boxes in the input's pixels (some exports): to 0..1 of the input first.
  const Tensor& in = s.graph().tensor(s.graph().inputs[0]);
  const auto layout = tflite::input_layout(in);
  if (largest > 2.0f && layout.ok())
    for (Cand& c : cand) {
      c.cx /= static_cast<float>(layout->width), c.w /= static_cast<float>(layout->width);
      c.cy /= static_cast<float>(layout->height), c.h /= static_cast<float>(layout->height);
    }
  std::stable_sort(cand.begin(), cand.end(), [](const Cand& x, const Cand& y) { return x.score > y.score; });
  auto iou = [](const Cand& x, const Cand& y) {
    const float ix = std::max(0.f, std::min(x.cx + x.w / 2, y.cx + y.w / 2) - std::max(x.cx - x.w / 2, y.cx - y.w / 2));
    const float iy = std::max(0.f, std::min(x.cy + x.h / 2, y.cy + y.h / 2) - std::max(x.cy - x.h / 2, y.cy - y.h / 2));
    const float inter = ix * iy, uni = x.w * x.h + y.w * y.h - inter;
    return uni > 0 ? inter / uni : 0.f;
  };
  std::vector<Cand> kept;
  for (const Cand& c : cand) {
    if (static_cast<int>(kept.size()) >= o.max_detections) break;
    bool keep = true;
    for (const Cand& k : kept) keep = keep && !(k.cls == c.cls && iou(k, c) > o.iou);
    if (keep) kept.push_back(c);
  }
  // From 0..1 of the letterboxed input back to the image's pixels.
  const int in_w = layout.ok() ? layout->width : image_w, in_h = layout.ok() ? layout->height : image_h;
  const tflite::LetterboxGeometry lb = tflite::letterbox_geometry(image_w, image_h, in_w, in_h);
  auto px = [&](float val, bool x) {
    const float p = (val * static_cast<float>(x ? in_w : in_h) - static_cast<float>(x ? lb.left : lb.top)) / lb.ratio;
    return std::clamp(p, 0.0f, static_cast<float>(x ? image_w : image_h));
  };
  std::vector<Detection> out;
  for (const Cand& c : kept)
    out.push_back({c.cls, c.score, px(c.cx - c.w / 2, true), px(c.cy - c.h / 2, false), px(c.cx + c.w / 2, true),
                   px(c.cy + c.h / 2, false)});
  return out;
}

}  // namespace

Result<std::vector<Detection>> read_detections(const Session& s, int image_width, int image_height,
                                               const DetectOptions& o) {
  TS_ASSIGN_OR_RETURN(DetectorInfo d, detector_info(s.graph()));
  if (image_width <= 0 || image_height <= 0)
    return error(StatusCode::invalid_argument, "read_detections: image size ", image_width, " x ", image_height,
                 " is not positive");
  if (!(o.threshold >= 0 && o.threshold <= 1) || !(o.iou >= 0 && o.iou <= 1) || o.max_detections < 0)
    return error(StatusCode::invalid_argument, "read_detections: threshold ", o.threshold, " and iou ", o.iou,
                 " must be in 0..1 and max_detections ", o.max_detections, " at least 0");
  if (d.kind == DetectorKind::ssd) return ssd_detections(s, image_width, image_height, o);
  return yolo_detections(s, d, image_width, image_height, o);
}

}  // namespace tessera
