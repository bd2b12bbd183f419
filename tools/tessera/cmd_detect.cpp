// `tessera detect MODEL IMAGE [--labels FILE] [--threshold T] [--overlay-out FILE.png]`:
// object detection with an SSD-style model (TFLite_Detection_PostProcess) or a YOLOv8 /
// YOLOv5 export, decoded by the library (tessera/detect.h says how). Prints one line per
// detection at or above the threshold, with its box in the image's pixels; optionally
// draws the labelled boxes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/detect.h"
#include "vision.h"

namespace tessera::cli {

namespace {

// The kind of detector, or an error naming the model and why it is none.
Result<DetectorInfo> detector_of(const Graph& g, const std::string& model) {
  auto d = detector_info(g);
  if (!d.ok()) return d.status().with_context("model '" + model + "'");
  return d;
}

tflite::PixelRange pixel_range(const Graph& g) {
  auto d = detector_info(g);
  return d.ok() && d->kind != DetectorKind::ssd ? tflite::PixelRange::yolo : tflite::PixelRange::model_default;
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
    const tflite::Rgb c = class_colour(d.class_id);
    tflite::draw_line(img, d.left, d.top, d.right, d.top, c, thick);
    tflite::draw_line(img, d.right, d.top, d.right, d.bottom, c, thick);
    tflite::draw_line(img, d.right, d.bottom, d.left, d.bottom, c, thick);
    tflite::draw_line(img, d.left, d.bottom, d.left, d.top, c, thick);
  }
  // Labels after every box, the best score last (on top); a label sits above its box, or
  // inside it at the image's top edge.
  for (size_t i = dets.size(); i-- > 0;) {
    const Detection& d = dets[i];
    const tflite::Rgb c = class_colour(d.class_id);
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
  cmd->add_option("--labels,-l", a->labels, "Labels file, one per line (a leading background line is detected); default: the names the model file carries (Ultralytics exports), if any");
  cmd->add_option("--threshold", a->threshold, "Lowest score listed (default 0.3)")->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--overlay-out", a->overlay_out, "Output PNG: the image with the labelled boxes");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    VisionRun r = run_on_image(a->model, a->image, a->dev, pixel_range);
    const DetectorInfo det = take(detector_of(r.session->graph(), a->model));
    const Labels labels = take(Labels::of_run(a->labels, r, det.classes));
    DetectOptions opts;
    opts.threshold = a->threshold;
    const std::vector<Detection> dets = take(read_detections(*r.session, r.image.width, r.image.height, opts));
    std::vector<std::string> names;
    for (const Detection& d : dets) {
      std::string name = labels[d.class_id];
      names.push_back(name.empty() ? fmt::format("class {}", d.class_id) : name);
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
