// `tessera detect MODEL IMAGE [--labels FILE] [--threshold T] [--overlay-out FILE.png]`:
// object detection with
//  - an SSD-style model that ends in TFLite_Detection_PostProcess (outputs boxes [1, M, 4]
//    as ymin, xmin, ymax, xmax in 0..1, classes [1, M], scores [1, M], count [1]);
//  - a YOLO export with one output: YOLOv8's [1, 4 + C, N] (per anchor cx, cy, w, h and C
//    class scores) or YOLOv5's [1, N, 5 + C] (cx, cy, w, h, objectness, C class scores; the
//    score is objectness x class). The image letterboxed onto the input (grey 114 around it)
//    and fed pixel / 255; boxes in 0..1 of the input (or in its pixels, when any is past 2)
//    mapped back to the image; candidates at or above the threshold, then per-class
//    non-maximum suppression at IoU 0.45, at most 300 kept, as Ultralytics' exports are used.
// Prints one line per detection at or above the threshold, with its box in the image's
// pixels; optionally draws the labelled boxes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vision.h"

namespace tessera::cli {

namespace {

struct Detection {
  int64_t cls;
  float score;
  float left, top, right, bottom;  // pixels of the original image
};

enum class Kind { ssd, yolov8, yolov5 };
struct Detector {
  Kind kind = Kind::ssd;
  int64_t classes = 0, anchors = 0;
};

// What kind of detector the model is, or an error saying why it is none.
Result<Detector> detector_of(const Graph& g, const std::string& model) {
  for (const Node& n : g.nodes())
    if (n.op == OpKind::detection_postprocess && g.outputs.size() == 4 && n.outputs.size() == 4) {
      bool same = true;
      for (size_t k = 0; k < 4; ++k) same = same && n.outputs[k] == g.outputs[k];
      if (same) return Detector{Kind::ssd, n.get(attr::num_classes), 0};
    }
  if (g.outputs.size() == 1) {
    const std::vector<int64_t>& s = g.tensor(g.outputs[0]).shape;
    if (s.size() == 3 && s[0] == 1 && s[1] >= 5 && s[2] > s[1]) return Detector{Kind::yolov8, s[1] - 4, s[2]};
    if (s.size() == 3 && s[0] == 1 && s[2] >= 6 && s[1] > s[2]) return Detector{Kind::yolov5, s[2] - 5, s[1]};
  }
  return error(StatusCode::unsupported, "model '", model,
               "' is not an object detector: its outputs are neither the four outputs (boxes, classes, scores, count) "
               "of TFLite_Detection_PostProcess nor one YOLO output ([1, 4 + classes, anchors] as YOLOv8's, "
               "[1, anchors, 5 + classes] as YOLOv5's)");
}

tflite::PixelRange pixel_range(const Graph& g) {
  auto d = detector_of(g, "");
  return d.ok() && d->kind != Kind::ssd ? tflite::PixelRange::yolo : tflite::PixelRange::model_default;
}

// A YOLO output decoded: candidates at or above `threshold` (best class per anchor), boxes
// to the image's pixels, per-class non-maximum suppression at IoU 0.45, at most 300.
std::vector<Detection> yolo_detections(const Session& s, const Detector& d, const tflite::Image& img, float threshold) {
  const std::vector<float> v = output_as_float(s, 0);
  const int64_t C = d.classes, N = d.anchors;
  const bool v8 = d.kind == Kind::yolov8;
  // Value `f` (0..3 box, then scores) of anchor a.
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
    if (!(score >= threshold)) continue;
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
    if (kept.size() >= 300) break;
    bool keep = true;
    for (const Cand& k : kept) keep = keep && !(k.cls == c.cls && iou(k, c) > 0.45f);
    if (keep) kept.push_back(c);
  }
  // From 0..1 of the letterboxed input back to the image's pixels.
  const int in_w = layout.ok() ? layout->width : img.width, in_h = layout.ok() ? layout->height : img.height;
  const tflite::LetterboxGeometry lb = tflite::letterbox_geometry(img.width, img.height, in_w, in_h);
  auto px = [&](float v, bool x) {
    const float p = (v * static_cast<float>(x ? in_w : in_h) - static_cast<float>(x ? lb.left : lb.top)) / lb.ratio;
    return std::clamp(p, 0.0f, static_cast<float>(x ? img.width : img.height));
  };
  std::vector<Detection> out;
  for (const Cand& c : kept)
    out.push_back({c.cls, c.score, px(c.cx - c.w / 2, true), px(c.cy - c.h / 2, false), px(c.cx + c.w / 2, true),
                   px(c.cy + c.h / 2, false)});
  return out;
}

std::vector<Detection> detections(const Session& s, const tflite::Image& img, float threshold) {
  const std::vector<float> boxes = output_as_float(s, 0), classes = output_as_float(s, 1),
                           scores = output_as_float(s, 2), count = output_as_float(s, 3);
  const int64_t rows = static_cast<int64_t>(scores.size());
  const float fc = count.empty() ? 0.0f : count[0];
  const int64_t n = std::isfinite(fc) ? std::clamp<int64_t>(static_cast<int64_t>(fc), 0, rows) : 0;
  const float w = static_cast<float>(img.width), h = static_cast<float>(img.height);
  std::vector<Detection> out;
  for (int64_t i = 0; i < n; ++i) {
    if (!(scores[i] >= threshold)) continue;
    auto px = [](float v, float size) { return std::clamp(v, 0.0f, 1.0f) * size; };
    out.push_back({static_cast<int64_t>(classes[i]), scores[i], px(boxes[i * 4 + 1], w), px(boxes[i * 4], h),
                   px(boxes[i * 4 + 3], w), px(boxes[i * 4 + 2], h)});
  }
  return out;
}

// A distinct colour per class (hue steps of the golden angle).
tflite::Rgb class_colour(int64_t cls) {
  const float hue = std::fmod(static_cast<float>(cls) * 137.508f, 360.0f) / 60.0f;
  const float x = 1.0f - std::fabs(std::fmod(hue, 2.0f) - 1.0f);
  float r = 0, g = 0, b = 0;
  switch (static_cast<int>(hue)) {
    case 0: r = 1, g = x; break;
    case 1: r = x, g = 1; break;
    case 2: g = 1, b = x; break;
    case 3: g = x, b = 1; break;
    case 4: r = x, b = 1; break;
    default: r = 1, b = x; break;
  }
  auto u8 = [](float v) { return static_cast<uint8_t>(std::lround(40 + 215 * v)); };
  return {u8(r), u8(g), u8(b)};
}

void draw_detections(tflite::Image& img, const std::vector<Detection>& dets, const std::vector<std::string>& names) {
  const float thick = std::max(2.0f, static_cast<float>(std::min(img.width, img.height)) / 160.0f);
  const int scale = std::max(2, std::min(img.width, img.height) / 160);
  for (const Detection& d : dets) {
    const tflite::Rgb c = class_colour(d.cls);
    tflite::draw_line(img, d.left, d.top, d.right, d.top, c, thick);
    tflite::draw_line(img, d.right, d.top, d.right, d.bottom, c, thick);
    tflite::draw_line(img, d.right, d.bottom, d.left, d.bottom, c, thick);
    tflite::draw_line(img, d.left, d.bottom, d.left, d.top, c, thick);
  }
  // Labels after every box, the best score last (on top); a label sits above its box, or
  // inside it at the image's top edge.
  for (size_t i = dets.size(); i-- > 0;) {
    const Detection& d = dets[i];
    const tflite::Rgb c = class_colour(d.cls);
    const std::string text = fmt::format("{} {:.2f}", names[i], d.score);
    const int x = static_cast<int>(d.left), th = 7 * scale;
    const int y = d.top >= th ? static_cast<int>(d.top) - th : static_cast<int>(d.top);
    tflite::fill_rect(img, x, y, x + tflite::text_width(text, scale) + scale, y + th, c);
    tflite::draw_text(img, x + scale, y + scale, text, {0, 0, 0}, scale);
  }
}

}  // namespace

