// End to end on the rknpu device model: real TFLite models, their reference inputs and the
// TensorFlow Lite interpreter's outputs for them (../shared/reference/*.tflite-output.bin),
// image classification, and the placement of MobileNetV1's convolutions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "fixtures.h"
#include "import/tflite/image.h"
#include "import/tflite/tflite_importer.h"
#include "subgraph.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

constexpr int kTolerance = 2;  // quantized steps (rknpu.md: Mesa's tolerance)

std::unique_ptr<Session> make_session(const std::string& model, const std::string& device, DeviceOptions opts = {}) {
  auto g = tflite::load_tflite_file(model);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return nullptr;
  SessionOptions so;
  so.device = device;
  so.device_options = std::move(opts);
  auto s = Session::create(std::move(*g), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

// Counts nodes of `op` on the rknpu and elsewhere; lists the reasons of the others.
struct Placement {
  int on_npu = 0, off_npu = 0;
  std::string reasons;
};
Placement placement(const Session& s, OpKind op) {
  Placement p;
  const Plan& plan = s.plan();
  for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
    if (plan.graph.nodes()[i].op != op) continue;
    if (plan.devices[plan.nodes[i].device]->name() == "rknpu") {
      p.on_npu++;
    } else {
      p.off_npu++;
      p.reasons += plan.graph.nodes()[i].label() + ": " + plan.nodes[i].note + "\n";
    }
  }
  return p;
}

// Pearson correlation of two quantized vectors.
double correlation(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, bool is_u8) {
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  const double n = static_cast<double>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    double x = is_u8 ? a[i] : int8_t(a[i]), y = is_u8 ? b[i] : int8_t(b[i]);
    sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y;
  }
  return (sab - sa * sb / n) / std::sqrt((saa - sa * sa / n) * (sbb - sb * sb / n));
}

std::vector<uint8_t> run_once(Session& s, const std::vector<uint8_t>& input) {
  Status st = s.set_input(0, input.data(), static_cast<int64_t>(input.size()));
  EXPECT_TRUE(st.ok()) << st.to_string();
  st = s.run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto out = s.output(0);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : std::vector<uint8_t>{};
}

struct ReferenceCase {
  const char* name;
  const char* model;
  // The most steps from the interpreter the case may be: kTolerance, or a known gap's
  // measured maximum (docs/rknpu.md). Every convolution is exact op by op; what remains
  // is the ADDs' 16-bit encodings, off by one step on a few of the 65,536 input pairs,
  // which these MobileNetV2 models amplify (RknpuNchwGrace.AFewNearTiesEarlyMoveTheLogitsBeyondTwoSteps;
  // their ops are checked one by one in RknpuNchwGrace.EachOpAloneMatchesTheCpu).
  int bound;
};

