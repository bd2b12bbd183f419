// The vision commands through the real `tessera` binary: classify (labels with and without
// the background line), segment (mask PNG at the image's size, overlay), pose (CSV), run
// on the reference inputs, and clear failures for bad arguments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <unistd.h>

#include "fixtures.h"
#include "tools/cli_fixture.h"
#include "import/tflite/image.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class VisionCli : public testing::CliTest {
 protected:
  // The data lines of classify's table: "index score label".
  std::vector<std::string> result_lines() const {
    std::vector<std::string> lines;
    std::stringstream ss(out_);
    std::string line;
    bool table = false;
    while (std::getline(ss, line)) {
      if (line.find("index") != std::string::npos && line.find("label") != std::string::npos) {
        table = true;
        continue;
      }
      if (line.rfind("latency", 0) == 0) table = false;
      if (table) lines.push_back(line);
    }
    return lines;
  }
};

TEST_F(VisionCli, ClassifyGraceHopperWithBothMobileNetV2) {
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/imagenet_labels.txt");
  for (const char* m : {"mobilenet_v2_1.0_224_quant", "tf2_mobilenet_v2_1.0_224_ptq"}) {
    SCOPED_TRACE(m);
    TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + m + ".tflite");
    ASSERT_EQ(run("classify " + model + " " + image + " --labels " + labels + " --top 3"), 0) << err_;
    auto lines = result_lines();
    ASSERT_EQ(lines.size(), 3u) << out_;
    EXPECT_NE(lines[0].find("653"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("military uniform"), std::string::npos) << lines[0];
    EXPECT_NE(out_.find("latency:"), std::string::npos);
    // Without --labels: the ImageNet labels both files carry (packed by TFLite's metadata
    // writer), the same table.
    const std::vector<std::string> with_file = lines;
    ASSERT_EQ(run("classify " + model + " " + image + " --top 3"), 0) << err_;
    EXPECT_EQ(result_lines(), with_file) << out_;
  }
}

// inspect lists the compiled programs: the NPU segment as one job (Tessera's schedule) or
// one job per op (Mesa's).
TEST_F(VisionCli, InspectShowsTheCompiledNpuPrograms) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  ASSERT_EQ(run("inspect " + model + " --device rknpu --brief"), 0) << err_;
  EXPECT_NE(out_.find("compiled programs:"), std::string::npos) << out_;
  EXPECT_NE(out_.find("rknpu nodes #0..#"), std::string::npos) << out_;
  EXPECT_NE(out_.find("tasks in 1 job (tessera schedule)"), std::string::npos) << out_;
  ASSERT_EQ(run("inspect " + model + " --device rknpu --device-opt schedule=mesa --brief"), 0) << err_;
  EXPECT_NE(out_.find("NPU ops"), std::string::npos) << out_;
  EXPECT_NE(out_.find("jobs (mesa schedule)"), std::string::npos) << out_;
}

