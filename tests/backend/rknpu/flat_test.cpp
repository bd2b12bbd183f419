// Flat tensors on the rknpu device (flat.h, docs/rknpu.md "Flat tensors"): 8-bit tensors
// outside the NHWC feature maps (YOLOv8's head on [1, C, 8400]) held row-major, read by
// element-wise tasks as 16-channel cubes, sliced, reshaped and concatenated as runs of
// bytes (DPU copies or views) or as rows (PPU row copies). Lookup tables and copies move or
// map codes exactly, so the NPU's bytes are the cpu's; the add is TFLite's within one step.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "backend/rknpu/flat.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "tessera/session.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

AttrMap box(std::vector<int64_t> b, std::vector<int64_t> e) {
  std::vector<int64_t> ones(b.size(), 1);
  return {{"begin", std::move(b)}, {"end", std::move(e)}, {"strides", ones}, {"shrink_axes", std::vector<int64_t>{}}};
}

AttrMap new_shape(std::vector<int64_t> s) { return {{"shape", std::move(s)}}; }

// A head in miniature, all on flat tensors:
//   x [1, 48, 32] -> a = LOGISTIC(x), b = QUANTIZE(x) -> cat = CONCAT(a, b; axis 2) [1, 48, 64]
//   (rows interleave: PPU row copies) -> top = cat[:, 0:16], rest = cat[:, 16:48] (runs)
//   -> s = LOGISTIC(rest); t = rest[:, 0:16] (a run of a run)
//   -> sum = ADD(RESHAPE(top) [1, 4, 4, 64], RESHAPE(t) [1, 4, 4, 64]) -> RESHAPE [1, 16, 64]
//   -> out = CONCAT(sum, s; axis 1) [1, 48, 64] (runs).
struct Head {
  Graph g;
  std::vector<uint8_t> input;
  TensorId cat = kNoTensor, top = kNoTensor, rest = kNoTensor, out = kNoTensor;
};
Head mini_head() {
  Head h;
  const DType t = DType::i8;
  const QuantParams qx{{0.06f}, {-5}}, qs{{1.0f / 256}, {-128}}, qr{{0.09f}, {7}};
  const TensorId xi = add_input(h.g, {1, 48, 32}, t, qs);
  const TensorId a = *h.g.add_op(OpKind::logistic, {xi}, {}, "a", t, qs);
  const TensorId b = *h.g.add_op(OpKind::requantize, {xi}, {}, "b", t, qs);
  h.cat = *h.g.add_op(OpKind::concat, {a, b}, {{"axis", int64_t{2}}}, "cat", t, qs);
  h.top = *h.g.add_op(OpKind::strided_slice, {h.cat}, box({0, 0, 0}, {1, 16, 64}), "top", t, qs);
  h.rest = *h.g.add_op(OpKind::strided_slice, {h.cat}, box({0, 16, 0}, {1, 48, 64}), "rest", t, qs);
  const TensorId s = *h.g.add_op(OpKind::logistic, {h.rest}, {}, "s", t, qs);
  const TensorId tt = *h.g.add_op(OpKind::strided_slice, {h.rest}, box({0, 0, 0}, {1, 16, 64}), "t", t, qs);
  const TensorId r1 = *h.g.add_op(OpKind::reshape, {h.top}, new_shape({1, 4, 4, 64}), "r1", t, qs);
  const TensorId r2 = *h.g.add_op(OpKind::reshape, {tt}, new_shape({1, 4, 4, 64}), "r2", t, qs);
  const TensorId sum = *h.g.add_op(OpKind::add, {r1, r2}, {}, "sum", t, qr);
  const TensorId r3 = *h.g.add_op(OpKind::reshape, {sum}, new_shape({1, 16, 64}), "r3", t, qr);
  const TensorId back = *h.g.add_op(OpKind::requantize, {r3}, {}, "back", t, qs);
  h.out = *h.g.add_op(OpKind::concat, {back, s}, {{"axis", int64_t{1}}}, "out", t, qs);
  h.g.tensor(h.out).role = Role::output;
  h.g.outputs = {h.out};
  std::mt19937 rng(23);
  h.input = random_codes(48 * 32, rng, 0, 255);
  return h;
}

