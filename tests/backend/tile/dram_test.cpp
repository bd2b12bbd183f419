// The DRAM model: page interleaving, equal per-bank ranges, footprints, capacity.
#include "backend/tile/dram.h"

#include <gtest/gtest.h>

#include <numeric>

#include "backend/tile/pages.h"

namespace tessera::tile {
namespace {

TEST(Dram, FootprintRoundsPagesToBanksAndAlignment) {
  Dram d(12, int64_t{1} << 30, 32);
  // 13 bfp8 tiles of 1088 B (already 32-aligned): ceil(13/12) = 2 pages per bank.
  EXPECT_EQ(d.footprint(13, 1088), 12 * 2 * 1088);
  // A row of 100 bytes pads to 128 in the bank.
  EXPECT_EQ(d.footprint(24, 100), 12 * 2 * 128);
  Dram b(8, int64_t{4} << 30, 64);
  EXPECT_EQ(b.footprint(1, 576), 8 * 576);   // 576 = 9 x 64
  EXPECT_EQ(b.footprint(9, 2048), 8 * 2 * 2048);
}

TEST(Dram, PageIGoesToBankIModNAtBasePlusRowTimesSlot) {
  Dram d(12, int64_t{1} << 30, 32);
  auto first = d.allocate(d.footprint(5, 100));  // occupies [0, 128) in every bank
  ASSERT_TRUE(first.ok());
  auto id = d.allocate(d.footprint(30, 100));
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  for (int64_t i = 0; i < 30; ++i) {
    auto loc = d.locate(*id, 100, i);
    ASSERT_TRUE(loc.ok());
    EXPECT_EQ(loc->bank, i % 12);
    EXPECT_EQ(loc->address, 128u + static_cast<uint64_t>(i / 12) * 128u) << i;
  }
  // Three rows of slots per bank: page 36 would be the fourth.
  EXPECT_FALSE(d.locate(*id, 100, 36).ok());
}

TEST(Dram, GatherScatterMovesWholePagesThroughTheBanks) {
  Dram d(12, int64_t{1} << 30, 32);
  const int64_t page = 40, pages = 25;
  auto id = d.allocate(d.footprint(pages, page));
  ASSERT_TRUE(id.ok());
  std::vector<uint8_t> image(page * pages);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 7 + 3);
  std::vector<int64_t> all(pages);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_TRUE(d.scatter(*id, page, all, image.data()).ok());
  // Page 14 lives in bank 2 at slot row 1 (slot = 64 bytes).
  auto raw = d.read_bank(2, 64, page);
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(std::equal(raw->begin(), raw->end(), image.begin() + 14 * page));
  std::vector<uint8_t> back(image.size(), 0);
  ASSERT_TRUE(d.gather(*id, page, all, back.data()).ok());
  EXPECT_EQ(back, image);
}

TEST(Dram, ExhaustingABankIsOutOfMemoryAndFreeingMakesRoom) {
  Dram d(4, 4096, 32);  // tiny banks: 4 x 4 KiB
  auto a = d.allocate(4 * 3072);
  ASSERT_TRUE(a.ok());
  auto b = d.allocate(4 * 2048);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(b.status().message().find("banks"), std::string::npos) << b.status().message();
  ASSERT_TRUE(d.free(*a).ok());
  EXPECT_TRUE(d.allocate(4 * 2048).ok());
  EXPECT_FALSE(d.free(999).ok());
}

TEST(Pages, TiledRowRegionTouchesOnlyItsTileRows) {
  // KV cache [2 heads, 128 rows, 64 dims] in tiles: 4 x 2 tiles per head.
  Format f = Format::tiled(Encoding::bf16, {2, 128, 64});
  auto n = page_count(f);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 16);
  auto p = touched_pages(f, Region::rows(f.shape, 1, 40, 41));
  ASSERT_TRUE(p.ok());
  // Row 40 is tile row 1: tiles (1,0),(1,1) of head 0 = 2,3 and of head 1 = 10,11.
  EXPECT_EQ(*p, (std::vector<int64_t>{2, 3, 10, 11}));
}

TEST(Pages, RowMajorPagesAreRows) {
  Format f = Format::row_major(DType::f32, {10, 6});
  EXPECT_EQ(*page_count(f), 10);
  EXPECT_EQ(*touched_pages(f, Region::rows(f.shape, 0, 3, 5)), (std::vector<int64_t>{3, 4}));
}

}  // namespace
}  // namespace tessera::tile
