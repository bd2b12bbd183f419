// LOGISTIC and SiLU (x * logistic(x), a LOGISTIC and a MUL) on the rknpu device model as
// lookup-table tasks of the DPU's EW stage (lower.cpp lower_lut, docs/rknpu.md "Lookup
// tables"). Every one of the 256 input codes is fed through the whole path (register
// streams with the table writes, the device model's LUT) and compared with the cpu's
// TFLite-exact kernels, for several input and output quantizations; the model rejects the
// LUT settings it does not model, naming the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "ops/quant_math.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

struct Quant {
  DType dtype;
  float sx;
  int zx;
  float ss;  // logistic output
  int zs;
  float sy;  // mul output (SiLU cases)
  int zy;
  const char* activation;  // the MUL's fused activation
  std::string label() const {
    return std::string(dtype_name(dtype)) + " x " + std::to_string(sx) + "/" + std::to_string(zx) + " s " + std::to_string(ss) +
           "/" + std::to_string(zs) + " y " + std::to_string(sy) + "/" + std::to_string(zy) + " " + activation;
  }
};

// TFLite requires 1/256 with zero point -128 (int8) or 0 (uint8) for LOGISTIC's output; the
// kernels take any, so odd ones are tested too (one saturates most of the range).
const Quant kCases[] = {
    {DType::i8, 0.0186584f, -14, 1.0f / 256, -128, 0.0912f, -121, "none"},  // yolov8n's first SiLU's input scale
    {DType::i8, 0.1f, 5, 1.0f / 256, -128, 0.05f, -110, "none"},
    {DType::i8, 0.5f, 20, 1.0f / 256, -128, 0.31f, -127, "none"},          // wide input: saturating tails
    {DType::i8, 0.031f, 0, 0.004f, -100, 0.0137f, 3, "relu"},             // odd output scale, clamped MUL
    {DType::u8, 0.05f, 128, 1.0f / 256, 0, 0.03f, 30, "none"},
    {DType::u8, 0.2f, 100, 0.0039f, 7, 0.12f, 2, "relu6"},
};

// x [1, 16, 16, 16]: every code 16 times, in a different order per channel block.
std::vector<uint8_t> every_code() {
  std::vector<uint8_t> v(16 * 16 * 16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 37 + i / 256) & 0xff);
  return v;
}

TensorId input(Graph& g, const Quant& q) {
  Tensor x;
  x.name = "x";
  x.shape = {1, 16, 16, 16};
  x.dtype = q.dtype;
  x.quant = {{q.sx}, {q.zx}};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  g.inputs = {xi};
  return xi;
}

Graph logistic_graph(const Quant& q) {
  Graph g;
  TensorId xi = input(g, q);
  auto s = g.add_op(OpKind::logistic, {xi}, {}, "s", q.dtype, QuantParams{{q.ss}, {q.zs}});
  EXPECT_TRUE(s.ok());
  g.tensor(*s).role = Role::output;
  g.outputs = {*s};
  return g;
}

// x -> LOGISTIC -> s; MUL(x, s) (or MUL(s, x)) -> y.
Graph silu_graph(const Quant& q, bool x_first) {
  Graph g;
  TensorId xi = input(g, q);
  auto s = g.add_op(OpKind::logistic, {xi}, {}, "s", q.dtype, QuantParams{{q.ss}, {q.zs}});
  EXPECT_TRUE(s.ok());
  std::vector<TensorId> ins = x_first ? std::vector<TensorId>{xi, *s} : std::vector<TensorId>{*s, xi};
  auto y = g.add_op(OpKind::mul, ins, {{"activation", std::string(q.activation)}}, "y", q.dtype, QuantParams{{q.sy}, {q.zy}});
  EXPECT_TRUE(y.ok());
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  return g;
}