class RknpuReference : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(RknpuReference, WithinTwoStepsOfTheInterpreter) {
  const ReferenceCase& c = GetParam();
  TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + c.model);
  TESSERA_REQUIRE_FIXTURE(in_path, std::string("reference/") + c.name + ".input.bin");
  TESSERA_REQUIRE_FIXTURE(out_path, std::string("reference/") + c.name + ".tflite-output.bin");
  auto s = make_session(model, "rknpu");
  ASSERT_TRUE(s);
  auto input = testing::read_file(in_path), expected = testing::read_file(out_path);
  auto out = run_once(*s, input);
  ASSERT_EQ(out.size(), expected.size());
  const bool is_u8 = s->graph().tensor(s->graph().outputs[0]).dtype == DType::u8;
  int max_diff = 0;
  size_t exact = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    int a = is_u8 ? out[i] : int8_t(out[i]), b = is_u8 ? expected[i] : int8_t(expected[i]);
    max_diff = std::max(max_diff, std::abs(a - b));
    exact += a == b;
  }
  Placement conv = placement(*s, OpKind::conv2d), dw = placement(*s, OpKind::depthwise_conv2d);
  std::printf("[rknpu] %s: max diff %d, exact %.1f%%, conv on NPU %d/%d, depthwise %d/%d, modelled %.3f ms\n", c.name,
              max_diff, 100.0 * exact / out.size(), conv.on_npu, conv.on_npu + conv.off_npu, dw.on_npu,
              dw.on_npu + dw.off_npu, s->profile().modelled_seconds * 1e3);
  EXPECT_GT(conv.on_npu + dw.on_npu, 0) << "nothing ran on the NPU";
  EXPECT_LE(max_diff, c.bound);
  if (c.bound > kTolerance) {
    // Known gap (docs/rknpu.md), held to its measured maximum; the placement is checked too.
    std::printf("[rknpu] %s: KNOWN GAP, not within +-%d: correlation with the interpreter's logits %.4f\n", c.name, kTolerance,
                correlation(out, expected, is_u8));
    EXPECT_EQ(conv.off_npu + dw.off_npu, 0) << conv.reasons << dw.reasons;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RknpuReference,
                         ::testing::Values(ReferenceCase{"mnv1_128_cat", "mobilenet_v1_0.25_128_quant.tflite", kTolerance},
                                           ReferenceCase{"mnv2_224_grace", "mobilenet_v2_1.0_224_quant.tflite", kTolerance},
                                           ReferenceCase{"tf2mnv2_224_grace", "tf2_mobilenet_v2_1.0_224_ptq.tflite", 3},
                                           ReferenceCase{"nchw_grace", "mobilenet_v2_quantized_1x3x224x224.tflite", 12}),
                         [](const auto& info) { return std::string(info.param.name); });

// Both MobileNetV2 models classify grace_hopper.bmp as "military uniform".
class RknpuClassify : public ::testing::TestWithParam<const char*> {};

TEST_P(RknpuClassify, GraceHopperIsMilitaryUniform) {
  TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + GetParam());
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(labels_path, "labels/imagenet_labels.txt");
  auto s = make_session(model, "rknpu");
  ASSERT_TRUE(s);
  const Tensor& in = s->graph().tensor(s->graph().inputs[0]);
  auto img = tflite::read_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  auto layout = tflite::input_layout(in);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  auto input = tflite::image_to_input(tflite::resize_bilinear(*img, layout->width, layout->height), in);
  ASSERT_TRUE(input.ok()) << input.status().to_string();
  auto out = run_once(*s, *input);
  const bool is_u8 = s->graph().tensor(s->graph().outputs[0]).dtype == DType::u8;
  size_t best = 0;
  for (size_t i = 1; i < out.size(); ++i)
    if ((is_u8 ? out[i] : int8_t(out[i])) > (is_u8 ? out[best] : int8_t(out[best]))) best = i;
  std::ifstream lf(labels_path);
  std::vector<std::string> labels;
  for (std::string line; std::getline(lf, line);) labels.push_back(line);
  ASSERT_LT(best, labels.size());
  std::printf("[rknpu] %s: top-1 %zu '%s'\n", GetParam(), best, labels[best].c_str());
  EXPECT_EQ(labels[best], "military uniform");
  Placement conv = placement(*s, OpKind::conv2d);
  EXPECT_EQ(conv.off_npu, 0) << conv.reasons;
}

INSTANTIATE_TEST_SUITE_P(Models, RknpuClassify,
                         ::testing::Values("mobilenet_v2_1.0_224_quant.tflite", "tf2_mobilenet_v2_1.0_224_ptq.tflite"));

// nchw_grace, op by op: each conv, depthwise and add of the int8 per-channel NCHW
// MobileNetV2 runs alone on the NPU with the cpu's inputs, so that errors cannot compound.
// Convolutions round like TFLite except at near-ties (values within about 2^-20 of a
// rounding boundary, where TFLite's 31-bit multiplier and the DPU's two 16-bit ones
// disagree); element-wise adds use three 16-bit multipliers chosen against TFLite's ADD on
// every pair of input codes (lower_binary.cpp encode_pair) and differ on a few values per 100,000.
struct Values {
  Graph graph;
  std::map<TensorId, std::vector<uint8_t>> of;  // every node output and the input, cpu
};

