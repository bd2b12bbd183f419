// The vision paths end to end on the shared photos: classification with both MobileNetV2
// models, DeepLab segmentation against the published mask, MoveNet keypoints against the
// publisher's CPU run, and the small models (person_detect, hello_world_int8) running.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "import/tflite/image.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

// Runs `model` on an image file through the same preprocessing as the CLI; returns the
// raw bytes of output 0 and its tensor.
struct Output {
  std::vector<uint8_t> bytes;
  Tensor tensor;
};
Output run_image(const std::string& model, const std::string& image) {
  auto g = tflite::load_tflite_file(model);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  auto img = tflite::read_image(image);
  EXPECT_TRUE(img.ok()) << img.status().to_string();
  if (!img.ok()) return {};
  auto input = tflite::image_to_input(*img, g->tensor(g->inputs[0]));
  EXPECT_TRUE(input.ok()) << input.status().to_string();
  Output o;
  o.tensor = g->tensor(g->outputs[0]);
  auto s = Session::create(std::move(*g), SessionOptions{});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok() || !input.ok()) return o;
  EXPECT_TRUE((*s)->set_input(0, input->data(), static_cast<int64_t>(input->size())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto out = (*s)->output(0);
  if (out.ok()) o.bytes = *out;
  return o;
}

float dequant(const Tensor& t, const std::vector<uint8_t>& b, int64_t i) {
  float q = t.dtype == DType::i8 ? static_cast<int8_t>(b[i]) : b[i];
  return t.quant.scale[0] * (q - static_cast<float>(t.quant.zero_point_at(0)));
}

int64_t argmax(const Output& o) {
  int64_t best = 0;
  for (int64_t i = 1; i < o.tensor.elements(); ++i)
    if (dequant(o.tensor, o.bytes, i) > dequant(o.tensor, o.bytes, best)) best = i;
  return best;
}

TEST(Vision, GraceHopperIsAMilitaryUniformForBothMobileNetV2) {
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  for (const char* m : {"mobilenet_v2_1.0_224_quant", "tf2_mobilenet_v2_1.0_224_ptq"}) {
    SCOPED_TRACE(m);
    TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + m + ".tflite");
    Output o = run_image(model, image);
    ASSERT_EQ(o.tensor.elements(), 1001);
    ASSERT_EQ(o.bytes.size(), 1001u);
    constexpr int64_t kMilitaryUniform = 653;  // imagenet_labels.txt line 654 (after "background")
    EXPECT_EQ(argmax(o), kMilitaryUniform);
    EXPECT_GT(dequant(o.tensor, o.bytes, kMilitaryUniform), 0.75f);
  }
}

TEST(Vision, CatIsATigerOrEgyptianCat) {
  TESSERA_REQUIRE_FIXTURE(image, "images/cat.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  Output o = run_image(model, image);
  ASSERT_EQ(o.bytes.size(), 1001u);
  std::vector<int64_t> order(1001);
  for (int64_t i = 0; i < 1001; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return o.bytes[a] > o.bytes[b]; });
  std::vector<int64_t> top2 = {order[0], order[1]};
  std::sort(top2.begin(), top2.end());
  EXPECT_EQ(top2, (std::vector<int64_t>{283, 286}));  // tiger cat, Egyptian cat
}

// Reads an 8-bit palette BMP's raw indices (the mask's palette is the identity gray ramp).
std::vector<uint8_t> read_index_bmp(const std::string& path, int* w, int* h) {
  auto d = testing::read_file(path);
  uint32_t off;
  int32_t ww, hh;
  std::memcpy(&off, &d[10], 4);
  std::memcpy(&ww, &d[18], 4);
  std::memcpy(&hh, &d[22], 4);
  *w = ww;
  *h = std::abs(hh);
  const int row = (ww + 3) / 4 * 4;
  std::vector<uint8_t> px(static_cast<size_t>(ww) * *h);
  for (int y = 0; y < *h; ++y) {
    int sy = hh > 0 ? *h - 1 - y : y;
    std::memcpy(&px[static_cast<size_t>(y) * ww], &d[off + static_cast<size_t>(sy) * row], ww);
  }
  return px;
}

