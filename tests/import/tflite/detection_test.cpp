// TFLite_Detection_PostProcess: the SSD model's outputs against the interpreter's
// (../shared/reference/ssd_table.*), NMS on a hand-made case, and bad input (malformed
// FlexBuffer options, anchors of the wrong shape, num_classes that disagrees with the
// scores, an unknown custom operator).
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "import/tflite/detection_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

using testing::DetectionModelSpec;
using testing::DetectionOptions;

Result<Graph> load(const std::vector<uint8_t>& bytes) { return tflite::load_tflite_buffer(ConstData::from_vector(bytes)); }

std::vector<uint8_t> floats_as_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
std::vector<float> bytes_as_floats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

Result<std::vector<std::vector<uint8_t>>> run(Graph g, const std::vector<std::vector<uint8_t>>& inputs) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::create(std::move(g), SessionOptions{}));
  for (size_t k = 0; k < inputs.size(); ++k)
    TS_RETURN_IF_ERROR(s->set_input(k, inputs[k].data(), static_cast<int64_t>(inputs[k].size())));
  TS_RETURN_IF_ERROR(s->run());
  std::vector<std::vector<uint8_t>> outs;
  for (size_t k = 0; k < s->graph().outputs.size(); ++k) {
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> o, s->output(k));
    outs.push_back(std::move(o));
  }
  return outs;
}

TEST(DetectionPostProcess, SsdTableMatchesTheInterpreterByteForByte) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(input, "reference/ssd_table.input.bin");
  auto g = tflite::load_tflite_file(model);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Node& last = g->nodes().back();
  ASSERT_EQ(last.op, OpKind::detection_postprocess);
  EXPECT_EQ(last.get(attr::max_detections), 10);
  EXPECT_EQ(last.get(attr::num_classes), 90);
  auto outs = run(std::move(*g), {testing::read_file(input)});
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  ASSERT_EQ(outs->size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    TESSERA_REQUIRE_FIXTURE(ref, "reference/ssd_table.tflite-output." + std::to_string(k) + ".bin");
    const std::vector<uint8_t> want = testing::read_file(ref);
    EXPECT_EQ((*outs)[k], want) << "output " << k << ": got " << ::testing::PrintToString(bytes_as_floats((*outs)[k]))
                                << ", the interpreter " << ::testing::PrintToString(bytes_as_floats(want));
  }
}

// Three boxes on one anchor each; encodings 0 decode to the anchors themselves. Boxes 0 and
// 1 overlap (IoU 0.78), box 2 is apart. Class scores (background column first):
//   box 0: class 1 at 0.9; box 1: class 1 at 0.8, class 0 at 0.7; box 2: class 2 at 0.6.
struct HandCase {
  std::vector<float> anchors = {0.5f, 0.5f, 0.4f, 0.4f,   // y, x, h, w: [0.3, 0.7]^2
                                0.5f, 0.55f, 0.4f, 0.4f,  // shifted right by 0.05
                                0.1f, 0.1f, 0.1f, 0.1f};
  std::vector<float> scores = {0, 0.1f, 0.9f, 0.0f, 0, 0.7f, 0.8f, 0.0f, 0, 0.0f, 0.1f, 0.6f};
  std::vector<float> encodings = std::vector<float>(12, 0.0f);
};

std::vector<std::vector<float>> run_hand(const DetectionOptions& o, int detections) {
  HandCase h;
  DetectionModelSpec spec;
  spec.num_boxes = 3;
  spec.anchors = h.anchors;
  spec.options = testing::detection_options_flexbuffer(o);
  spec.detections = detections;
  auto g = load(testing::detection_model(spec));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  auto outs = run(std::move(*g), {floats_as_bytes(h.encodings), floats_as_bytes(h.scores)});
  EXPECT_TRUE(outs.ok()) << outs.status().to_string();
  std::vector<std::vector<float>> v;
  if (outs.ok())
    for (auto& o : *outs) v.push_back(bytes_as_floats(o));
  return v;
}

TEST(DetectionPostProcess, FastNmsSuppressesTheOverlappingBox) {
  DetectionOptions o;
  o.max_detections = 3;
  o.nms_iou_threshold = 0.5f;
  o.nms_score_threshold = 0.3f;
  auto v = run_hand(o, 3);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3], std::vector<float>{2.0f});                // box 0 and box 2
  EXPECT_EQ(v[1], (std::vector<float>{1.0f, 2.0f, 0.0f}));  // their best classes
  EXPECT_EQ(v[2], (std::vector<float>{0.9f, 0.6f, 0.0f}));
  EXPECT_NEAR(v[0][0], 0.3f, 1e-6);  // ymin of box 0
  EXPECT_NEAR(v[0][3], 0.7f, 1e-6);  // xmax of box 0
  EXPECT_NEAR(v[0][5], 0.05f, 1e-6); // xmin of box 2
}

