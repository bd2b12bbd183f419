// Shape inference: object-detection post-processing (TFLite's TFLite_Detection_PostProcess).
#include <cmath>

#include "ops/op_infer.h"

namespace tessera::ops {

namespace {

// Bounds on the options, far above any real detector (TFLite's SSD models use 10..100
// detections and 90 classes), so that output sizes computed from them cannot overflow.
constexpr int64_t kMaxDetections = 1 << 16;
constexpr int64_t kMaxClasses = 1 << 16;

bool is_detection_dtype(const Tensor& t) {
  return t.dtype == DType::f32 || ((t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty());
}

}  // namespace

InferResult infer_detection_postprocess(const Graph& g, const Node& n) {
  const Tensor& boxes = in(g, n, 0);
  const Tensor& scores = in(g, n, 1);
  const Tensor& anchors = in(g, n, 2);
  for (const Tensor* t : {&boxes, &scores, &anchors})
    if (!is_detection_dtype(*t))
      return fail(n, "input '" + t->name + "' must be f32 or quantized u8/i8, got " + dtype_name(t->dtype));
  if (boxes.shape.size() != 3 || boxes.shape[0] != 1 || boxes.shape[2] < 4)
    return fail(n, "box encodings '" + boxes.name + "' must be [1, boxes, >= 4], got " + shape_str(boxes.shape));
  const int64_t num_boxes = boxes.shape[1];
  if (scores.shape.size() != 3 || scores.shape[0] != 1 || scores.shape[1] != num_boxes)
    return fail(n, "class scores '" + scores.name + "' must be [1, " + std::to_string(num_boxes) +
                       ", classes], got " + shape_str(scores.shape));
  if (anchors.shape.size() != 2 || anchors.shape[0] != num_boxes || anchors.shape[1] != 4)
    return fail(n, "anchors '" + anchors.name + "' must be [" + std::to_string(num_boxes) + ", 4], got " +
                       shape_str(anchors.shape));
  const int64_t max_detections = n.get(attr::max_detections);
  const int64_t per_detection = n.get(attr::max_classes_per_detection);
  const int64_t num_classes = n.get(attr::num_classes);
  if (max_detections <= 0 || max_detections > kMaxDetections)
    return fail(n, "max_detections " + std::to_string(max_detections) + " is outside [1, " +
                       std::to_string(kMaxDetections) + "]");
  if (per_detection <= 0 || per_detection > kMaxClasses)
    return fail(n, "max_classes_per_detection " + std::to_string(per_detection) + " is outside [1, " +
                       std::to_string(kMaxClasses) + "]");
  if (num_classes <= 0 || num_classes > scores.shape[2])
    return fail(n, "num_classes " + std::to_string(num_classes) + " does not fit class scores '" + scores.name +
                       "' " + shape_str(scores.shape) + " (at most " + std::to_string(scores.shape[2]) + ")");
  if (n.get(attr::use_regular_nms) != 0 && n.get(attr::detections_per_class) <= 0)
    return fail(n, "detections_per_class must be positive");
  const double iou = n.get(attr::nms_iou_threshold);
  if (!(iou > 0.0 && iou <= 1.0)) return fail(n, "nms_iou_threshold " + std::to_string(iou) + " is outside (0, 1]");
  for (const auto& k : {attr::y_scale, attr::x_scale, attr::h_scale, attr::w_scale}) {
    const double v = n.get(k);
    if (!(v > 0.0) || !std::isfinite(v)) return fail(n, std::string(k.name) + " must be positive and finite");
  }
  const double score = n.get(attr::nms_score_threshold);
  if (!std::isfinite(score)) return fail(n, "nms_score_threshold must be finite");
  const int64_t m = max_detections * per_detection;  // both bounded above: no overflow
  return std::vector<InferredOutput>{
      {{1, m, 4}, DType::f32}, {{1, m}, DType::f32}, {{1, m}, DType::f32}, {{1}, DType::f32}};
}

}  // namespace tessera::ops