TEST(Vision, DeepLabSegmentsTheBird) {
  TESSERA_REQUIRE_FIXTURE(image, "images/bird_segmentation.bmp");
  TESSERA_REQUIRE_FIXTURE(mask_path, "images/bird_segmentation_mask.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/deeplabv3_mnv2_dm05_pascal_quant.tflite");
  Output o = run_image(model, image);
  ASSERT_EQ(o.tensor.dtype, DType::i64);
  int w = 0, h = 0;
  auto mask = read_index_bmp(mask_path, &w, &h);
  ASSERT_EQ(w, 513);
  ASSERT_EQ(o.tensor.elements(), static_cast<int64_t>(mask.size()));
  // The publisher's metric (pycoral's segmentation test): equal pixels / (|a| + |b| - equal),
  // threshold 0.90. The bird class's own IoU is checked as well.
  int64_t equal = 0, bird_inter = 0, bird_union = 0;
  constexpr int64_t kBird = 3;  // pascal_voc_segmentation_labels.txt
  for (size_t i = 0; i < mask.size(); ++i) {
    int64_t c;
    std::memcpy(&c, &o.bytes[i * 8], 8);
    equal += c == mask[i];
    bird_inter += c == kBird && mask[i] == kBird;
    bird_union += c == kBird || mask[i] == kBird;
  }
  const double n = static_cast<double>(mask.size());
  const double iou = equal / (2 * n - equal);
  RecordProperty("iou", std::to_string(iou));
  EXPECT_GT(iou, 0.90);
  EXPECT_GT(static_cast<double>(bird_inter) / bird_union, 0.80);
}

TEST(Vision, MoveNetKeypointsMatchThePublishersRun) {
  TESSERA_REQUIRE_FIXTURE(image, "images/squat.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/movenet_single_pose_lightning_ptq.tflite");
  TESSERA_REQUIRE_FIXTURE(csv, "models/tflite/movenet_single_pose_lightning_ptq_reference.csv");
  Output o = run_image(model, image);
  ASSERT_EQ(o.tensor.dtype, DType::f32);
  ASSERT_EQ(o.bytes.size(), 17u * 3 * 4);
  std::ifstream f(csv);
  std::string line;
  std::getline(f, line);  // pose_id,pose_score,keypoint_id,keypoint_score,keypoint_x,keypoint_y
  int rows = 0;
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    std::string cell;
    std::vector<double> v;
    while (std::getline(ss, cell, ',')) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 6u);
    const int k = static_cast<int>(v[2]);
    float yx[3];
    std::memcpy(yx, &o.bytes[k * 12], 12);  // (y, x, score)
    EXPECT_NEAR(yx[1], v[4], 0.03) << "keypoint " << k << " x";
    EXPECT_NEAR(yx[0], v[5], 0.03) << "keypoint " << k << " y";
    // Scores are sampled from the heatmap at the chosen cell; a neighbouring cell (a
    // sub-cell difference in position) can change them by 0.5, so only their range is
    // checked here.
    EXPECT_GE(yx[2], 0.0f);
    EXPECT_LE(yx[2], 1.0f);
    ++rows;
  }
  EXPECT_EQ(rows, 17);
}

TEST(Vision, PersonDetectRunsOnGrayscale) {
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/person_detect.tflite");
  Output o = run_image(model, image);
  ASSERT_EQ(o.bytes.size(), 2u);
  // Class 1 is "person"; Grace Hopper's portrait is one.
  EXPECT_GT(dequant(o.tensor, o.bytes, 1), dequant(o.tensor, o.bytes, 0));
}

