// The register header generated from src/backend/rknpu/registers.txt: a sample of offsets,
// field positions and target ids across every block, as the RK3588 register map gives them
// (the same values the header generated from the earlier XML database held), and the
// table's own invariants.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rknpu/registers.h"

namespace tessera::rknpu {
namespace {

void expect_field(const regs::Field& f, unsigned reg, unsigned low, unsigned width, const char* name) {
  EXPECT_EQ(f.reg, reg) << name;
  EXPECT_EQ(f.low, low) << name;
  EXPECT_EQ(f.width, width) << name;
  EXPECT_STREQ(f.name, name);
}

TEST(RknpuRegisterTable, TargetBlockIds) {
  EXPECT_EQ(regs::kBlock_PC, 0x100u);
  EXPECT_EQ(regs::kBlock_CNA, 0x200u);
  EXPECT_EQ(regs::kBlock_CORE, 0x800u);
  EXPECT_EQ(regs::kBlock_DPU, 0x1000u);
  EXPECT_EQ(regs::kBlock_DPU_RDMA, 0x2000u);
  EXPECT_EQ(regs::kBlock_PPU, 0x4000u);
  EXPECT_EQ(regs::kBlock_PPU_RDMA, 0x8000u);
  EXPECT_EQ(regs::kBlock_DDMA, 0x10000u);
  EXPECT_EQ(regs::kBlock_SDMA, 0x20000u);
  EXPECT_EQ(regs::kBlock_GLOBAL, 0x40000u);
}

TEST(RknpuRegisterTable, SampleOffsetsAndFields) {
  EXPECT_EQ(regs::PC::OPERATION_ENABLE, 0x0008);
  expect_field(regs::PC::OPERATION_ENABLE__OP_EN, 0x0008, 0, 1, "PC.OPERATION_ENABLE.OP_EN");
  expect_field(regs::PC::BASE_ADDRESS__PC_SOURCE_ADDR, 0x0010, 4, 28, "PC.BASE_ADDRESS.PC_SOURCE_ADDR");
  expect_field(regs::PC::TASK_CON__TASK_NUMBER, 0x0030, 0, 12, "PC.TASK_CON.TASK_NUMBER");
  expect_field(regs::CNA::CONV_CON1__CONV_MODE, 0x100c, 0, 4, "CNA.CONV_CON1.CONV_MODE");
  expect_field(regs::CNA::S_POINTER__POINTER_PP_MODE, 0x1004, 3, 1, "CNA.S_POINTER.POINTER_PP_MODE");
  expect_field(regs::CNA::DATA_SIZE0__DATAIN_WIDTH, 0x1020, 16, 11, "CNA.DATA_SIZE0.DATAIN_WIDTH");
  EXPECT_EQ(regs::CNA::WEIGHT_SIZE0, 0x1030);
  expect_field(regs::CNA::WEIGHT_SIZE0__WEIGHT_BYTES, 0x1030, 0, 32, "CNA.WEIGHT_SIZE0.WEIGHT_BYTES");
  expect_field(regs::CORE::S_POINTER__POINTER_PP_MODE, 0x3004, 3, 1, "CORE.S_POINTER.POINTER_PP_MODE");
  expect_field(regs::DPU::FEATURE_MODE_CFG__OUTPUT_MODE, 0x400c, 1, 2, "DPU.FEATURE_MODE_CFG.OUTPUT_MODE");
  EXPECT_EQ(regs::DPU::DST_BASE_ADDR, 0x4020);
  expect_field(regs::DPU::DATA_CUBE_WIDTH__WIDTH, 0x4030, 0, 13, "DPU.DATA_CUBE_WIDTH.WIDTH");
  expect_field(regs::DPU::BS_CFG__BS_ALU_ALGO, 0x4040, 16, 4, "DPU.BS_CFG.BS_ALU_ALGO");
  expect_field(regs::DPU::OUT_CVT_SHIFT__MINUS_EXP, 0x4088, 12, 8, "DPU.OUT_CVT_SHIFT.MINUS_EXP");
  EXPECT_EQ(regs::DPU_RDMA::RDMA_DATA_CUBE_WIDTH, 0x500c);
  expect_field(regs::DPU_RDMA::RDMA_DATA_CUBE_WIDTH__WIDTH, 0x500c, 0, 13, "DPU_RDMA.RDMA_DATA_CUBE_WIDTH.WIDTH");
  expect_field(regs::PPU::OPERATION_MODE_CFG__POOLING_METHOD, 0x6024, 0, 2, "PPU.OPERATION_MODE_CFG.POOLING_METHOD");
  EXPECT_EQ(regs::PPU::DST_BASE_ADDR, 0x6070);
  expect_field(regs::PPU::DST_BASE_ADDR__DST_BASE_ADDR, 0x6070, 4, 28, "PPU.DST_BASE_ADDR.DST_BASE_ADDR");
  EXPECT_EQ(regs::PC::OPERATION_ENABLE__OP_EN.max(), 1u);
  EXPECT_EQ(regs::CNA::WEIGHT_SIZE0__WEIGHT_BYTES.max(), 0xFFFFFFFFu);
}

TEST(RknpuRegisterTable, EveryRegisterOnceWithItsBlock) {
  EXPECT_EQ(regs::kNumRegisters, 199);
  std::set<unsigned> offsets;
  std::set<std::string> blocks;
  for (const auto& r : regs::kRegisters) {
    EXPECT_TRUE(offsets.insert(r.offset).second) << "offset 0x" << std::hex << r.offset << " twice";
    blocks.insert(r.block);
  }
  EXPECT_EQ(offsets.size(), static_cast<size_t>(regs::kNumRegisters));
  EXPECT_EQ(blocks, (std::set<std::string>{"PC", "CNA", "CORE", "DPU", "DPU_RDMA", "PPU", "PPU_RDMA", "DDMA",
                                           "SDMA", "GLOBAL"}));
}

}  // namespace
}  // namespace tessera::rknpu