TEST(RknpuFlat, WhichTensorsAreFlat) {
  Head h = mini_head();
  const std::vector<bool> flat = flat_tensors(h.g);
  // Every activation of the head: the rank-3 ones, and the rank-4 reshapes joined to them.
  for (const Tensor& t : h.g.tensors()) EXPECT_TRUE(flat[t.id]) << t.name;
  // A conv's feature maps are not, even when a reshape joins them to a rank-3 tensor.
  Graph g;
  ConvSpec spec;
  std::vector<uint8_t> in;
  g = build_conv(spec, in);
  const TensorId y = g.outputs[0];
  const Tensor& yt = g.tensor(y);
  auto r = g.add_op(OpKind::reshape, {y}, new_shape({1, yt.shape[1] * yt.shape[2], yt.shape[3]}), "r", yt.dtype, yt.quant);
  ASSERT_TRUE(r.ok());
  const std::vector<bool> f2 = flat_tensors(g);
  EXPECT_FALSE(f2[y]);
  EXPECT_FALSE(f2[g.inputs[0]]);
  EXPECT_EQ(f2[*r], g.tensor(*r).elements() % 16 == 0);
  // ...so the reshape from the conv's NHWC map to the flat tensor stays on the cpu, saying why.
  auto op = lower_node(g, g.nodes().back());
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("only between flat tensors"), std::string::npos) << op.status().message();
  // A fully connected layer's rows [N, C] stay NC1HWC2 lines, even reshaped from a rank-3
  // tensor (which is flat).
  Graph f;
  const QuantParams q{{0.05f}, {-3}};
  const TensorId x3 = add_input(f, {1, 4, 32}, DType::i8, q);
  const TensorId rows = *f.add_op(OpKind::reshape, {x3}, new_shape({1, 128}), "rows", DType::i8, q);
  std::vector<uint8_t> wb(16 * 128, 1);
  const TensorId w = add_const(f, "w", {16, 128}, DType::i8, QuantParams{{0.01f}, {0}}, wb);
  const TensorId fc = *f.add_op(OpKind::fully_connected, {rows, w}, {}, "fc", DType::i8, q);
  const std::vector<bool> f3 = flat_tensors(f);
  EXPECT_TRUE(f3[x3]);
  EXPECT_FALSE(f3[rows]);
  EXPECT_FALSE(f3[fc]);
}

TEST(RknpuFlat, CubesAndRunsFactorWithinTheFields) {
  for (int64_t atoms : {1, 16, 2047, 2048, 75600, 42000, 1050, 2100 * 4}) {
    auto c = flat_cube(atoms);
    ASSERT_TRUE(c.ok()) << atoms;
    EXPECT_EQ(c->h * c->w, atoms);
    EXPECT_LE(c->w, 2047);
    EXPECT_LE(c->h, 2047);
  }
  // A prime count of atoms above the width field cannot be a cube.
  EXPECT_FALSE(flat_cube(2053).ok());
  // [1, 80, 8400] at byte 537,600 of [1, 144, 8400]: surfaces dividing every offset and size.
  auto r = flat_run(144 * 8400, 64 * 8400, 80 * 8400, 0, 80 * 8400);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->surface % 16, 0);
  EXPECT_EQ(r->h * r->w * 16, r->surface);
  EXPECT_EQ(r->src_c0 / 16 * r->surface, 64 * 8400);
  EXPECT_EQ(r->channels / 16 * r->surface, 80 * 8400);
  EXPECT_EQ((144 * 8400) % r->surface, 0);
  // A run that is not whole 16-byte atoms is refused.
  EXPECT_FALSE(flat_run(64, 8, 64, 0, 16).ok());
}

