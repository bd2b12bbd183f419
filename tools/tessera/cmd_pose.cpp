// `tessera pose MODEL IMAGE [--overlay-out FILE.png]`: single-person pose estimation
// (MoveNet-style output [1, 1, 17, 3] of (y, x, score), coordinates normalised to the
// input). Prints the 17 COCO keypoints as CSV on stdout; optionally draws the skeleton.
#include <cstdio>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vision.h"

namespace tessera::cli {

namespace {

constexpr int kKeypoints = 17;  // COCO keypoints, MoveNet's output order
constexpr const char* kNames[kKeypoints] = {
    "nose",       "left_eye",    "right_eye",  "left_ear",   "right_ear",  "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip",  "left_knee",   "right_knee", "left_ankle", "right_ankle"};
// Limbs between keypoints (the skeleton MoveNet's examples draw).
constexpr int kEdges[][2] = {{0, 1},  {0, 2},  {1, 3},   {2, 4},   {5, 6},   {5, 7},   {7, 9},   {6, 8},
                             {8, 10}, {5, 11}, {6, 12}, {11, 12}, {11, 13}, {13, 15}, {12, 14}, {14, 16}};
// Keypoints below this score are not drawn (MoveNet examples use 0.11 to 0.3).
constexpr float kDrawThreshold = 0.2f;

}  // namespace

void add_pose_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pose", "Single-person pose: 17 keypoints as CSV (x, y normalised to the image)");
  struct Args {
    std::string model, image, overlay_out;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Pose model (.tflite), output [1,1,17,3] of (y, x, score)")->required();
  cmd->add_option("image", a->image, "Image file (BMP, JPEG or PNG)")->required();
  cmd->add_option("--overlay-out", a->overlay_out, "Output PNG: the image with the skeleton drawn");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    VisionRun r = run_on_image(a->model, a->image, a->dev);
    const Graph& g = r.session->graph();
    const Tensor& out = g.tensor(g.outputs[0]);
    if (out.elements() != kKeypoints * 3 || out.shape.empty() || out.shape.back() != 3)
      take(error(StatusCode::unsupported, "output '", out.name, "' ", shape_str(out.shape),
                 " is not 17 keypoints of (y, x, score)"));
    std::vector<float> v = output_as_float(*r.session, 0);
    fmt::print("keypoint,name,x,y,score\n");
    for (int k = 0; k < kKeypoints; ++k)
      fmt::print("{},{},{:.6f},{:.6f},{:.6f}\n", k, kNames[k], v[k * 3 + 1], v[k * 3], v[k * 3 + 2]);
    std::fflush(stdout);  // the CSV on stdout comes before the notes on stderr
    fmt::print(stderr, "{}\n", latency_line(r, a->model, a->dev));
    if (a->overlay_out.empty()) return;
    tflite::Image over = r.image;
    const float w = static_cast<float>(over.width), h = static_cast<float>(over.height);
    const float thick = std::max(2.0f, std::min(w, h) / 150.0f);
    auto px = [&](int k) { return v[k * 3 + 1] * w; };
    auto py = [&](int k) { return v[k * 3] * h; };
    for (const auto& e : kEdges) {
      if (v[e[0] * 3 + 2] < kDrawThreshold || v[e[1] * 3 + 2] < kDrawThreshold) continue;
      // Left side (odd COCO indices) in magenta, right side in cyan, centre in yellow.
      const bool left = e[0] % 2 == 1 && e[1] % 2 == 1, right = e[0] % 2 == 0 && e[1] % 2 == 0 && e[0] != 0;
      const tflite::Rgb c = left ? tflite::Rgb{255, 0, 255} : right ? tflite::Rgb{0, 255, 255} : tflite::Rgb{255, 255, 0};
      tflite::draw_line(over, px(e[0]), py(e[0]), px(e[1]), py(e[1]), c, thick);
    }
    for (int k = 0; k < kKeypoints; ++k)
      if (v[k * 3 + 2] >= kDrawThreshold) tflite::draw_disc(over, px(k), py(k), thick * 1.6f, {255, 64, 64});
    take(tflite::write_png(a->overlay_out, over));
    fmt::print(stderr, "wrote overlay {}\n", a->overlay_out);
  });
}

}  // namespace tessera::cli
