// `tessera detect` through the real binary: the SSD MobileNetV1 COCO model on table.jpg
// finds what the model publisher's own test expects (labels, boxes overlapping theirs),
// writes a labelled overlay, and a detection model given to classify fails clearly.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "import/tflite/image.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {

struct Box {
  std::string label;
  float score = 0, left = 0, top = 0, right = 0, bottom = 0;
};

float iou(const Box& a, const Box& b) {
  const float w = std::max(0.0f, std::min(a.right, b.right) - std::max(a.left, b.left));
  const float h = std::max(0.0f, std::min(a.bottom, b.bottom) - std::max(a.top, b.top));
  const float inter = w * h;
  const float area_a = (a.right - a.left) * (a.bottom - a.top), area_b = (b.right - b.left) * (b.bottom - b.top);
  return inter / (area_a + area_b - inter);
}

// The publisher's file: "label left top right bottom score" per line (labels with '_').
std::vector<Box> read_expected(const std::string& path) {
  std::vector<Box> v;
  std::ifstream f(path);
  Box b;
  while (f >> b.label >> b.left >> b.top >> b.right >> b.bottom >> b.score) {
    std::replace(b.label.begin(), b.label.end(), '_', ' ');
    v.push_back(b);
  }
  return v;
}

class DetectCli : public testing::CliTest {
 protected:
  // The table lines "label score left top right bottom" (the label may hold spaces).
  std::vector<Box> detections() const {
    std::vector<Box> v;
    std::stringstream ss(out_);
    std::string line;
    bool table = false;
    while (std::getline(ss, line)) {
      if (line.rfind("label", 0) == 0) {
        table = true;
        continue;
      }
      if (line.rfind("latency", 0) == 0) table = false;
      if (!table || line.size() < 16) continue;
      Box b;
      b.label = line.substr(0, 16);
      b.label.erase(b.label.find_last_not_of(' ') + 1);
      std::stringstream nums(line.substr(16));
      if (nums >> b.score >> b.left >> b.top >> b.right >> b.bottom) v.push_back(b);
    }
    return v;
  }
};

TEST_F(DetectCli, TableJpgFindsWhatThePublisherExpects) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/coco_labels.txt");
  TESSERA_REQUIRE_FIXTURE(expected_path, "models/tflite/ssd_mobilenet_v1_coco_quant_table_expected.txt");
  ASSERT_EQ(run("detect " + model + " " + image + " --labels " + labels + " --overlay-out " + path("o.png")), 0)
      << err_;
  const std::vector<Box> got = detections();
  const std::vector<Box> expected = read_expected(expected_path);
  ASSERT_FALSE(expected.empty());
  std::printf("%s", out_.c_str());
  // The publisher's test requires the dining table, cup and book; their resize differs from
  // ours, so labels and box overlap are compared, not bytes.
  for (const char* want : {"dining table", "cup", "book"}) {
    auto e = std::find_if(expected.begin(), expected.end(), [&](const Box& b) { return b.label == want; });
    ASSERT_NE(e, expected.end()) << want;
    float best = 0;
    for (const Box& g : got)
      if (g.label == want) best = std::max(best, iou(g, *e));
    std::printf("[detect] %s: best IoU with the publisher's box %.3f\n", want, best);
    EXPECT_GT(best, 0.5f) << want << " not found where the publisher's test expects it\n" << out_;
  }
  auto over = tflite::read_image(path("o.png"));
  ASSERT_TRUE(over.ok()) << over.status().to_string();
  auto src = tflite::read_image(image);
  ASSERT_TRUE(src.ok());
  EXPECT_EQ(over->width, src->width);
  EXPECT_EQ(over->height, src->height);
  EXPECT_NE(over->pixels, src->pixels);  // boxes were drawn
}

TEST_F(DetectCli, ThresholdFiltersAndUnlabelledClassesAreNumbered) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  ASSERT_EQ(run("detect " + model + " " + image + " --threshold 0.3"), 0) << err_;
  const std::vector<Box> all = detections();
  constexpr float kHigher = 0.45f;
  const auto above = std::count_if(all.begin(), all.end(), [&](const Box& b) { return b.score >= kHigher; });
  ASSERT_GT(above, 0) << out_;
  ASSERT_LT(above, static_cast<long>(all.size())) << out_;
  ASSERT_EQ(run("detect " + model + " " + image + " --threshold 0.45"), 0) << err_;
  const std::vector<Box> high = detections();
  EXPECT_EQ(static_cast<long>(high.size()), above) << out_;
  for (const Box& b : high) {
    EXPECT_GE(b.score, kHigher);
    EXPECT_EQ(b.label.rfind("class ", 0), 0u) << b.label;  // no labels file: class indices
  }
}

