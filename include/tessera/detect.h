// Object detection: what a detector model's outputs mean, decoded as its users decode them.
//
//   auto model = tessera::Model::load("yolov8n_full_integer_quant.tflite");
//   auto session = tessera::ModelSession::create(*model, opts);
//   auto found = (*session)->detect("street.jpg");          // Result<std::vector<Detection>>
//   for (const tessera::Detection& d : *found) ...           // class, score, box in the image's pixels
//
// Two families are recognised from the graph's outputs:
//  - SSD-style models that end in TFLite_Detection_PostProcess (outputs boxes [1, M, 4] as
//    ymin, xmin, ymax, xmax in 0..1, classes [1, M], scores [1, M], count [1]); the image is
//    resized onto the input (Model::image_input);
//  - one-output YOLO exports: YOLOv8's [1, 4 + C, N] (per anchor cx, cy, w, h and C class
//    scores) and YOLOv5's [1, N, 5 + C] (cx, cy, w, h, objectness, C class scores; the score
//    is objectness x class). The image is letterboxed onto the input (Ultralytics' geometry,
//    grey 114 around it) and fed as pixel / 255 (quantized with the input's parameters for
//    8-bit inputs); the best class per anchor is kept at or above the threshold, boxes (in
//    0..1 of the input, or in its pixels when any coordinate is past 2) are mapped back
//    through the letterbox, then per-class non-maximum suppression.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/export.h"
#include "tessera/graph.h"
#include "tessera/status.h"

namespace tessera {

class Session;

enum class DetectorKind { ssd, yolov8, yolov5 };
TESSERA_API const char* detector_kind_name(DetectorKind k);  // "ssd", "yolov8", "yolov5"

struct TESSERA_API DetectorInfo {
  DetectorKind kind = DetectorKind::ssd;
  int64_t classes = 0;  // class count (SSD: the post-process's num_classes)
  int64_t anchors = 0;  // YOLO: candidate boxes per image (8400 at 640 x 640); SSD: 0
};

// What kind of detector `g` is, or an error (unsupported) saying why it is none.
TESSERA_API Result<DetectorInfo> detector_info(const Graph& g);

struct TESSERA_API DetectOptions {
  float threshold = 0.3f;    // lowest score kept, 0..1
  float iou = 0.45f;         // YOLO: a box overlapping a better one of its class by more is dropped
  int max_detections = 300;  // YOLO: at most this many kept (SSD: the post-process decides)
};

struct TESSERA_API Detection {
  int64_t class_id = 0;  // index into the model's classes (a labels file without its background line)
  float score = 0;
  float left = 0, top = 0, right = 0, bottom = 0;  // in the image's pixels, clamped to it
};

// The detections of the last run of `s`, whose input 0 held an image of `image_width` x
// `image_height` pixels prepared as Model::image_input prepares it (letterboxed for YOLO,
// resized for SSD); best score first. Errors: the model is no detector (why), the sizes
// are not positive, the options are out of range, or an output cannot be read.
TESSERA_API Result<std::vector<Detection>> read_detections(const Session& s, int image_width, int image_height,
                                                          const DetectOptions& o = {});

}  // namespace tessera
