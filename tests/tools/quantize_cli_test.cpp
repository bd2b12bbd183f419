// `tessera quantize` as a user runs it: a hybrid YOLOv8n quantized on two photos, the
// report's lines (what was written, the packed labels carried, the comparison with the
// float model on the first image), the written file detecting on the NPU with its class
// names; and a calibration file that is no image failing clearly.
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.h"
#include "tools/cli_fixture.h"

namespace tessera::testing {
namespace {

class QuantizeCli : public CliTest {};

TEST_F(QuantizeCli, AHybridYoloBecomesAnInt8ModelTheNpuRuns) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_int8.tflite");
  TESSERA_REQUIRE_FIXTURE(grace, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  // inspect says what a float model on the NPU needs.
  ASSERT_EQ(run("inspect " + model + " --device rknpu"), 0) << err_;
  EXPECT_NE(out_.find("nodes stay off rknpu for float tensors; `tessera quantize MODEL"), std::string::npos) << out_;
  const std::string out = path("y8.tflite");
  ASSERT_EQ(run("quantize " + model + " " + out + " --calibration " + grace + " " + table + " --int8-io"), 0) << err_;
  EXPECT_NE(out_.find("wrote " + out + ": "), std::string::npos) << out_;
  EXPECT_NE(out_.find("calibrated on 2 images, int8 inputs and outputs"), std::string::npos) << out_;
  EXPECT_NE(out_.find("note: the packed files"), std::string::npos) << out_;
  EXPECT_NE(out_.find("on " + grace + ": output 'PartitionedCall:0'"), std::string::npos) << out_;
  EXPECT_NE(err_.find("calibrating: 2/2 images"), std::string::npos) << err_;
  ASSERT_TRUE(std::filesystem::exists(out));
  ASSERT_EQ(run("detect " + out + " " + grace + " --device rknpu"), 0) << err_;
  EXPECT_NE(out_.find("person"), std::string::npos) << out_;
  EXPECT_NE(out_.find("frames/s on 1 core"), std::string::npos) << out_;
  ASSERT_EQ(run("inspect " + out + " --device rknpu"), 0) << err_;
  EXPECT_EQ(out_.find("hint:"), std::string::npos) << "the int8 model needs no hint";
}

TEST_F(QuantizeCli, ACalibrationFileThatIsNoImageIsNamed) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_int8.tflite");
  const std::string text = "not an image";
  write("notes.txt", std::vector<char>(text.begin(), text.end()));
  const std::string junk = path("notes.txt");
  EXPECT_NE(run("quantize " + model + " " + path("q.tflite") + " -c " + junk), 0);
  EXPECT_NE(err_.find("notes.txt"), std::string::npos) << err_;
  EXPECT_FALSE(std::filesystem::exists(path("q.tflite")));
  // A folder stands for its images (here none: the text file is not one).
  std::filesystem::create_directories(path("calib"));
  std::filesystem::copy_file(junk, path("calib/notes.txt"));
  EXPECT_NE(run("quantize " + model + " " + path("q.tflite") + " -c " + path("calib")), 0);
  EXPECT_NE(err_.find("holds no .bmp, .jpg, .jpeg or .png image"), std::string::npos) << err_;
}

TEST_F(QuantizeCli, AFolderOfImagesCalibrates) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_int8.tflite");
  TESSERA_REQUIRE_FIXTURE(cat, "images/cat.bmp");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  std::filesystem::create_directories(path("photos"));
  std::filesystem::copy_file(table, path("photos/b.JPG"));
  std::filesystem::copy_file(cat, path("photos/a.bmp"));
  ASSERT_EQ(run("quantize " + model + " " + path("q.tflite") + " -c " + path("photos")), 0) << err_;
  EXPECT_NE(out_.find("calibrated on 2 images"), std::string::npos) << out_;
  EXPECT_NE(out_.find("on " + path("photos/a.bmp") + ": output"), std::string::npos) << "name order: a.bmp first\n" << out_;
}

}  // namespace
}  // namespace tessera::testing