// On a device model the latency line also gives the modelled device time, so that the
// host time of the simulation is not read as the NPU's.
TEST_F(VisionCli, ClassifyOnADeviceModelSaysWhichTimeIsModelled) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/cat.bmp");
  ASSERT_EQ(run("classify " + model + " " + image + " --device rknpu --top 1"), 0) << err_;
  EXPECT_NE(out_.find("on rknpu, 1 thread); device time 1.126 ms (modelled, not measured"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\nframe time "), std::string::npos) << out_;
  EXPECT_NE(out_.find(" = rknpu 1.126 ms (modelled) + cpu ops "), std::string::npos) << out_;
  ASSERT_EQ(run("classify " + model + " " + image + " --top 1"), 0) << err_;
  EXPECT_EQ(out_.find("modelled"), std::string::npos) << out_;
}

// The whole frame on a device model: the modelled NPU time plus the cpu's share (fallback
// ops, transfers, the input's and output's conversions) modelled on one of the board's
// Cortex-A76 cores (tessera/cpu_model.h), with the host's measured times beside it, said so;
// frames/s from the modelled sum, 1 core and 3 streams. YOLOv8n's detection head ([1, C, 8400]
// tensors) is among the cpu ops.
TEST_F(VisionCli, BenchFrameTimeCountsTheCpuShare) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  ASSERT_EQ(run("bench " + model + " --device rknpu -r 1 --top 40"), 0) << err_;
  const size_t at = out_.find("frame time ");
  ASSERT_NE(at, std::string::npos) << out_;
  const std::string line = out_.substr(at, out_.find('\n', at) - at);
  double frame = 0, npu = 0, cpu = 0, transfers = 0, tr = 0, io = 0, host_cpu = 0, host_tr = 0, fps1 = 0, fps3 = 0;
  ASSERT_EQ(std::sscanf(line.c_str(),
                        "frame time %lf ms = rknpu %lf ms (modelled) + cpu ops %lf ms + %lf transfers %lf ms + "
                        "input/output conversions %lf ms (the cpu's share modelled on one Cortex-A76 core of the RK3588 "
                        "at 2.4 GHz; measured on this host, 1 thread: cpu ops %lf ms, transfers %lf ms) -> %lf frames/s "
                        "on 1 core, %lf frames/s as 3 streams on 3 cores",
                        &frame, &npu, &cpu, &transfers, &tr, &io, &host_cpu, &host_tr, &fps1, &fps3),
            10)
      << line;
  EXPECT_NEAR(frame, npu + cpu + tr + io, 0.0021) << line;
  EXPECT_GT(npu, 1.0) << line;
  // The three scales' maps out to their transposes, their concatenation back in, the DFL's
  // input out and its conv's output in (docs/rknpu.md "Flat tensors").
  EXPECT_EQ(transfers, 6) << line;
  // YOLOv8n's cpu share on an A76: the head's five transposes (about 2 MB through a 24.7 GB/s
  // core, one byte per cycle where the innermost axis moves), the DFL softmax and its conv:
  // about a millisecond, not zero and not the NPU's time.
  EXPECT_GT(cpu, 0.5) << line;
  EXPECT_LT(cpu, 5.0) << line;
  EXPECT_GT(tr, 0.02) << line;
  EXPECT_LT(tr, 1.0) << line;
  // The input written into NC1HWC2 (1.2 MB read, 6.5 MB written) and the output read back.
  EXPECT_GT(io, 0.2) << line;
  EXPECT_LT(io, 1.0) << line;
  EXPECT_GT(host_cpu, 0.0) << line;
  EXPECT_GT(host_tr, 0.0) << line;
  EXPECT_NEAR(fps1, 1000.0 / frame, 0.051 + 1e-3 * fps1) << line;
  EXPECT_NEAR(fps3, 3 * 1000.0 / frame, 0.051 + 1e-3 * fps3) << line;
  // The per-op profile gives the cpu nodes' board times.
  EXPECT_NE(out_.find("ms modelled on the board's cpu  softmax 'op 239 (SOFTMAX v2)' @cpu"), std::string::npos) << out_;
  // The device time line still gives the modelled NPU time alone.
  EXPECT_NE(out_.find(fmt::format("device time (modelled, not measured): median {:.3f} ms", npu)), std::string::npos)
      << out_;
  ASSERT_EQ(run("bench " + model + " -r 1 --top 0"), 0) << err_;  // the cpu: nothing modelled
  EXPECT_EQ(out_.find("frame time"), std::string::npos) << out_;
}