TEST(Vision, HelloWorldApproximatesSine) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/hello_world_int8.tflite");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Tensor in = g->tensor(g->inputs[0]);
  const Tensor out = g->tensor(g->outputs[0]);
  auto s = Session::create(std::move(*g), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  // The model was trained on y = sin(x), x in [0, 2 pi]; its published accuracy is rough.
  double worst = 0;
  for (double x = 0.1; x < 6.2; x += 0.3) {
    int8_t q = static_cast<int8_t>(std::lround(x / in.quant.scale[0]) + in.quant.zero_point[0]);
    ASSERT_TRUE((*s)->set_input(0, &q, 1).ok());
    ASSERT_TRUE((*s)->run().ok());
    auto y = (*s)->output(0);
    ASSERT_TRUE(y.ok());
    worst = std::max(worst, std::abs(dequant(out, *y, 0) - std::sin(x)));
  }
  EXPECT_LT(worst, 0.2);
}

TEST(Vision, ImageToNchwInt8Input) {
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v2_quantized_1x3x224x224.tflite");
  Output o = run_image(model, image);
  ASSERT_EQ(o.bytes.size(), 1000u);
  std::vector<int> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = static_cast<int8_t>(o.bytes[i]);
  std::vector<int> idx(1000);
  for (int i = 0; i < 1000; ++i) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + 3, idx.end(), [&](int a, int b) { return v[a] > v[b]; });
  // No background class: military uniform is 652. It ranks in the top 3 beside "suit".
  EXPECT_TRUE(idx[0] == 652 || idx[1] == 652 || idx[2] == 652);
}

// Ultralytics' letterbox (its LetterBox with auto off, as for fixed-shape exports): scale by
// min(640 / w, 640 / h), round the scaled size, pad with grey 114 split round(d/2 - 0.1) /
// the rest. 640x480 -> 640x480 at (0, 80); 512x600 -> 546x640 at (47, 0); 1x1 -> 640x640.
TEST(Vision, LetterboxIsUltralyticsGeometry) {
  using tflite::letterbox_geometry;
  auto g = letterbox_geometry(640, 480, 640, 640);
  EXPECT_FLOAT_EQ(g.ratio, 1.0f);
  EXPECT_EQ(g.scaled_width, 640);
  EXPECT_EQ(g.scaled_height, 480);
  EXPECT_EQ(g.left, 0);
  EXPECT_EQ(g.top, 80);
  g = letterbox_geometry(512, 600, 640, 640);
  EXPECT_FLOAT_EQ(g.ratio, 640.0f / 600.0f);
  EXPECT_EQ(g.scaled_width, 546);  // round(546.13)
  EXPECT_EQ(g.scaled_height, 640);
  EXPECT_EQ(g.left, 47);  // (640 - 546) / 2 = 47: round(46.9) before, 47 after
  EXPECT_EQ(g.top, 0);
  g = letterbox_geometry(1000, 10, 640, 640);
  EXPECT_EQ(g.scaled_width, 640);
  EXPECT_EQ(g.scaled_height, 6);  // round(6.4)
  EXPECT_EQ(g.top, 317);          // 634 / 2 = 317
  // The image: grey 114 outside the scaled picture, the bilinear resize inside it.
  tflite::Image img;
  img.width = 4, img.height = 2, img.channels = 3;
  img.pixels.assign(24, 0);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(10 * i);
  const tflite::Image lb = tflite::letterbox(img, 8, 8);
  ASSERT_EQ(lb.width, 8);
  ASSERT_EQ(lb.height, 8);
  const tflite::Image scaled = tflite::resize_bilinear(img, 8, 4);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x)
      for (int c = 0; c < 3; ++c) {
        const bool inside = y >= 2 && y < 6;
        EXPECT_EQ(lb.at(x, y)[c], inside ? scaled.at(x, y - 2)[c] : 114) << x << "," << y;
      }
}

TEST(Vision, UnreadableImageIsAClearError) {
  auto img = tflite::read_image("/nonexistent.png");
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("/nonexistent.png"), std::string::npos);
}

}  // namespace
}  // namespace tessera