Values cpu_values(const std::string& model, const std::vector<uint8_t>& input) {
  Values v;
  auto g = tflite::load_tflite_file(model);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return v;
  v.graph = *g;
  Graph all = *g;
  all.outputs.clear();
  for (const Node& n : all.nodes()) {
    all.outputs.push_back(n.outputs[0]);
    all.tensor(n.outputs[0]).role = Role::output;
  }
  auto s = Session::create(all, SessionOptions{});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return v;
  EXPECT_TRUE((*s)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  EXPECT_TRUE((*s)->run().ok());
  for (size_t i = 0; i < all.outputs.size(); ++i) v.of[all.outputs[i]] = *(*s)->output(i);
  v.of[g->inputs[0]] = input;
  return v;
}

// Output 0 of nodes [first, end) of `g` run on `device` (tests/subgraph.h): the last node's
// output.
std::vector<uint8_t> run_nodes(const Graph& g, size_t first, size_t end, const std::map<TensorId, std::vector<uint8_t>>& values,
                               const std::string& device) {
  SessionOptions so;
  so.device = device;
  auto out = testing::run_nodes(g, first, end, values, {g.nodes()[end - 1].outputs[0]}, so);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? (*out)[0] : std::vector<uint8_t>{};
}

// Every node of `v.graph` whose op is in `kinds`, run alone on the NPU with the cpu's
// inputs, against the cpu's output: values compared, values that differ, the largest
// difference in quantized steps (u8 or i8 by the output's dtype), nodes run.
struct OpsAlone {
  int64_t values = 0, differ = 0;
  int max_diff = 0, ops = 0;
  std::string where;  // "label: n values" of each node that differs
};
OpsAlone ops_alone_on_npu(const Values& v, std::initializer_list<OpKind> kinds) {
  OpsAlone r;
  for (size_t i = 0; i < v.graph.nodes().size(); ++i) {
    const Node& n = v.graph.nodes()[i];
    if (std::find(kinds.begin(), kinds.end(), n.op) == kinds.end()) continue;
    auto npu = run_nodes(v.graph, i, i + 1, v.of, "rknpu");
    const auto& cpu = v.of.at(n.outputs[0]);
    EXPECT_EQ(npu.size(), cpu.size()) << n.label();
    if (npu.size() != cpu.size()) continue;
    const bool i8 = v.graph.tensor(n.outputs[0]).dtype == DType::i8;
    int64_t here = 0;
    for (size_t j = 0; j < cpu.size(); ++j) {
      const int d = i8 ? std::abs(int(int8_t(npu[j])) - int(int8_t(cpu[j]))) : std::abs(int(npu[j]) - int(cpu[j]));
      r.max_diff = std::max(r.max_diff, d);
      here += d != 0;
    }
    r.differ += here;
    if (here > 0) r.where += (r.where.empty() ? "" : "; ") + n.label() + ": " + std::to_string(here);
    r.values += static_cast<int64_t>(cpu.size());
    ++r.ops;
  }
  return r;
}

TEST(RknpuNchwGrace, EachOpAloneMatchesTheCpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v2_quantized_1x3x224x224.tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, "reference/nchw_grace.input.bin");
  Values v = cpu_values(model, testing::read_file(in_path));
  ASSERT_FALSE(v.of.empty());
  const OpsAlone conv = ops_alone_on_npu(v, {OpKind::conv2d, OpKind::depthwise_conv2d});
  const OpsAlone add = ops_alone_on_npu(v, {OpKind::add});
  std::printf("[rknpu] nchw_grace op by op: convolutions %lld of %lld values differ, adds %lld of %lld, max %d\n",
              static_cast<long long>(conv.differ), static_cast<long long>(conv.values), static_cast<long long>(add.differ),
              static_cast<long long>(add.values), std::max(conv.max_diff, add.max_diff));
  EXPECT_GT(conv.ops, 50);
  EXPECT_GT(add.ops, 5);
  EXPECT_LE(std::max(conv.max_diff, add.max_diff), 1);
  // Every convolution exact (each channel's scale pair proven on its accumulator range,
  // the linear layers lifted: docs/rknpu.md); the adds' 16-bit encodings miss TFLite on a
  // few input pairs (measured 12 of 216,384 values).
  EXPECT_EQ(conv.differ, 0) << conv.where;
  EXPECT_LE(add.differ * 10'000, add.values);
}

// Models the oracle test holds to the interpreter (MoveNet's centre heatmap, DeepLab, the
// MobileNetV1 1.0 embedding extractor), op by op on a seeded random image: every conv and
// depthwise the NPU runs, fed the cpu's inputs, gives the cpu's (= the interpreter's) bytes.
struct OpByOpCase {
  const char* model;
  int64_t input_bytes;
};
class RknpuOpByOp : public ::testing::TestWithParam<OpByOpCase> {};

TEST_P(RknpuOpByOp, EachConvAloneGivesTheCpusBytes) {
  TESSERA_REQUIRE_FIXTURE(model, std::string("models/tflite/") + GetParam().model);
  std::vector<uint8_t> input(static_cast<size_t>(GetParam().input_bytes));
  std::mt19937 rng(2024);
  for (auto& b : input) b = static_cast<uint8_t>(rng() & 0xff);
  Values v = cpu_values(model, input);
  ASSERT_FALSE(v.of.empty());
  const OpsAlone r = ops_alone_on_npu(v, {OpKind::conv2d, OpKind::depthwise_conv2d});
  std::printf("[rknpu] %s op by op: %d convolutions, %lld of %lld values differ, max %d (%s)\n", GetParam().model, r.ops,
              static_cast<long long>(r.differ), static_cast<long long>(r.values), r.max_diff, r.where.c_str());
  EXPECT_GT(r.ops, 20);
  // Exact: each channel's scale pair is proven on its whole accumulator range, or the op
  // would name the channels it could not make exact in its program notes.
  EXPECT_EQ(r.differ, 0) << r.where;
}

INSTANTIATE_TEST_SUITE_P(Models, RknpuOpByOp,
                         ::testing::Values(OpByOpCase{"movenet_single_pose_lightning_ptq.tflite", 192 * 192 * 3},
                                           OpByOpCase{"deeplabv3_mnv2_dm05_pascal_quant.tflite", 513 * 513 * 3},
                                           OpByOpCase{"mobilenet_v1_1.0_224_quant_embedding_extractor.tflite", 224 * 224 * 3}));

// Why nchw_grace is not held to +-2 of the interpreter: this model amplifies the DPU's
// rare one-step roundings. Shown by feeding the cpu, from the first op whose NPU output
// differs (an ADD: its 16-bit encoding misses TFLite on a few input pairs), that op's NPU
// output: the logits then move by several steps, although every later op is the cpu's own.
TEST(RknpuNchwGrace, AFewNearTiesEarlyMoveTheLogitsBeyondTwoSteps) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v2_quantized_1x3x224x224.tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, "reference/nchw_grace.input.bin");
  Values v = cpu_values(model, testing::read_file(in_path));
  ASSERT_FALSE(v.of.empty());
  const size_t end = v.graph.nodes().size();
  const auto& logits = v.of.at(v.graph.outputs[0]);
  // The first conv or add whose NPU output differs from the cpu's (the convs are exact:
  // EachOpAloneMatchesTheCpu; an add's 16-bit encoding misses TFLite on a few input pairs).
  for (size_t cut = 0; cut < end; ++cut) {
    const Node& n = v.graph.nodes()[cut];
    if (n.op != OpKind::conv2d && n.op != OpKind::depthwise_conv2d && n.op != OpKind::add) continue;
    auto npu = run_nodes(v.graph, cut, cut + 1, v.of, "rknpu");
    const auto& cpu = v.of.at(n.outputs[0]);
    ASSERT_EQ(npu.size(), cpu.size());
    int64_t differ = 0;
    for (size_t j = 0; j < cpu.size(); ++j) differ += npu[j] != cpu[j];
    if (differ == 0) continue;
    ASSERT_EQ(run_nodes(v.graph, cut + 1, end, v.of, "cpu"), logits) << "the tail alone reproduces the whole";
    auto values = v.of;
    values[n.outputs[0]] = npu;
    auto moved = run_nodes(v.graph, cut + 1, end, values, "cpu");
    ASSERT_EQ(moved.size(), logits.size());
    int d = 0;
    for (size_t k = 0; k < logits.size(); ++k) d = std::max(d, std::abs(int(int8_t(moved[k])) - int(int8_t(logits[k]))));
    std::printf("[rknpu] nchw_grace: %lld of %zu values of %s differ by one step; the cpu continuing from them ends %d steps "
                "from its own logits\n",
                static_cast<long long>(differ), cpu.size(), n.label().c_str(), d);
    // Measured: an ADD, a handful of its values.
    EXPECT_EQ(n.op, OpKind::add) << "a convolution differs: " << n.label();
    EXPECT_LE(differ * 1000, static_cast<int64_t>(cpu.size()));
    EXPECT_GT(d, kTolerance);
    return;
  }
  FAIL() << "no convolution or add differs on the NPU; the end-to-end gap should then be gone";
}

