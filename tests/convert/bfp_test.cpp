// bfp8_b / bfp4_b: the worked example of tile-device.md byte for byte, the tile byte
// layout, the error bound against a double reference, AVX2 == reference, Inf/NaN policy.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/bfp.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

using testing::for_each_simd_level;
using testing::random_floats;

// tile-device.md "Worked example, one face row (E = 128)".
const float kExampleRow[16] = {1.0f,  0.5f,  -0.75f,     3.0f,       0.1f,    0.0f,   -0.0f, 1e-40f,
                               2.99f, -3.1f, 0.015625f, 0.0078125f, 1.5625f, 1.625f, -1.0f / 3.0f, 0.25f};
const uint8_t kExampleBfp8[16] = {0x20, 0x10, 0x98, 0x60, 0x03, 0x00, 0x00, 0x00,
                                  0x60, 0xE3, 0x00, 0x00, 0x32, 0x34, 0x8B, 0x08};
const uint8_t kExampleBfp4Codes[16] = {0x2, 0x1, 0xA, 0x6, 0x0, 0x0, 0x0, 0x0, 0x6, 0xE, 0x0, 0x0, 0x3, 0x3, 0x9, 0x0};

TEST(Bfp, WorkedExampleBfp8ByteForByte) {
  for_each_simd_level([](SimdLevel l) {
    uint8_t codes[16];
    EXPECT_EQ(pack_face_row(kExampleRow, codes, kBfp8MantBits), 128) << simd_level_name(l);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(codes[i], kExampleBfp8[i]) << "value " << i << " " << simd_level_name(l);
  });
}

TEST(Bfp, WorkedExampleBfp4ByteForByte) {
  for_each_simd_level([](SimdLevel l) {
    uint8_t codes[8];
    EXPECT_EQ(pack_face_row(kExampleRow, codes, kBfp4MantBits), 128) << simd_level_name(l);
    for (int i = 0; i < 8; ++i) {
      // Two codes per byte, the first in the low nibble.
      EXPECT_EQ(codes[i] & 0x0F, kExampleBfp4Codes[2 * i]) << "value " << 2 * i << " " << simd_level_name(l);
      EXPECT_EQ(codes[i] >> 4, kExampleBfp4Codes[2 * i + 1]) << "value " << 2 * i + 1 << " " << simd_level_name(l);
    }
  });
}

TEST(Bfp, ClampWithoutRenormalisation) {
  // tile-device.md: "1.999 with E = 127 packs to bfp8 0x7F".
  for_each_simd_level([](SimdLevel l) {
    float row[16] = {1.999f};
    uint8_t codes[16];
    EXPECT_EQ(pack_face_row(row, codes, kBfp8MantBits), 127);
    EXPECT_EQ(codes[0], 0x7F) << simd_level_name(l);
    for (int i = 1; i < 16; ++i) EXPECT_EQ(codes[i], 0);
  });
}

TEST(Bfp, WorkedExampleInsideATileAndBack) {
  // The row placed at face 1, row 3 of a 32x32 tensor: exponent byte 16 + 3, codes after
  // the 64 exponent bytes at face row 19.
  std::vector<float> t(32 * 32, 0.0f);
  for (int i = 0; i < 16; ++i) t[3 * 32 + 16 + i] = kExampleRow[i];
  Format from = Format::row_major(DType::f32, {32, 32});
  Format to = Format::tiled(Encoding::bfp8_b, {32, 32});
  std::vector<uint8_t> tile(*to.byte_size());
  ASSERT_TRUE(convert(from, t.data(), to, tile.data()).ok());
  ASSERT_EQ(tile.size(), 1088u);
  for (int k = 0; k < 64; ++k) EXPECT_EQ(tile[k], k == 19 ? 128 : 0) << "exponent byte " << k;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(tile[64 + 19 * 16 + i], kExampleBfp8[i]);
  // Back to f32: each value is its code's value m * 2^(E - 133).
  std::vector<float> back(32 * 32);
  ASSERT_TRUE(convert(to, tile.data(), from, back.data()).ok());
  for (int i = 0; i < 16; ++i) {
    int c = kExampleBfp8[i];
    double want = (c & 0x80 ? -1 : 1) * (c & 0x7F) * std::ldexp(1.0, 128 - 133);
    EXPECT_EQ(back[3 * 32 + 16 + i], static_cast<float>(want)) << i;
  }
}

