// Shared pieces of the vision commands (classify, segment, pose): run an image through a
// single-input model, dequantize outputs, read label files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "import/tflite/image.h"

namespace tessera::cli {

struct VisionRun {
  std::unique_ptr<Session> session;
  tflite::Image image;          // the decoded image at its original size (RGB)
  double latency_seconds = 0;   // measured time of Session::run
  std::vector<std::string> embedded_labels;  // the class names the model file carries (Model::labels)
};

// Loads `model`, decodes `image_path`, converts it to the model's only input (resize,
// dtype, layout) and runs once. Throws CommandFailed on error.
// `range`, when given, picks how the image's pixels become input values once the model is
// loaded (YOLO detectors take pixel / 255); by default the model family's usual conversion.
VisionRun run_on_image(const std::string& model, const std::string& image_path, const DeviceArgs& dev,
                       tflite::PixelRange (*range)(const Graph&) = nullptr);

// "latency: 12.34 ms (model on device, 1 thread)", and for a device model also the
// modelled device time, since the host time then measures the simulation.
std::string latency_line(const VisionRun& r, const std::string& model, const DeviceArgs& dev);

// Output `k` as floats: dequantized (scale * (q - zero_point)) for quantized outputs,
// converted for f32 / integer outputs.
std::vector<float> output_as_float(const Session& s, size_t k);

// Classifies `image` with `model` and prints the top-K table (index, dequantized score,
// label) and the latency: the body of `tessera classify`, reusable by the demo.
void print_classification(const std::string& model, const std::string& image, const std::string& labels_path, int top,
                          const DeviceArgs& dev);

// Labels, one per line. `num_classes` decides the offset: a file with one extra line
// (1001 lines for 1000 classes) starts with a background entry, which is skipped.
// Returns "" for indices the file does not cover.
class Labels {
 public:
  static Result<Labels> load(const std::string& path, int64_t num_classes);
  // The same from names already read (a model's embedded labels).
  static Labels from_lines(std::vector<std::string> lines, int64_t num_classes);
  // --labels when given, else the model's embedded names (none: every label "").
  static Result<Labels> of_run(const std::string& path, const VisionRun& r, int64_t num_classes);
  std::string operator[](int64_t index) const;
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

}  // namespace tessera::cli
