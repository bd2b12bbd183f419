// The board cpu cost model (tessera/cpu_model.h): how its cost scales with size, dtype and op
// kind, the generic rule for kinds it has no rule for, and where it lands against the
// published figures it was calibrated to and checked against (docs/rknpu.md "Frame time").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/backend/device.h"
#include "tessera/backend/plan.h"
#include "tessera/cpu_model.h"
#include "tessera/session.h"

namespace tessera {
namespace {

const CpuCoreModel& a76() { return rk3588_cortex_a76(); }

TensorId add(Graph& g, DType t, Shape s, bool quantized = false) {
  Tensor x;
  x.name = "t" + std::to_string(g.tensors().size());
  x.dtype = t;
  x.shape = std::move(s);
  if (quantized) x.quant = QuantParams{{0.05f}, {3}, -1};
  return g.add_tensor(std::move(x));
}

Node node(OpKind op, std::vector<TensorId> in, std::vector<TensorId> out) {
  Node n;
  n.op = op;
  n.name = "n";
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// Seconds without the fixed per-node cost.
double variable(const CpuNodeCost& c) { return c.seconds - a76().node_fixed_seconds; }

TEST(CpuModel, ParametersAreTheA76s) {
  const CpuCoreModel& m = a76();
  EXPECT_EQ(find_cpu_core_model("rk3588-a76"), &m);
  EXPECT_EQ(find_cpu_core_model("no-such-core"), nullptr);
  EXPECT_DOUBLE_EQ(m.clock_hz, 2.4e9);
  EXPECT_DOUBLE_EQ(m.int8_macs_per_cycle, 32);  // two pipes x SDOT's 16
  EXPECT_DOUBLE_EQ(m.f32_macs_per_cycle, 8);    // two pipes x 4 fp32 lanes
  EXPECT_GT(m.dram_bytes_per_s, 0);
  EXPECT_GT(m.node_fixed_seconds, 0);
}

TEST(CpuModel, ElementwiseCostScalesWithElementsAndBytes) {
  for (int64_t n : {4096, 1 << 20}) {
    Graph g;
    auto a = add(g, DType::f32, {n}), b = add(g, DType::f32, {n}), y = add(g, DType::f32, {n});
    auto a2 = add(g, DType::f32, {2 * n}), b2 = add(g, DType::f32, {2 * n}), y2 = add(g, DType::f32, {2 * n});
    const CpuNodeCost one = cpu_node_cost(a76(), g, node(OpKind::add, {a, b}, {y}));
    const CpuNodeCost two = cpu_node_cost(a76(), g, node(OpKind::add, {a2, b2}, {y2}));
    EXPECT_STREQ(one.rule, "elementwise");
    EXPECT_DOUBLE_EQ(one.bytes, 12.0 * n);
    EXPECT_NEAR(variable(two) / variable(one), 2.0, 1e-9) << n;
    // An f32 add is memory-bound on one A76 core: 12 bytes per element against 0.25 cycles.
    EXPECT_DOUBLE_EQ(one.memory_seconds, 12.0 * n / a76().dram_bytes_per_s);
    EXPECT_GT(one.memory_seconds, one.compute_seconds);
  }
}

TEST(CpuModel, DtypeChangesTheBytesAndTheRule) {
  Graph g;
  const int64_t n = 80 * 8400;
  auto x8 = add(g, DType::i8, {1, 80, 8400}, true), y8 = add(g, DType::i8, {1, 80, 8400}, true);
  auto xf = add(g, DType::f32, {1, 80, 8400}), yf = add(g, DType::f32, {1, 80, 8400});
  const CpuNodeCost lut = cpu_node_cost(a76(), g, node(OpKind::logistic, {x8}, {y8}));
  const CpuNodeCost poly = cpu_node_cost(a76(), g, node(OpKind::logistic, {xf}, {yf}));
  EXPECT_STREQ(lut.rule, "table lookup");
  EXPECT_STREQ(poly.rule, "transcendental");
  EXPECT_DOUBLE_EQ(lut.compute_seconds, n / a76().clock_hz);  // one lookup per cycle
  EXPECT_GT(poly.seconds, lut.seconds);
  // A copy moves four times the bytes in f32.
  Node r8 = node(OpKind::reshape, {x8}, {y8}), rf = node(OpKind::reshape, {xf}, {yf});
  EXPECT_DOUBLE_EQ(cpu_node_cost(a76(), g, rf).bytes, 4 * cpu_node_cost(a76(), g, r8).bytes);
  // A reshape the planner made a view moves nothing.
  const CpuNodeCost v = cpu_node_cost(a76(), g, r8, /*view=*/true);
  EXPECT_DOUBLE_EQ(v.bytes, 0);
  EXPECT_DOUBLE_EQ(v.seconds, a76().node_fixed_seconds);
  // A quantized add requantizes both operands: more work per element than a float add.
  auto z8 = add(g, DType::i8, {1, 80, 8400}, true);
  const CpuNodeCost qadd = cpu_node_cost(a76(), g, node(OpKind::add, {x8, y8}, {z8}));
  EXPECT_STREQ(qadd.rule, "quantized elementwise");
  EXPECT_GT(qadd.compute_seconds, cpu_node_cost(a76(), g, node(OpKind::add, {xf, yf}, {yf})).compute_seconds);
}

TEST(CpuModel, OpKindOrdersTheCostOfOneTensor) {
  Graph g;
  auto x = add(g, DType::i8, {1, 144, 80, 80}, true), y = add(g, DType::i8, {1, 80, 80, 144}, true);
  Node tr = node(OpKind::transpose, {x}, {y});
  tr.set(attr::perm, std::vector<int64_t>{0, 2, 3, 1});
  Node keep = node(OpKind::transpose, {x}, {y});
  keep.set(attr::perm, std::vector<int64_t>{0, 2, 1, 3});
  const double copy = cpu_node_cost(a76(), g, node(OpKind::reshape, {x}, {y})).seconds;
  const double strided = cpu_node_cost(a76(), g, tr).seconds;
  const double rows = cpu_node_cost(a76(), g, keep).seconds;
  const double lut = cpu_node_cost(a76(), g, node(OpKind::logistic, {x}, {y})).seconds;
  EXPECT_DOUBLE_EQ(rows, copy);   // whole rows move: a vector copy
  EXPECT_GT(strided, copy);       // one element per cycle
  EXPECT_GT(lut, copy);
  EXPECT_DOUBLE_EQ(strided, lut);  // both one element per cycle
}

TEST(CpuModel, MatrixOpsCountTheirMultiplyAccumulates) {
  Graph g;
  auto x = add(g, DType::i8, {1, 8, 8, 16}, true), w = add(g, DType::i8, {32, 3, 3, 16}, true);
  auto y = add(g, DType::i8, {1, 8, 8, 32}, true);
  const CpuNodeCost c = cpu_node_cost(a76(), g, node(OpKind::conv2d, {x, w}, {y}));
  const double macs = 8.0 * 8 * 32 * 3 * 3 * 16;
  EXPECT_STREQ(c.rule, "matrix");
  EXPECT_DOUBLE_EQ(c.macs, macs);
  EXPECT_DOUBLE_EQ(c.compute_seconds, macs / (32 * a76().matrix_efficiency) / 2.4e9);
  // The same in f32 runs at a quarter of the int8 rate.
  auto xf = add(g, DType::f32, {1, 8, 8, 16}), wf = add(g, DType::f32, {32, 3, 3, 16}), yf = add(g, DType::f32, {1, 8, 8, 32});
  EXPECT_DOUBLE_EQ(cpu_node_cost(a76(), g, node(OpKind::conv2d, {xf, wf}, {yf})).compute_seconds, 4 * c.compute_seconds);
  // Depthwise has no dot product: 8-bit taps at the widening (int16) rate.
  auto wd = add(g, DType::i8, {1, 3, 3, 16}, true), yd = add(g, DType::i8, {1, 8, 8, 16}, true);
  const CpuNodeCost d = cpu_node_cost(a76(), g, node(OpKind::depthwise_conv2d, {x, wd}, {yd}));
  EXPECT_STREQ(d.rule, "depthwise");
  EXPECT_DOUBLE_EQ(d.macs, 8.0 * 8 * 16 * 9);
  EXPECT_DOUBLE_EQ(d.compute_seconds, d.macs / (8 * a76().matrix_efficiency) / 2.4e9);
  // fully_connected: M x N x K, and a GGUF block weight takes the int8 (dot product) rate.
  auto a = add(g, DType::f32, {4, 256}), wq = add(g, DType::q8_0, {512, 256}), o = add(g, DType::f32, {4, 512});
  const CpuNodeCost fc = cpu_node_cost(a76(), g, node(OpKind::fully_connected, {a, wq}, {o}));
  EXPECT_DOUBLE_EQ(fc.macs, 4.0 * 512 * 256);
  EXPECT_DOUBLE_EQ(fc.compute_seconds, fc.macs / (32 * a76().matrix_efficiency) / 2.4e9);
}

TEST(CpuModel, AnUnknownKindTakesTheGenericRuleAndSaysSo) {
  Graph g;
  auto boxes = add(g, DType::f32, {1, 1917, 4}), scores = add(g, DType::f32, {1, 1917, 91});
  auto anchors = add(g, DType::f32, {1917, 4}), out = add(g, DType::f32, {1, 10, 4});
  const CpuNodeCost c = cpu_node_cost(a76(), g, node(OpKind::detection_postprocess, {boxes, scores, anchors}, {out}));
  EXPECT_STREQ(c.rule, "generic");
  EXPECT_FALSE(c.known());
  const double elems = 1917.0 * 4 + 1917 * 91 + 1917 * 4 + 40;
  EXPECT_DOUBLE_EQ(c.compute_seconds, elems / 2.4e9);  // one element per cycle, inputs and outputs
  EXPECT_GT(c.seconds, a76().node_fixed_seconds);
  EXPECT_TRUE(cpu_node_cost(a76(), g, node(OpKind::exp, {boxes}, {boxes})).known());
}

TEST(CpuModel, ConversionsReadAndWriteTheFormatsBytes) {
  const Shape s{1, 20, 20, 136};  // 136 channels: 9 groups of 16, the last padded
  const Format nc{Encoding::i8, Layout::nc1hwc2, s};
  const Format host = Format::row_major(DType::i8, s);
  const CpuNodeCost c = cpu_conversion_cost(a76(), nc, host);
  const double nc_bytes = 9.0 * 20 * 20 * 16, host_bytes = 20.0 * 20 * 136;
  EXPECT_DOUBLE_EQ(c.bytes, nc_bytes + host_bytes);
  EXPECT_DOUBLE_EQ(c.memory_seconds, (nc_bytes + host_bytes) / a76().dram_bytes_per_s);
  EXPECT_STREQ(c.rule, "layout conversion");
}

// Memory: the model's copy rate on one core against tinymembench on an RK3588 (Turing RK1,
// geerlingguy/sbc-reviews#38: "C copy" 12374 MB/s, the figure the parameter comes from) and,
// as an independent check, whisper.cpp's bench on an Orange Pi 5 (RK3588S, ggml-org/whisper.cpp#89:
// "memcpy: 10.14 GB/s (1 thread)"), within 25%.
TEST(CpuModel, CopyRateLandsNearPublishedSingleCoreFigures) {
  const Shape s{64 << 20};
  const Format f = Format::row_major(DType::i8, s);
  const CpuNodeCost c = cpu_conversion_cost(a76(), f, f);
  const double rate = (64 << 20) / c.seconds;  // bytes copied per second
  EXPECT_NEAR(rate / 12374e6, 1.0, 0.01);
  EXPECT_NEAR(rate / 10.14e9, 1.0, 0.25) << rate / 1e9 << " GB/s";
}

// The model's whole-network time for a graph, every node on one A76 core (printed with the
// MACs counted and the time per rule, for docs/rknpu.md).
double network_seconds(const Graph& g, const char* what, int* unknown = nullptr) {
  double s = 0, macs = 0;
  std::map<std::string, double> by_rule;
  for (const Node& n : g.nodes()) {
    const CpuNodeCost c = cpu_node_cost(a76(), g, n);
    s += c.seconds;
    macs += c.macs;
    by_rule[c.rule] += c.seconds;
    if (unknown && !c.known()) ++*unknown;
  }
  std::string rules;
  for (const auto& [rule, sec] : by_rule) rules += " " + rule + " " + std::to_string(sec * 1e3);
  std::printf("[ A76 model ] %s: %.1f M MACs, %.3f ms (ms by rule:%s)\n", what, macs / 1e6, s * 1e3, rules.c_str());
  return s;
}

// Compute: one core's int8 MobileNet v1 1.0 (224x224) as ncnn runs it (benchncnn 10 1 0 -1 1,
// "mobilenet_int8"): 14.90 ms on a Raspberry Pi 5 (Cortex-A76 at 2.4 GHz), 14.85 ms on an
// Orange Pi 5 (RK3588S). The matrix efficiency was calibrated on it: within 15%.
TEST(CpuModel, MobileNetV1Int8LandsNearThePublishedA76Latency) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_1.0_224_quant_embedding_extractor.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  int unknown = 0;
  const double ms = network_seconds(*g, "MobileNet v1 1.0 224 int8", &unknown) * 1e3;
  EXPECT_EQ(unknown, 0);
  EXPECT_NEAR(ms / 14.90, 1.0, 0.15) << ms << " ms";
  EXPECT_NEAR(ms / 14.85, 1.0, 0.15) << ms << " ms";
}

// Not calibrated on, and not like for like: ncnn's int8 MobileNet-SSD (a Caffe MobileNet v1
// SSD at 300x300, 21 classes) takes 36.93 ms on one Pi 5 core and 30.93 ms on an Orange Pi 5
// (same run). This COCO graph counts 728 M MACs (91 classes); the run does not give ncnn's
// network's count. The model lands 38% under their mean (21.1 ms); the bounds below record
// that finding (set after seeing it, docs/rknpu.md): under the published figure, not by half.
TEST(CpuModel, SsdMobileNetV1Int8AgainstThePublishedA76Latency) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const double ratio = network_seconds(*g, "SSD MobileNet v1 COCO int8") * 1e3 / ((36.93 + 30.93) / 2);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 1.0);
}