// The spec's steps in double-free integer arithmetic are in bfp.cpp; here the bound is
// held against the exact values in double.
TEST(Bfp, ErrorBoundHoldsOnRandomRows) {
  for (int wbits : {kBfp8MantBits, kBfp4MantBits}) {
    auto v = random_floats(16 * 4000, 11 + wbits, true, -140, 100);
    for (size_t r = 0; r < v.size() / 16; ++r) {
      const float* row = &v[r * 16];
      uint8_t codes[16];
      float back[16];
      uint8_t e = pack_face_row(row, codes, wbits);
      unpack_face_row(e, codes, back, wbits);
      const double bound = std::max(std::ldexp(1.0, e - 127 - (wbits - 1)), std::ldexp(1.0, -126));
      for (int i = 0; i < 16; ++i)
        ASSERT_LE(std::fabs(static_cast<double>(row[i]) - back[i]), bound)
            << "W=" << wbits << " row " << r << " value " << row[i] << " E " << int(e);
    }
  }
}

TEST(Bfp, Avx2MatchesReferenceOnRandomAndSpecialRows) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  auto v = random_floats(16 * 20000, 5, true, -150, 127);
  // Ties: values exactly half a code step apart from each other within the row.
  for (int i = 0; i < 16; ++i) v[i] = 1.0f + i * 0.0078125f * 0.5f;
  for (int wbits : {kBfp8MantBits, kBfp4MantBits}) {
    for (size_t r = 0; r < v.size() / 16; ++r) {
      uint8_t a[16] = {}, b[16] = {};
      uint8_t ea = ref::pack_face_row(&v[r * 16], a, wbits), eb = avx2::pack_face_row(&v[r * 16], b, wbits);
      ASSERT_EQ(ea, eb) << "row " << r;
      ASSERT_EQ(0, std::memcmp(a, b, bfp_row_bytes(wbits))) << "W=" << wbits << " row " << r;
      float fa[16], fb[16];
      ref::unpack_face_row(ea, a, fa, wbits);
      avx2::unpack_face_row(eb, b, fb, wbits);
      ASSERT_EQ(0, std::memcmp(fa, fb, sizeof(fa))) << "row " << r;
    }
  }
  // Every exponent byte and code decodes identically.
  for (int wbits : {kBfp8MantBits, kBfp4MantBits})
    for (int e = 0; e < 256; ++e) {
      uint8_t codes[16];
      for (int c = 0; c < 256; c += 16) {
        for (int i = 0; i < 16; ++i) codes[i] = static_cast<uint8_t>(c + i);
        float fa[16], fb[16];
        ref::unpack_face_row(static_cast<uint8_t>(e), codes, fa, wbits);
        avx2::unpack_face_row(static_cast<uint8_t>(e), codes, fb, wbits);
        ASSERT_EQ(0, std::memcmp(fa, fb, sizeof(fa))) << "E " << e << " codes from " << c;
      }
    }
#endif
}

TEST(Bfp, TilesAvx2MatchReferenceOnOddShapes) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no AVX2 kernels on this architecture";
#else
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  for (Shape s : {Shape{3, 33, 47}, Shape{1, 5}, Shape{70}, Shape{2, 64, 96}}) {
    const TileGeom g = tile_geom(s);
    auto v = random_floats(num_elements(s), 17, true);
    for (int wbits : {kBfp8MantBits, kBfp4MantBits}) {
      std::vector<uint8_t> a(g.tiles() * bfp_tile_bytes(wbits), 0xCD), b(a.size(), 0xEF);
      BfpBadRow bad;
      ASSERT_EQ(ref::pack_f32_tiles(v.data(), a.data(), g, wbits, &bad, true), 0);
      ASSERT_EQ(avx2::pack_f32_tiles(v.data(), b.data(), g, wbits, &bad, true), 0);
      ASSERT_EQ(a, b) << shape_str(s) << " W=" << wbits;
      std::vector<float> fa(v.size()), fb(v.size());
      ref::unpack_tiles(a.data(), fa.data(), g, wbits);
      avx2::unpack_tiles(b.data(), fb.data(), g, wbits);
      ASSERT_EQ(0, std::memcmp(fa.data(), fb.data(), fa.size() * 4)) << shape_str(s);
    }
  }