// inspect on the rknpu device model prices each cpu node and transfer on the board's
// Cortex-A76 (the rule it used), sums them, and names the ops priced by the generic rule.
TEST_F(VisionCli, InspectPricesTheCpuShareOnTheBoard) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  ASSERT_EQ(run("inspect " + model + " --device rknpu"), 0) << err_;
  auto line_of = [&](const std::string& what) {
    const size_t at = out_.find(what);
    return at == std::string::npos ? std::string() : out_.substr(at, out_.find('\n', at) - at);
  };
  EXPECT_NE(line_of("op 62 (LOGISTIC v1)").find("[rk3588-a76 0."), std::string::npos) << out_;
  EXPECT_NE(line_of("op 62 (LOGISTIC v1)").find(" ms: table lookup]"), std::string::npos) << out_;
  EXPECT_NE(line_of("op 63 (CUSTOM 'TFLite_Detection_PostProcess' v1)").find(" ms: generic]"), std::string::npos) << out_;
  EXPECT_NE(line_of("BoxPredictor_0/ClassPredictor/BiasAdd rknpu->cpu").find(" ms: layout conversion]"), std::string::npos)
      << out_;
  EXPECT_EQ(line_of("op 1 (CONV_2D").find("rk3588-a76"), std::string::npos) << out_;  // the NPU's own
  const std::string sum = line_of("board cpu (");
  double nodes = 0, transfers = 0;
  ASSERT_EQ(std::sscanf(sum.c_str(),
                        "board cpu (one Cortex-A76 core of the RK3588 at 2.4 GHz, modelled): %lf ms on the other "
                        "devices' nodes, %lf ms in transfers",
                        &nodes, &transfers),
            2)
      << sum;
  EXPECT_GT(nodes, 0.05) << sum;
  EXPECT_GT(transfers, 0.0) << sum;
  EXPECT_NE(sum.find("; priced by the generic rule: detection_postprocess x1"), std::string::npos) << sum;
  ASSERT_EQ(run("inspect " + model), 0) << err_;  // the cpu alone: no board
  EXPECT_EQ(out_.find("board cpu ("), std::string::npos);
  EXPECT_EQ(out_.find("rk3588-a76"), std::string::npos);
}

// bench --streams on the rknpu device model: N sessions, one scheduler entity each, spread
// over the three cores (modelled); refused where there is no multi-core device model.
TEST_F(VisionCli, BenchStreamsUseTheThreeNpuCores) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  ASSERT_EQ(run("bench " + model + " --device rknpu -r 2 --streams 3 --top 1"), 0) << err_;
  EXPECT_NE(out_.find("core0 1."), std::string::npos) << out_;  // one stream: core 0 only
  EXPECT_NE(out_.find("core1 0.000 ms core2 0.000 ms"), std::string::npos) << out_;
  EXPECT_NE(out_.find("3 streams (modelled, not measured)"), std::string::npos) << out_;
  // Three cores, less what the shared DRAM costs when all three are busy.
  auto ratio = [this] {
    const size_t x = out_.find("x one stream's");
    return x == std::string::npos ? 0.0 : std::stod(out_.substr(out_.rfind(' ', x) + 1, x - out_.rfind(' ', x) - 1));
  };
  const double three = ratio();
  EXPECT_GT(three, 2.5) << out_;
  EXPECT_LE(three, 3.0) << out_;
  EXPECT_NE(out_.find("3 streams per core (modelled busy share of the clock): core0 9"), std::string::npos) << out_;
  EXPECT_NE(out_.find("3 streams DRAM (modelled): "), std::string::npos) << out_;
  ASSERT_EQ(run("bench " + model + " --device rknpu -r 3 --streams 4 --top 0"), 0) << err_;
  EXPECT_NEAR(ratio(), three, 0.02) << "four streams share three cores: " << out_;
  for (const char* device : {"cpu", "tile"}) {
    EXPECT_NE(run("bench " + model + " -r 1 --streams 2 --device " + device), 0) << device;
    EXPECT_NE(err_.find("--streams needs a device model whose sessions share a modelled clock"), std::string::npos)
        << err_;
  }
  // Devices without a shared clock print no per-core or DRAM lines.
  ASSERT_EQ(run("bench " + model + " -r 1 --top 0 --device tile"), 0) << err_;
  EXPECT_EQ(out_.find("per core"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("DRAM"), std::string::npos) << out_;
}

TEST_F(VisionCli, LabelsWithBackgroundLineOnA1000ClassModel) {
  // imagenet_labels.txt has 1001 lines (background first); the NCHW model has 1000
  // classes, so index 652 must read "military uniform", not "mortarboard"'s neighbour.
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(labels, "labels/imagenet_labels.txt");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v2_quantized_1x3x224x224.tflite");
  ASSERT_EQ(run("classify " + model + " " + image + " --labels " + labels + " --top 5"), 0) << err_;
  bool found = false;
  for (const auto& l : result_lines())
    if (l.find(" 652 ") != std::string::npos || l.rfind("   652", 0) == 0) {
      EXPECT_NE(l.find("military uniform"), std::string::npos) << l;
      found = true;
    }
  EXPECT_TRUE(found) << out_;
}