TEST(DetectionPostProcess, RegularNmsKeepsTheOverlappingBoxForAnotherClass) {
  DetectionOptions o;
  o.max_detections = 4;
  o.use_regular_nms = true;
  o.nms_score_threshold = 0.3f;
  auto v = run_hand(o, 4);
  ASSERT_EQ(v.size(), 4u);
  // Class 1: box 0 (0.9) suppresses box 1 (0.8); class 0: box 1 (0.7); class 2: box 2 (0.6).
  EXPECT_EQ(v[3], std::vector<float>{3.0f});
  EXPECT_EQ(v[1], (std::vector<float>{1.0f, 0.0f, 2.0f, 0.0f}));
  EXPECT_EQ(v[2], (std::vector<float>{0.9f, 0.7f, 0.6f, 0.0f}));
}

// Every bad-input case gives a load error naming the operator and what is wrong.
void expect_load_error(const std::vector<uint8_t>& model, const std::vector<std::string>& parts) {
  auto g = load(model);
  ASSERT_FALSE(g.ok()) << "loaded";
  const std::string msg = g.status().to_string();
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << "\n(missing '" << p << "')";
}

TEST(DetectionPostProcessBadInput, MalformedOptions) {
  DetectionModelSpec spec;
  spec.options = {0x12, 0x34, 0x56, 0x78, 0x9a};
  expect_load_error(testing::detection_model(spec), {"op 0", "TFLite_Detection_PostProcess", "FlexBuffer"});
  spec.options.clear();
  expect_load_error(testing::detection_model(spec), {"op 0", "custom options", "missing"});
  // Truncated: a valid map cut short.
  std::vector<uint8_t> good = testing::detection_options_flexbuffer(DetectionOptions{});
  spec.options.assign(good.begin(), good.begin() + static_cast<long>(good.size() / 2));
  expect_load_error(testing::detection_model(spec), {"op 0", "FlexBuffer"});
  // A root that is not a map.
  flexbuffers::Builder fb;
  fb.Int(7);
  fb.Finish();
  spec.options = fb.GetBuffer();
  expect_load_error(testing::detection_model(spec), {"op 0", "not a map"});
}

TEST(DetectionPostProcessBadInput, MissingOrMistypedKey) {
  flexbuffers::Builder fb;
  fb.Map([&]() {
    fb.Int("max_detections", 5);
    fb.Int("max_classes_per_detection", 1);
    fb.String("num_classes", "three");
    fb.Float("nms_score_threshold", 0.2f);
    fb.Float("nms_iou_threshold", 0.5f);
    fb.Float("y_scale", 10.f);
    fb.Float("x_scale", 10.f);
    fb.Float("h_scale", 5.f);
  });
  fb.Finish();
  DetectionModelSpec spec;
  spec.options = fb.GetBuffer();
  expect_load_error(testing::detection_model(spec), {"op 0", "'num_classes' is not a number"});
}

TEST(DetectionPostProcessBadInput, AnchorsOfTheWrongShape) {
  DetectionModelSpec spec;
  spec.options = testing::detection_options_flexbuffer(DetectionOptions{});
  spec.anchor_shape = {spec.num_boxes / 2, 8};
  expect_load_error(testing::detection_model(spec), {"op 0", "anchors 'anchors'", "[16, 4]"});
}

TEST(DetectionPostProcessBadInput, NumClassesDisagreesWithTheScores) {
  DetectionModelSpec spec;
  DetectionOptions o;
  o.num_classes = 9;  // the scores have 4 columns
  spec.options = testing::detection_options_flexbuffer(o);
  expect_load_error(testing::detection_model(spec), {"op 0", "num_classes 9", "class_predictions"});
}

TEST(DetectionPostProcessBadInput, ZeroScaleAndBadThreshold) {
  DetectionModelSpec spec;
  DetectionOptions o;
  o.h_scale = 0.0f;
  spec.options = testing::detection_options_flexbuffer(o);
  expect_load_error(testing::detection_model(spec), {"op 0", "h_scale"});
  o = DetectionOptions{};
  o.nms_iou_threshold = 1.5f;
  spec.options = testing::detection_options_flexbuffer(o);
  expect_load_error(testing::detection_model(spec), {"op 0", "nms_iou_threshold"});
}

TEST(DetectionPostProcessBadInput, InvertedAnchorIsARunError) {
  DetectionModelSpec spec;
  spec.num_boxes = 2;
  spec.anchors = {0.5f, 0.5f, 0.2f, 0.2f, 0.5f, 0.5f, -0.2f, 0.2f};  // negative height
  spec.options = testing::detection_options_flexbuffer(DetectionOptions{});
  auto g = load(testing::detection_model(spec));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto outs = run(std::move(*g), {floats_as_bytes(std::vector<float>(8, 0.1f)),
                                  floats_as_bytes(std::vector<float>(8, 0.5f))});
  ASSERT_FALSE(outs.ok());
  EXPECT_NE(outs.status().to_string().find("anchors 'anchors': box 1"), std::string::npos) << outs.status().to_string();
}

}  // namespace
}  // namespace tessera
