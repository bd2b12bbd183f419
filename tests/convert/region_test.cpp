// Region writes and reads (KV-cache rows, boxes) on tile32, bfp tiles, nc1hwc2, nchw and
// row-major tensors: results equal converting the whole modified tensor, the
// read-modify-write cost is what the page geometry says, bad regions are errors.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/bfp.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

// Copies rows [r0, r1) of `rows` (shape [outer, r1-r0, W]) into `whole` ([outer, H, W]).
template <typename T>
void patch_rows(std::vector<T>& whole, const std::vector<T>& rows, int64_t outer, int64_t H, int64_t W, int64_t r0,
                int64_t r1) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t w = 0; w < W; ++w) whole[(o * H + r) * W + w] = rows[(o * (r1 - r0) + (r - r0)) * W + w];
}

TEST(Region, TileRowsEqualWholeConversionAndReportRmw) {
  const int64_t O = 2, H = 70, W = 50;
  const Shape s{O, H, W};
  Format tiled = Format::tiled(Encoding::f32, s);
  auto base = testing::random_floats(O * H * W, 1);
  std::vector<uint8_t> dev(*tiled.byte_size());
  ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), tiled, dev.data()).ok());
  struct Case {
    int64_t r0, r1, rmw_tiles;
  };
  // Bands of 32 rows, 2 tiles wide, 2 slices: a band is read back unless the rows cover
  // all of its logical rows (the last band has only rows 64..69).
  for (Case c : {Case{10, 40, 8}, Case{32, 64, 0}, Case{64, 70, 0}, Case{0, 1, 4}, Case{33, 34, 4}}) {
    auto rows = testing::random_floats(O * (c.r1 - c.r0) * W, 100 + c.r0);
    Stats st;
    ASSERT_TRUE(write_region(tiled, dev.data(), Region::rows(s, -2, c.r0, c.r1),
                             Format::row_major(DType::f32, {O, c.r1 - c.r0, W}), rows.data(), &st)
                    .ok());
    EXPECT_EQ(st.rmw_bytes, c.rmw_tiles * 4096) << c.r0 << ".." << c.r1;
    patch_rows(base, rows, O, H, W, c.r0, c.r1);
    std::vector<uint8_t> want(dev.size());
    ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), tiled, want.data()).ok());
    ASSERT_EQ(dev, want) << c.r0 << ".." << c.r1;
    // Read the same rows back.
    std::vector<float> got(rows.size());
    ASSERT_TRUE(read_region(tiled, dev.data(), Region::rows(s, -2, c.r0, c.r1),
                            Format::row_major(DType::f32, {O, c.r1 - c.r0, W}), got.data())
                    .ok());
    EXPECT_EQ(0, std::memcmp(got.data(), rows.data(), rows.size() * 4));
  }
}

TEST(Region, KvCacheRowByRowIntoBf16Tiles) {
  // [heads=2, ctx=40, dim=48] written one position at a time from f32 (rounded to bf16).
  const Shape s{2, 40, 48};
  Format kv = Format::tiled(Encoding::bf16, s);
  std::vector<uint8_t> dev(*kv.byte_size(), 0);
  auto all = testing::random_floats(num_elements(s), 2);
  for (int64_t t = 0; t < 40; ++t) {
    std::vector<float> row(2 * 48);
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 48; ++d) row[h * 48 + d] = all[(h * 40 + t) * 48 + d];
    ASSERT_TRUE(write_region(kv, dev.data(), Region::rows(s, 1, t, t + 1), Format::row_major(DType::f32, {2, 1, 48}),
                             row.data())
                    .ok());
  }
  std::vector<uint8_t> want(dev.size());
  ASSERT_TRUE(convert(Format::row_major(DType::f32, s), all.data(), kv, want.data()).ok());
  EXPECT_EQ(dev, want);
}