void add_detect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("detect", "Detect objects in an image with an SSD model (TFLite_Detection_PostProcess) or a YOLO export (v8, v5)");
  struct Args {
    std::string model, image, labels, overlay_out;
    float threshold = 0.3f;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Detection model (.tflite): SSD ending in TFLite_Detection_PostProcess, or YOLOv8 / YOLOv5")->required();
  cmd->add_option("image", a->image, "Image file (BMP, JPEG or PNG)")->required();
  cmd->add_option("--labels,-l", a->labels, "Labels file, one per line (a leading background line is detected)");
  cmd->add_option("--threshold", a->threshold, "Lowest score listed (default 0.3)")->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--overlay-out", a->overlay_out, "Output PNG: the image with the labelled boxes");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    VisionRun r = run_on_image(a->model, a->image, a->dev, pixel_range);
    const Detector det = take(detector_of(r.session->graph(), a->model));
    Labels labels;
    if (!a->labels.empty()) labels = take(Labels::load(a->labels, det.classes));
    const std::vector<Detection> dets = det.kind == Kind::ssd ? detections(*r.session, r.image, a->threshold)
                                                              : yolo_detections(*r.session, det, r.image, a->threshold);
    std::vector<std::string> names;
    for (const Detection& d : dets) {
      std::string name = labels[d.cls];
      names.push_back(name.empty() ? fmt::format("class {}", d.cls) : name);
    }
    fmt::print("image {} ({}x{}): {} detections with score >= {:.2f}\n", a->image, r.image.width, r.image.height,
               dets.size(), a->threshold);
    fmt::print("{:<16} {:>6} {:>8} {:>8} {:>8} {:>8}\n", "label", "score", "left", "top", "right", "bottom");
    for (size_t i = 0; i < dets.size(); ++i)
      fmt::print("{:<16} {:>6.3f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f}\n", names[i], dets[i].score, dets[i].left,
                 dets[i].top, dets[i].right, dets[i].bottom);
    fmt::print("{}\n", latency_line(r, a->model, a->dev));
    if (a->overlay_out.empty()) return;
    tflite::Image over = r.image;
    draw_detections(over, dets, names);
    take(tflite::write_png(a->overlay_out, over));
    fmt::print("wrote overlay {}\n", a->overlay_out);
  });
}

}  // namespace tessera::cli
