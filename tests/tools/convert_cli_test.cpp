// `tessera convert`: device bytes for bf16/bfp8_b/bfp4_b tiles from f32 shapes that are
// not multiples of 32 (equal to the library's conversion), the way back, region updates,
// and a clear error for each kind of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <unistd.h>

#include "tessera/backend/convert.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {


class ConvertCli : public testing::CliTest {
 protected:
  // Runs `tessera convert ARGS`.
  int run(const std::string& args) { return CliTest::run("convert " + args); }
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST_F(ConvertCli, DeviceBytesForTileFormatsAndBack) {
  const Shape s{3, 45, 77};  // neither 45 nor 77 is a multiple of 32
  auto v = random_values(num_elements(s), 1);
  write("in.f32", v);
  Format f32 = Format::row_major(DType::f32, s);
  for (Encoding e : {Encoding::bf16, Encoding::bfp8_b, Encoding::bfp4_b}) {
    const std::string name = encoding_name(e);
    ASSERT_EQ(run("--shape 3,45,77 --from f32 --to " + name + "/tile " + path("in.f32") + " " + path("out")), 0) << err_;
    Format t = Format::tiled(e, s);
    std::vector<uint8_t> want(*t.byte_size());
    ASSERT_TRUE(convert::convert(f32, v.data(), t, want.data()).ok());
    auto got = read_bytes("out");
    ASSERT_EQ(got.size(), want.size()) << name;  // 3 slices x 2 x 3 tiles
    EXPECT_EQ(got, want) << name;
    ASSERT_EQ(run("--shape 3,45,77 --from " + name + "/tile --to f32 " + path("out") + " " + path("back")), 0) << err_;
    auto back = read_bytes("back");
    ASSERT_EQ(back.size(), v.size() * 4);
    std::vector<float> bf(v.size());
    std::memcpy(bf.data(), back.data(), back.size());
    // bf16: one rounding (relative 2^-9); bfp: one code step of the row's exponent (|v| < 4 -> E <= 128).
    for (size_t i = 0; i < v.size(); ++i) {
      double bound = e == Encoding::bf16 ? std::fabs(v[i]) * std::ldexp(1.0, -8)
                                         : std::ldexp(1.0, 1 - (e == Encoding::bfp8_b ? 6 : 2));
      ASSERT_LE(std::fabs(bf[i] - v[i]), bound) << name << " element " << i;
    }
  }
  EXPECT_NE(out_.find("unpack_bfp"), std::string::npos) << out_;
}

TEST_F(ConvertCli, NhwcToNc1hwc2WithZeroPoint) {
  std::vector<uint8_t> img(2 * 2 * 3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>(i * 20);
  write("img.u8", img);
  ASSERT_EQ(run("--shape 1,2,2,3 --from u8/nhwc --to i8/nc1hwc2 --pad-value 0 " + path("img.u8") + " " + path("nc")), 0)
      << err_;
  auto nc = read_bytes("nc");
  ASSERT_EQ(nc.size(), 4u * 16);
  for (int p = 0; p < 4; ++p)
    for (int c = 0; c < 16; ++c)
      EXPECT_EQ(static_cast<int8_t>(nc[p * 16 + c]), c < 3 ? img[p * 3 + c] - 128 : 0);
}

TEST_F(ConvertCli, RegionWriteUpdatesTheDeviceFileInPlace) {
  const Shape s{40, 50};
  auto v = random_values(2000, 2);
  write("in.f32", v);
  ASSERT_EQ(run("--shape 40,50 --from f32 --to f32/tile " + path("in.f32") + " " + path("dev")), 0) << err_;
  auto rows = random_values(3 * 50, 3);
  write("rows.f32", rows);
  ASSERT_EQ(run("--shape 40,50 --from f32 --to f32/tile --region 5:8,0:50 " + path("rows.f32") + " " + path("dev")), 0)
      << err_;
  EXPECT_NE(out_.find("read back"), std::string::npos) << out_;  // rows 5..7 cover part of a tile band
  ASSERT_EQ(run("--shape 40,50 --from f32/tile --to f32 --region 5:8,0:50 " + path("dev") + " " + path("got")), 0)
      << err_;
  auto got = read_bytes("got");
  ASSERT_EQ(got.size(), rows.size() * 4);
  EXPECT_EQ(0, std::memcmp(got.data(), rows.data(), got.size()));
}

TEST_F(ConvertCli, BadInputGivesClearErrors) {
  auto v = random_values(3 * 45 * 77, 4);
  write("in.f32", v);
  const std::string io = " " + path("in.f32") + " " + path("out");
  // The file does not match the shape.
  EXPECT_NE(run("--shape 3,45,78 --from f32 --to bf16/tile" + io), 0);
  EXPECT_NE(err_.find("f32/row_major [3,45,78] file '" + path("in.f32") + "' has 41580 bytes but needs 42120"), std::string::npos) << err_;
  // Unknown format names.
  EXPECT_NE(run("--shape 3,45,77 --from f32 --to bfq/tile" + io), 0);
  EXPECT_NE(err_.find("unknown encoding 'bfq'"), std::string::npos) << err_;
  EXPECT_NE(run("--shape 3,45,77 --from f32 --to f32/tiles" + io), 0);
  EXPECT_NE(err_.find("unknown layout 'tiles'"), std::string::npos) << err_;
  EXPECT_NE(run("--shape 3,x,77 --from f32 --to f32/tile" + io), 0);
  EXPECT_NE(err_.find("--shape"), std::string::npos) << err_;
  // No conversion exists (nothing quantizes to GGUF blocks).
  write("small.f32", std::vector<float>(128, 1.0f));
  EXPECT_NE(run("--shape 2,64 --from f32 --to q8_0 " + path("small.f32") + " " + path("out")), 0);
  EXPECT_NE(err_.find("no conversion from f32/row_major [2,64] to q8_0/row_major [2,64]"), std::string::npos) << err_;
  // Inf / NaN in a bfp face row.
  v[2 * 45 * 77 + 40 * 77 + 70] = std::nanf("");
  write("in.f32", v);
  EXPECT_NE(run("--shape 3,45,77 --from f32 --to bfp8_b/tile" + io), 0);
  EXPECT_NE(err_.find("Inf or NaN in tile 17 face 0 row 8"), std::string::npos) << err_;
  EXPECT_EQ(run("--shape 3,45,77 --from f32 --to bfp8_b/tile --nonfinite pack" + io), 0) << err_;
  EXPECT_NE(out_.find("1 face rows held Inf/NaN"), std::string::npos) << out_;
  // Regions outside the tensor, and malformed.
  EXPECT_NE(run("--shape 3,45,77 --from f32/tile --to f32 --region 0:3,40:46,0:77" + io), 0);
  EXPECT_NE(err_.find("outside the tensor's shape"), std::string::npos) << err_;
  EXPECT_NE(run("--shape 3,45,77 --from f32/tile --to f32 --region 0:3,40" + io), 0);
  EXPECT_NE(err_.find("BEGIN:END"), std::string::npos) << err_;
  // A region write needs the device file to exist.
  write("box.f32", std::vector<float>(45 * 77, 1.0f));
  EXPECT_NE(run("--shape 3,45,77 --from f32 --to f32/tile --region 0:1,0:45,0:77 " + path("box.f32") + " " +
                path("missing")),
            0);
  EXPECT_NE(err_.find("cannot open"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera
