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

}  // namespace
}  // namespace tessera::rknpu_test
