// The RK3588 weight layouts: packing positions, padding, value checks, and the Format
// byte sizes that account for them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/rk_weights.h"
#include "tessera/backend/convert.h"
#include "tessera/format.h"

namespace tessera::convert {
namespace {

TEST(RkWeights, ConvBlocksOf32x32WithPartialLastBlocks) {
  // OC 40 -> groups of 32 and 8; IC 40 -> padded 64, blocks of 32 and 32.
  Shape s{40, 3, 3, 40};
  auto g = rk_conv_geometry(s);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ocp, 40);
  EXPECT_EQ(g->icp, 64);
  std::vector<int32_t> d(40 * 3 * 3 * 40);
  std::mt19937 rng(1);
  for (auto& v : d) v = int(rng() % 255) - 127;
  auto packed = pack_rk_conv_weights(s, d, 1);
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(static_cast<int64_t>(packed->size()), 40 * 9 * 64);
  Format f{Encoding::i8, Layout::rk_conv_weight, s};
  EXPECT_EQ(*f.byte_size(), static_cast<int64_t>(packed->size()));
  // First element of the second output group, second input block: after the whole first
  // group (32 x 9 x 64) and the second group's first input block (8 kernels x 9 x 32).
  EXPECT_EQ(rk_conv_weight_index(*g, 32, 0, 0, 32), 32 * 9 * 64 + 8 * 9 * 32);
  // Within a block: [kh][kw][oc][ic].
  EXPECT_EQ(rk_conv_weight_index(*g, 1, 0, 1, 2), (1 * 32 + 1) * 32 + 2);
  // Every logical value lands where the index says; padding is zero.
  std::vector<bool> hit(packed->size(), false);
  for (int64_t o = 0; o < 40; ++o)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 3; ++x)
        for (int64_t i = 0; i < 40; ++i) {
          int64_t k = rk_conv_weight_index(*g, o, y, x, i);
          ASSERT_FALSE(hit[k]) << "two values at " << k;
          hit[k] = true;
          EXPECT_EQ(int8_t((*packed)[k]), d[((o * 3 + y) * 3 + x) * 40 + i]);
        }
  for (size_t k = 0; k < hit.size(); ++k)
    if (!hit[k]) {
      EXPECT_EQ((*packed)[k], 0) << k;
    }
}

TEST(RkWeights, SmallInputChannelsPadTo16AndOddOutputsToEven) {
  auto g = rk_conv_geometry({3, 1, 1, 3});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->icp, 16);
  EXPECT_EQ(g->ocp, 4);
  Format f{Encoding::i16, Layout::rk_conv_weight, {3, 1, 1, 3}};
  EXPECT_EQ(*f.byte_size(), 4 * 16 * 2);
}

TEST(RkWeights, DepthwiseGroupsOf64) {
  Shape s{1, 3, 3, 80};  // groups of 64 and 16
  auto g = rk_dw_geometry(s);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->cp, 80);
  EXPECT_EQ(rk_dw_weight_index(*g, 0, 0, 64), 64 * 9);
  EXPECT_EQ(rk_dw_weight_index(*g, 1, 2, 65), 64 * 9 + (1 * 3 + 2) * 16 + 1);
  std::vector<int32_t> d(9 * 80, 300);
  auto p8 = pack_rk_dw_weights(s, d, 1);
  ASSERT_FALSE(p8.ok()) << "300 does not fit int8";
  EXPECT_NE(p8.status().message().find("does not fit int8"), std::string::npos);
  auto p16 = pack_rk_dw_weights(s, d, 2);
  ASSERT_TRUE(p16.ok());
  Format f{Encoding::i16, Layout::rk_dw_weight, s};
  EXPECT_EQ(*f.byte_size(), static_cast<int64_t>(p16->size()));
  int16_t v;
  std::memcpy(&v, p16->data() + 2 * rk_dw_weight_index(*g, 2, 2, 79), 2);
  EXPECT_EQ(v, 300);
}

TEST(RkWeights, BadShapesAreErrors) {
  EXPECT_FALSE(rk_conv_geometry({3, 3, 3}).ok());
  EXPECT_FALSE(rk_dw_geometry({2, 3, 3, 8}).ok());
  EXPECT_FALSE(pack_rk_conv_weights({2, 1, 1, 2}, {1, 2, 3}, 1).ok());
}

// The matmul's weight blocks (rk_matmul_weight, rknpu-matmul.md "Layouts"): f16 [N, K] ->
// [N/16][K/32][16][32] through the registry, every element where the index says, padding 0,
// and the byte size of the padded blocks; i8 blocks hold 32 kernels.
TEST(RkMatmulWeights, F16BlocksPlaceEveryKernelsKRunAndPadWithZeros) {
  const int64_t n = 40, k = 70;  // N pads to 48, K to 96
  std::vector<uint16_t> src(static_cast<size_t>(n * k));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint16_t>(0x3C00 + (i * 7919) % 1021 + 1);  // no zeros
  const Format from{Encoding::f16, Layout::row_major, {n, k}}, to{Encoding::f16, Layout::rk_matmul_weight, {n, k}};
  auto bytes = to.byte_size();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 48 * 96 * 2);
  std::vector<uint16_t> dst(static_cast<size_t>(*bytes / 2), 0xFFFF);
  ASSERT_TRUE(convert::convert(from, src.data(), to, dst.data()).ok());
  const convert::RkMatmulGeometry g = convert::rk_matmul_geometry(n, k, 2);
  std::vector<bool> seen(dst.size(), false);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const int64_t i = convert::rk_matmul_weight_index(g, r, c);
      ASSERT_LT(i, static_cast<int64_t>(dst.size()));
      EXPECT_EQ(dst[i], src[r * k + c]);
      seen[i] = true;
    }
  for (size_t i = 0; i < dst.size(); ++i) {
    if (!seen[i]) {
      EXPECT_EQ(dst[i], 0) << i;
    }
  }
  // Block (1, 2) starts at byte (1 * 3 + 2) KiB and holds kernel 16's K values 64..69 first.
  EXPECT_EQ(dst[(1 * 3 + 2) * 512], src[16 * k + 64]);
  EXPECT_EQ(convert::rk_matmul_geometry(40, 70, 1).np, 64);  // i8: 32 kernels per block
  EXPECT_FALSE((Format{Encoding::f32, Layout::rk_matmul_weight, {n, k}}.byte_size().ok()));
}

}  // namespace
}  // namespace tessera::convert