// A session on the rknpu device model (which names the RK3588's Cortex-A76 as its board's
// cpu) models the cpu's nodes and the transfers; a cpu session models nothing.
TEST(CpuModel, SessionsOnTheRknpuModelTheBoardCpuShare) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  SessionOptions cpu;
  auto plain = Session::create(*g, cpu);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  std::vector<uint8_t> in(static_cast<size_t>(*g->tensor(g->inputs[0]).host_bytes()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 37 + 11);
  ASSERT_TRUE((*plain)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
  ASSERT_TRUE((*plain)->run().ok());
  EXPECT_TRUE((*plain)->profile().board_cpu.empty());
  for (const auto& n : (*plain)->profile().nodes) EXPECT_LT(n.board_seconds, 0) << n.label;

  SessionOptions npu;
  npu.device = "rknpu";
  auto s = Session::create(*g, npu);
  if (!s.ok() && s.status().code() == StatusCode::not_found) GTEST_SKIP() << "no rknpu device: " << s.status().to_string();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
  ASSERT_TRUE((*s)->run().ok());
  const RunProfile& p = (*s)->profile();
  EXPECT_EQ(p.board_cpu, "rk3588-a76");
  EXPECT_GT(p.board_io_seconds, 0);  // the input written into NC1HWC2, the output read back
  int cpu_nodes = 0, transfers = 0;
  for (const auto& n : p.nodes) {
    if (n.device == "rknpu" && n.label.rfind("transfer", 0) != 0) {
      EXPECT_LT(n.board_seconds, 0) << n.label;
      continue;
    }
    EXPECT_GT(n.board_seconds, 0) << n.label;
    (n.label.rfind("transfer", 0) == 0 ? transfers : cpu_nodes)++;
  }
  EXPECT_GT(cpu_nodes + transfers, 0);
}

}  // namespace
}  // namespace tessera
