// Checked size arithmetic (core/checked.h) and the validation built on it: sizes from
// untrusted numbers either fit int64 or fail with a message naming what was sized.
#include <gtest/gtest.h>

#include <limits>

#include "core/checked.h"
#include "tessera/format.h"
#include "tessera/graph.h"

namespace tessera {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Checked, SizeArithmeticKeepsItsOverflowFlag) {
  EXPECT_EQ(*(Size(3) * 5 + 7).get("x"), 22);
  EXPECT_EQ(*(Size(kMax / 2) * 2).get("x"), kMax - 1);
  EXPECT_FALSE((Size(kMax / 2 + 1) * 2).ok());
  EXPECT_FALSE((Size(kMax) + 1).ok());
  // Once overflowed, later steps cannot bring it back (0 * overflow is still an error).
  EXPECT_FALSE((Size(int64_t{1} << 62) * 4 * 0).ok());
  EXPECT_FALSE(Size(-1).ok());
  EXPECT_EQ(*Size(33).rounded_up(32).get("x"), 64);
  EXPECT_FALSE(Size(kMax - 3).rounded_up(32).ok());
  auto r = checked_mul(int64_t{1} << 40, int64_t{1} << 30, "tensor 'w'");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tensor 'w'"), std::string::npos) << r.status().message();
}

TEST(Checked, ElementCountsThatWrapAreErrors) {
  // The shape of issue 18's edit to mobilenet_v1: its product wraps modulo 2^64 to 2048 x 4.
  const Shape wraps = {64, 160465489, 898107057, 32};
  auto n = checked_elements(wraps, "tensor 46 'w'");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("tensor 46 'w'"), std::string::npos) << n.status().message();
  EXPECT_NE(n.status().message().find("overflows"), std::string::npos) << n.status().message();
  EXPECT_EQ(*checked_elements({64, 3, 3, 32}, "w"), 64 * 3 * 3 * 32);
  EXPECT_EQ(*checked_elements({}, "scalar"), 1);
  EXPECT_EQ(*checked_elements({0, kMax}, "empty"), 0);
  EXPECT_FALSE(checked_elements({2, -3}, "negative").ok());
  // Bytes overflow even when the element count does not.
  EXPECT_FALSE(checked_host_bytes({int64_t{1} << 62}, DType::f32, "t").ok());
  EXPECT_EQ(*checked_host_bytes({int64_t{1} << 60}, DType::u8, "t"), int64_t{1} << 60);
  EXPECT_EQ(*checked_host_bytes({4, 64}, DType::q8_0, "t"), 4 * 2 * kQ8_0BlockBytes);
}

TEST(Checked, FormatByteSizeRefusesShapesThatWrap) {
  // `tessera convert --shape 4611686018427387920 --from f32 --to bf16/tile`: 2^62 + 16 f32
  // values are 2^64 + 64 bytes, which used to wrap to 64.
  const Shape s = {4611686018427387920};
  EXPECT_FALSE(Format::row_major(DType::f32, s).byte_size().ok());
  EXPECT_FALSE(Format::tiled(Encoding::bf16, s).byte_size().ok());
  EXPECT_FALSE(Format::tiled(Encoding::bfp8_b, {kMax, 1}).byte_size().ok());
  EXPECT_FALSE(Format::tiled(Encoding::f32, {int64_t{1} << 40, int64_t{1} << 20, 1}).byte_size().ok());
  EXPECT_FALSE((Format{Encoding::i8, Layout::nc1hwc2, {1, 1, 1, kMax}}).byte_size().ok());
  EXPECT_FALSE((Format{Encoding::i8, Layout::rk_conv_weight, {kMax, 1, 1, 1}}).byte_size().ok());
  // A zero dim makes an empty tensor, but the padded tile grid of the others still counts.
  EXPECT_EQ(*Format::tiled(Encoding::f32, {0, 5, 5}).byte_size(), 0);
  auto r = Format::tiled(Encoding::bf16, s).byte_size();
  EXPECT_NE(r.status().message().find("bf16/tile32"), std::string::npos) << r.status().message();
}

// A graph with one weight, as an importer would build it.
Graph graph_with_weight(Shape shape, DType dt, size_t data_bytes, QuantParams q = {}) {
  Graph g;
  Tensor w;
  w.name = "conv/w";
  w.shape = std::move(shape);
  w.dtype = dt;
  w.role = Role::weight;
  w.quant = std::move(q);
  std::vector<uint8_t> bytes(data_bytes);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  w.data = ConstData::from_vector(std::move(bytes));
  g.add_tensor(w);
  return g;
}

TEST(Checked, ValidateRefusesWeightsWhoseSizeWrapsOrIsShort) {
  EXPECT_TRUE(graph_with_weight({8, 4}, DType::i8, 32).validate().ok());
  Status fewer = graph_with_weight({8, 4}, DType::i8, 31).validate();
  EXPECT_FALSE(fewer.ok());
  EXPECT_NE(fewer.message().find("'conv/w'"), std::string::npos) << fewer.message();
  // 64 x 160465489 x 898107057 x 32 int8 wraps to 2048 bytes: refused, not matched.
  Status wrap = graph_with_weight({64, 160465489, 898107057, 32}, DType::i8, 2048).validate();
  EXPECT_FALSE(wrap.ok());
  EXPECT_NE(wrap.message().find("'conv/w'"), std::string::npos) << wrap.message();
}

TEST(Checked, ValidateRefusesPerAxisArraysOfTheWrongLength) {
  QuantParams ok{{0.5f, 0.25f, 0.125f, 1.0f}, {0, 0, 0, 0}, 0};
  EXPECT_TRUE(graph_with_weight({4, 3}, DType::i8, 12, ok).validate().ok());
  QuantParams short_scales{{0.5f, 0.25f}, {0, 0}, 0};
  Status s = graph_with_weight({4, 3}, DType::i8, 12, short_scales).validate();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 per-axis scales for axis 0 of size 4"), std::string::npos) << s.message();
  QuantParams bad_axis{{0.5f, 0.25f, 0.125f}, {0, 0, 0}, 2};
  EXPECT_FALSE(graph_with_weight({4, 3}, DType::i8, 12, bad_axis).validate().ok());
  QuantParams zero_points{{0.5f, 0.25f, 0.125f, 1.0f}, {0, 0, 0}, 0};
  Status z = graph_with_weight({4, 3}, DType::i8, 12, zero_points).validate();
  EXPECT_FALSE(z.ok());
  EXPECT_NE(z.message().find("3 zero points"), std::string::npos) << z.message();
}

}  // namespace
}  // namespace tessera
