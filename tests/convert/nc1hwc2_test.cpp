// NC1HWC2 and NCHW: element positions per rknpu.md, padded channels = zero point, the
// u8 -> i8 offset on the way in, exact round trips.
#include <gtest/gtest.h>

#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

TEST(Nc1hwc2, ElementsAndPaddingFollowTheSpec) {
  // [N=2, H=3, W=5, C=20] u8 -> [2][2][3][5][16]; channels 20..31 hold the pad value.
  const Shape s{2, 3, 5, 20};
  auto v = testing::random_bytes(num_elements(s), 1);
  Format to{Encoding::u8, Layout::nc1hwc2, s};
  to.pad_value = 128;  // a u8 zero point
  std::vector<uint8_t> out(*to.byte_size(), 0x11);
  ASSERT_EQ(out.size(), 2u * 2 * 3 * 5 * 16);
  ASSERT_TRUE(convert(Format::row_major(DType::u8, s), v.data(), to, out.data()).ok());
  for (int n = 0; n < 2; ++n)
    for (int c1 = 0; c1 < 2; ++c1)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 5; ++w)
          for (int c2 = 0; c2 < 16; ++c2) {
            int c = c1 * 16 + c2;
            uint8_t got = out[(((n * 2 + c1) * 3 + h) * 5 + w) * 16 + c2];
            uint8_t want = c < 20 ? v[((n * 3 + h) * 5 + w) * 20 + c] : 128;
            ASSERT_EQ(got, want) << n << "," << c1 << "," << h << "," << w << "," << c2;
          }
  std::vector<uint8_t> back(v.size());
  ASSERT_TRUE(convert(to, out.data(), Format::row_major(DType::u8, s), back.data()).ok());
  EXPECT_EQ(back, v);
}

// Rank 2 [rows, C] (a fully connected layer's activations) is the line [1, 1, rows, C]:
// [ceil(C/16)][rows][16], with the u8 offset and the padded channels as for feature maps,
// and partial row regions touch only their lines.
TEST(Nc1hwc2, RowsAreOneLineOfPixels) {
  const Shape s{3, 20};
  auto v = testing::random_bytes(num_elements(s), 9);
  Format to{Encoding::i8, Layout::nc1hwc2, s};
  to.pad_value = 5 - 128;  // u8 zero point 5 stored as i8
  EXPECT_EQ(to.padded_shape(), (Shape{1, 2, 1, 3, 16}));
  std::vector<uint8_t> out(*to.byte_size(), 0x11);
  ASSERT_EQ(out.size(), 2u * 3 * 16);
  ASSERT_TRUE(convert(Format::row_major(DType::u8, s), v.data(), to, out.data()).ok());
  for (int c1 = 0; c1 < 2; ++c1)
    for (int r = 0; r < 3; ++r)
      for (int c2 = 0; c2 < 16; ++c2) {
        const int c = c1 * 16 + c2;
        const uint8_t want = c < 20 ? static_cast<uint8_t>(v[r * 20 + c] ^ 0x80) : static_cast<uint8_t>(5 - 128);
        ASSERT_EQ(out[(c1 * 3 + r) * 16 + c2], want) << r << "," << c;
      }
  std::vector<uint8_t> back(v.size());
  ASSERT_TRUE(convert(to, out.data(), Format::row_major(DType::u8, s), back.data()).ok());
  EXPECT_EQ(back, v);
  // Row 1 rewritten through a region: rows 0 and 2 keep their bytes.
  auto row = testing::random_bytes(20, 10);
  const std::vector<uint8_t> before = out;
  ASSERT_TRUE(write_region(to, out.data(), Region::rows(s, 0, 1, 2), Format::row_major(DType::u8, {1, 20}), row.data()).ok());
  std::vector<uint8_t> got(20);
  ASSERT_TRUE(read_region(to, out.data(), Region::rows(s, 0, 1, 2), Format::row_major(DType::u8, {1, 20}), got.data()).ok());
  EXPECT_EQ(got, row);
  for (int c1 = 0; c1 < 2; ++c1)
    for (int r : {0, 2})
      for (int c2 = 0; c2 < 16; ++c2) ASSERT_EQ(out[(c1 * 3 + r) * 16 + c2], before[(c1 * 3 + r) * 16 + c2]);
}

