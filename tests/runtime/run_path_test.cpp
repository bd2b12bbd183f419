// The cpu device's run path on the shared TFLite models: after a warm-up (thread_local
// scratch grown on a network's first runs), Session::run allocates nothing, on one and
// two threads (the kernels, the pool, the session and the device run from buffers made
// once); alloc_counter.h counts every thread's heap allocations.
#include <gtest/gtest.h>

#include <random>

#include "alloc_counter.h"
#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

namespace tessera {
namespace {

TEST(CpuRunPath, RunAllocatesNothingOnTheSharedModels) {
  // Every shared TFLite model: the MobileNets' packed paths, person_detect's depth
  // multiplier, movenet's and deeplab's broadcasts, slices and resizes, and the SSD's
  // detection post-processing (its buffers kept per thread), and a float YOLOv5n.
  const char* models[] = {"mobilenet_v1_1.0_224_quant_embedding_extractor.tflite", "mobilenet_v2_1.0_224_quant.tflite",
                          "tf2_mobilenet_v2_1.0_224_ptq.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite",
                          "mobilenet_v1_0.25_128_quant.tflite", "hello_world_int8.tflite", "person_detect.tflite",
                          "movenet_single_pose_lightning_ptq.tflite", "deeplabv3_mnv2_dm05_pascal_quant.tflite",
                          "ssd_mobilenet_v1_coco_quant.tflite",
                          // a float YOLO export: the float conv2d's packed path (per-thread scratch)
                          "corpus/yolov5n_fp16.tflite"};
  for (const char* m : models) {
    TESSERA_REQUIRE_FIXTURE(path, std::string("models/tflite/") + m);
    for (const char* threads : {"1", "2"}) {
      SCOPED_TRACE(std::string(m) + ", " + threads + " thread(s)");
      auto g = tflite::load_tflite_file(path);
      ASSERT_TRUE(g.ok()) << g.status().to_string();
      SessionOptions o;
      o.device = "cpu";
      o.device_options["threads"] = threads;
      auto s = Session::create(*g, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      std::mt19937 rng(3);
      for (size_t i = 0; i < g->inputs.size(); ++i) {
        auto hb = g->tensor(g->inputs[i]).host_bytes();
        ASSERT_TRUE(hb.ok());
        std::vector<uint8_t> x(static_cast<size_t>(*hb));
        for (auto& b : x) b = static_cast<uint8_t>(rng());
        ASSERT_TRUE((*s)->set_input(i, x.data(), *hb).ok());
      }
      for (int warm = 0; warm < 2; ++warm) ASSERT_TRUE((*s)->run().ok());
      testing::g_allocations = 0;
      testing::g_counting = true;
      Status st;
      for (int r = 0; r < 3 && st.ok(); ++r) st = (*s)->run();
      testing::g_counting = false;
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(testing::g_allocations.load(), 0) << "heap allocations in 3 runs (TESSERA_ALLOC_TRACE=1 prints them)";
    }
  }
}

}  // namespace
}  // namespace tessera