TEST(RknpuFlat, AHeadInMiniatureRunsOnTheNpuAsTheCpu) {
  Head h = mini_head();
  Compare c = run_and_compare(h.g, h.input);
  ASSERT_EQ(c.error, "");
  EXPECT_TRUE(c.all_on_npu) << c.fallback;
  SessionRun cpu = run_session(h.g, h.input, "cpu");
  SessionRun on = run_session(h.g, h.input, "rknpu");
  SessionRun off = run_session(h.g, h.input, "rknpu", {{"in_place", "off"}});
  ASSERT_EQ(cpu.error, "");
  ASSERT_EQ(on.error, "");
  ASSERT_EQ(off.error, "");
  ASSERT_EQ(on.out.size(), size_t(48 * 64));
  EXPECT_EQ(on.out, off.out);
  // Rows 16..47 (the LOGISTIC of a run of the row copies' output) are the cpu's bytes; rows
  // 0..15 went through the ADD, TFLite's on all but a few dozen of 65,536 code pairs: within
  // one step.
  int add_diff = 0, add_exact = 0;
  for (size_t i = 0; i < on.out.size(); ++i) {
    const int d = std::abs(int(int8_t(on.out[i])) - int(int8_t(cpu.out[i])));
    if (i < 16 * 64) {
      add_diff = std::max(add_diff, d), add_exact += d == 0;
    } else {
      ASSERT_EQ(d, 0) << "byte " << i;
    }
  }
  EXPECT_LE(add_diff, 1);
  EXPECT_GT(add_exact, 16 * 64 * 9 / 10);
  // The concatenation along axis 2 is two PPU row copies, each input's rows at its offset.
  auto parts = lower_concat_parts(h.g, h.g.nodes()[2]);
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].type, NpuOpType::row_copy);
  EXPECT_EQ((*parts)[0].dst_offset, 0);
  EXPECT_EQ((*parts)[1].dst_offset, 32);
  EXPECT_EQ((*parts)[1].dst_row_bytes, 64);
  EXPECT_EQ((*parts)[1].in_c, 48 * 16);
  // In place: the slices are views of the row copies' output, taking no task; copying
  // (in_place=off) they take time.
  EXPECT_EQ(on.tensors[h.top].alias, h.cat);
  EXPECT_EQ(on.tensors[h.rest].alias, h.cat);
  EXPECT_EQ(on.tensors[h.rest].alias_offset, 16 * 64);
  for (const char* node : {"strided_slice 'top'", "strided_slice 'rest'"}) {
    ASSERT_TRUE(on.node_seconds.count(node)) << node;
    EXPECT_EQ(on.node_seconds[node], 0) << node;
    EXPECT_GT(off.node_seconds[node], 0) << node;
  }
}

TEST(RknpuFlat, WhatIsNotARunStaysOnTheCpuWithTheReason) {
  const DType t = DType::i8;
  const QuantParams q{{0.05f}, {-3}};
  Graph g;
  const TensorId xi = add_input(g, {1, 8, 64}, t, q);
  // Columns of every row: not one run of bytes.
  auto cols = g.add_op(OpKind::strided_slice, {xi}, box({0, 0, 0}, {1, 8, 32}), "cols", t, q);
  // A stride.
  AttrMap strided = box({0, 0, 0}, {1, 8, 64});
  strided["strides"] = std::vector<int64_t>{1, 2, 1};
  auto every_other = g.add_op(OpKind::strided_slice, {xi}, strided, "every_other", t, q);
  // Rows of 8 bytes: half an atom.
  auto narrow = g.add_op(OpKind::strided_slice, {xi}, box({0, 0, 0}, {1, 1, 8}), "narrow", t, q);
  // A requantizing concat.
  auto requant = g.add_op(OpKind::concat, {xi, xi}, {{"axis", int64_t{1}}}, "requant", t, QuantParams{{0.07f}, {1}});
  ASSERT_TRUE(cols.ok() && every_other.ok() && narrow.ok() && requant.ok());
  expect_refused(g, {{0, "not one contiguous run"}, {1, "stride other than 1"}, {2, "16-byte atoms"}, {3, "changes the quantization"}});
}

}  // namespace
}  // namespace tessera::rknpu_test