// The modelled time of each node on rknpu (-1: not on rknpu).
std::vector<double> node_times(const Graph& g, const std::vector<uint8_t>& in) {
  SessionOptions so;
  so.device = "rknpu";
  auto s = Session::create(g, so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  EXPECT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<double> t;
  for (const auto& item : (*s)->profile().nodes)
    if (item.device == "rknpu") t.push_back(item.modelled_seconds);
  return t;
}

TEST(RknpuLut, LogisticEqualsTfliteOnEveryInputCode) {
  const std::vector<uint8_t> in = every_code();
  for (const Quant& q : kCases) {
    SCOPED_TRACE(q.label());
    Graph g = logistic_graph(q);
    Compare r = run_and_compare(g, in);
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.n, 4096);
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    // The documented bound is one step; the table holds TFLite's output for each input code
    // (LO: one entry per code, no interpolation), so every code is exact.
    EXPECT_LE(r.max_diff, 1);
    EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
    auto op = lower_node(g, g.nodes()[0]);
    ASSERT_TRUE(op.ok()) << op.status().to_string();
    EXPECT_EQ(op->type, NpuOpType::lut);
    EXPECT_EQ(op->lut_exact_codes, 256);
    EXPECT_EQ(op->lut_max_error, 0);
  }
}

// x -> OP -> y with y quantized (so, zo): the table task equals the cpu kernel on every code.
void expect_exact_table(OpKind op, const std::string& name, float so, int32_t zo, const Quant& q) {
  const std::vector<uint8_t> in = every_code();
  Graph g;
  TensorId xi = input(g, q);
  auto y = g.add_op(op, {xi}, {}, "y", q.dtype, QuantParams{{so}, {zo}});
  ASSERT_TRUE(y.ok());
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  Compare r = run_and_compare(g, in);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.n, 4096);
  EXPECT_TRUE(r.all_on_npu) << r.fallback;
  EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
  auto lowered = lower_node(g, g.nodes()[0]);
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  EXPECT_EQ(lowered->type, NpuOpType::lut);
  EXPECT_EQ(lowered->lut_function, name);
  EXPECT_EQ(lowered->lut_exact_codes, 256);
  EXPECT_EQ(lowered->lut_max_error, 0);
}

// TANH the same way: TFLite's table of tanh, held entry for entry.
TEST(RknpuLut, TanhEqualsTfliteOnEveryInputCode) {
  for (const Quant& q : kCases) {
    SCOPED_TRACE(q.label());
    // TFLite's int8 TANH output: scale 1/128, zero point 0; u8 with zero point 128 and an odd scale.
    expect_exact_table(OpKind::tanh, "tanh", q.dtype == DType::i8 ? 1.0f / 128 : q.sy, q.dtype == DType::i8 ? 0 : 128, q);
  }
}

// HARD_SWISH (MobileNetV3's activation): TFLite's int16 fixed-point kernel, held as the
// table of its output per input code.
TEST(RknpuLut, HardSwishEqualsTheCpuKernelOnEveryInputCode) {
  for (const Quant& q : kCases) {
    SCOPED_TRACE(q.label());
    expect_exact_table(OpKind::hard_swish, "hard_swish", q.sy, q.zy, q);
  }
}

TEST(RknpuLut, SiluIsOneTableTaskAndEqualsTheCpuPair) {
  const std::vector<uint8_t> in = every_code();
  for (const Quant& q : kCases)
    for (bool x_first : {true, false}) {
      SCOPED_TRACE(q.label() + (x_first ? " mul(x, s)" : " mul(s, x)"));
      Graph g = silu_graph(q, x_first);
      ASSERT_EQ(silu_logistic(g, g.nodes()[1]), 0);
      Compare r = run_and_compare(g, in);
      ASSERT_EQ(r.error, "");
      ASSERT_EQ(r.n, 4096);
      EXPECT_TRUE(r.all_on_npu) << r.fallback;
      EXPECT_LE(r.max_diff, 1);
      EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
      // One task: the LOGISTIC has none of its own (its only reader computes it).
      std::vector<double> t = node_times(g, in);
      ASSERT_EQ(t.size(), 2u);
      EXPECT_EQ(t[0], 0.0) << "the LOGISTIC ran a task";
      EXPECT_GT(t[1], 0.0);
    }
}

TEST(RknpuLut, OtherMulsAndReadLogisticsStayOnTheCpuOrRun) {
  const Quant& q = kCases[1];
  // x * x is not SiLU: an element-wise mul (the EW multiplier, lower_binary.cpp), no table.
  Graph g;
  TensorId xi = input(g, q);
  auto y = g.add_op(OpKind::mul, {xi, xi}, {}, "y", q.dtype, QuantParams{{q.sy}, {q.zy}});
  ASSERT_TRUE(y.ok());
  g.outputs = {*y};
  auto op = lower_node(g, g.nodes()[0]);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  EXPECT_EQ(op->eltwise, "mul");
  EXPECT_TRUE(op->lut_lo.empty());
  // A LOGISTIC whose output is also a graph output keeps its own task.
  Graph h = silu_graph(q, true);
  h.outputs.push_back(h.nodes()[0].outputs[0]);
  std::vector<double> t = node_times(h, every_code());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_GT(t[0], 0.0);
}

TEST(RknpuLut, TheModelNamesTheLutFieldsItDoesNotModel) {
  const Quant& c = kCases[0];
  Graph g = logistic_graph(c);
  auto op = lower_node(g, g.nodes()[0]);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  auto t = plan_tiling(*op, SchedulePolicy::tessera);
  ASSERT_TRUE(t.ok());
  auto tr = make_model_transport(kAddressSpace);
  auto in = tr->create_bo(16 * 16 * 16);
  auto out = tr->create_bo(16 * 16 * 16);
  auto cmd = tr->create_bo(8192);
  ASSERT_TRUE(in.ok() && out.ok() && cmd.ok());
  for (int i = 0; i < 4096; ++i) in->cpu[i] = static_cast<uint8_t>(i);
  OpAddresses a{in->dma_address, out->dma_address, 0, 0, 0};
  auto e = emit_task(*op, *t, t->tiles[0], a, false);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_TRUE(append_chain(*e, 0, 0).ok());
  auto rf = decode_regcmd(e->data(), e->size());
  ASSERT_TRUE(rf.ok()) << rf.status().to_string();
  EXPECT_EQ(rf->lut[kLutTableLe].size(), size_t(kLutLeEntries));
  EXPECT_EQ(rf->lut[kLutTableLo].size(), size_t(kLutLoEntries));
  EXPECT_EQ(rf->lut_writes, kLutLeEntries + kLutLoEntries);
  auto run = [&](const std::vector<uint64_t>& entries) { return submit_stream(*tr, *cmd, entries); };
  ASSERT_TRUE(run(*e).ok()) << run(*e).to_string();
  // The output: TFLite's logistic of each stored value (i8: the code itself).
  for (int i = 0; i < 256; ++i) {
    const int32_t want = q::lut_unary_code(q::logistic_f, c.sx, c.zx, c.ss, c.zs, DType::i8, int8_t(i));
    ASSERT_EQ(int8_t(out->cpu[i]), want) << i;
  }
  auto with = [&](const regs::Field& field, uint32_t value) { return with_field(*e, field, value); };
  for (auto [field, value, name] : {std::tuple{regs::DPU::LUT_CFG__LUT_ROAD_SEL, 0u, "LUT_ROAD_SEL"},
                                    std::tuple{regs::DPU::LUT_CFG__LUT_EXPAND_EN, 1u, "LUT_EXPAND_EN"},
                                    std::tuple{regs::DPU::LUT_CFG__LUT_LO_LE_MUX, 2u, "LUT_LO_LE_MUX"},
                                    std::tuple{regs::DPU::LUT_CFG__LUT_CAL_SEL, 1u, "LUT_CAL_SEL"},
                                    std::tuple{regs::DPU::LUT_INFO__LUT_LO_INDEX_SELECT, 40u, "LUT_LO_INDEX_SELECT"},
                                    std::tuple{regs::DPU::LUT_LE_END__LUT_LE_END, 7u, "LUT_LE_END"},
                                    std::tuple{regs::DPU::EW_CFG__EW_RELU_BYPASS, 0u, "ReLU"},
                                    std::tuple{regs::DPU::LUT_ACCESS_CFG__LUT_ACCESS_TYPE, 0u, "LUT_ACCESS_TYPE"}}) {
    Status st = run(with(field, value));
    EXPECT_FALSE(st.ok()) << name;
    EXPECT_NE(st.to_string().find(name), std::string::npos) << st.to_string();
  }
  // A table entry the task never wrote: drop the last LUT_ACCESS_DATA.
  std::vector<uint64_t> short_table = *e;
  for (size_t i = short_table.size(); i-- > 0;)
    if (decode_entry(short_table[i]).reg == regs::DPU::LUT_ACCESS_DATA__LUT_ACCESS_DATA.reg) {
      short_table.erase(short_table.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  Status st = run(short_table);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("never wrote"), std::string::npos) << st.to_string();
  // One entry more than the LO table holds.
  std::vector<uint64_t> long_table = *e;
  for (size_t i = long_table.size(); i-- > 0;)
    if (decode_entry(long_table[i]).reg == regs::DPU::LUT_ACCESS_DATA__LUT_ACCESS_DATA.reg) {
      long_table.insert(long_table.begin() + static_cast<std::ptrdiff_t>(i), long_table[i]);
      break;
    }
  st = run(long_table);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("past the end of the LO table"), std::string::npos) << st.to_string();
}

// The lookup itself (hw.h), which the model runs: interpolation between entries, the hit
// and priority rules, and the slopes beyond the ends.
TEST(RknpuLut, LookupInterpolatesAndExtrapolatesAsNvdla) {
  std::vector<int16_t> le(kLutLeEntries), lo(kLutLoEntries);
  for (int i = 0; i < kLutLeEntries; ++i) le[i] = static_cast<int16_t>(1000 + 8 * i);
  for (int i = 0; i < kLutLoEntries; ++i) lo[i] = static_cast<int16_t>(-i);
  LutTable tle{le.data(), kLutLeEntries, -256, 3, 0, 0, 3, 1};  // [-256, 256], oflow slope 3/2
  LutTable tlo{lo.data(), kLutLoEntries, 0, 0, 0, 0, 0, 0};     // [0, 256]
  EXPECT_EQ(tle.end(), 256);
  EXPECT_EQ(tle.at(-256), 1000);
  EXPECT_EQ(tle.at(-252), 1004);  // halfway between 1000 and 1008
  EXPECT_EQ(tle.at(-255), 1001);
  EXPECT_EQ(tle.at(-300), 1000);  // zero underflow slope
  EXPECT_EQ(tle.at(260), 1512 + 6);  // 1000 + 8 * 64, plus 4 * 3 / 2
  // Both hit in [0, 256]: the hybrid priority picks; below 0 only LE hits.
  EXPECT_EQ(lut_lookup(tle, tlo, true, true, true, 5), -5);
  EXPECT_EQ(lut_lookup(tle, tlo, false, true, true, 5), tle.at(5));
  EXPECT_EQ(lut_lookup(tle, tlo, true, true, true, -5), tle.at(-5));
  // Both over: the overflow priority.
  EXPECT_EQ(lut_lookup(tle, tlo, true, true, true, 300), -256);
  EXPECT_EQ(lut_lookup(tle, tlo, true, true, false, 300), tle.at(300));
}

}  // namespace
}  // namespace tessera::rknpu_test

namespace tessera::rknpu_test {
namespace {

// conv -> SiLU, and conv -> SiLU -> ADD with the conv's input (YOLOv8's bottleneck): the
// table runs in the conv's DPU pass (program.cpp, lower.cpp fuse_lut), at the MUL's turn,
// the conv's output is never written, and the result equals the unfused tasks'. The pass
// reads the conv's input at the MUL's turn, so the memory plan keeps that input alive up to
// the MUL (Device::extra_reads) even where nothing else reads it after the conv.
std::vector<uint8_t> rknpu_output(const Graph& g, const std::vector<uint8_t>& in) {
  SessionOptions so;
  so.device = "rknpu";
  auto s = Session::create(g, so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  EXPECT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto o = (*s)->output(0);
  return o.ok() ? *o : std::vector<uint8_t>{};
}

Graph conv_silu(const ConvSpec& s, std::vector<uint8_t>& input, float sy, int zy, bool residual) {
  Graph g = build_conv(s, input);
  const TensorId x = g.outputs[0];
  g.tensor(x).role = Role::activation;
  const DType t = s.dtype;
  auto sig = g.add_op(OpKind::logistic, {x}, {}, "sig", t, QuantParams{{1.0f / 256}, {t == DType::u8 ? 0 : -128}});
  EXPECT_TRUE(sig.ok());
  auto y = g.add_op(OpKind::mul, {x, *sig}, {}, "silu", t, QuantParams{{sy}, {zy}});
  EXPECT_TRUE(y.ok());
  TensorId out = *y;
  if (residual) {
    auto r = g.add_op(OpKind::add, {*y, g.inputs[0]}, {}, "residual", t, QuantParams{{sy * 2}, {zy / 2}});
    EXPECT_TRUE(r.ok());
    out = *r;
  }
  g.tensor(out).role = Role::output;
  g.outputs = {out};
  return g;
}

TEST(RknpuLut, ConvThenSiluIsOneDpuPassAndEqualsTheUnfusedTasks) {
  struct C {
    ConvSpec spec;
    float sy;
    int zy;
  };
  std::vector<C> cases;
  for (DType t : {DType::i8, DType::u8})
    for (bool per_channel : {false, true}) {
      if (per_channel && t == DType::u8) continue;
      ConvSpec s;
      s.h = 9, s.w = 11, s.ic = 24, s.oc = 24, s.k = 3, s.dtype = t, s.per_channel = per_channel, s.seed = 17 + cases.size();
      cases.push_back({s, 0.04f, t == DType::u8 ? 10 : -118});
      s.k = 1, s.seed += 100;
      cases.push_back({s, 0.013f, t == DType::u8 ? 30 : -100});
    }
  {
    ConvSpec s;  // row-tiled (several tasks, each programming the table)
    s.h = 160, s.w = 160, s.ic = 16, s.oc = 16, s.k = 3, s.dtype = DType::i8, s.seed = 7;
    cases.push_back({s, 0.03f, -120});
    s.h = 20, s.w = 20, s.ic = 256, s.oc = 256, s.seed = 9;  // streamed weights (output-channel chunks)
    cases.push_back({s, 0.03f, -120});
  }
  for (const C& c : cases)
    for (bool residual : {true, false}) {
      SCOPED_TRACE(c.spec.label() + (residual ? " + residual" : ""));
      std::vector<uint8_t> in;
      Graph g = conv_silu(c.spec, in, c.sy, c.zy, residual);
      Compare r = run_and_compare(g, in);
      ASSERT_EQ(r.error, "");
      EXPECT_TRUE(r.all_on_npu) << r.fallback;
      // Equal to the unfused tasks (the conv's output also a graph output: written, then the
      // table task), which the tests above hold to TFLite's table on every input code.
      // Against the cpu the conv's own near-ties remain (docs/rknpu.md "Requantization"): a
      // step of the conv's output is up to slope x conv scale / SiLU scale steps of the SiLU's.
      Graph unfused = g;
      unfused.outputs.push_back(unfused.nodes()[0].outputs[0]);
      EXPECT_EQ(rknpu_output(g, in), rknpu_output(unfused, in));
      std::printf("[lut] %s%s: %lld of %lld equal to the cpu, largest difference %d\n", c.spec.label().c_str(),
                  residual ? " + residual" : "", static_cast<long long>(r.exact), static_cast<long long>(r.n), r.max_diff);
      std::vector<double> t = node_times(g, in);
      ASSERT_EQ(t.size(), residual ? 4u : 3u);
      EXPECT_GT(t[0], 0.0);
      EXPECT_EQ(t[1], 0.0);  // the LOGISTIC: inside the table
      EXPECT_EQ(t[2], 0.0) << "the SiLU ran a task of its own";
      // The plan keeps the conv's input alive up to the MUL.
      SessionOptions so;
      so.device = "rknpu";
      auto s = Session::create(g, so);
      ASSERT_TRUE(s.ok());
      const Plan& p = (*s)->plan();
      int conv = -1, mul = -1;
      for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
        if (p.graph.nodes()[i].op == OpKind::conv2d) conv = static_cast<int>(i);
        if (p.graph.nodes()[i].op == OpKind::mul) mul = static_cast<int>(i);
      }
      ASSERT_TRUE(conv >= 0 && mul > conv);
      EXPECT_GE(p.tensors[p.graph.nodes()[conv].inputs[0]].last_use, mul);
    }
}

}  // namespace
}  // namespace tessera::rknpu_test