// The SSD backbone on the rknpu device model (its convolutions on the NPU, the
// post-processing on the cpu) finds the same detections, boxes and scores as the cpu.
TEST_F(DetectCli, RknpuFindsTheSameDetections) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/coco_labels.txt");
  const std::string args = "detect " + model + " " + image + " --labels " + labels;
  ASSERT_EQ(run(args), 0) << err_;
  const std::vector<Box> cpu = detections();
  ASSERT_EQ(run(args + " --device rknpu"), 0) << err_;
  const std::vector<Box> npu = detections();
  ASSERT_FALSE(cpu.empty());
  ASSERT_EQ(npu.size(), cpu.size()) << out_;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(npu[i].label, cpu[i].label);
    EXPECT_FLOAT_EQ(npu[i].score, cpu[i].score);
    EXPECT_GT(iou(npu[i], cpu[i]), 0.99f) << cpu[i].label;
  }
  EXPECT_NE(out_.find("modelled"), std::string::npos) << out_;
}

// The tile device model finds the cpu's detections: every one of the eight at >= 0.30 with
// the same label, boxes overlapping at IoU >= 0.9 and scores within 0.05 (the issue's
// bound for a device that is not byte-exact in general). Measured on table.jpg: identical,
// since the backbone's convolutions run on the tile's integer path and give the cpu's
// codes (tile_tests TileQuantized.SsdBackboneEqualsTheCpuByteForByte); among them the
// knife at 0.50 (once labelled scissors) and the refrigerator at 0.30 (once missing).
TEST_F(DetectCli, TileFindsTheSameDetectionsAsTheCpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/coco_labels.txt");
  const std::string args = "detect " + model + " " + image + " --labels " + labels + " --threshold 0.3";
  ASSERT_EQ(run(args), 0) << err_;
  const std::vector<Box> cpu = detections();
  ASSERT_EQ(run(args + " --device tile"), 0) << err_;
  const std::vector<Box> tile = detections();
  ASSERT_EQ(cpu.size(), 8u) << out_;
  ASSERT_EQ(tile.size(), cpu.size()) << out_;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(tile[i].label, cpu[i].label) << i << "\n" << out_;
    EXPECT_GE(iou(tile[i], cpu[i]), 0.9f) << cpu[i].label;
    EXPECT_NEAR(tile[i].score, cpu[i].score, 0.05f) << cpu[i].label;
  }
  for (const char* l : {"knife", "refrigerator", "dining table", "cup", "book"})
    EXPECT_TRUE(std::any_of(tile.begin(), tile.end(), [&](const Box& b) { return b.label == l; })) << l;
  EXPECT_NE(out_.find("modelled"), std::string::npos) << out_;
}

// YOLO exports (one output: YOLOv8's [1, 84, 8400], YOLOv5's [1, 25200, 85]) on Grace
// Hopper, as Ultralytics runs them: letterboxed onto 640x640 (LetterboxIsUltralyticsGeometry),
// pixel / 255 (quantized with the int8 input's own parameters), best class per anchor,
// per-class NMS, boxes mapped back through the letterbox. The float-I/O export runs the same
// integer graph inside, so the same lines; the 80 COCO names come from the 91-line labels
// file without its "???". (Stretched to 640x640 instead, the full-integer export gave the tie
// 0.446, what the independent decoder of tests/backend/rknpu/models_test.cpp gives on its
// stretched input; letterboxed, table.jpg's glass reads vase 0.50 instead of 0.21.)
TEST_F(DetectCli, YoloExportsFindThePersonsAndTheTie) {
  TESSERA_REQUIRE_FIXTURE(v8, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(v8f, "models/tflite/corpus/yolov8n_integer_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(v5, "models/tflite/corpus/yolov5n_fp16.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/coco_labels.txt");
  ASSERT_EQ(run("detect " + v8 + " " + image + " -l " + labels + " --threshold 0.25 --overlay-out " + path("y.png")), 0)
      << err_;
  const std::vector<Box> a = detections();
  ASSERT_EQ(a.size(), 3u) << out_;
  EXPECT_EQ(a[0].label, "person");
  EXPECT_GT(a[0].score, 0.85);
  EXPECT_LT(a[0].left, 15);  // Grace Hopper: the whole lower frame
  EXPECT_GT(a[0].right, 500);
  EXPECT_EQ(a[1].label, "tie");
  EXPECT_GT(a[1].left, 200);  // the tie, at the collar in the middle
  EXPECT_LT(a[1].right, 320);
  EXPECT_GT(a[1].top, 380);
  EXPECT_LT(a[1].bottom, 560);
  EXPECT_EQ(a[2].label, "person");
  for (const Box& b : a) {
    EXPECT_GE(b.left, 0);  // inside the image, not the letterbox's padding
    EXPECT_LE(b.right, 512);
    EXPECT_LE(b.bottom, 600);
  }
  EXPECT_FALSE(read_bytes("y.png").empty());
  const std::string v8_table = out_.substr(0, out_.find("latency"));
  ASSERT_EQ(run("detect " + v8f + " " + image + " -l " + labels + " --threshold 0.25"), 0) << err_;
  EXPECT_EQ(out_.substr(0, out_.find("latency")), v8_table);
  // YOLOv5: objectness x class score; on table.jpg the glass is a cup and the knife is found.
  ASSERT_EQ(run("detect " + v5 + " " + image + " -l " + labels), 0) << err_;
  const std::vector<Box> b = detections();
  ASSERT_FALSE(b.empty()) << out_;
  EXPECT_TRUE(std::any_of(b.begin(), b.end(), [](const Box& x) { return x.label == "person" && x.right > 500; })) << out_;
  EXPECT_TRUE(std::any_of(b.begin(), b.end(), [](const Box& x) { return x.label == "tie" && x.left > 200 && x.right < 320; }))
      << out_;
  ASSERT_EQ(run("detect " + v5 + " " + table + " -l " + labels), 0) << err_;
  const std::vector<Box> t = detections();
  EXPECT_TRUE(std::any_of(t.begin(), t.end(), [](const Box& x) { return x.label == "cup" && x.left > 40 && x.right < 240; }))
      << out_;
  // On the rknpu device model (every SiLU, slice and concat of the backbone on the NPU, the
  // head on the cpu): the person and the tie in the cpu's boxes (the NPU's output is within
  // a few codes of the cpu's: docs/rknpu.md), and the frame time line.
  ASSERT_EQ(run("detect " + v8 + " " + image + " -l " + labels + " --threshold 0.25 --device rknpu"), 0) << err_;
  const std::vector<Box> n = detections();
  ASSERT_GE(n.size(), 2u) << out_;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(n[i].label, a[i].label);
    EXPECT_NEAR(n[i].left, a[i].left, 10);
    EXPECT_NEAR(n[i].top, a[i].top, 10);
    EXPECT_NEAR(n[i].right, a[i].right, 10);
    EXPECT_NEAR(n[i].bottom, a[i].bottom, 10);
  }
  EXPECT_NE(out_.find("frame time"), std::string::npos) << out_;
  // classify points a YOLO export to detect.
  EXPECT_NE(run("classify " + v8 + " " + image), 0);
  EXPECT_NE(err_.find("YOLO detector's output: use `tessera detect`"), std::string::npos) << err_;
  // Without --labels: the names the Ultralytics export carries in its metadata; a model
  // without any numbers its classes (person is class 0 of the 80, tie 27).
  ASSERT_EQ(run("detect " + v8 + " " + image + " --threshold 0.5"), 0) << err_;
  const std::vector<Box> c = detections();
  ASSERT_EQ(c.size(), 1u) << out_;
  EXPECT_EQ(c[0].label, "person");
  ASSERT_EQ(run("detect " + v5 + " " + image + " --threshold 0.5"), 0) << err_;
  const std::vector<Box> d = detections();
  ASSERT_EQ(d.size(), 2u) << out_;
  EXPECT_EQ(d[0].label, "class 27");
  EXPECT_EQ(d[1].label, "class 0");
}

TEST_F(DetectCli, ClassifyRefusesADetectorAndDetectRefusesAClassifier) {
  TESSERA_REQUIRE_FIXTURE(ssd, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(mnv1, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/table.jpg");
  EXPECT_NE(run("classify " + ssd + " " + image), 0);
  EXPECT_NE(err_.find("object detector"), std::string::npos) << err_;
  EXPECT_NE(err_.find("tessera detect"), std::string::npos) << err_;
  EXPECT_NE(run("detect " + mnv1 + " " + image), 0);
  EXPECT_NE(err_.find("is not an object detector"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera
