// Element-wise SUB and MUL on the rknpu device model, and ADD / SUB / MUL with a constant
// operand (lower_binary.cpp, docs/rknpu.md "SUB, MUL and constant operands"). Every pair of
// input codes goes through the whole path (register streams, the device model) once and is
// compared with the cpu's TFLite-exact kernels: the pairs that differ must be exactly the
// ones the compiler reported, none by more than one step. A one-element constant is a
// lookup table, exact on every code. The model names the EW multiplier settings it does not
// model.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/flat.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "ops/quant_math.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

struct BinCase {
  OpKind op;
  DType dtype;
  float sa, sb, so;
  int za, zb, zo;
  const char* activation;
  std::string label() const {
    return std::string(op_name(op)) + " " + dtype_name(dtype) + " " + std::to_string(sa) + "/" + std::to_string(za) + ", " +
           std::to_string(sb) + "/" + std::to_string(zb) + " -> " + std::to_string(so) + "/" + std::to_string(zo) + " " + activation;
  }
};

// Plausible quantizations, and YOLOv8n's detection head's (int8: the box distances' scale
// around 0.13 with zero point -128 into a sum/difference of scale about 0.25; MUL by the
// strides 8 / 16 / 32 stored at scale 0.125).
const BinCase kCases[] = {
    {OpKind::sub, DType::i8, 0.0173f, 0.0291f, 0.0411f, 3, -7, 10, "none"},
    {OpKind::sub, DType::u8, 0.05f, 0.0213f, 0.06f, 128, 121, 130, "relu"},
    {OpKind::sub, DType::i8, 0.1f, 0.1f, 0.2f, 0, 0, -128, "relu6"},
    {OpKind::sub, DType::i8, 0.1307f, 0.1307f, 0.2518f, -128, -128, -3, "none"},
    {OpKind::mul, DType::i8, 0.0173f, 0.0291f, 0.0411f, 3, -7, 10, "none"},
    {OpKind::mul, DType::u8, 0.05f, 0.0213f, 0.06f, 128, 121, 130, "relu"},
    {OpKind::mul, DType::i8, 0.1f, 0.1f, 0.2f, 0, 0, -128, "relu6"},
    {OpKind::mul, DType::u8, 0.2f, 0.004f, 0.0007f, 100, 7, 2, "none"},       // multiplier above 1
    {OpKind::mul, DType::i8, 0.2518f, 0.125f, 2.5f, -3, -128, -128, "none"},  // yolov8n's box x stride
};

// The rows of an all-pairs input: operand a = row code, b = column code.
std::vector<uint8_t> pair_codes(bool column) {
  std::vector<uint8_t> v(65536);
  for (int i = 0; i < 256; ++i)
    for (int k = 0; k < 256; ++k) v[i * 256 + k] = static_cast<uint8_t>(column ? k : i);
  return v;
}

Tensor map(const char* name, DType t, float s, int z) {
  Tensor a;
  a.name = name;
  a.shape = {1, 256, 256, 1};
  a.dtype = t;
  a.role = Role::input;
  a.quant = {{s}, {z}};
  return a;
}

struct Runs {
  std::vector<std::vector<uint8_t>> outs;  // cpu, rknpu
  std::string note;                        // the rknpu plan's note of the node
  std::string device;                      // its device
};

Runs run_both(const Graph& g, const std::vector<std::vector<uint8_t>>& inputs) {
  Runs r;
  for (const char* dev : {"cpu", "rknpu"}) {
    SessionOptions so;
    so.device = dev;
    auto s = Session::create(g, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return r;
    if (std::string(dev) == "rknpu") {
      const Plan& p = (*s)->plan();
      for (size_t i = 0; i < p.graph.nodes().size(); ++i)
        if (p.graph.nodes()[i].op != OpKind::transfer) {
          r.note = p.nodes[i].note;
          r.device = p.devices[p.nodes[i].device]->name();
        }
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_TRUE((*s)->set_input(static_cast<int>(i), inputs[i].data(), static_cast<int64_t>(inputs[i].size())).ok());
    Status st = (*s)->run();
    EXPECT_TRUE(st.ok()) << st.to_string();
    auto o = (*s)->output(0);
    EXPECT_TRUE(o.ok());
    if (!o.ok()) return r;
    r.outs.push_back(*o);
  }
  return r;
}

// Compares the cpu's and the rknpu's outputs: the differing codes must be the pairs the
// compiler did not report as exact, each within one step.
void expect_as_reported(const Runs& r, DType t, const std::string& what) {
  ASSERT_EQ(r.outs.size(), 2u);
  ASSERT_EQ(r.device, "rknpu") << r.note;
  EXPECT_EQ(r.note.rfind("npu " + what, 0), 0u) << r.note;
  const size_t at = r.note.find(" on ");
  ASSERT_NE(at, std::string::npos) << r.note;
  const int64_t reported = std::stoll(r.note.substr(at + 4));
  int64_t differ = 0;
  int max_diff = 0;
  const bool u8 = t == DType::u8;
  for (size_t i = 0; i < r.outs[0].size(); ++i) {
    const int x = u8 ? r.outs[0][i] : int8_t(r.outs[0][i]), z = u8 ? r.outs[1][i] : int8_t(r.outs[1][i]);
    differ += x != z;
    max_diff = std::max(max_diff, std::abs(x - z));
  }
  std::printf("[rknpu %s] %lld of %zu differ from TFLite (compiler reported %lld of 65536 pairs exact)\n", what.c_str(),
              static_cast<long long>(differ), r.outs[0].size(), static_cast<long long>(reported));
  EXPECT_EQ(differ, int64_t(r.outs[0].size()) - reported);
  EXPECT_LE(max_diff, 1);
}

TEST(RknpuBinary, SubAndMulOfTwoMapsEveryPairAsReported) {
  for (const BinCase& c : kCases) {
    SCOPED_TRACE(c.label());
    Graph g;
    TensorId ai = g.add_tensor(map("a", c.dtype, c.sa, c.za)), bi = g.add_tensor(map("b", c.dtype, c.sb, c.zb));
    auto y = g.add_op(c.op, {ai, bi}, {{"activation", std::string(c.activation)}}, "y", c.dtype, QuantParams{{c.so}, {c.zo}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.inputs = {ai, bi};
    g.outputs = {*y};
    expect_as_reported(run_both(g, {pair_codes(false), pair_codes(true)}), c.dtype, op_name(c.op));
  }
}

// One operand a constant [256, 256, 1] (the activation's shape less its leading 1) holding
// the column codes: every pair again, with the constant first or second.
TEST(RknpuBinary, ConstantOperandEveryPairAsReported) {
  for (const BinCase& base : kCases)
    for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul}) {
      if (op != base.op) continue;
      for (int k : {0, 1}) {
        BinCase c = base;
        SCOPED_TRACE(c.label() + (k == 0 ? " (constant, map)" : " (map, constant)"));
        Graph g;
        TensorId x = g.add_tensor(map("x", c.dtype, k == 0 ? c.sb : c.sa, k == 0 ? c.zb : c.za));
        TensorId w = add_const(g, "c", {256, 256, 1}, c.dtype, QuantParams{{k == 0 ? c.sa : c.sb}, {k == 0 ? c.za : c.zb}},
                               pair_codes(true));
        auto y = g.add_op(op, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w},
                          {{"activation", std::string(c.activation)}}, "y", c.dtype, QuantParams{{c.so}, {c.zo}});
        ASSERT_TRUE(y.ok()) << y.status().to_string();
        g.tensor(*y).role = Role::output;
        g.inputs = {x};
        g.outputs = {*y};
        expect_as_reported(run_both(g, {pair_codes(false)}), c.dtype, op_name(op));
      }
    }
}

TEST(RknpuBinary, ConstantAddEveryPairAsReported) {
  const BinCase c{OpKind::add, DType::i8, 0.2518f, 0.1307f, 0.3f, -3, 5, -20, "none"};
  for (int k : {0, 1}) {
    Graph g;
    TensorId x = g.add_tensor(map("x", c.dtype, c.sa, c.za));
    TensorId w = add_const(g, "c", {1, 1, 256, 256, 1}, c.dtype, QuantParams{{c.sb}, {c.zb}}, pair_codes(true));
    auto y = g.add_op(OpKind::add, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w}, {}, "y", c.dtype,
                      QuantParams{{c.so}, {c.zo}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    // A constant with an extra leading 1 makes the output 5-D: a flat tensor (flat.h), and
    // the map joined to it by the add too, so it runs as a flat task; as does the same
    // constant [1, 256, 256, 1] on the feature map.
    auto op = lower_node(g, g.nodes()[0]);
    EXPECT_TRUE(op.ok()) << op.status().to_string();
    EXPECT_TRUE(is_flat(g, x));
    Graph h;
    x = h.add_tensor(map("x", c.dtype, c.sa, c.za));
    w = add_const(h, "c", {1, 256, 256, 1}, c.dtype, QuantParams{{c.sb}, {c.zb}}, pair_codes(true));
    y = h.add_op(OpKind::add, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w}, {}, "y", c.dtype,
                 QuantParams{{c.so}, {c.zo}});
    ASSERT_TRUE(y.ok());
    h.tensor(*y).role = Role::output;
    h.inputs = {x};
    h.outputs = {*y};
    expect_as_reported(run_both(h, {pair_codes(false)}), c.dtype, "add");
  }
}

// An all-pairs graph for `op` with these operand quantizations; operand k (0 or 1) a
// constant [256, 256, 1] holding the column codes when `constant`.
Graph pair_graph(OpKind op, const std::string& act, DType t, const QuantParams& qa, const QuantParams& qb, const QuantParams& qy,
                 int constant_at) {
  Graph g;
  std::vector<TensorId> in;
  for (int k = 0; k < 2; ++k) {
    const QuantParams& q = k == 0 ? qa : qb;
    if (k == constant_at) {
      in.push_back(add_const(g, "c", {256, 256, 1}, t, q, pair_codes(true)));
    } else {
      Tensor x = map(k == 0 ? "a" : "b", t, q.scale[0], static_cast<int>(q.zero_point_at(0)));
      in.push_back(g.add_tensor(x));
      g.inputs.push_back(in.back());
    }
  }
  auto y = g.add_op(op, in, {{"activation", act}}, "y", t, qy);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};
  return g;
}

// YOLOv8n's detection head (box decoding on [1, 2, 8400] / [1, 4, 8400] tensors): every
// ADD / SUB / MUL of it, with its own quantizations and its constant in its own position,
// over every pair of input codes (a one-element constant: its table over every code).
TEST(RknpuBinary, Yolov8nHeadQuantizationsEveryPairAsReported) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  auto m = tflite::load_tflite_file(model);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  int checked = 0;
  for (const Node& n : m->nodes()) {
    if (n.op != OpKind::add && n.op != OpKind::sub && n.op != OpKind::mul) continue;
    const Tensor& y = m->tensor(n.outputs[0]);
    const Tensor& a = m->tensor(n.inputs[0]);
    const Tensor& b = m->tensor(n.inputs[1]);
    if (y.shape.size() == 4 && !a.data && !b.data) continue;  // the backbone's: covered by the model tests
    std::printf("[rknpu yolov8n head] %s %s%s %.5g/%lld, %s%s %.5g/%lld -> %.5g/%lld\n", op_name(n.op), shape_str(a.shape).c_str(),
                a.data ? " const" : "", a.quant.scale[0], static_cast<long long>(a.quant.zero_point_at(0)), shape_str(b.shape).c_str(),
                b.data ? " const" : "", b.quant.scale[0], static_cast<long long>(b.quant.zero_point_at(0)), y.quant.scale[0],
                static_cast<long long>(y.quant.zero_point_at(0)));
    SCOPED_TRACE(n.label() + " " + shape_str(a.shape) + (a.data ? " const" : "") + ", " + shape_str(b.shape) + (b.data ? " const" : ""));
    const int k = a.data ? 0 : b.data ? 1 : -1;
    if (k >= 0 && m->tensor(n.inputs[k]).elements() == 1) {
      // Scalar constant: the table, on every code of the activation.
      Graph g;
      Tensor xt = map("x", y.dtype, 0, 0);
      xt.shape = {1, 16, 16, 1};
      xt.quant = m->tensor(n.inputs[1 - k]).quant;
      TensorId x = g.add_tensor(xt);
      const Tensor& c = m->tensor(n.inputs[k]);
      TensorId w = add_const(g, "c", {1}, c.dtype, c.quant, {c.data->data[0]});
      auto o = g.add_op(n.op, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w},
                        {{"activation", n.get(attr::activation)}}, "y", y.dtype, y.quant);
      ASSERT_TRUE(o.ok());
      g.tensor(*o).role = Role::output;
      g.inputs = {x};
      g.outputs = {*o};
      std::vector<uint8_t> in(256);
      for (int i = 0; i < 256; ++i) in[i] = static_cast<uint8_t>(i);
      Runs r = run_both(g, {in});
      ASSERT_EQ(r.outs.size(), 2u);
      EXPECT_EQ(r.device, "rknpu") << r.note;
      EXPECT_EQ(r.outs[0], r.outs[1]);
    } else {
      Graph g = pair_graph(n.op, n.get(attr::activation), y.dtype, a.quant, b.quant, y.quant, k);
      std::vector<std::vector<uint8_t>> ins;
      for (int i = 0; i < 2; ++i)
        if (i != k) ins.push_back(pair_codes(k < 0 && i == 1));  // a constant holds the columns
      expect_as_reported(run_both(g, ins), y.dtype, op_name(n.op));
    }
    ++checked;
  }
  std::printf("[rknpu yolov8n head] %d element-wise nodes checked\n", checked);
  EXPECT_GE(checked, 6);
}

// A constant spread over several channel surfaces (40 channels: three 16-channel blocks, the
// last one padded), seeded random codes, either side: within one step of the cpu.
TEST(RknpuBinary, ConstantOverSeveralSurfacesWithinOneStep) {
  std::mt19937 rng(5);
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul})
    for (DType t : {DType::i8, DType::u8})
      for (int k : {0, 1}) {
        SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(t) + " constant at " + std::to_string(k));
        const bool u8 = t == DType::u8;
        Graph g;
        Tensor xt = map("x", t, 0.031f, u8 ? 131 : 3);
        xt.shape = {1, 5, 7, 40};
        TensorId x = g.add_tensor(xt);
        TensorId w = add_const(g, "c", {5, 7, 40}, t, QuantParams{{0.017f}, {u8 ? 120 : -9}}, random_codes(5 * 7 * 40, rng, 0, 255));
        auto y = g.add_op(op, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w}, {}, "y", t,
                          QuantParams{{op == OpKind::mul ? 0.009f : 0.05f}, {u8 ? 128 : 0}});
        ASSERT_TRUE(y.ok()) << y.status().to_string();
        g.tensor(*y).role = Role::output;
        g.inputs = {x};
        g.outputs = {*y};
        Compare c = run_and_compare(g, random_codes(5 * 7 * 40, rng, 0, 255));
        ASSERT_TRUE(c.error.empty()) << c.error;
        EXPECT_TRUE(c.all_on_npu) << c.fallback;
        EXPECT_LE(c.max_diff, 1);
        EXPECT_GE(c.exact * 100, c.n * 99);
      }
}

// A one-element constant: one lookup table, TFLite's output on every code.
TEST(RknpuBinary, ScalarConstantIsOneExactTable) {
  std::mt19937 rng(7);
  int tables = 0;
  for (const BinCase& c : kCases)
    for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul})
      for (int k : {0, 1})
        for (const Shape& s : {Shape{1}, Shape{1, 1, 1}}) {
          SCOPED_TRACE(c.label() + " " + op_name(op) + " constant " + shape_str(s) + " at " + std::to_string(k));
          Graph g;
          Tensor xt = map("x", c.dtype, c.sa, c.za);
          xt.shape = {1, 16, 16, 16};
          TensorId x = g.add_tensor(xt);
          const std::vector<uint8_t> code = random_codes(1, rng, 1, 255);
          TensorId w = add_const(g, "c", s, c.dtype, QuantParams{{c.sb}, {c.zb}}, code);
          auto y = g.add_op(op, k == 0 ? std::vector<TensorId>{w, x} : std::vector<TensorId>{x, w},
                            {{"activation", std::string(c.activation)}}, "y", c.dtype, QuantParams{{c.so}, {c.zo}});
          ASSERT_TRUE(y.ok()) << y.status().to_string();
          g.tensor(*y).role = Role::output;
          g.inputs = {x};
          g.outputs = {*y};
          std::vector<uint8_t> in(16 * 16 * 16);
          for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>((i * 37 + i / 256) & 0xff);
          Runs r = run_both(g, {in});
          ASSERT_EQ(r.outs.size(), 2u);
          ASSERT_EQ(r.device, "rknpu") << r.note;
          EXPECT_NE(r.note.find("npu lut " + std::string(op_name(op)) + " with a constant scalar"), std::string::npos) << r.note;
          EXPECT_EQ(r.outs[0], r.outs[1]);
          ++tables;
        }
  EXPECT_EQ(tables, int(std::size(kCases)) * 12);
}

// What stays on the cpu says why.
TEST(RknpuBinary, RefusalsNameTheReason) {
  Graph g;
  TensorId x = g.add_tensor(map("x", DType::i8, 0.1f, 0));
  Tensor b = map("b", DType::i8, 0.1f, 0);
  b.shape = {1, 256, 1, 1};
  TensorId bi = g.add_tensor(b);
  auto y = g.add_op(OpKind::mul, {x, bi}, {}, "y", DType::i8, QuantParams{{0.1f}, {0}});
  ASSERT_TRUE(y.ok());
  auto op = lower_node(g, g.nodes()[0]);
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("broadcasting mul"), std::string::npos) << op.status().message();
  TensorId w = add_const(g, "w", {256, 1}, DType::i8, QuantParams{{0.1f}, {0}}, std::vector<uint8_t>(256, 3));
  auto z = g.add_op(OpKind::sub, {x, w}, {}, "z", DType::i8, QuantParams{{0.1f}, {0}});
  ASSERT_TRUE(z.ok());
  op = lower_node(g, g.nodes()[1]);
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("same element count only"), std::string::npos) << op.status().message();
  auto v = g.add_op(OpKind::sub, {x, x}, {{"activation", std::string("relu_n1_to_1")}}, "v", DType::i8, QuantParams{{0.1f}, {0}});
  ASSERT_TRUE(v.ok());
  op = lower_node(g, g.nodes()[2]);
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("relu_n1_to_1"), std::string::npos) << op.status().message();
}

// The EW multiplier with the ERDMA operand through the converter runs; the model names every
// other EW multiplier setting instead of guessing.
TEST(RknpuBinary, TheModelNamesTheEwMultiplierFieldsItDoesNotModel) {
  const BinCase& c = kCases[4];
  Graph g;
  Tensor at = map("a", c.dtype, c.sa, c.za), bt = map("b", c.dtype, c.sb, c.zb);
  at.shape = bt.shape = {1, 16, 16, 16};
  TensorId ai = g.add_tensor(at), bi = g.add_tensor(bt);
  auto y = g.add_op(OpKind::mul, {ai, bi}, {}, "y", c.dtype, QuantParams{{c.so}, {c.zo}});
  ASSERT_TRUE(y.ok());
  auto op = lower_node(g, g.nodes()[0]);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  EXPECT_TRUE(op->ew_mul);
  auto t = plan_tiling(*op, SchedulePolicy::tessera);
  ASSERT_TRUE(t.ok());
  auto tr = make_model_transport(kAddressSpace);
  auto in = tr->create_bo(4096), ew = tr->create_bo(4096), out = tr->create_bo(4096), cmd = tr->create_bo(8192);
  ASSERT_TRUE(in.ok() && ew.ok() && out.ok() && cmd.ok());
  std::mt19937 rng(11);
  const std::vector<uint8_t> va = random_codes(4096, rng, 0, 255), vb = random_codes(4096, rng, 0, 255);
  std::memcpy(in->cpu, va.data(), 4096);
  std::memcpy(ew->cpu, vb.data(), 4096);
  OpAddresses a{in->dma_address, out->dma_address, ew->dma_address, 0, 0};
  auto e = emit_task(*op, *t, t->tiles[0], a, false);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_TRUE(append_chain(*e, 0, 0).ok());
  auto run = [&](const std::vector<uint64_t>& entries) { return submit_stream(*tr, *cmd, entries); };
  ASSERT_TRUE(run(*e).ok()) << run(*e).to_string();
  // i8, 16 channels: NC1HWC2 is the row-major bytes; every value within a step of TFLite.
  const q::MulRescale m = q::mul_rescale("none", c.sa, c.za, c.sb, c.zb, c.so, c.zo, DType::i8);
  for (int i = 0; i < 4096; ++i) ASSERT_LE(std::abs(int8_t(out->cpu[i]) - m.code(int8_t(va[i]), int8_t(vb[i]))), 1) << i;
  auto with = [&](const regs::Field& field, uint32_t value) { return with_field(*e, field, value); };
  for (auto [field, value, name] : {std::tuple{regs::DPU::EW_CFG__EW_OP_CVT_BYPASS, 1u, "EW_OP_CVT_BYPASS"},
                                    std::tuple{regs::DPU::EW_CFG__EW_OP_SRC, 0u, "EW_OP_SRC"},
                                    std::tuple{regs::DPU::EW_CFG__EW_MUL_PRELU, 1u, "EW_MUL_PRELU"}}) {
    Status st = run(with(field, value));
    EXPECT_FALSE(st.ok()) << name;
    EXPECT_NE(st.to_string().find(name), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
