// `tessera segment MODEL IMAGE --mask-out FILE.png [--overlay-out FILE.png]`: semantic
// segmentation. The mask is one byte per pixel (the class index) at the image's original
// size, written as a grayscale PNG; the overlay tints each class with the PASCAL VOC colour.
#include <fmt/format.h>

#include <map>

#include "vision.h"

namespace tessera::cli {

namespace {

// The PASCAL VOC colour map (VOCdevkit's labelcolormap: bits of the class index spread
// over the high bits of R, G and B).
tflite::Rgb voc_colour(int cls) {
  int r = 0, g = 0, b = 0;
  for (int shift = 7; cls > 0 && shift >= 0; --shift, cls >>= 3) {
    r |= (cls & 1) << shift;
    g |= ((cls >> 1) & 1) << shift;
    b |= ((cls >> 2) & 1) << shift;
  }
  return {static_cast<uint8_t>(r), static_cast<uint8_t>(g), static_cast<uint8_t>(b)};
}

// Opacity of a class colour over the photo in the overlay.
constexpr float kOverlayAlpha = 0.55f;

}  // namespace

void add_segment_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("segment", "Semantic segmentation of an image; writes a class-index mask PNG");
  struct Args {
    std::string model, image, mask_out, overlay_out, labels;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Segmentation model (.tflite) with a class map or class scores output")->required();
  cmd->add_option("image", a->image, "Image file (BMP, JPEG or PNG)")->required();
  cmd->add_option("--mask-out", a->mask_out, "Output PNG: grayscale, one class index per pixel, image size")->required();
  cmd->add_option("--overlay-out", a->overlay_out, "Output PNG: the image with classes tinted");
  cmd->add_option("--labels,-l", a->labels, "Labels file, one class per line (for the summary); default: the names the model file carries, if any");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    VisionRun r = run_on_image(a->model, a->image, a->dev);
    const Graph& g = r.session->graph();
    const Tensor& out = g.tensor(g.outputs[0]);
    std::vector<float> values = output_as_float(*r.session, 0);
    // Either a class map [1, H, W] (DeepLab's ARG_MAX) or scores [1, H, W, C].
    int64_t mh = 0, mw = 0, classes = 1;
    if (out.shape.size() == 3 && out.shape[0] == 1) {
      mh = out.shape[1];
      mw = out.shape[2];
    } else if (out.shape.size() == 4 && out.shape[0] == 1) {
      mh = out.shape[1];
      mw = out.shape[2];
      classes = out.shape[3];
    } else {
      take(error(StatusCode::unsupported, "output '", out.name, "' ", shape_str(out.shape),
                 " is neither a class map [1,H,W] nor class scores [1,H,W,C]"));
    }
    std::vector<int> cls(static_cast<size_t>(mh * mw));
    for (int64_t i = 0; i < mh * mw; ++i) {
      if (classes == 1) {
        cls[i] = static_cast<int>(values[i]);
      } else {
        const float* row = &values[i * classes];
        cls[i] = static_cast<int>(std::max_element(row, row + classes) - row);
      }
      if (cls[i] < 0 || cls[i] > 255)
        take(error(StatusCode::out_of_range, "class index ", cls[i], " does not fit a one-byte mask"));
    }
    // The model saw the image stretched to its input: map each original pixel back by the
    // same scale, taking the nearest model pixel.
    tflite::Image mask;
    mask.width = r.image.width;
    mask.height = r.image.height;
    mask.channels = 1;
    mask.pixels.resize(static_cast<size_t>(mask.width) * mask.height);
    std::map<int, int64_t> counts;
    for (int y = 0; y < mask.height; ++y) {
      const int64_t my = std::min<int64_t>(static_cast<int64_t>((y + 0.5) * mh / mask.height), mh - 1);
      for (int x = 0; x < mask.width; ++x) {
        const int64_t mx = std::min<int64_t>(static_cast<int64_t>((x + 0.5) * mw / mask.width), mw - 1);
        const int c = cls[my * mw + mx];
        mask.at(x, y)[0] = static_cast<uint8_t>(c);
        counts[c]++;
      }
    }
    take(tflite::write_png(a->mask_out, mask));
    const Labels labels = take(Labels::of_run(a->labels, r, classes == 1 ? 0 : classes));
    fmt::print("image {} ({}x{}), model output {} {}\n", a->image, mask.width, mask.height, dtype_name(out.dtype),
               shape_str(out.shape));
    const double total = static_cast<double>(mask.width) * mask.height;
    for (const auto& [c, n] : counts)
      fmt::print("  class {:>3}  {:>6.2f}%  {}\n", c, 100.0 * n / total, labels[c]);
    fmt::print("wrote mask {}\n", a->mask_out);
    if (!a->overlay_out.empty()) {
      tflite::Image over = r.image;
      for (int y = 0; y < over.height; ++y)
        for (int x = 0; x < over.width; ++x) {
          const int c = mask.at(x, y)[0];
          if (c == 0) continue;  // background stays as photographed
          // Class boundaries drawn opaque so that the outline reads at any size.
          const bool edge = (x > 0 && mask.at(x - 1, y)[0] != c) || (y > 0 && mask.at(x, y - 1)[0] != c) ||
                            (x + 1 < over.width && mask.at(x + 1, y)[0] != c) ||
                            (y + 1 < over.height && mask.at(x, y + 1)[0] != c);
          tflite::blend_pixel(over, x, y, voc_colour(c), edge ? 1.0f : kOverlayAlpha);
        }
      take(tflite::write_png(a->overlay_out, over));
      fmt::print("wrote overlay {}\n", a->overlay_out);
    }
    fmt::print("{}\n", latency_line(r, a->model, a->dev));
  });
}

}  // namespace tessera::cli
