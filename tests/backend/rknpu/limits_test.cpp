// Every compiler limit trips with a graph built to break it, and the node falls back to the
// cpu with the reason `tessera inspect` shows (or, where the cpu cannot run it either, the
// plan fails with both reasons). Also: register field checks, decoder errors, the 32-bit
// address space, and device options.
#include <gtest/gtest.h>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/transport.h"
#include "tessera/backend/device.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

// The partition note of the first node of op `op` when planned for rknpu.
std::string note_of(const Graph& g, OpKind op) {
  SessionOptions so;
  so.device = "rknpu";
  auto s = Session::create(g, so);
  if (!s.ok()) return "session error: " + s.status().to_string();
  const Plan& p = (*s)->plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i)
    if (p.graph.nodes()[i].op == op) return p.devices[p.nodes[i].device]->name() + ": " + p.nodes[i].note;
  return "no such node";
}

std::string conv_note(ConvSpec s, AttrMap extra = {}) {
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  for (auto& [k, v] : extra) g.nodes()[0].attrs[k] = v;
  return note_of(g, s.depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d);
}

void expect_fallback(const std::string& note, const std::string& reason) {
  EXPECT_EQ(note.rfind("cpu: fallback: ", 0), 0u) << note;
  EXPECT_NE(note.find(reason), std::string::npos) << note;
}

TEST(RknpuLimits, SmallConvRunsOnTheNpu) {
  ConvSpec s;
  EXPECT_EQ(conv_note(s).rfind("rknpu: npu conv", 0), 0u) << conv_note(s);
}

TEST(RknpuLimits, KernelAbove31) {
  ConvSpec s;
  s.h = s.w = 32, s.ic = s.oc = 1, s.k = 32, s.same = false;
  expect_fallback(conv_note(s), "kernel 32x32 exceeds the CNA's 31");
}

TEST(RknpuLimits, StrideAbove7) {
  ConvSpec s;
  s.h = s.w = 16, s.ic = s.oc = 2, s.k = 1, s.stride = 8;
  expect_fallback(conv_note(s), "stride 8x8 outside 1..7");
}

TEST(RknpuLimits, TopPaddingAbove15) {
  ConvSpec s;
  s.h = s.w = 20, s.ic = s.oc = 2, s.k = 17, s.same = true;  // SAME pads 8: within the field
  EXPECT_EQ(conv_note(s).rfind("rknpu", 0), 0u) << conv_note(s);
  s.k = 1, s.same = false;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  g.nodes()[0].attrs["pad_top"] = int64_t{16};
  g.tensor(g.nodes()[0].outputs[0]).shape[1] += 16;
  expect_fallback(note_of(g, OpKind::conv2d), "padding top 16");
}

TEST(RknpuLimits, WidthAbove2047) {
  ConvSpec s;
  s.h = 1, s.w = 2048, s.ic = s.oc = 1, s.k = 1;
  expect_fallback(conv_note(s), "must be <= 2047");
}

TEST(RknpuLimits, ChannelsAbove8192) {
  // A 1x1 depthwise conv over 8208 channels: the DPU's channel count field has 13 bits.
  ConvSpec s;
  s.h = s.w = 1, s.ic = s.oc = 8208, s.k = 1, s.depthwise = true;
  expect_fallback(conv_note(s), "has 8208 channels, above the DPU's 8192");
  s.ic = s.oc = 8192;
  EXPECT_EQ(conv_note(s).rfind("rknpu", 0), 0u) << conv_note(s);
}

TEST(RknpuLimits, DilatedKernelSpanAbove31) {
  // A dilated kernel runs as the kernel it spans, which must fit the CNA's 5-bit field.
  ConvSpec s;
  s.h = s.w = 40, s.ic = s.oc = 4, s.k = 3, s.same = false, s.dilation = 16;
  expect_fallback(conv_note(s), "kernel 33x33 (3x3 dilated 16x16) exceeds the CNA's 31");
  s.dilation = 15;
  EXPECT_EQ(conv_note(s).rfind("rknpu: npu conv", 0), 0u) << conv_note(s);
}

// A depthwise conv with a depth multiplier runs as a regular conv with block-diagonal
// weights up to 16 input channels (conv_conformance_test.cpp checks the values); beyond, it
// falls back with the reason.
TEST(RknpuLimits, DepthMultiplierAbove16Channels) {
  for (int64_t c : {16, 17}) {
    Graph g = build_depthwise_multiplier(c, 2, DType::u8, false, 5);
    const std::string note = note_of(g, OpKind::depthwise_conv2d);
    if (c == 16) EXPECT_EQ(note.rfind("rknpu: npu conv", 0), 0u) << note;
    else expect_fallback(note, "depth multiplier 2 on 17 channels (as a conv up to 16)");
  }
}

TEST(RknpuLimits, UnsupportedActivation) {
  ConvSpec s;
  s.h = s.w = 4, s.ic = s.oc = 4, s.k = 1;
  expect_fallback(conv_note(s, {{"activation", std::string("relu_n1_to_1")}}), "activation 'relu_n1_to_1'");
}

TEST(RknpuLimits, InputRowsOverflowTheCbufDataBanks) {
  // 3 input rows of 2047 x 64 channels (131 KB each) exceed the 10 data banks beside the weights.
  ConvSpec s;
  s.h = 3, s.w = 2047, s.ic = s.oc = 64, s.k = 3, s.same = false, s.narrow_weights = true;
  expect_fallback(conv_note(s), "CBUF data banks");
}

TEST(RknpuLimits, WeightGroupOverflowsTheCbufWeightBanks) {
  // int16 weights (u8 weights spanning more than int8 around their zero point), 5x5x256:
  // one 32-kernel group is 409,600 bytes, more than the 11 banks left beside one data bank.
  ConvSpec s;
  s.h = s.w = 3, s.ic = s.oc = 256, s.k = 5;
  expect_fallback(conv_note(s), "CBUF weight banks");
}

TEST(RknpuLimits, FloatConvIsNotLowered) {
  Graph g;
  Tensor x;
  x.name = "x", x.shape = {1, 4, 4, 2}, x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  std::vector<uint8_t> wb(2 * 2 * 4, 0);
  float one = 0.5f;
  for (size_t i = 0; i < wb.size(); i += 4) std::memcpy(&wb[i], &one, 4);
  TensorId wi = add_const(g, "w", {2, 1, 1, 2}, DType::f32, {}, wb);
  auto y = g.add_op(OpKind::conv2d, {xi, wi});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.inputs = {xi}, g.outputs = {*y};
  expect_fallback(note_of(g, OpKind::conv2d), "u8/i8 quantized tensors only");
}

TEST(RknpuLimits, BatchAboveOne) {
  ConvSpec s;
  s.h = s.w = 4, s.ic = s.oc = 2, s.k = 1;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  // Rebuild with batch 2 on the input and output.
  g.tensor(g.inputs[0]).shape[0] = 2;
  g.tensor(g.outputs[0]).shape[0] = 2;
  expect_fallback(note_of(g, OpKind::conv2d), "batch 2");
}