#endif
}

TEST(Bfp, PaddingIsZeroAndRoundTripOfDecodedValuesIsExact) {
  // A tensor whose values already are bfp values packs back to the same values.
  Shape s{2, 40, 50};
  auto v = random_floats(num_elements(s), 23, false, -10, 10);
  for (Encoding e : {Encoding::bfp8_b, Encoding::bfp4_b}) {
    Format f32 = Format::row_major(DType::f32, s), t = Format::tiled(e, s);
    std::vector<uint8_t> tiles(*t.byte_size());
    ASSERT_TRUE(convert(f32, v.data(), t, tiles.data()).ok());
    std::vector<float> once(v.size()), twice(v.size());
    ASSERT_TRUE(convert(t, tiles.data(), f32, once.data()).ok());
    ASSERT_TRUE(convert(f32, once.data(), t, tiles.data()).ok());
    ASSERT_TRUE(convert(t, tiles.data(), f32, twice.data()).ok());
    EXPECT_EQ(0, std::memcmp(once.data(), twice.data(), once.size() * 4)) << encoding_name(e);
    // Tile (0, 1) of slice 0 covers columns 32..63: columns 50..63 are padding, so face 1
    // rows hold codes only for columns 48, 49.
    const int wbits = bfp_mant_bits(e);
    const uint8_t* tile1 = tiles.data() + bfp_tile_bytes(wbits);
    const uint8_t* row0 = tile1 + 64 + 16 * bfp_row_bytes(wbits);  // face 1, row 0
    if (wbits == kBfp8MantBits) {
      for (int i = 2; i < 16; ++i) EXPECT_EQ(row0[i], 0) << i;
    }
  }
}

TEST(Bfp, InfOrNanRowIsRejectedWithItsPosition) {
  Shape s{2, 40, 50};
  std::vector<float> v(num_elements(s), 1.0f);
  v[(1 * 40 + 37) * 50 + 20] = std::nanf("");  // slice 1, row 37, column 20
  Format f32 = Format::row_major(DType::f32, s), t = Format::tiled(Encoding::bfp8_b, s);
  std::vector<uint8_t> tiles(*t.byte_size());
  Status st = convert(f32, v.data(), t, tiles.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  const std::string& m = st.message();
  // Tile (slice 1, tile row 1, tile col 0) = index 1*2*2 + 1*2 + 0 = 6; row 37 -> tile row 5
  // -> face 0, row 5; the face row covers columns 16..31 (face 1).
  EXPECT_NE(m.find("tile 6 face 1 row 5"), std::string::npos) << m;
  EXPECT_NE(m.find("logical row 37"), std::string::npos) << m;
  EXPECT_NE(m.find("columns 16..31"), std::string::npos) << m;
  EXPECT_NE(m.find("Inf or NaN"), std::string::npos) << m;

  // Inf too, and in bfp4.
  v[(1 * 40 + 37) * 50 + 20] = INFINITY;
  EXPECT_FALSE(convert(f32, v.data(), Format::tiled(Encoding::bfp4_b, s), tiles.data()).ok());

  // The "pack" policy packs the row as the hardware would and counts it.
  Options opt;
  opt.bfp_nonfinite = Options::NonFinite::pack;
  Stats stats;
  ASSERT_TRUE(convert(f32, v.data(), t, tiles.data(), opt, &stats).ok());
  EXPECT_EQ(stats.nonfinite_rows, 1);
  EXPECT_EQ(tiles[6 * 1088 + 16 + 5], 255);  // exponent byte of face 1 row 5 of tile 6
}

}  // namespace
}  // namespace tessera::convert