TEST(Nc1hwc2, U8NhwcToI8BlocksAppliesTheOffset) {
  const Shape s{1, 4, 3, 3};  // an RGB image: one block of 16 with 13 padded channels
  auto v = testing::random_bytes(num_elements(s), 2);
  Format to{Encoding::i8, Layout::nc1hwc2, s};
  to.pad_value = 128 - 128;  // u8 zero point 128 stored as i8 0
  std::vector<uint8_t> out(*to.byte_size());
  ASSERT_TRUE(convert(Format::row_major(DType::u8, s), v.data(), to, out.data()).ok());
  for (int p = 0; p < 12; ++p)
    for (int c = 0; c < 16; ++c) {
      int8_t got = static_cast<int8_t>(out[p * 16 + c]);
      EXPECT_EQ(got, c < 3 ? v[p * 3 + c] - 128 : 0);
    }
  auto steps = plan(Format::row_major(DType::u8, s), to);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 1u);  // fused: offset and relayout in one pass
  std::vector<uint8_t> back(v.size());
  ASSERT_TRUE(convert(to, out.data(), Format::row_major(DType::u8, s), back.data()).ok());
  EXPECT_EQ(back, v);
}

TEST(Nc1hwc2, RoundTripIsExactForWideEncodingsAndOddChannels) {
  for (Encoding e : {Encoding::i8, Encoding::f16, Encoding::f32, Encoding::i32}) {
    for (int64_t c : {1, 15, 16, 17, 48}) {
      const Shape s{2, 3, 7, c};
      Format rm{e, Layout::row_major, s}, bl{e, Layout::nc1hwc2, s};
      bl.pad_value = 0;
      auto v = testing::random_bytes(*rm.byte_size(), 3 + c);
      std::vector<uint8_t> out(*bl.byte_size()), back(v.size());
      ASSERT_TRUE(convert(rm, v.data(), bl, out.data()).ok());
      ASSERT_TRUE(convert(bl, out.data(), rm, back.data()).ok());
      EXPECT_EQ(back, v) << encoding_name(e) << " C=" << c;
    }
  }
}

TEST(Nc1hwc2, PadValueMustFitTheEncoding) {
  Format to{Encoding::i8, Layout::nc1hwc2, {1, 2, 2, 3}};
  to.pad_value = 200;
  std::vector<uint8_t> v(12), out(64);
  Status st = convert(Format::row_major(DType::i8, to.shape), v.data(), to, out.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("pad value 200"), std::string::npos) << st.message();
  Format bad{Encoding::i8, Layout::nc1hwc2, {2, 2, 3}};
  EXPECT_FALSE(plan(Format::row_major(DType::i8, bad.shape), bad).ok());
}

TEST(Nchw, TransposeBothWaysExactly) {
  const Shape s{2, 5, 7, 3};
  for (Encoding e : {Encoding::u8, Encoding::f32, Encoding::i64}) {
    Format rm{e, Layout::row_major, s}, cm{e, Layout::nchw, s};
    const int es = *rm.byte_size() / num_elements(s);
    auto v = testing::random_bytes(*rm.byte_size(), 4);
    std::vector<uint8_t> out(v.size()), back(v.size());
    ASSERT_TRUE(convert(rm, v.data(), cm, out.data()).ok());
    for (int n = 0; n < 2; ++n)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 7; ++w)
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(0, std::memcmp(&out[(((n * 3 + c) * 5 + h) * 7 + w) * es], &v[(((n * 5 + h) * 7 + w) * 3 + c) * es],
                                     es));
    ASSERT_TRUE(convert(cm, out.data(), rm, back.data()).ok());
    EXPECT_EQ(back, v);
  }
  // u8 NHWC -> f32 NCHW chains a cast and a transpose.
  auto p = plan(Format::row_major(DType::u8, s), Format{Encoding::f32, Layout::nchw, s});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 2u);
}

}  // namespace
}  // namespace tessera::convert