TEST(Region, BfpRowsRepackOnlyTheirFaceRows) {
  const Shape s{40, 64};
  for (Encoding e : {Encoding::bfp8_b, Encoding::bfp4_b}) {
    Format t = Format::tiled(e, s);
    auto base = testing::random_floats(40 * 64, 3, false, -5, 5);
    std::vector<uint8_t> dev(*t.byte_size());
    ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), t, dev.data()).ok());
    // Full-width rows: every touched face row is covered, nothing is read back, and the
    // bytes equal packing the whole modified tensor.
    auto rows = testing::random_floats(5 * 64, 4, false, -5, 5);
    Stats st;
    ASSERT_TRUE(
        write_region(t, dev.data(), Region::rows(s, 0, 30, 35), Format::row_major(DType::f32, {5, 64}), rows.data(), &st)
            .ok());
    EXPECT_EQ(st.rmw_bytes, 0);
    patch_rows(base, rows, 1, 40, 64, 30, 35);
    std::vector<uint8_t> want(dev.size());
    ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), t, want.data()).ok());
    ASSERT_EQ(dev, want) << encoding_name(e);

    // A box of columns [20, 40) in rows [2, 4): face rows (cols 16..31) and (32..47) of
    // both rows are partly covered: 4 face rows read back and re-packed.
    std::vector<float> before(40 * 64);
    ASSERT_TRUE(convert(t, dev.data(), Format::row_major(DType::f32, s), before.data()).ok());
    auto box = testing::random_floats(2 * 20, 5, false, -5, 5);
    Region r{{2, 20}, {4, 40}};
    Stats st2;
    ASSERT_TRUE(write_region(t, dev.data(), r, Format::row_major(DType::f32, {2, 20}), box.data(), &st2).ok());
    const int wbits = bfp_mant_bits(e);
    EXPECT_EQ(st2.rmw_bytes, 4 * (1 + bfp_row_bytes(wbits)));
    std::vector<float> after(40 * 64);
    ASSERT_TRUE(convert(t, dev.data(), Format::row_major(DType::f32, s), after.data()).ok());
    for (int h = 0; h < 40; ++h)
      for (int w = 0; w < 64; ++w) {
        const bool in_box = h >= 2 && h < 4 && w >= 20 && w < 40;
        const bool in_touched_row = h >= 2 && h < 4 && w >= 16 && w < 48;
        const float want_v = in_box ? box[(h - 2) * 20 + (w - 20)] : before[h * 64 + w];
        if (!in_touched_row) {
          ASSERT_EQ(after[h * 64 + w], want_v) << h << "," << w;  // untouched face rows keep their bytes
        } else {
          // Re-packed: within one code step of the row's new exponent (values < 2^6).
          ASSERT_LE(std::fabs(after[h * 64 + w] - want_v), std::ldexp(1.0, 6 - (wbits - 1))) << h << "," << w;
        }
      }
  }
}

TEST(Region, Nc1hwc2ChannelBoxFromU8HostIntoI8Blocks) {
  const Shape s{1, 3, 4, 40};  // C1 = 3 blocks of 16
  Format dev_fmt{Encoding::i8, Layout::nc1hwc2, s};
  auto base = testing::random_bytes(num_elements(s), 6);
  std::vector<uint8_t> dev(*dev_fmt.byte_size());
  Format host = Format::row_major(DType::u8, s);
  ASSERT_TRUE(convert(host, base.data(), dev_fmt, dev.data()).ok());
  // Channels [5, 20) of rows [1, 3): lines c1 = 0 and c1 = 1 of 2*4 pixels are partial.
  Region r{{0, 1, 0, 5}, {1, 3, 4, 20}};
  auto box = testing::random_bytes(2 * 4 * 15, 7);
  Stats st;
  ASSERT_TRUE(write_region(dev_fmt, dev.data(), r, Format::row_major(DType::u8, {1, 2, 4, 15}), box.data(), &st).ok());
  EXPECT_EQ(st.rmw_bytes, 2 * 4 * 2 * 16);
  for (int h = 1; h < 3; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 5; c < 20; ++c) base[(h * 4 + w) * 40 + c] = box[((h - 1) * 4 + w) * 15 + (c - 5)];
  std::vector<uint8_t> want(dev.size());
  ASSERT_TRUE(convert(host, base.data(), dev_fmt, want.data()).ok());
  EXPECT_EQ(dev, want);
  std::vector<uint8_t> got(box.size());
  ASSERT_TRUE(read_region(dev_fmt, dev.data(), r, Format::row_major(DType::u8, {1, 2, 4, 15}), got.data()).ok());
  EXPECT_EQ(got, box);
}

