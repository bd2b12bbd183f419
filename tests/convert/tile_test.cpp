// tile32 layout: element positions per tile-device.md, per-slice zero padding, exact round
// trips for every plain encoding and rank, AVX2 == reference.
#include <gtest/gtest.h>

#include "convert/dtype.h"
#include "convert/tile.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

TEST(Tile, OffsetFormulaOfTheSpec) {
  // tile-device.md: ((h%32)/16*2 + (w%32)/16)*256 + (h%16)*16 + (w%16).
  for (int h = 0; h < 32; ++h)
    for (int w = 0; w < 32; ++w) EXPECT_EQ(tile_offset(h, w), (h / 16 * 2 + w / 16) * 256 + (h % 16) * 16 + (w % 16));
}

// Expected tiled bytes computed element by element from the spec, for an i32 tensor whose
// values are their own logical index + 1 (so padding zeros are distinguishable).
std::vector<int32_t> expected_tiles(const Shape& s) {
  TileGeom g = tile_geom(s);
  std::vector<int32_t> out(g.tiles() * 1024, 0);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t h = 0; h < g.h; ++h)
      for (int64_t w = 0; w < g.w; ++w) {
        int64_t tile = (o * g.tiles_h + h / 32) * g.tiles_w + w / 32;
        out[tile * 1024 + tile_offset(h % 32, w % 32)] = static_cast<int32_t>((o * g.h + h) * g.w + w + 1);
      }
  return out;
}

TEST(Tile, EveryElementLandsWhereTheSpecSaysForAnyRank) {
  testing::SimdGuard guard;
  for (Shape s : {Shape{}, Shape{5}, Shape{1, 1}, Shape{33, 40}, Shape{3, 33, 40}, Shape{2, 2, 31, 65}, Shape{64, 32}}) {
    std::vector<int32_t> v(num_elements(s));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i + 1);
    auto want = expected_tiles(s);
    testing::for_each_simd_level([&](SimdLevel l) {
      Format rm = Format::row_major(DType::i32, s), t = Format::tiled(Encoding::i32, s);
      std::vector<int32_t> got(*t.byte_size() / 4, -1);
      ASSERT_TRUE(convert(rm, v.data(), t, got.data()).ok());
      EXPECT_EQ(got, want) << shape_str(s) << " " << simd_level_name(l);
      std::vector<int32_t> back(v.size(), -1);
      ASSERT_TRUE(convert(t, got.data(), rm, back.data()).ok());
      EXPECT_EQ(back, v) << shape_str(s);
    });
  }
}

TEST(Tile, RoundTripIsExactForEveryPlainEncoding) {
  const Shape s{2, 45, 77};
  for (Encoding e : {Encoding::f32, Encoding::bf16, Encoding::f16, Encoding::u8, Encoding::i8, Encoding::i16,
                     Encoding::i32, Encoding::i64, Encoding::boolean}) {
    Format rm{e, Layout::row_major, s}, t{e, Layout::tile32, s};
    auto src = testing::random_bytes(*rm.byte_size(), 100 + static_cast<int>(e));
    std::vector<uint8_t> tiled(*t.byte_size()), back(src.size());
    ASSERT_TRUE(convert(rm, src.data(), t, tiled.data()).ok()) << encoding_name(e);
    ASSERT_TRUE(convert(t, tiled.data(), rm, back.data()).ok());
    EXPECT_EQ(src, back) << encoding_name(e);
    auto p = plan(rm, t);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE((*p)[0].exact);
  }
}

TEST(Tile, Avx2MatchesReferenceOnOddShapes) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  for (Shape s : {Shape{7, 3}, Shape{3, 33, 47}, Shape{96, 100}}) {
    TileGeom g = tile_geom(s);
    for (int es : {1, 2, 4, 8}) {
      auto src = testing::random_bytes(num_elements(s) * es, es);
      std::vector<uint8_t> a(g.tiles() * 1024 * es, 0xAA), b(a.size(), 0x55);
      ref::tilize(src.data(), a.data(), g, es);
      avx2::tilize(src.data(), b.data(), g, es);
      ASSERT_EQ(a, b) << shape_str(s) << " esize " << es;
      std::vector<uint8_t> ra(src.size()), rb(src.size());
      ref::untilize(a.data(), ra.data(), g, es);
      avx2::untilize(b.data(), rb.data(), g, es);
      ASSERT_EQ(ra, src);
      ASSERT_EQ(rb, src);
    }
  }
#endif
}

TEST(Tile, F32ToBf16TilesChainsAndIsRoundedOnce) {
  const Shape s{3, 50};
  auto v = testing::random_floats(150, 8);
  Format from = Format::row_major(DType::f32, s), to = Format::tiled(Encoding::bf16, s);
  auto p = plan(from, to);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_FALSE((*p)[0].exact);
  std::vector<uint16_t> tiles(*to.byte_size() / 2);
  ASSERT_TRUE(convert(from, v.data(), to, tiles.data()).ok());
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 50; ++w)
      EXPECT_EQ(tiles[(w / 32) * 1024 + tile_offset(h, w % 32)], f32_to_bf16(v[h * 50 + w]));
}

TEST(Tile, FusedRecodeAndTilizeEqualsTheTwoSteps) {
  // recode_tilize / untilize_recode work band by band; compare with recode then tilize.
  for (Shape s : {Shape{2, 45, 77}, Shape{33}, Shape{64, 64}}) {
    auto v = testing::random_floats(num_elements(s), 21, true);
    for (Encoding e : {Encoding::bf16, Encoding::f16, Encoding::i8, Encoding::i32}) {
      Format f32 = Format::row_major(DType::f32, s), mid{e, Layout::row_major, s}, t{e, Layout::tile32, s};
      std::vector<uint8_t> staged(*mid.byte_size()), two(*t.byte_size()), fused(*t.byte_size());
      ASSERT_TRUE(convert(f32, v.data(), mid, staged.data()).ok());
      ASSERT_TRUE(convert(mid, staged.data(), t, two.data()).ok());
      ASSERT_TRUE(convert(f32, v.data(), t, fused.data()).ok());
      EXPECT_EQ(fused, two) << encoding_name(e) << " " << shape_str(s);
      std::vector<float> back_two(v.size()), back_fused(v.size());
      ASSERT_TRUE(convert(mid, staged.data(), f32, back_two.data()).ok());
      ASSERT_TRUE(convert(t, fused.data(), f32, back_fused.data()).ok());
      EXPECT_EQ(0, std::memcmp(back_two.data(), back_fused.data(), v.size() * 4)) << encoding_name(e);
    }
  }
}

TEST(Tile, U8ToI8TilesAppliesTheOffsetExactly) {
  const Shape s{3, 40};
  auto u = testing::random_bytes(120, 5);
  Format rm = Format::row_major(DType::u8, s), t{Encoding::i8, Layout::tile32, s};
  std::vector<uint8_t> tiles(*t.byte_size()), back(u.size());
  ASSERT_TRUE(convert(rm, u.data(), t, tiles.data()).ok());
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 40; ++w)
      ASSERT_EQ(static_cast<int8_t>(tiles[(w / 32) * 1024 + tile_offset(h, w % 32)]), u[h * 40 + w] - 128);
  ASSERT_TRUE(convert(t, tiles.data(), rm, back.data()).ok());
  EXPECT_EQ(back, u);
}

}  // namespace
}  // namespace tessera::convert
