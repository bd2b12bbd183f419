// The RK3588 weight layouts: packing positions, padding, value checks, and the Format
// byte sizes that account for them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/rk_weights.h"
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

}  // namespace
}  // namespace tessera::convert