TEST_F(VisionCli, SegmentWritesAMaskAtTheImageSizeAndAnOverlay) {
  TESSERA_REQUIRE_FIXTURE(image, "images/bird_segmentation.bmp");
  TESSERA_REQUIRE_FIXTURE(mask_ref, "images/bird_segmentation_mask.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/deeplabv3_mnv2_dm05_pascal_quant.tflite");
  ASSERT_EQ(run("segment " + model + " " + image + " --mask-out " + path("m.png") + " --overlay-out " + path("o.png")), 0)
      << err_;
  auto mask = tflite::read_image(path("m.png"));
  auto ref = tflite::read_image(mask_ref);  // gray palette: channel 0 is the class index
  auto over = tflite::read_image(path("o.png"));
  ASSERT_TRUE(mask.ok() && ref.ok() && over.ok());
  ASSERT_EQ(mask->width, ref->width);
  ASSERT_EQ(mask->height, ref->height);
  EXPECT_EQ(over->width, ref->width);
  int64_t equal = 0;
  const int64_t n = static_cast<int64_t>(mask->width) * mask->height;
  for (int64_t i = 0; i < n; ++i) equal += mask->pixels[i * 3] == ref->pixels[i * 3];
  EXPECT_GT(static_cast<double>(equal) / (2 * n - equal), 0.90);
  EXPECT_NE(out_.find("class   3"), std::string::npos) << out_;
}

// On the cpu and on the rknpu device model (MoveNet's first conv has channels whose weights
// are all zero with a placeholder scale of 1e-6: they must not stop it compiling).
TEST_F(VisionCli, PosePrintsSeventeenKeypointsNearTheReference) {
  TESSERA_REQUIRE_FIXTURE(image, "images/squat.bmp");
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/movenet_single_pose_lightning_ptq.tflite");
  TESSERA_REQUIRE_FIXTURE(csv, "models/tflite/movenet_single_pose_lightning_ptq_reference.csv");
  for (const char* device : {"cpu", "rknpu"}) {
    SCOPED_TRACE(device);
    ASSERT_EQ(run("pose " + model + " " + image + " --device " + device + " --overlay-out " + path("p.png")), 0) << err_;
    EXPECT_TRUE(fs::exists(path("p.png")));
    std::map<int, std::pair<double, double>> ours;
    std::stringstream ss(out_);
    std::string line;
    std::getline(ss, line);
    EXPECT_EQ(line, "keypoint,name,x,y,score");
    while (std::getline(ss, line)) {
      std::stringstream ls(line);
      std::string k, name, x, y;
      std::getline(ls, k, ',');
      std::getline(ls, name, ',');
      std::getline(ls, x, ',');
      std::getline(ls, y, ',');
      ours[std::stoi(k)] = {std::stod(x), std::stod(y)};
    }
    ASSERT_EQ(ours.size(), 17u);
    std::ifstream f(csv);
    std::getline(f, line);
    while (std::getline(f, line)) {
      std::vector<double> v;
      std::stringstream ls(line);
      std::string cell;
      while (std::getline(ls, cell, ',')) v.push_back(std::stod(cell));
      EXPECT_NEAR(ours[static_cast<int>(v[2])].first, v[4], 0.03);
      EXPECT_NEAR(ours[static_cast<int>(v[2])].second, v[5], 0.03);
    }
  }
}

TEST_F(VisionCli, BadImageAndModelFailWithAMessage) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  EXPECT_NE(run("classify " + model + " " + path("missing.png")), 0);
  EXPECT_NE(err_.find("missing.png"), std::string::npos) << err_;
  std::ofstream(path("junk.tflite")) << "this is not a model";
  TESSERA_REQUIRE_FIXTURE(image, "images/cat.bmp");
  EXPECT_NE(run("classify " + path("junk.tflite") + " " + image), 0);
  EXPECT_NE(err_.find("not a TFLite file"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera
