// The registry: which chains it plans, that convert runs them, and that impossible pairs
// are clear errors naming both formats.
#include <gtest/gtest.h>

#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

std::vector<std::string> names(const Format& a, const Format& b) {
  auto p = plan(a, b);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  std::vector<std::string> out;
  if (p.ok())
    for (const auto& s : *p) out.push_back(s.name.substr(0, s.name.find(' ')));
  return out;
}

using V = std::vector<std::string>;

TEST(Registry, PlansDirectStepsAndChains) {
  const Shape s{2, 40, 64};
  auto rm = [&](DType t) { return Format::row_major(t, s); };
  auto tl = [&](Encoding e) { return Format::tiled(e, s); };
  EXPECT_EQ(names(rm(DType::f32), rm(DType::f32)), V{"identity"});
  EXPECT_EQ(names(rm(DType::f32), tl(Encoding::f32)), V{"tilize"});
  EXPECT_EQ(names(rm(DType::f32), tl(Encoding::bfp8_b)), V{"pack_bfp"});
  EXPECT_EQ(names(rm(DType::f32), tl(Encoding::bf16)), V{"recode_tilize"});
  EXPECT_EQ(names(tl(Encoding::bf16), rm(DType::f32)), V{"untilize_recode"});
  EXPECT_EQ(names(rm(DType::bf16), tl(Encoding::bfp4_b)), (V{"recode", "pack_bfp"}));
  EXPECT_EQ(names(tl(Encoding::bfp8_b), tl(Encoding::bfp4_b)), (V{"unpack_bfp", "pack_bfp"}));
  EXPECT_EQ(names(tl(Encoding::bfp8_b), rm(DType::bf16)), (V{"unpack_bfp", "recode"}));
  EXPECT_EQ(names(rm(DType::q4_0), tl(Encoding::bfp4_b)), V{"pack_gguf_blocks_bfp"});
  EXPECT_EQ(names(rm(DType::q4_0), tl(Encoding::bf16)), (V{"dequant", "recode_tilize"}));
  EXPECT_EQ(names(tl(Encoding::bfp8_b), tl(Encoding::bf16)), (V{"unpack_bfp", "recode_tilize"}));
  EXPECT_EQ(names(Format::tiled(Encoding::u8, s), Format::tiled(Encoding::i8, s)), (V{"untilize_recode", "tilize"}));
  // Exactness is reported per step.
  auto p = plan(rm(DType::f32), tl(Encoding::bfp8_b));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE((*p)[0].exact);
  EXPECT_NE((*p)[0].bound.find("2^(E-127-(W-1))"), std::string::npos);
  p = plan(tl(Encoding::bfp8_b), rm(DType::f32));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)[0].exact);
}

TEST(Registry, ChainsComputeTheSameAsTheirSteps) {
  const Shape s{3, 33, 40};
  auto v = testing::random_floats(num_elements(s), 12, false, -8, 8);
  Format f32 = Format::row_major(DType::f32, s), bf = Format::row_major(DType::bf16, s);
  Format bft = Format::tiled(Encoding::bf16, s), b8 = Format::tiled(Encoding::bfp8_b, s);
  // f32 -> bf16/tile32 == (f32 -> bf16) then tilize.
  std::vector<uint8_t> direct(*bft.byte_size()), step1(*bf.byte_size()), step2(*bft.byte_size());
  ASSERT_TRUE(convert(f32, v.data(), bft, direct.data()).ok());
  ASSERT_TRUE(convert(f32, v.data(), bf, step1.data()).ok());
  ASSERT_TRUE(convert(bf, step1.data(), bft, step2.data()).ok());
  EXPECT_EQ(direct, step2);
  // bf16 tiles -> bfp8 tiles == untilize, widen, pack.
  std::vector<uint8_t> chained(*b8.byte_size()), manual(*b8.byte_size());
  std::vector<float> wide(v.size());
  ASSERT_TRUE(convert(bft, direct.data(), b8, chained.data()).ok());
  ASSERT_TRUE(convert(bft, direct.data(), f32, wide.data()).ok());
  ASSERT_TRUE(convert(f32, wide.data(), b8, manual.data()).ok());
  EXPECT_EQ(chained, manual);
  Stats st;
  ASSERT_TRUE(convert(bft, direct.data(), b8, chained.data(), &st).ok());
  EXPECT_EQ(st.bytes_in, *bft.byte_size());
  EXPECT_EQ(st.bytes_out, *b8.byte_size());
  EXPECT_FALSE(st.identity);
}

TEST(Registry, ImpossibleConversionsNameBothFormats) {
  const Shape s{2, 64};
  // Nothing quantizes to GGUF blocks.
  auto p = plan(Format::row_major(DType::f32, s), Format::row_major(DType::q8_0, s));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::unsupported);
  EXPECT_NE(p.status().message().find("f32/row_major [2,64]"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("q8_0/row_major [2,64]"), std::string::npos) << p.status().message();
  // Shapes differ.
  p = plan(Format::row_major(DType::f32, s), Format::tiled(Encoding::f32, {2, 65}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("logical shapes differ"), std::string::npos);
  // A format that cannot exist: q4_0 tiles, bfp row-major.
  p = plan(Format::row_major(DType::q4_0, s), Format::tiled(Encoding::q4_0, s));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("has no tile32 form"), std::string::npos) << p.status().message();
  p = plan(Format{Encoding::bfp8_b, Layout::row_major, s}, Format::row_major(DType::f32, s));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("only in the tile32 layout"), std::string::npos) << p.status().message();
  // convert reports the same and writes nothing.
  std::vector<float> src(128, 1.0f);
  std::vector<uint8_t> dst(4, 0xAB);
  EXPECT_FALSE(convert(Format::row_major(DType::f32, s), src.data(), Format::row_major(DType::q8_0, s), dst.data()).ok());
  EXPECT_EQ(dst[0], 0xAB);
}

}  // namespace
}  // namespace tessera::convert

namespace tessera::convert {
namespace {

TEST(Registry, EmptyTensorsAndEmptyRegionsConvertToNothing) {
  for (Shape s : {Shape{0, 5}, Shape{3, 0, 40}, Shape{1, 0, 4, 16}}) {
    std::vector<float> src(1, 1.0f);
    std::vector<uint8_t> dst(16, 0xAB);
    for (Format to : {Format::tiled(Encoding::bf16, s), Format::tiled(Encoding::bfp8_b, s),
                      Format::row_major(DType::i8, s)}) {
      auto bytes = to.byte_size();
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(*bytes, 0) << to.to_string();
      EXPECT_TRUE(convert(Format::row_major(DType::f32, s), src.data(), to, dst.data()).ok()) << to.to_string();
    }
  }
  // An empty box of rows writes nothing and reads nothing.
  const Shape s{2, 40, 50};
  Format t = Format::tiled(Encoding::bfp4_b, s);
  std::vector<uint8_t> dev(*t.byte_size(), 0x5A);
  std::vector<float> none(1);
  Stats st;
  ASSERT_TRUE(write_region(t, dev.data(), Region::rows(s, 1, 7, 7), Format::row_major(DType::f32, {2, 0, 50}),
                           none.data(), &st)
                  .ok());
  EXPECT_EQ(st.rmw_bytes, 0);
  EXPECT_EQ(dev, std::vector<uint8_t>(dev.size(), 0x5A));
}

}  // namespace
}  // namespace tessera::convert