namespace tessera::rknpu_test {
namespace {

// Two chained tables (lower.h absorbed_table): QUANTIZE after a LOGISTIC that nothing else
// reads is one table of both from the LOGISTIC's input (YOLOv8's class scores): the bytes
// are the cpu's, the LOGISTIC takes no task, and a LOGISTIC read twice runs on its own.
TEST(RknpuTables, ChainedTablesRunAsOne) {
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "logistic read twice" : "logistic read once");
    const DType t = DType::i8;
    Graph g;
    const TensorId xi = add_input(g, {1, 6, 5, 48}, t, QuantParams{{0.07f}, {9}});
    const TensorId s = *g.add_op(OpKind::logistic, {xi}, {}, "sig", t, QuantParams{{1.0f / 256}, {-128}});
    const TensorId q = *g.add_op(OpKind::requantize, {s}, {}, "q", t, QuantParams{{0.0041f}, {-127}});
    TensorId out = q;
    if (shared) out = *g.add_op(OpKind::add, {q, s}, {}, "sum", t, QuantParams{{0.009f}, {-120}});
    g.tensor(out).role = Role::output;
    g.outputs = {out};
    std::mt19937 rng(31);
    const std::vector<uint8_t> input = random_codes(6 * 5 * 48, rng, 0, 255);
    EXPECT_EQ(absorbed_table(g, g.nodes()[1]), shared ? -1 : 0);
    Compare c = run_and_compare(g, input);
    ASSERT_EQ(c.error, "");
    EXPECT_TRUE(c.all_on_npu) << c.fallback;
    if (!shared) {
      EXPECT_EQ(c.exact, c.n) << "max difference " << c.max_diff;
    }
    SessionRun on = run_session(g, input, "rknpu");
    ASSERT_EQ(on.error, "");
    ASSERT_TRUE(on.node_seconds.count("logistic 'sig'"));
    if (shared)
      EXPECT_GT(on.node_seconds["logistic 'sig'"], 0);
    else
      EXPECT_EQ(on.node_seconds["logistic 'sig'"], 0);
  }
}

}  // namespace
}  // namespace tessera::rknpu_test

namespace tessera::rknpu_test {
namespace {

// Moving bytes of a tensor the cpu makes stays on the cpu (lower.cpp made_off_npu): a
// reshape is a free view there and a copy here, and a concatenation of cpu-made inputs costs
// the NPU more than the A76 (docs/rknpu.md "Flat tensors"). What reads them on the NPU still
// runs there, and the bytes are the cpu's.
TEST(RknpuFlat, BytesTheCpuMakesAreMovedOnTheCpu) {
  const DType t = DType::i8;
  const QuantParams q{{0.05f}, {-3}}, qs{{1.0f / 256}, {-128}};
  Graph g;
  const TensorId xi = add_input(g, {1, 4, 8, 16}, t, q);
  const TensorId tr = *g.add_op(OpKind::transpose, {xi}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "tr", t, q);
  const TensorId r = *g.add_op(OpKind::reshape, {tr}, new_shape({1, 8, 64}), "r", t, q);
  const TensorId cat = *g.add_op(OpKind::concat, {r, r}, {{"axis", int64_t{2}}}, "cat", t, q);
  const TensorId s = *g.add_op(OpKind::logistic, {cat}, {}, "s", t, qs);
  g.tensor(s).role = Role::output;
  g.outputs = {s};
  expect_refused(g, {{1, "which the cpu makes"}, {2, "whose inputs the cpu makes"}});
  auto lut = lower_node(g, g.nodes()[3]);
  EXPECT_TRUE(lut.ok()) << lut.status().to_string();
  std::mt19937 rng(41);
  const std::vector<uint8_t> input = random_codes(4 * 8 * 16, rng, 0, 255);
  Compare c = run_and_compare(g, input);
  ASSERT_EQ(c.error, "");
  EXPECT_EQ(c.exact, c.n) << "max difference " << c.max_diff;
  // A reshape of a graph input (the host writes it onto the NPU) runs there.
  Graph h;
  const TensorId hx = add_input(h, {1, 8, 64}, t, q);
  const TensorId hr = *h.add_op(OpKind::reshape, {hx}, new_shape({1, 4, 128}), "hr", t, q);
  h.tensor(hr).role = Role::output;
  h.outputs = {hr};
  auto op = lower_node(h, h.nodes()[0]);
  EXPECT_TRUE(op.ok()) << op.status().to_string();
}

}  // namespace
}  // namespace tessera::rknpu_test