// MobileNetV1 1.0 224 runs with every convolution on the NPU, matches the cpu within two
// steps, and its modelled time is reported for Mesa's schedule and Tessera's.
// YOLOv8n (int8): every SiLU (LOGISTIC + MUL, one lookup table, run in its conv's DPU pass), the C2f channel
// splits (STRIDED_SLICE) and concatenations of the backbone and neck, both nearest x2
// upsamplings (PPU tasks) and the requantize before the second run on the NPU, and the
// head's rank-3 tail as flat tensors (flat.h): the box and class slices, the DFL's reshape,
// the box MUL / SUB / ADD (constant operands, a scalar MUL as a table), the class LOGISTIC +
// QUANTIZE (one table) and the final concatenation (docs/rknpu.md "Lookup tables", "Channel
// copies", "Nearest x2 resize", "Flat tensors", "SUB, MUL and constant operands"). What
// stays on the cpu: the five TRANSPOSEs that move the innermost axis, the DFL SOFTMAX and
// the DFL's 8400-wide 1x1 conv, and what only moves their outputs' bytes (the four
// RESHAPEs after them, views on the cpu, and the concatenation of the three scales, which
// the modelled NPU moves slower than the A76): 12 of the 248 nodes `inspect` lists (95.2%;
// #35 asks 95%).
TEST(RknpuYolov8n, SiluSlicesAndConcatsRunOnTheNpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  auto npu = make_session(model, "rknpu");
  ASSERT_TRUE(npu);
  const std::pair<OpKind, Placement> want[] = {{OpKind::logistic, {58, 0, ""}},
                                               {OpKind::mul, {59, 0, ""}},
                                               {OpKind::strided_slice, {20, 0, ""}},
                                               {OpKind::concat, {17, 1, ""}},
                                               {OpKind::max_pool2d, {3, 0, ""}},
                                               {OpKind::resize_nearest, {2, 0, ""}},
                                               {OpKind::requantize, {2, 0, ""}},
                                               {OpKind::reshape, {2, 4, ""}},
                                               {OpKind::sub, {2, 0, ""}},
                                               {OpKind::add, {8, 0, ""}},
                                               {OpKind::transpose, {0, 5, ""}},
                                               {OpKind::softmax, {0, 1, ""}}};
  for (const auto& [op, w] : want) {
    Placement p = placement(*npu, op);
    EXPECT_EQ(p.on_npu, w.on_npu) << op_name(op) << ": " << p.reasons;
    EXPECT_EQ(p.off_npu, w.off_npu) << op_name(op) << ": " << p.reasons;
  }
  int nodes = 0, on_cpu = 0, transfers = 0;
  const Plan& plan = npu->plan();
  for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
    if (plan.graph.nodes()[i].op == OpKind::transfer) {
      ++transfers;
      continue;
    }
    ++nodes;
    on_cpu += plan.devices[plan.nodes[i].device]->name() != "rknpu";
  }
  EXPECT_EQ(nodes, 248);
  EXPECT_EQ(on_cpu, 12);  // the five transposes, the softmax, the DFL conv; 4 reshapes, a concat
  EXPECT_GE((nodes - on_cpu) * 100, nodes * 95);
  // NPU <-> cpu crossings: 134 before these lowerings, 3 with the tail on the cpu; now the
  // three scales' maps out to their transposes, their concatenation back in, the DFL's input
  // out and its conv's output in.
  EXPECT_EQ(transfers, 6);
  // Every SiLU's table runs in its conv's pass: its LOGISTIC and MUL take no task time.
  std::vector<uint8_t> input(640 * 640 * 3);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  ASSERT_TRUE(npu->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  Status st = npu->run();
  ASSERT_TRUE(st.ok()) << st.to_string();
  int in_conv_pass = 0, muls = 0;
  for (const auto& item : npu->profile().nodes) {
    if (item.label.rfind("mul ", 0) != 0 || item.device != "rknpu") continue;
    ++muls;
    in_conv_pass += item.modelled_seconds == 0;
  }
  EXPECT_EQ(muls, 59);
  EXPECT_EQ(in_conv_pass, 57);  // the box MULs (a constant map, a scalar) are tasks of their own
}

