// Channel copies on the rknpu device model (lower.cpp copy_op, docs/rknpu.md "Channel
// copies"): STRIDED_SLICE of a channel range and CONCATENATION along channels, in whole
// 16-channel blocks, as DPU tasks with every stage bypassed that read and write NC1HWC2
// surfaces at channel offsets. They move bytes, so the NPU's result equals the cpu's byte
// for byte; what does not fit whole blocks, or requantizes, stays on the cpu with the reason.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backend/rknpu/lower.h"
#include "backend/rknpu/rknpu_test_util.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

AttrMap channel_slice(int64_t h, int64_t w, int64_t b, int64_t e) {
  return {{"begin", std::vector<int64_t>{0, 0, 0, b}},
          {"end", std::vector<int64_t>{1, h, w, e}},
          {"strides", std::vector<int64_t>{1, 1, 1, 1}},
          {"shrink_axes", std::vector<int64_t>{}}};
}

struct SplitGraph {
  Graph g;
  std::vector<uint8_t> input;
};

// YOLOv8's C2f pattern: x [1, 12, 10, 64] split into two halves (STRIDED_SLICE), each
// half's SiLU, and the concatenation of [second half, SiLU(first half), x] -> 128 channels.
SplitGraph split_concat(DType t) {
  SplitGraph s;
  const int64_t h = 12, w = 10, c = 64;
  const QuantParams q{{0.05f}, {t == DType::u8 ? 120 : -3}};
  const TensorId xi = add_input(s.g, {1, h, w, c}, t, q);
  auto a = s.g.add_op(OpKind::strided_slice, {xi}, channel_slice(h, w, 0, 32), "a", t, q);
  auto b = s.g.add_op(OpKind::strided_slice, {xi}, channel_slice(h, w, 32, 64), "b", t, q);
  EXPECT_TRUE(a.ok() && b.ok());
  auto sig = s.g.add_op(OpKind::logistic, {*a}, {}, "sig", t, QuantParams{{1.0f / 256}, {t == DType::u8 ? 0 : -128}});
  EXPECT_TRUE(sig.ok());
  auto silu = s.g.add_op(OpKind::mul, {*a, *sig}, {}, "silu", t, q);
  EXPECT_TRUE(silu.ok());
  auto y = s.g.add_op(OpKind::concat, {*b, *silu, xi}, {{"axis", int64_t{3}}}, "y", t, q);
  EXPECT_TRUE(y.ok());
  s.g.tensor(*y).role = Role::output;
  s.g.outputs = {*y};
  std::mt19937 rng(5);
  s.input = random_codes(static_cast<size_t>(h * w * c), rng, 0, 255);
  return s;
}

TEST(RknpuCopy, SplitSiluConcatRunsOnTheNpuByteForByte) {
  for (DType t : {DType::i8, DType::u8}) {
    SCOPED_TRACE(dtype_name(t));
    SplitGraph s = split_concat(t);
    Compare r = run_and_compare(s.g, s.input);
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.n, 12 * 10 * 128);
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
    // The concat is one copy per input, each to its channel offset.
    auto parts = lower_concat_parts(s.g, s.g.nodes()[4]);
    ASSERT_TRUE(parts.ok()) << parts.status().to_string();
    ASSERT_EQ(parts->size(), 3u);
    EXPECT_EQ((*parts)[0].dst_c0, 0);
    EXPECT_EQ((*parts)[1].dst_c0, 32);
    EXPECT_EQ((*parts)[2].dst_c0, 64);
    EXPECT_EQ((*parts)[2].out_c, 64);
    auto second = lower_node(s.g, s.g.nodes()[1]);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->type, NpuOpType::copy);
    EXPECT_EQ(second->src_c0, 32);
  }
}

