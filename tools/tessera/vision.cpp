#include "vision.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_io.h"
#include "tessera/model.h"

namespace tessera::cli {

VisionRun run_on_image(const std::string& model, const std::string& image_path, const DeviceArgs& dev,
                       tflite::PixelRange (*range)(const Graph&)) {
  VisionRun r;
  Graph g = take(load_model(model, {}, nullptr, &r.embedded_labels));
  if (g.inputs.size() != 1)
    take(error(StatusCode::unsupported, "model '", model, "' has ", g.inputs.size(), " inputs; vision commands need one"));
  r.image = take(tflite::read_image(image_path));
  const tflite::PixelRange pr = range ? range(g) : tflite::PixelRange::model_default;
  std::vector<uint8_t> input = take(tflite::image_to_input(r.image, g.tensor(g.inputs[0]), pr));
  SessionOptions so = take(dev.session_options());
  so.progress = load_progress(model);
  r.session = take(Session::create(std::move(g), so));
  take(r.session->set_input(0, input.data(), static_cast<int64_t>(input.size())));
  auto t0 = std::chrono::steady_clock::now();
  take(r.session->run());
  r.latency_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string latency_line(const VisionRun& r, const std::string& model, const DeviceArgs& dev) {
  std::string line = fmt::format("latency: {:.2f} ms ({} on {}, {} thread{})", r.latency_seconds * 1e3,
                                 std::filesystem::path(model).filename().string(), dev.device, dev.threads,
                                 dev.threads == 1 ? "" : "s");
  const double modelled = r.session->profile().modelled_seconds;
  if (modelled > 0) {
    line += fmt::format("; device time {:.3f} ms (modelled, not measured: the host time above runs the device model)",
                        modelled * 1e3);
    FrameTime frame;
    frame.add(r.session->profile());
    line += "\n" + frame.line(dev.device, dev.threads);
  }
  return line;
}

std::vector<float> output_as_float(const Session& s, size_t k) { return take(s.output_values(k)); }

Result<Labels> Labels::load(const std::string& path, int64_t num_classes) {
  // One name per line; 16 MiB is far more than any label list (ImageNet's is 21 KB).
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bounded(path, int64_t{16} << 20, "labels file"));
  std::istringstream f(std::string(bytes.begin(), bytes.end()));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return from_lines(std::move(lines), num_classes);
}

Result<Labels> Labels::of_run(const std::string& path, const VisionRun& r, int64_t num_classes) {
  if (!path.empty()) return load(path, num_classes);
  return from_lines(r.embedded_labels, num_classes);
}

Labels Labels::from_lines(std::vector<std::string> lines, int64_t num_classes) {
  // 1001 labels for a 1000-class model (a background line first), COCO's 91-line list for
  // 80 classes: the library's rule (labels_for_classes).
  Labels l;
  l.names_ = labels_for_classes(std::move(lines), num_classes);
  return l;
}

std::string Labels::operator[](int64_t index) const {
  return index >= 0 && index < static_cast<int64_t>(names_.size()) ? names_[index] : std::string();
}

}  // namespace tessera::cli
