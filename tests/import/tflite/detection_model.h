// A small float TFLite model holding one TFLite_Detection_PostProcess operator, built with
// the flatbuffers builder: inputs box encodings [1, N, 4] and class scores [1, N, C] (f32),
// constant anchors [N, 4], four f32 outputs. Its FlexBuffer options are written with the
// flexbuffers builder from DetectionOptions, or given raw. Used by the importer tests, the
// oracle tests and the fuzz target (which mutates the options).
#pragma once

#include <flatbuffers/flexbuffers.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tflite_schema_generated.h"

namespace tessera::testing {

struct DetectionOptions {
  int max_detections = 5;
  int max_classes_per_detection = 1;
  int detections_per_class = 3;
  bool use_regular_nms = false;
  float nms_score_threshold = 0.2f;
  float nms_iou_threshold = 0.5f;
  int num_classes = 3;
  float y_scale = 10.0f, x_scale = 10.0f, h_scale = 5.0f, w_scale = 5.0f;
};

inline std::vector<uint8_t> detection_options_flexbuffer(const DetectionOptions& o) {
  flexbuffers::Builder fbb;
  fbb.Map([&]() {
    fbb.Int("max_detections", o.max_detections);
    fbb.Int("max_classes_per_detection", o.max_classes_per_detection);
    fbb.Int("detections_per_class", o.detections_per_class);
    fbb.Bool("use_regular_nms", o.use_regular_nms);
    fbb.Float("nms_score_threshold", o.nms_score_threshold);
    fbb.Float("nms_iou_threshold", o.nms_iou_threshold);
    fbb.Int("num_classes", o.num_classes);
    fbb.Float("y_scale", o.y_scale);
    fbb.Float("x_scale", o.x_scale);
    fbb.Float("h_scale", o.h_scale);
    fbb.Float("w_scale", o.w_scale);
  });
  fbb.Finish();
  return fbb.GetBuffer();
}

struct DetectionModelSpec {
  int num_boxes = 16;
  int score_columns = 4;               // num_classes + 1 background column
  std::vector<float> anchors;          // [num_boxes, 4] y, x, h, w; empty: a default grid
  std::vector<int32_t> anchor_shape;   // empty: [num_boxes, 4]
  std::vector<uint8_t> options;        // the FlexBuffer options
  int detections = 5;                  // declared output rows: max_detections * max_classes_per_detection
};

// Anchors on a 4-wide grid of cells in [0, 1], sizes 0.3 x 0.25 (y, x, h, w per box).
inline std::vector<float> grid_anchors(int num_boxes) {
  std::vector<float> a;
  for (int i = 0; i < num_boxes; ++i) {
    a.push_back(0.125f + 0.25f * static_cast<float>((i / 4) % 4));
    a.push_back(0.125f + 0.25f * static_cast<float>(i % 4));
    a.push_back(0.3f);
    a.push_back(0.25f);
  }
  return a;
}

inline std::vector<uint8_t> detection_model(const DetectionModelSpec& spec) {
  namespace T = ::tflite;
  flatbuffers::FlatBufferBuilder b;
  const std::vector<float> anchors = spec.anchors.empty() ? grid_anchors(spec.num_boxes) : spec.anchors;
  std::vector<uint8_t> anchor_bytes(anchors.size() * 4);
  std::memcpy(anchor_bytes.data(), anchors.data(), anchor_bytes.size());
  std::vector<flatbuffers::Offset<T::Buffer>> buffers = {T::CreateBuffer(b), T::CreateBuffer(b, b.CreateVector(anchor_bytes))};
  auto tensor = [&](std::vector<int32_t> shape, uint32_t buffer, const char* name) {
    return T::CreateTensor(b, b.CreateVector(shape), T::TensorType_FLOAT32, buffer, b.CreateString(name));
  };
  const int n = spec.num_boxes, m = spec.detections;
  const std::vector<int32_t> anchor_shape = spec.anchor_shape.empty() ? std::vector<int32_t>{n, 4} : spec.anchor_shape;
  std::vector<flatbuffers::Offset<T::Tensor>> tensors = {
      tensor({1, n, 4}, 0, "box_encodings"), tensor({1, n, spec.score_columns}, 0, "class_predictions"),
      tensor(anchor_shape, 1, "anchors"),    tensor({1, m, 4}, 0, "detection_boxes"),
      tensor({1, m}, 0, "detection_classes"), tensor({1, m}, 0, "detection_scores"),
      tensor({1}, 0, "num_detections")};
  const std::vector<int32_t> op_in = {0, 1, 2}, op_out = {3, 4, 5, 6}, model_in = {0, 1};
  auto op = T::CreateOperator(b, 0, b.CreateVector(op_in), b.CreateVector(op_out), T::BuiltinOptions_NONE, 0,
                              b.CreateVector(spec.options));
  std::vector<flatbuffers::Offset<T::Operator>> ops = {op};
  auto sg = T::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(model_in), b.CreateVector(op_out),
                              b.CreateVector(ops));
  std::vector<flatbuffers::Offset<T::OperatorCode>> codes = {
      T::CreateOperatorCode(b, T::BuiltinOperator_CUSTOM, b.CreateString("TFLite_Detection_PostProcess"), 1,
                            T::BuiltinOperator_CUSTOM)};
  std::vector<flatbuffers::Offset<T::SubGraph>> sgs = {sg};
  auto model = T::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(sgs), b.CreateString("detection test"),
                              b.CreateVector(buffers));
  T::FinishModelBuffer(b, model);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace tessera::testing