// In place (Device::views, plan_memory.cpp adopt_device_views): YOLOv8's C2f with every
// part made on the NPU. y = f(x) is split into halves y0, y1; m = f(y1); o = concat
// [y0, y1, m]; the output reads o. The plan keeps y inside o (so y0, y1 inside it too) and
// m after them: the slices and the concatenation take no task, and the bytes are the cpu's
// and those of the copying program (in_place=off).
struct InPlaceGraph {
  Graph g;
  std::vector<uint8_t> input;
  TensorId y = kNoTensor, y0 = kNoTensor, y1 = kNoTensor, m = kNoTensor, o = kNoTensor;
};
InPlaceGraph c2f_in_place() {
  InPlaceGraph s;
  const int64_t h = 12, w = 10;
  const DType t = DType::i8;
  const QuantParams qx{{0.05f}, {-3}}, qs{{1.0f / 256}, {-128}};
  const TensorId xi = add_input(s.g, {1, h, w, 64}, t, qx);
  s.y = *s.g.add_op(OpKind::logistic, {xi}, {}, "y", t, qs);
  s.y0 = *s.g.add_op(OpKind::strided_slice, {s.y}, channel_slice(h, w, 0, 32), "y0", t, qs);
  s.y1 = *s.g.add_op(OpKind::strided_slice, {s.y}, channel_slice(h, w, 32, 64), "y1", t, qs);
  s.m = *s.g.add_op(OpKind::logistic, {s.y1}, {}, "m", t, qs);
  s.o = *s.g.add_op(OpKind::concat, {s.y0, s.y1, s.m}, {{"axis", int64_t{3}}}, "o", t, qs);
  auto out = s.g.add_op(OpKind::logistic, {s.o}, {}, "out", t, qs);
  EXPECT_TRUE(out.ok());
  s.g.tensor(*out).role = Role::output;
  s.g.outputs = {*out};
  std::mt19937 rng(11);
  s.input = random_codes(static_cast<size_t>(h * w * 64), rng, 0, 255);
  return s;
}

TEST(RknpuCopy, C2fSlicesAndConcatStayInPlace) {
  InPlaceGraph s = c2f_in_place();
  Compare c = run_and_compare(s.g, s.input);
  ASSERT_EQ(c.error, "");
  EXPECT_TRUE(c.all_on_npu) << c.fallback;
  EXPECT_EQ(c.exact, c.n) << "max difference " << c.max_diff;
  SessionRun on = run_session(s.g, s.input, "rknpu");
  SessionRun off = run_session(s.g, s.input, "rknpu", {{"in_place", "off"}});
  ASSERT_EQ(on.error, "");
  ASSERT_EQ(off.error, "");
  EXPECT_EQ(on.out, off.out);
  // Where the plan put them: y (and its halves) at the start of o, m after them.
  const int64_t surface = 12 * 10 * 16;
  EXPECT_EQ(on.tensors[s.y].alias, s.o);
  EXPECT_EQ(on.tensors[s.y].alias_offset, 0);
  EXPECT_EQ(on.tensors[s.y0].alias, s.o);
  EXPECT_EQ(on.tensors[s.y0].alias_offset, 0);
  EXPECT_EQ(on.tensors[s.y1].alias, s.o);
  EXPECT_EQ(on.tensors[s.y1].alias_offset, 2 * surface);
  EXPECT_EQ(on.tensors[s.m].alias, s.o);
  EXPECT_EQ(on.tensors[s.m].alias_offset, 4 * surface);
  EXPECT_EQ(on.tensors[s.o].alias, kNoTensor);
  EXPECT_EQ(off.tensors[s.y].alias, kNoTensor);
  // No task for the slices and the concatenation; the copies cost time when made.
  for (const char* node : {"strided_slice 'y0'", "strided_slice 'y1'", "concat 'o'"}) {
    ASSERT_TRUE(on.node_seconds.count(node)) << node;
    EXPECT_EQ(on.node_seconds[node], 0) << node;
    EXPECT_GT(off.node_seconds[node], 0) << node;
  }
  EXPECT_LT(on.modelled, off.modelled);
}

