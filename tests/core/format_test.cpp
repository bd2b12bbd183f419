#include <gtest/gtest.h>

#include "tessera/format.h"

namespace tessera {
namespace {

TEST(Format, RowMajorBytesFollowTheDtype) {
  EXPECT_EQ(*Format::row_major(DType::f32, {2, 3, 5}).byte_size(), 2 * 3 * 5 * 4);
  EXPECT_EQ(*Format::row_major(DType::u8, {1, 224, 224, 3}).byte_size(), 224 * 224 * 3);
  EXPECT_EQ(*Format::row_major(DType::f32, {}).byte_size(), 4);  // scalar
  // GGUF blocks: 32 values in 34 (q8_0) or 18 (q4_0) bytes.
  EXPECT_EQ(*Format::row_major(DType::q8_0, {4, 64}).byte_size(), 4 * 2 * 34);
  EXPECT_EQ(*Format::row_major(DType::q4_0, {4, 64}).byte_size(), 4 * 2 * 18);
  auto bad = Format::row_major(DType::q4_0, {4, 33}).byte_size();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block size"), std::string::npos);
}

TEST(Format, Tile32PadsEverySliceOnItsOwn) {
  // [3, 33, 40]: each 33x40 slice pads to 64x64 -> 4 tiles; 3 slices -> 12 tiles.
  Format f = Format::tiled(Encoding::f32, {3, 33, 40});
  EXPECT_EQ(f.padded_shape(), (Shape{3 * 64, 64}));
  EXPECT_EQ(*f.byte_size(), 12 * 4096);
  EXPECT_EQ(f.page_size(), 4096);
  // tile-device.md: bf16 2048, bfp8_b 64 + 1024, bfp4_b 64 + 512 bytes per tile.
  EXPECT_EQ(*Format::tiled(Encoding::bf16, {32, 32}).byte_size(), 2048);
  EXPECT_EQ(*Format::tiled(Encoding::bfp8_b, {32, 32}).byte_size(), 1088);
  EXPECT_EQ(*Format::tiled(Encoding::bfp4_b, {32, 32}).byte_size(), 576);
  // Rank 1 is a single row: [1, W].
  EXPECT_EQ(*Format::tiled(Encoding::bf16, {100}).byte_size(), 4 * 2048);
  EXPECT_FALSE(Format::tiled(Encoding::q8_0, {32, 32}).byte_size().ok());
}

TEST(Format, Nc1hwc2RoundsChannelsUpToC2) {
  Format f{Encoding::i8, Layout::nc1hwc2, {1, 5, 7, 20}};
  EXPECT_EQ(f.padded_shape(), (Shape{1, 2, 5, 7, 16}));
  EXPECT_EQ(*f.byte_size(), 2 * 5 * 7 * 16);
  Format bad{Encoding::i8, Layout::nc1hwc2, {5, 7, 20}};
  EXPECT_FALSE(bad.byte_size().ok());
}

TEST(Format, ParseAcceptsShortNamesAndRejectsUnknownOnes) {
  auto f = Format::parse("bfp8_b/tile", {64, 64});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->encoding, Encoding::bfp8_b);
  EXPECT_EQ(f->layout, Layout::tile32);
  EXPECT_EQ(Format::parse("u8/nc1hwc2", {1, 2, 2, 3})->layout, Layout::nc1hwc2);
  EXPECT_EQ(Format::parse("i8/nhwc", {1, 2, 2, 3})->layout, Layout::row_major);
  auto e = Format::parse("bfp9/tile", {32, 32});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("bfp9"), std::string::npos);
  auto l = Format::parse("f32/zigzag", {32, 32});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("zigzag"), std::string::npos);
  // bfp encodings exist only tiled.
  EXPECT_FALSE(Format::parse("bfp4_b", {32, 32}).ok());
}

TEST(Types, BroadcastFollowsNumpy) {
  EXPECT_EQ(*broadcast_shapes({4, 1, 3}, {5, 1}), (Shape{4, 5, 3}));
  EXPECT_EQ(*broadcast_shapes({}, {2, 2}), (Shape{2, 2}));
  auto bad = broadcast_shapes({4, 3}, {2, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[4,3]"), std::string::npos);
}

}  // namespace
}  // namespace tessera
