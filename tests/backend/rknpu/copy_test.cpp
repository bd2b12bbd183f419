// Channel copies on the rknpu device model (lower.cpp copy_op, docs/rknpu.md "Channel
// copies"): STRIDED_SLICE of a channel range and CONCATENATION along channels, in whole
// 16-channel blocks, as DPU tasks with every stage bypassed that read and write NC1HWC2
// surfaces at channel offsets. They move bytes, so the NPU's result equals the cpu's byte
// for byte; what does not fit whole blocks, or requantizes, stays on the cpu with the reason.
#include <gtest/gtest.h>

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
  Tensor x;
  x.name = "x";
  x.shape = {1, h, w, c};
  x.dtype = t;
  x.quant = q;
  x.role = Role::input;
  TensorId xi = s.g.add_tensor(x);
  s.g.inputs = {xi};
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

TEST(RknpuCopy, PartialBlocksAndRequantizationStayOnTheCpu) {
  const DType t = DType::i8;
  const QuantParams q{{0.05f}, {-3}};
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, 4, 4, 48};
  x.dtype = t;
  x.quant = q;
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  g.inputs = {xi};
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
  const std::pair<int, const char*> expect[] = {
      {0, "16-channel blocks"}, {1, "channels only"}, {2, "requantizes"}, {3, "16-channel blocks"}};
  for (auto [i, why] : expect) {
    auto op = lower_node(g, g.nodes()[i]);
    ASSERT_FALSE(op.ok()) << i;
    EXPECT_NE(op.status().message().find(why), std::string::npos) << op.status().message();
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