// What must not move: o = concat [y0, z] takes only one half of y (y1 is read after it),
// so y cannot sit inside o -- z's bytes would land on y1. z moves into o, y0 is copied,
// and the outputs are the cpu's. The later w = concat [o, y1] moves o but copies y1 (y
// cannot sit there either).
TEST(RknpuCopy, AHalfOfATensorIsCopiedNotMoved) {
  const int64_t h = 6, w = 5;
  const DType t = DType::i8;
  const QuantParams qx{{0.05f}, {-3}}, qs{{1.0f / 256}, {-128}};
  Graph g;
  const TensorId xi = add_input(g, {1, h, w, 64}, t, qx);
  TensorId y = *g.add_op(OpKind::logistic, {xi}, {}, "y", t, qs);
  TensorId y0 = *g.add_op(OpKind::strided_slice, {y}, channel_slice(h, w, 0, 32), "y0", t, qs);
  TensorId y1 = *g.add_op(OpKind::strided_slice, {y}, channel_slice(h, w, 32, 64), "y1", t, qs);
  TensorId z = *g.add_op(OpKind::logistic, {y1}, {}, "z", t, qs);
  TensorId o = *g.add_op(OpKind::concat, {y0, z}, {{"axis", int64_t{3}}}, "o", t, qs);
  TensorId wt = *g.add_op(OpKind::concat, {o, y1}, {{"axis", int64_t{3}}}, "w", t, qs);
  g.tensor(wt).role = Role::output;
  g.outputs = {wt};
  std::mt19937 rng(12);
  const std::vector<uint8_t> input = random_codes(static_cast<size_t>(h * w * 64), rng, 0, 255);
  Compare c = run_and_compare(g, input);
  ASSERT_EQ(c.error, "");
  EXPECT_TRUE(c.all_on_npu) << c.fallback;
  EXPECT_EQ(c.exact, c.n) << "max difference " << c.max_diff;
  SessionRun on = run_session(g, input, "rknpu");
  ASSERT_EQ(on.error, "");
  const int64_t surface = h * w * 16;
  EXPECT_EQ(on.tensors[y].alias, kNoTensor);
  EXPECT_EQ(on.tensors[y1].alias, y);
  EXPECT_EQ(on.tensors[y1].alias_offset, 2 * surface);
  EXPECT_EQ(on.tensors[z].alias, wt);  // inside o, which is inside w
  EXPECT_EQ(on.tensors[z].alias_offset, 2 * surface);
  EXPECT_EQ(on.tensors[o].alias, wt);
  EXPECT_GT(on.node_seconds["concat 'o'"], 0);  // y0's copy
  EXPECT_GT(on.node_seconds["concat 'w'"], 0);  // y1's copy
}

TEST(RknpuCopy, PartialBlocksAndRequantizationStayOnTheCpu) {
  const DType t = DType::i8;
  const QuantParams q{{0.05f}, {-3}};
  Graph g;
  const TensorId xi = add_input(g, {1, 4, 4, 48}, t, q);
  auto part = g.add_op(OpKind::strided_slice, {xi}, channel_slice(4, 4, 8, 16), "part", t, q);
  auto rows = g.add_op(OpKind::strided_slice, {xi},
                       {{"begin", std::vector<int64_t>{0, 1, 0, 0}},
                        {"end", std::vector<int64_t>{1, 3, 4, 48}},
                        {"strides", std::vector<int64_t>{1, 1, 1, 1}},
                        {"shrink_axes", std::vector<int64_t>{}}},
                       "rows", t, q);
  auto requant = g.add_op(OpKind::concat, {xi, xi}, {{"axis", int64_t{3}}}, "requant", t, QuantParams{{0.07f}, {1}});
  auto odd = g.add_op(OpKind::concat, {*part, xi}, {{"axis", int64_t{3}}}, "odd", t, q);
  ASSERT_TRUE(part.ok() && rows.ok() && requant.ok() && odd.ok());
  expect_refused(g, {{0, "16-channel blocks"}, {1, "channels only"}, {2, "requantizes"}, {3, "16-channel blocks"}});
}

}  // namespace
}  // namespace tessera::rknpu_test