// The C2f splits and every concatenation of the backbone and neck in place (Device::views,
// docs/rknpu.md "Channel copies"): producers write into the concatenations' outputs at
// their channel offsets and readers read the splits where they lie, so those 32 nodes take
// no task. The output is the copying program's (in_place=off) byte for byte, and the
// modelled time falls by the copies' (16.86 -> 12.39 ms when this was written).
TEST(RknpuYolov8n, ConcatsAndSlicesInPlaceGiveTheCopiesBytes) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  std::vector<uint8_t> input(640 * 640 * 3);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  std::vector<std::vector<uint8_t>> outs;
  std::vector<double> seconds;
  std::vector<int> free_nodes;
  for (const char* in_place : {"on", "off"}) {
    auto s = make_session(model, "rknpu", {{"in_place", in_place}});
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
    Status st = s->run();
    ASSERT_TRUE(st.ok()) << st.to_string();
    auto o = s->output(0);
    ASSERT_TRUE(o.ok());
    outs.push_back(*o);
    seconds.push_back(s->profile().modelled_seconds);
    int none = 0;
    for (const auto& item : s->profile().nodes)
      if (item.device == "rknpu" && (item.label.rfind("concat ", 0) == 0 || item.label.rfind("strided_slice ", 0) == 0))
        none += item.modelled_seconds == 0;
    free_nodes.push_back(none);
  }
  EXPECT_EQ(outs[0], outs[1]);
  // 32 channel slices and concatenations of NC1HWC2 maps, and 5 of the head's flat ones: the
  // box and class slices of the scales' concatenation, the two box slices and the final
  // concatenation (whose inputs its producers write in place).
  EXPECT_EQ(free_nodes[0], 37);
  EXPECT_EQ(free_nodes[1], 0);
  EXPECT_LT(seconds[0], seconds[1] - 3e-3) << seconds[0] << " s in place, " << seconds[1] << " s copying";
}