TEST(RknpuLimits, BroadcastAddAndPoolingLimits) {
  Graph g;
  Tensor a;
  a.name = "a", a.shape = {1, 4, 4, 8}, a.dtype = DType::u8, a.quant = {{0.1f}, {128}}, a.role = Role::input;
  TensorId ai = g.add_tensor(a);
  Tensor b = a;
  b.name = "b", b.shape = {1, 1, 1, 8};
  TensorId bi = g.add_tensor(b);
  auto sum = g.add_op(OpKind::add, {ai, bi}, {}, "add", DType::u8, QuantParams{{0.2f}, {128}});
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  // A 16x16 average pool (PPU kernel field: 4 bits) and a padded average pool.
  Tensor big = a;
  big.name = "big", big.shape = {1, 16, 16, 8};
  TensorId gi = g.add_tensor(big);
  auto pool = g.add_op(OpKind::avg_pool2d, {gi}, {{"filter_h", int64_t{16}}, {"filter_w", int64_t{16}}}, "pool16", DType::u8,
                       a.quant);
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  auto padded = g.add_op(OpKind::avg_pool2d, {ai},
                         {{"filter_h", int64_t{3}}, {"filter_w", int64_t{3}}, {"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}},
                          {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}},
                         "padded", DType::u8, a.quant);
  ASSERT_TRUE(padded.ok()) << padded.status().to_string();
  auto maxp = g.add_op(OpKind::max_pool2d, {ai}, {{"filter_h", int64_t{2}}, {"filter_w", int64_t{2}}, {"stride_h", int64_t{2}},
                                                  {"stride_w", int64_t{2}}}, "max", DType::u8, a.quant);
  ASSERT_TRUE(maxp.ok()) << maxp.status().to_string();
  for (TensorId o : {*sum, *pool, *padded, *maxp}) {
    g.tensor(o).role = Role::output;
    g.outputs.push_back(o);
  }
  g.inputs = {ai, bi, gi};
  SessionOptions so;
  so.device = "rknpu";
  auto s = Session::create(g, so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const Plan& p = (*s)->plan();
  std::map<std::string, std::string> notes;
  for (size_t i = 0; i < p.graph.nodes().size(); ++i)
    notes[p.graph.nodes()[i].name] = p.devices[p.nodes[i].device]->name() + ": " + p.nodes[i].note;
  expect_fallback(notes["add"], "broadcasting add");
  expect_fallback(notes["pool16"], "pooling kernel 16x16 exceeds the PPU's 15");
  expect_fallback(notes["padded"], "padded average pooling");
  EXPECT_EQ(notes["max"].rfind("rknpu: npu max_pool", 0), 0u) << notes["max"];
  // The max pool runs on the PPU and matches the cpu exactly (max has no rounding).
  std::vector<std::vector<uint8_t>> inputs;
  std::mt19937 rng(3);
  for (TensorId id : g.inputs) inputs.push_back(random_codes(static_cast<size_t>(g.tensor(id).elements()), rng, 0, 255));
  SessionOptions co;
  auto c = Session::create(g, co);
  ASSERT_TRUE(c.ok());
  for (auto* sess : {s->get(), c->get()}) {
    for (size_t i = 0; i < inputs.size(); ++i) ASSERT_TRUE(sess->set_input(i, inputs[i].data(), inputs[i].size()).ok());
    ASSERT_TRUE(sess->run().ok());
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) EXPECT_EQ(*(*s)->output(o), *(*c)->output(o)) << "output " << o;
}

TEST(RknpuLimits, NoFallbackMakesTheLimitAnError) {
  ConvSpec s;
  s.h = s.w = 16, s.ic = s.oc = 2, s.k = 1, s.stride = 8;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  SessionOptions so;
  so.device = "rknpu";
  so.plan.allow_fallback = false;
  auto r = Session::create(g, so);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::unsupported);
  EXPECT_NE(r.status().message().find("device 'rknpu' cannot run it: stride 8x8"), std::string::npos) << r.status().message();
}

TEST(RknpuLimits, RegisterFieldsRejectValuesThatDoNotFit) {
  rknpu::Regcmd r;
  r.write(rknpu::regs::CNA::CONV_CON3__CONV_X_STRIDE, 8);
  ASSERT_FALSE(r.status().ok());
  EXPECT_NE(r.status().message().find("CNA.CONV_CON3.CONV_X_STRIDE = 8 does not fit its 3-bit field"), std::string::npos)
      << r.status().message();
  rknpu::Regcmd s;
  s.set_signed(rknpu::regs::CNA::CVT_CON1__CVT_OFFSET0, -40000);
  EXPECT_FALSE(s.status().ok());
  rknpu::Regcmd ok;
  ok.set_signed(rknpu::regs::CNA::PAD_CON1__PAD_VALUE, -3).emit();
  ASSERT_TRUE(ok.status().ok());
  auto rf = rknpu::decode_regcmd(ok.entries().data(), ok.entries().size());
  ASSERT_TRUE(rf.ok());
  EXPECT_EQ(rf->get_signed(rknpu::regs::CNA::PAD_CON1__PAD_VALUE), -3);
  // The entry format: CNA (block 0x200) is target 0x201.
  EXPECT_EQ(ok.entries()[0] >> 48, 0x201u);
  EXPECT_EQ(ok.entries()[0] & 0xFFFF, rknpu::regs::CNA::PAD_CON1);
}

TEST(RknpuLimits, DecoderRejectsForeignTargetsAndTheModelIncompleteTasks) {
  // A CORE register written with the CNA target.
  uint64_t bad = rknpu::encode_entry(rknpu::regs::kBlock_CNA + 1, 1, rknpu::regs::CORE::MISC_CFG);
  auto rf = rknpu::decode_regcmd(&bad, 1);
  ASSERT_FALSE(rf.ok());
  EXPECT_NE(rf.status().message().find("does not own register"), std::string::npos) << rf.status().message();
  // A task that enables the CNA without the DPU, run by the device model.
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  auto bo = t->create_bo(4096);
  ASSERT_TRUE(bo.ok());
  rknpu::Regcmd r;
  r.write(rknpu::regs::CNA::OPERATION_ENABLE__OP_EN, 1);
  r.write(rknpu::regs::PC::OPERATION_ENABLE__OP_EN, 1);
  std::memcpy(bo->cpu, r.entries().data(), r.entries().size() * 8);
  rknpu::JobDesc job;
  job.tasks.push_back({bo->dma_address, static_cast<uint32_t>(r.entries().size())});
  job.in_bos = {bo->handle};
  auto st = t->submit(0, {job});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("job 0 task 0: convolution task without the DPU"), std::string::npos)
      << st.status().message();
  // A command buffer address outside every buffer object.
  job.tasks[0].regcmd = bo->dma_address + 0x100000;
  auto st2 = t->submit(0, {job});
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.status().message().find("outside every buffer object"), std::string::npos) << st2.status().message();
}

