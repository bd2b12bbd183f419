// TESSERA_DUMP=rknpu writes every task's register stream (raw and decoded) and the buffers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/rknpu/rknpu_test_util.h"

namespace tessera::rknpu_test {
namespace {

TEST(RknpuDump, WritesRegisterStreamsAndBuffers) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera_rknpu_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("TESSERA_DUMP", "rknpu", 1);
  ::setenv("TESSERA_DUMP_DIR", dir.c_str(), 1);
  ConvSpec s;
  s.h = s.w = 6, s.ic = 8, s.oc = 16, s.k = 3;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  Compare r = run_and_compare(g, input);
  ::unsetenv("TESSERA_DUMP");
  ::unsetenv("TESSERA_DUMP_DIR");
  ASSERT_TRUE(r.error.empty()) << r.error;
  fs::path run = dir / "run0";
  ASSERT_TRUE(fs::exists(run / "index.txt")) << run;
  ASSERT_TRUE(fs::exists(run / "job0_task0.regcmd"));
  auto bytes = fs::file_size(run / "job0_task0.regcmd");
  EXPECT_EQ(bytes % 64, 0u) << "command buffers are 64-byte aligned";
  EXPECT_GT(bytes / 8, 60u) << "a conv task programs CNA, CORE, DPU and DPU_RDMA";
  std::ifstream txt(run / "job0_task0.txt");
  std::stringstream ss;
  ss << txt.rdbuf();
  EXPECT_NE(ss.str().find("CNA.CONV_CON1"), std::string::npos);
  EXPECT_NE(ss.str().find("DPU.OUT_CVT_SHIFT"), std::string::npos);
  EXPECT_NE(ss.str().find("PC.OPERATION_ENABLE"), std::string::npos);
  int bins = 0;
  for (const auto& e : fs::directory_iterator(run)) bins += e.path().extension() == ".bin";
  EXPECT_GE(bins, 4) << "input, output, weights and the bias/scale table";
  fs::remove_all(dir);
}

// The program's notes say what was fused: a conv with a residual add becomes one NPU op
// under rounding=fast and stays two under the default rounding=exact.
TEST(RknpuDump, IndexRecordsAddFusionByRoundingSetting) {
  namespace fs = std::filesystem;
  ConvSpec s;
  s.h = s.w = 8, s.ic = s.oc = 32, s.k = 3, s.residual_add = true;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  std::string index[2];
  double modelled[2] = {0, 0};
  int k = 0;
  for (const char* rounding : {"exact", "fast"}) {
    fs::path dir = fs::temp_directory_path() / ("tessera_rknpu_fuse_" + std::to_string(::getpid()) + rounding);
    fs::remove_all(dir);
    ::setenv("TESSERA_DUMP", "rknpu", 1);
    ::setenv("TESSERA_DUMP_DIR", dir.c_str(), 1);
    Compare r = run_and_compare(g, input, {{"rounding", rounding}});
    ::unsetenv("TESSERA_DUMP");
    ::unsetenv("TESSERA_DUMP_DIR");
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    EXPECT_LE(r.max_diff, 1);
    std::ifstream f(dir / "run0" / "index.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    index[k] = ss.str();
    modelled[k++] = r.modelled_seconds;
    fs::remove_all(dir);
  }
  EXPECT_EQ(index[0].rfind("2 NPU ops", 0), 0u) << index[0];
  EXPECT_EQ(index[0].find("fused into"), std::string::npos) << index[0];
  EXPECT_EQ(index[1].rfind("1 NPU op,", 0), 0u) << index[1];
  EXPECT_NE(index[1].find("fused into"), std::string::npos) << index[1];
  EXPECT_LT(modelled[1], modelled[0]) << "fusion saves a task and a round trip through DRAM";
}

}  // namespace
}  // namespace tessera::rknpu_test