// YOLOv8's output [1, 84, 8400] decoded as its users do: per anchor the best of 80 class
// scores (rows 4..83), kept at >= 0.25, boxes (rows 0..3: cx, cy, w, h, normalized) merged
// by per-class non-maximum suppression at IoU 0.45.
struct Detection {
  int cls = 0;
  float score = 0, cx = 0, cy = 0, w = 0, h = 0;
};
std::vector<Detection> decode_yolo(const std::vector<uint8_t>& out, float scale, int zp) {
  constexpr int kAnchors = 8400, kRows = 84;
  auto v = [&](int row, int a) { return scale * float(int(int8_t(out[size_t(row) * kAnchors + a])) - zp); };
  std::vector<Detection> cand;
  for (int a = 0; a < kAnchors; ++a) {
    Detection d;
    d.score = -1;
    for (int c = 0; c < kRows - 4; ++c)
      if (v(4 + c, a) > d.score) d.score = v(4 + c, a), d.cls = c;
    if (d.score < 0.25f) continue;
    d.cx = v(0, a), d.cy = v(1, a), d.w = v(2, a), d.h = v(3, a);
    cand.push_back(d);
  }
  std::stable_sort(cand.begin(), cand.end(), [](const Detection& x, const Detection& y) { return x.score > y.score; });
  auto iou = [](const Detection& x, const Detection& y) {
    const float ix = std::max(0.f, std::min(x.cx + x.w / 2, y.cx + y.w / 2) - std::max(x.cx - x.w / 2, y.cx - y.w / 2));
    const float iy = std::max(0.f, std::min(x.cy + x.h / 2, y.cy + y.h / 2) - std::max(x.cy - x.h / 2, y.cy - y.h / 2));
    const float inter = ix * iy, uni = x.w * x.h + y.w * y.h - inter;
    return uni > 0 ? inter / uni : 0.f;
  };
  std::vector<Detection> kept;
  for (const Detection& d : cand) {
    bool keep = true;
    for (const Detection& k : kept) keep = keep && !(k.cls == d.cls && iou(k, d) > 0.45f);
    if (keep) kept.push_back(d);
  }
  return kept;
}