TEST(Region, OtherLayoutsPatchTheWholeTensor) {
  const Shape s{1, 2, 3, 4};
  Format nchw{Encoding::f32, Layout::nchw, s};
  auto base = testing::random_floats(24, 8);
  std::vector<float> dev(24);
  ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), nchw, dev.data()).ok());
  std::vector<float> row = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  Stats st;
  ASSERT_TRUE(
      write_region(nchw, dev.data(), Region::rows(s, 1, 1, 2), Format::row_major(DType::f32, {1, 1, 3, 4}), row.data(), &st)
          .ok());
  EXPECT_EQ(st.rmw_bytes, 24 * 4);
  std::copy(row.begin(), row.end(), base.begin() + 12);
  std::vector<float> want(24);
  ASSERT_TRUE(convert(Format::row_major(DType::f32, s), base.data(), nchw, want.data()).ok());
  EXPECT_EQ(dev, want);
}

TEST(Region, RowMajorBoxWithACast) {
  const Shape s{4, 6};
  std::vector<uint16_t> dev(24, 0);
  Format whole{Encoding::bf16, Layout::row_major, s};
  std::vector<float> box = {1.0f, 2.0f, 3.0f, 4.0f};
  ASSERT_TRUE(write_region(whole, dev.data(), Region{{1, 2}, {3, 4}}, Format::row_major(DType::f32, {2, 2}), box.data())
                  .ok());
  EXPECT_EQ(dev[1 * 6 + 2], 0x3F80);  // 1.0 in bf16
  EXPECT_EQ(dev[2 * 6 + 3], 0x4080);  // 4.0
  std::vector<float> back(4);
  ASSERT_TRUE(read_region(whole, dev.data(), Region{{1, 2}, {3, 4}}, Format::row_major(DType::f32, {2, 2}), back.data())
                  .ok());
  EXPECT_EQ(back, box);
}

TEST(Region, BadRegionsAreClearErrors) {
  const Shape s{2, 40, 50};
  Format t = Format::tiled(Encoding::f32, s);
  std::vector<uint8_t> dev(*t.byte_size());
  std::vector<float> rows(2 * 10 * 50);
  Status st = write_region(t, dev.data(), Region::rows(s, 1, 35, 45), Format::row_major(DType::f32, {2, 10, 50}),
                           rows.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::out_of_range);
  EXPECT_NE(st.message().find("dim 1"), std::string::npos) << st.message();
  // The source does not match the region's extent.
  st = write_region(t, dev.data(), Region::rows(s, 1, 0, 10), Format::row_major(DType::f32, {2, 9, 50}), rows.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("extent"), std::string::npos) << st.message();
  st = read_region(t, dev.data(), Region{{0, 0}, {1, 1}}, Format::row_major(DType::f32, {1, 1}), rows.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank"), std::string::npos) << st.message();
  // Inf in a bfp region write names the face row.
  Format b = Format::tiled(Encoding::bfp8_b, s);
  std::vector<uint8_t> bdev(*b.byte_size());
  rows.assign(rows.size(), 1.0f);
  rows[3] = INFINITY;
  st = write_region(b, bdev.data(), Region::rows(s, 1, 0, 10), Format::row_major(DType::f32, {2, 10, 50}), rows.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tile 0 face 0 row 0"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera::convert
