// `tessera classify MODEL IMAGE [--labels FILE] [--top K]`: image classification with
// top-K indices, labels and dequantized scores, plus the measured latency.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "vision.h"

namespace tessera::cli {

void print_classification(const std::string& model, const std::string& image, const std::string& labels_path, int top,
                          const DeviceArgs& dev) {
  VisionRun r = run_on_image(model, image, dev);
  const Graph& g = r.session->graph();
  for (const Node& n : g.nodes())
    if (n.op == OpKind::detection_postprocess)
      take(error(StatusCode::unsupported, "model '", model, "' is an object detector (it ends in ", n.label(),
                 "), not a classifier: use `tessera detect`"));
  const Tensor& out = g.tensor(g.outputs[0]);
  std::vector<float> scores = output_as_float(*r.session, 0);
  const int64_t classes = out.shape.empty() ? 1 : out.shape.back();
  if (static_cast<int64_t>(scores.size()) != classes) {
    // One [1, A, B] output with a short side of 5 or more: the form of a YOLO export's boxes and scores.
    const bool yolo = g.outputs.size() == 1 && out.shape.size() == 3 && out.shape[0] == 1 &&
                      std::min(out.shape[1], out.shape[2]) >= 5 && out.shape[1] != out.shape[2];
    take(error(StatusCode::unsupported, "output '", out.name, "' ", shape_str(out.shape),
               " is not a single row of class scores",
               yolo ? " (it has the form of a YOLO detector's output: use `tessera detect`)" : ""));
  }
  const Labels labels = take(Labels::of_run(labels_path, r, classes));
  std::vector<int64_t> order(static_cast<size_t>(classes));
  std::iota(order.begin(), order.end(), 0);
  const int64_t k = std::min<int64_t>(top, classes);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t x, int64_t y) {
    return scores[x] != scores[y] ? scores[x] > scores[y] : x < y;
  });
  const Tensor& in = g.tensor(g.inputs[0]);
  fmt::print("image {} ({}x{}) -> input {} {}\n", image, r.image.width, r.image.height, dtype_name(in.dtype),
             shape_str(in.shape));
  fmt::print("{:>6}  {:>8}  {}\n", "index", "score", "label");
  for (int64_t i = 0; i < k; ++i)
    fmt::print("{:>6}  {:>8.4f}  {}\n", order[i], scores[order[i]], labels[order[i]]);
  fmt::print("{}\n", latency_line(r, model, dev));
}

void add_classify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("classify", "Classify an image (BMP/JPEG/PNG) with an image classification model");
  struct Args {
    std::string model, image, labels;
    int top = 5;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Model file (.tflite)")->required();
  cmd->add_option("image", a->image, "Image file (BMP, JPEG or PNG)")->required();
  cmd->add_option("--labels,-l", a->labels, "Labels file, one per line (a leading background line is detected); default: the names the model file carries, if any");
  cmd->add_option("--top,-k", a->top, "How many classes to list")->check(CLI::Range(1, 100000));
  a->dev.add_to(cmd);
  cmd->callback([a] { print_classification(a->model, a->image, a->labels, a->top, a->dev); });
}

}  // namespace tessera::cli