// The whole model on the NPU path against the cpu, on a photograph (Grace Hopper: two
// persons and a tie): the same detections after decoding (classes, boxes overlapping the
// cpu's at IoU >= 0.9). Two steps end to end is NOT reached (measured: 171 steps at most,
// 97.16% of the 705,600 values equal, the tie's score 0.610 against the cpu's 0.446):
// the resizes, requantize, copies and tables are byte-exact op by op (their tests), and
// the output is the same with the upsamplings and requantize on the cpu, so the gap comes
// from the convolution passes (docs/rknpu.md "YOLOv8n end to end").
TEST(RknpuYolov8n, SameDetectionsAsTheCpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  auto npu = make_session(model, "rknpu");
  auto cpu = make_session(model, "cpu");
  ASSERT_TRUE(npu && cpu);
  const Tensor& in = npu->graph().tensor(npu->graph().inputs[0]);
  const Tensor& out = npu->graph().tensor(npu->graph().outputs[0]);
  auto img = tflite::read_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  const tflite::Image rgb = tflite::resize_bilinear(*img, 640, 640);
  // YOLOv8 takes pixel / 255 in [0, 1], quantized with the input's own parameters.
  std::vector<uint8_t> input(640 * 640 * 3);
  const float si = in.quant.scale[0];
  const int zi = static_cast<int>(in.quant.zero_point_at(0));
  ASSERT_EQ(rgb.pixels.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<uint8_t>(std::clamp<long>(std::lround(rgb.pixels[i] / 255.0f / si) + zi, -128, 127));
  auto a = run_once(*npu, input), b = run_once(*cpu, input);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), size_t(84 * 8400));
  int max_diff = 0;
  size_t exact = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(int(int8_t(a[i])) - int(int8_t(b[i]))));
    exact += a[i] == b[i];
  }
  std::printf("[rknpu] yolov8n output vs cpu: max diff %d, %zu of %zu values differ\n", max_diff, a.size() - exact, a.size());
  // #35: within 2 steps before post-processing (was 171 steps, 2.84% of the values, before
  // the linear layers' lift and the exact scale-pair search: docs/rknpu.md).
  EXPECT_LE(max_diff, kTolerance);
  EXPECT_GT(exact * 1000, a.size() * 999);
  const float so = out.quant.scale[0];
  const int zo = static_cast<int>(out.quant.zero_point_at(0));
  auto dn = decode_yolo(a, so, zo), dc = decode_yolo(b, so, zo);
  ASSERT_FALSE(dc.empty()) << "the cpu finds nothing: the input is not what the model expects";
  ASSERT_EQ(dn.size(), dc.size());
  auto by_place = [](std::vector<Detection>& d) {
    std::sort(d.begin(), d.end(), [](const Detection& x, const Detection& y) {
      return std::tie(x.cls, x.cx, x.cy) < std::tie(y.cls, y.cx, y.cy);
    });
  };
  by_place(dn), by_place(dc);
  auto iou = [](const Detection& x, const Detection& y) {
    const float ix = std::max(0.f, std::min(x.cx + x.w / 2, y.cx + y.w / 2) - std::max(x.cx - x.w / 2, y.cx - y.w / 2));
    const float iy = std::max(0.f, std::min(x.cy + x.h / 2, y.cy + y.h / 2) - std::max(x.cy - x.h / 2, y.cy - y.h / 2));
    return ix * iy / (x.w * x.h + y.w * y.h - ix * iy);
  };
  for (size_t i = 0; i < dc.size(); ++i) {
    std::printf("[rknpu] yolov8n detection: class %d score %.3f (cpu %.3f) box %.3f %.3f %.3f %.3f (cpu %.3f %.3f %.3f %.3f)\n",
                dc[i].cls, dn[i].score, dc[i].score, dn[i].cx, dn[i].cy, dn[i].w, dn[i].h, dc[i].cx, dc[i].cy, dc[i].w, dc[i].h);
    EXPECT_EQ(dn[i].cls, dc[i].cls) << i;
    EXPECT_GE(iou(dn[i], dc[i]), 0.9f) << i;
  }
}

