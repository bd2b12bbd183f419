// The rknpu device's programs pack and hold the constants they read
// (DeviceProperties::program_owns_constants): the plan allocates and uploads no second copy,
// reports them as held by the programs, and each program reports its bytes. A constant that
// a cpu node also reads keeps its plan allocation.
#include <gtest/gtest.h>

#include "backend/rknpu/rknpu_test_util.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

TEST(RknpuConstants, ProgramsHoldTheConstantsThePlanDoesNotAllocate) {
  ConvSpec s;
  s.h = s.w = 12, s.ic = s.oc = 32;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  SessionOptions so;
  so.device = "rknpu";
  auto session = Session::create(g, so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const Plan& p = (*session)->plan();
  const int npu = device_index(p, "rknpu");
  ASSERT_GE(npu, 0);
  const Node& conv = p.graph.nodes()[0];
  EXPECT_TRUE(p.tensors[conv.inputs[1]].in_program) << "weights";
  EXPECT_TRUE(p.tensors[conv.inputs[2]].in_program) << "bias";
  EXPECT_EQ(p.memory[npu].weight_bytes, 0);
  EXPECT_EQ(p.memory[npu].program_constants, 2);
  EXPECT_NE(p.report(false).find("+ 2 constants held by the compiled programs"), std::string::npos) << p.report(false);
  auto lines = (*session)->program_summaries();
  ASSERT_FALSE(lines.empty());
  // 32 output x 32 input channels x 9 taps in int16 (the u8 weights span more than 255):
  // 18 KiB in 32x32 blocks, plus the 64 table entries, each BO a whole number of pages.
  EXPECT_NE(lines[0].find("holds 24.0 KiB of packed constants"), std::string::npos) << lines[0];
  Compare r = run_and_compare(g, input);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.exact, r.n);
}

TEST(RknpuConstants, AConstantACpuNodeAlsoReadsStaysAllocated) {
  // Two convs read the same weights and bias: one runs on the NPU, the other (stride 8,
  // beyond the CNA's 3-bit field) on the cpu, so the plan keeps its copy for the cpu.
  ConvSpec s;
  s.h = s.w = 16, s.ic = s.oc = 16, s.k = 1;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  const Node first = g.nodes()[0];
  auto y = g.add_op(OpKind::conv2d, {first.inputs[0], first.inputs[1], first.inputs[2]},
                    {{"stride_h", int64_t{8}}, {"stride_w", int64_t{8}}}, "strided", DType::u8,
                    g.tensor(first.outputs[0]).quant);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs.push_back(*y);
  SessionOptions so;
  so.device = "rknpu";
  auto session = Session::create(g, so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const Plan& p = (*session)->plan();
  EXPECT_EQ(p.devices[p.nodes[0].device]->name(), "rknpu");
  EXPECT_EQ(p.devices[p.nodes.back().device]->name(), "cpu");
  EXPECT_FALSE(p.tensors[first.inputs[1]].in_program);
  EXPECT_GT(p.memory[p.tensors[first.inputs[1]].device].weight_bytes, 0);
  ASSERT_TRUE((*session)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  ASSERT_TRUE((*session)->run().ok());
  SessionOptions cpu;
  auto reference = Session::create(g, cpu);
  ASSERT_TRUE(reference.ok());
  ASSERT_TRUE((*reference)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  ASSERT_TRUE((*reference)->run().ok());
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(*(*session)->output(k), *(*reference)->output(k)) << "output " << k;
}

}  // namespace
}  // namespace tessera::rknpu_test