TEST(RknpuLimits, AddressSpaceIs32Bits) {
  auto d = create_device("rknpu");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  const DeviceProperties& p = (*d)->properties();
  EXPECT_TRUE(p.is_model);
  EXPECT_FALSE(p.sub_allocation);
  EXPECT_EQ(p.alignment_bytes, 4096);
  EXPECT_LE(p.capacity_bytes, int64_t{1} << 32);
  auto big = (*d)->allocate(int64_t{5} << 30, "big");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::out_of_memory);
  // Three 1.5 GiB buffers cannot all live in 4 GiB of NPU addresses.
  auto a = (*d)->allocate(int64_t{3} << 29, "a");
  auto b = (*d)->allocate(int64_t{3} << 29, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = (*d)->allocate(int64_t{3} << 29, "c");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::out_of_memory);
  EXPECT_TRUE((*d)->free(*a).ok());
  auto c2 = (*d)->allocate(int64_t{3} << 29, "c again");
  EXPECT_TRUE(c2.ok()) << "a freed range is reused";
}

TEST(RknpuLimits, DeviceOptions) {
  auto bad = create_device("rknpu", {{"schedule", "fast"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("schedule must be 'tessera' or 'mesa'"), std::string::npos);
  auto bad2 = create_device("rknpu", {{"transport", "usb"}});
  ASSERT_FALSE(bad2.ok());
  auto mesa = create_device("rknpu", {{"schedule", "mesa"}});
  ASSERT_TRUE(mesa.ok());
  auto bad3 = create_device("rknpu", {{"rounding", "approximate"}});
  ASSERT_FALSE(bad3.ok());
  EXPECT_NE(bad3.status().message().find("rounding must be 'exact' or 'fast'"), std::string::npos);
  auto fast = create_device("rknpu", {{"rounding", "fast"}});
  ASSERT_TRUE(fast.ok());
  bool listed = false;
  for (const auto& [key, value] : (*fast)->properties().extra) listed = listed || (key == "rounding" && value.rfind("fast", 0) == 0);
  EXPECT_TRUE(listed) << "`tessera devices` shows the rounding setting";
}

}  // namespace
}  // namespace tessera::rknpu_test
