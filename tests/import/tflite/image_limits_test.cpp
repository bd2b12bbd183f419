// Image limits (issue 18): a zero side or a header claiming more pixels than the limit is
// refused from the header, before a pixel is decoded, with a message naming the image.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "fixtures.h"
#include "import/tflite/image.h"

namespace tessera {
namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }
void put32(Bytes& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }

// A 24-bit BMP whose header claims width x height, followed by `pixel_bytes` of seeded
// pixel data (fewer than the header implies when the file is a lie).
Bytes bmp(int32_t width, int32_t height, size_t pixel_bytes) {
  Bytes b(54 + pixel_bytes);
  b[0] = 'B';
  b[1] = 'M';
  put32(b, 2, static_cast<uint32_t>(b.size()));
  put32(b, 10, 54);  // pixel data offset
  put32(b, 14, 40);  // BITMAPINFOHEADER
  put32(b, 18, static_cast<uint32_t>(width));
  put32(b, 22, static_cast<uint32_t>(height));
  put16(b, 26, 1);   // planes
  put16(b, 28, 24);  // bits per pixel
  for (size_t i = 54; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 29 + 3);
  return b;
}

// A baseline JPEG that stops after its frame header (SOF0): enough for the header to
// state a size, not enough to decode.
Bytes jpeg_header(uint16_t width, uint16_t height) {
  Bytes b = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 0x08,
             static_cast<uint8_t>(height >> 8), static_cast<uint8_t>(height), static_cast<uint8_t>(width >> 8),
             static_cast<uint8_t>(width), 0x01, 0x01, 0x11, 0x00};
  b.resize(3000, 0);  // a 3 KB file, like the reproducer
  return b;
}

TEST(ImageLimits, AValidBmpDecodes) {
  Bytes b = bmp(5, 3, 3 * 16);  // rows of 15 bytes padded to 16
  auto img = tflite::decode_image(b.data(), b.size(), "'small.bmp'");
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  EXPECT_EQ(img->width, 5);
  EXPECT_EQ(img->height, 3);
  EXPECT_EQ(img->pixels.size(), 5u * 3 * 3);
}

TEST(ImageLimits, ZeroWidthBmpIsRefused) {
  Bytes b = bmp(0, 4, 64);
  auto img = tflite::decode_image(b.data(), b.size(), "'zero.bmp'");
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("'zero.bmp'"), std::string::npos) << img.status().message();
}

TEST(ImageLimits, HugeHeadersAreRefusedBeforeDecoding) {
  // 0.9 MB of data claiming 20000x20000 (1.2 GB of RGB), and a 3 KB JPEG of the same size.
  const Bytes big_bmp = bmp(20000, 20000, 900000);
  const Bytes big_jpeg = jpeg_header(20000, 20000);
  for (const auto& [name, b] : {std::pair{"'big.bmp'", big_bmp}, std::pair{"'big.jpg'", big_jpeg}}) {
    auto t0 = std::chrono::steady_clock::now();
    auto img = tflite::decode_image(b.data(), b.size(), name);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(img.ok()) << name;
    const std::string& msg = img.status().message();
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find("20000x20000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allowed"), std::string::npos) << msg;
    EXPECT_LT(s, 1.0) << name << " took " << s << " s: it was decoded";
  }
  // Under a caller's smaller limit a small image is refused too.
  Bytes b = bmp(64, 64, 64 * 64 * 3);
  EXPECT_FALSE(tflite::decode_image(b.data(), b.size(), "'x'", 1000).ok());
  EXPECT_TRUE(tflite::decode_image(b.data(), b.size(), "'x'", 4096).ok());
}

TEST(ImageLimits, PngChunksLongerThanTheFileAreRefused) {
  // A 1x1 RGBA PNG, valid; then the same with its IDAT length set to 0x4452000a (1.1 GB),
  // which stb would allocate before finding the data missing.
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1,
               8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 10, 'I', 'D', 'A', 'T', 0x78, 0x9c, 0x63, 0, 1, 0,
               0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
  auto ok = tflite::decode_image(png.data(), png.size(), "'one.png'");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->width, 1);
  png[33] = 0x44;
  png[34] = 0x52;
  png[35] = 0x00;
  png[36] = 0x0a;
  auto bad = tflite::decode_image(png.data(), png.size(), "'long_chunk.png'");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PNG chunk at byte 33 claims 1146224650 bytes"), std::string::npos)
      << bad.status().message();
}

TEST(ImageLimits, ATruncatedLastPngChunkIsCheckedToo) {
  // Found by image_fuzz: after a valid IDAT, a second IDAT header claiming 0x49b40000 bytes
  // with one byte of data left (no room for a CRC): stb grew its buffer to 2 GiB.
  const Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 5, 0, 0, 0, 2,
                     1, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0a, 'I', 'D', 'A', 'T', 0x78, 0x9c, 0x63, 0x20,
                     0x01, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0x00, 0x49, 0xb4, 0, 0, 'I', 'D', 'A', 'T', 0xac};
  auto bad = tflite::decode_image(png.data(), png.size(), "'truncated.png'");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("claims 1236533248 bytes but only 1 remain"), std::string::npos)
      << bad.status().message();
}

TEST(ImageLimits, InputConversionRefusesAnEmptyImage) {
  Tensor t;
  t.name = "input";
  t.shape = {1, 8, 8, 3};
  t.dtype = DType::u8;
  tflite::Image empty;
  empty.channels = 3;
  auto r = tflite::image_to_input(empty, t);
  ASSERT_FALSE(r.ok());
  // An input tensor larger than any image is refused rather than allocated.
  t.shape = {1, 1 << 20, 1 << 20, 3};
  tflite::Image one{1, 1, 3, {1, 2, 3}};
  EXPECT_FALSE(tflite::image_to_input(one, t).ok());
}

TEST(ImageLimits, ReadImageRefusesDirectoriesAndNamesTheFile) {
  auto r = tflite::read_image(::testing::TempDir());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("directory"), std::string::npos) << r.status().message();
  TESSERA_REQUIRE_FIXTURE(cat, "images/cat.bmp");
  EXPECT_TRUE(tflite::read_image(cat).ok());
}

}  // namespace
}  // namespace tessera
