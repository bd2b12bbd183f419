// The registry reaches the RK3588 weight packing: convert() to rk_conv_weight /
// rk_dw_weight gives the packers' bytes, and the reverse direction is a clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/rk_weights.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

std::vector<int32_t> random_codes(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(RkWeightRules, ConvPackingThroughTheRegistryMatchesThePacker) {
  for (const Shape& s : {Shape{3, 3, 3, 5}, Shape{40, 1, 1, 70}, Shape{33, 5, 5, 16}}) {
    auto d = random_codes(num_elements(s), 11, -128, 127);
    std::vector<uint8_t> src(d.size());
    for (size_t i = 0; i < d.size(); ++i) src[i] = static_cast<uint8_t>(static_cast<int8_t>(d[i]));
    Format from{Encoding::i8, Layout::row_major, s};
    Format to{Encoding::i8, Layout::rk_conv_weight, s};
    std::vector<uint8_t> out(*to.byte_size(), 0xAB);
    ASSERT_TRUE(convert(from, src.data(), to, out.data()).ok()) << shape_str(s);
    auto direct = pack_rk_conv_weights(s, d, 1);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(out, *direct) << shape_str(s);
    auto steps = plan(from, to);
    ASSERT_TRUE(steps.ok());
    ASSERT_EQ(steps->size(), 1u);
    EXPECT_TRUE((*steps)[0].exact);
  }
}

TEST(RkWeightRules, DepthwiseInt16PackingThroughTheRegistryMatchesThePacker) {
  Shape s{1, 3, 3, 70};
  auto d = random_codes(num_elements(s), 12, -255, 255);  // w - zp of u8 weights needs 9 bits
  std::vector<uint8_t> src(d.size() * 2);
  for (size_t i = 0; i < d.size(); ++i) {
    int16_t v = static_cast<int16_t>(d[i]);
    std::memcpy(&src[2 * i], &v, 2);
  }
  Format from{Encoding::i16, Layout::row_major, s};
  Format to{Encoding::i16, Layout::rk_dw_weight, s};
  std::vector<uint8_t> out(*to.byte_size());
  ASSERT_TRUE(convert(from, src.data(), to, out.data()).ok());
  auto direct = pack_rk_dw_weights(s, d, 2);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(out, *direct);
}

TEST(RkWeightRules, UnpackingIsNotOffered) {
  Shape s{4, 3, 3, 8};
  auto steps = plan(Format{Encoding::i8, Layout::rk_conv_weight, s}, Format{Encoding::i8, Layout::row_major, s});
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("rk_conv_weight"), std::string::npos) << steps.status().message();
}

}  // namespace
}  // namespace tessera::convert
