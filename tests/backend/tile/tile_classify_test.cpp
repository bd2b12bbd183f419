// End to end: both quantized MobileNetV2 models classify grace_hopper.bmp as "military
// uniform" on the tile device. By default (quantized=float) every node runs on the tile
// device: convolutions and fully connected layers on the integer path (codes exact in the
// matrix engine, TFLite's requantization), the other ops on real values converted at the
// kernel boundary and requantized. On this photo the uint8 MobileNetV2 gives the cpu's
// scores byte for byte (its ten ADDs, on the float path, happen to round as TFLite's
// integer ADD does); the int8 one differs by at most 2 codes, from near-ties of its ADDs. With quantized=cpu the quantized nodes stay on
// the cpu's TFLite-exact kernels, the scores equal the cpu's bit for bit, and the plan says why.
#if __has_include("import/tflite/tflite_importer.h") && __has_include("import/tflite/image.h")
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "import/tflite/image.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

struct Classified {
  std::vector<uint8_t> scores;  // raw output bytes
  std::vector<double> values;   // the output codes (or floats) as numbers
  int64_t top = -1;
  std::string report;
  bool all_on_device = false;
};

Classified classify(const std::string& model, const std::string& image, const std::string& device,
                    const DeviceOptions& opts = {}) {
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
  so.device_options = opts;
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
  for (size_t i = 0; i < n; ++i) {
    c.values.push_back(value(i));
    if (c.top < 0 || value(i) > value(static_cast<size_t>(c.top))) c.top = static_cast<int64_t>(i);
  }
  c.report = (*s)->plan().report(true);
  c.all_on_device = true;
  const Plan& p = (*s)->plan();
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (p.graph.nodes()[i].op != OpKind::transfer && p.devices[p.nodes[i].device]->name() == "cpu")
      c.all_on_device = false;
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
  for (const char* m :
       {"models/tflite/mobilenet_v2_1.0_224_quant.tflite", "models/tflite/tf2_mobilenet_v2_1.0_224_ptq.tflite"}) {
    TESSERA_REQUIRE_FIXTURE(model, m);
    Classified cpu = classify(model, image, "cpu");
    ASSERT_FALSE(cpu.scores.empty()) << m;
    // Default: the float path, every node on the tile device.
    Classified tile = classify(model, image, "tile");
    ASSERT_FALSE(tile.scores.empty()) << m;
    const int64_t classes = static_cast<int64_t>(tile.values.size());
    EXPECT_TRUE(tile.all_on_device) << m << "\n" << tile.report.substr(0, 3000);
    EXPECT_EQ(label(labels, tile.top, classes), "military uniform") << m << " top index " << tile.top;
    EXPECT_EQ(tile.top, cpu.top) << m;
    // Every score within 2 codes of the cpu's TFLite-exact one (measured: the uint8 model
    // identical, the int8 model 5 of 1001 scores off by 1 or 2).
    ASSERT_EQ(tile.values.size(), cpu.values.size()) << m;
    double worst = 0;
    for (size_t i = 0; i < cpu.values.size(); ++i) worst = std::max(worst, std::fabs(tile.values[i] - cpu.values[i]));
    EXPECT_LE(worst, 2) << m;
    if (std::string(m).find("tf2_") == std::string::npos) {
      EXPECT_EQ(tile.scores, cpu.scores) << m;
    }
    std::printf("%s: tile top %lld, score code %.0f (cpu %.0f)\n", m, static_cast<long long>(tile.top),
                tile.values[tile.top], cpu.values[cpu.top]);

    // quantized=cpu: the cpu's TFLite-exact kernels, identical scores, reasons in the plan.
    Classified exact = classify(model, image, "tile", {{"quantized", "cpu"}});
    EXPECT_EQ(exact.scores, cpu.scores) << m;
    EXPECT_EQ(label(labels, exact.top, classes), "military uniform") << m;
    EXPECT_NE(exact.report.find("is an integer-quantized tensor"), std::string::npos) << exact.report.substr(0, 2000);
  }
}

}  // namespace
}  // namespace tessera
#endif