TEST(RknpuMobileNetV1, AllConvolutionsOnTheNpu) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_1.0_224_quant_embedding_extractor.tflite");
  auto npu = make_session(model, "rknpu");
  auto mesa = make_session(model, "rknpu", {{"schedule", "mesa"}});
  auto cpu = make_session(model, "cpu");
  ASSERT_TRUE(npu && mesa && cpu);
  Placement conv = placement(*npu, OpKind::conv2d), dw = placement(*npu, OpKind::depthwise_conv2d);
  EXPECT_EQ(conv.off_npu, 0) << conv.reasons;
  EXPECT_EQ(dw.off_npu, 0) << dw.reasons;
  EXPECT_EQ(conv.on_npu, 14);
  EXPECT_EQ(dw.on_npu, 13);
  TESSERA_REQUIRE_FIXTURE(image, "images/grace_hopper.bmp");
  const Tensor& in = npu->graph().tensor(npu->graph().inputs[0]);
  auto img = tflite::read_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  auto input_r = tflite::image_to_input(tflite::resize_bilinear(*img, 224, 224), in);
  ASSERT_TRUE(input_r.ok()) << input_r.status().to_string();
  const std::vector<uint8_t>& input = *input_r;
  auto a = run_once(*npu, input), b = run_once(*cpu, input), m = run_once(*mesa, input);
  ASSERT_EQ(a.size(), b.size());
  int max_diff = 0;
  size_t exact = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(int(a[i]) - int(b[i])));
    exact += a[i] == b[i];
  }
  std::printf("[rknpu] MobileNetV1 1.0 224 embedding vs cpu: max diff %d, exact %.1f%%\n", max_diff, 100.0 * exact / a.size());
  // The 1024-value embedding sits behind 27 layers; single-step rounding differences of the
  // DPU (rknpu.md: rounding undocumented, Mesa accepts +-2 per op) reach 3 steps here.
  constexpr int kEmbeddingTolerance = 4;
  EXPECT_LE(max_diff, kEmbeddingTolerance);
  const double r = correlation(a, b, true);
  std::printf("[rknpu] MobileNetV1 1.0 224 embedding correlation with the cpu: %.5f\n", r);
  EXPECT_GT(r, 0.995);
  EXPECT_EQ(a, m) << "the two schedules compute the same values";
  const double t_mesa = mesa->profile().modelled_seconds, t_tessera = npu->profile().modelled_seconds;
  std::printf("[rknpu] MobileNetV1 1.0 224 modelled: mesa-like schedule %.2f ms (published 10-11 ms), tessera %.2f ms (%.2fx)\n",
              t_mesa * 1e3, t_tessera * 1e3, t_mesa / t_tessera);
  EXPECT_GT(t_mesa, 0);
  EXPECT_LT(t_tessera, t_mesa);
}

}  // namespace
}  // namespace tessera
