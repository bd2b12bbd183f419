// End to end: both quantized MobileNetV2 models classify grace_hopper.bmp as "military
// uniform" with the tile device preferred. Integer-quantized nodes stay on the cpu (the
// tile device has no integer arithmetic; docs/tile-device.md), so the scores must equal the
// cpu's bit for bit, and the plan must say why each node is not on the tile device.
#if __has_include("import/tflite/tflite_importer.h") && __has_include("import/tflite/image.h")
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "import/tflite/image.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

struct Classified {
  std::vector<uint8_t> scores;  // raw output bytes
  int64_t top = -1;
  std::string report;
};

Classified classify(const std::string& model, const std::string& image, const std::string& device) {
  Classified c;
  auto g = tflite::load_tflite_file(model);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return c;
  auto img = tflite::read_image(image);
  EXPECT_TRUE(img.ok()) << img.status().to_string();
  if (!img.ok()) return c;
  auto in = tflite::image_to_input(*img, g->tensor(g->inputs[0]));
  EXPECT_TRUE(in.ok()) << in.status().to_string();
  if (!in.ok()) return c;
  SessionOptions so;
  so.device = device;
  auto s = Session::create(std::move(g).value(), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return c;
  EXPECT_TRUE((*s)->set_input(0, in->data(), static_cast<int64_t>(in->size())).ok());
  Status r = (*s)->run();
  EXPECT_TRUE(r.ok()) << r.to_string();
  auto out = (*s)->output(0);
  EXPECT_TRUE(out.ok());
  if (!out.ok()) return c;
  c.scores = *out;
  const Tensor& ot = (*s)->graph().tensor((*s)->graph().outputs[0]);
  // Arg max over the scores in the output's dtype (u8 or i8 codes, or f32).
  auto value = [&](size_t i) -> double {
    if (ot.dtype == DType::u8) return c.scores[i];
    if (ot.dtype == DType::i8) return static_cast<int8_t>(c.scores[i]);
    float f;
    std::memcpy(&f, c.scores.data() + 4 * i, 4);
    return f;
  };
  const size_t n = static_cast<size_t>(ot.elements());
  for (size_t i = 0; i < n; ++i)
    if (c.top < 0 || value(i) > value(static_cast<size_t>(c.top))) c.top = static_cast<int64_t>(i);
  c.report = (*s)->plan().report(true);
  return c;
}

// The label of class `index` for a model with `classes` outputs (a file with one extra
// line starts with "background").
std::string label(const std::string& labels_path, int64_t index, int64_t classes) {
  std::ifstream f(labels_path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  int64_t offset = static_cast<int64_t>(lines.size()) == classes + 1 ? 1 : 0;
  return index + offset < static_cast<int64_t>(lines.size()) ? lines[index + offset] : "";
}

TEST(TileClassify, BothMobileNetV2ModelsSeeAMilitaryUniform) {
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/imagenet_labels.txt");
  for (const char* m : {"models/tflite/mobilenet_v2_1.0_224_quant.tflite", "models/tflite/tf2_mobilenet_v2_1.0_224_ptq.tflite"}) {
    TESSERA_REQUIRE_FIXTURE(model, m);
    Classified cpu = classify(model, image, "cpu");
    Classified tile = classify(model, image, "tile");
    ASSERT_FALSE(tile.scores.empty()) << m;
    EXPECT_EQ(tile.scores, cpu.scores) << m << ": quantized nodes run on the cpu, so the scores are the cpu's";
    int64_t classes = static_cast<int64_t>(tile.scores.size());
    EXPECT_EQ(label(labels, tile.top, classes), "military uniform") << m << " top index " << tile.top;
    // inspect's report says why the quantized nodes are not on the tile device.
    EXPECT_NE(tile.report.find("is an integer-quantized tensor"), std::string::npos) << tile.report.substr(0, 2000);
  }
}

}  // namespace
}  // namespace tessera
#endif
