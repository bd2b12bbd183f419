// GGUF q8_0 / q4_0: dequantization against hand-built blocks, and the streaming block ->
// bfp tile path giving exactly the bytes of dequantize-then-pack.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/bfp.h"
#include "convert/dtype.h"
#include "convert/gguf_blocks.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

// Random blocks with finite f16 scales of both signs over a wide range.
std::vector<uint8_t> random_blocks(int64_t n_blocks, int64_t block_bytes, uint32_t seed) {
  auto b = testing::random_bytes(n_blocks * block_bytes, seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-20.0f, 5.0f);
  for (int64_t i = 0; i < n_blocks; ++i) {
    float scale = std::ldexp(1.0f + (rng() % 1000) / 1000.0f, static_cast<int>(d(rng))) * (rng() % 2 ? -1.0f : 1.0f);
    uint16_t h = f32_to_f16(scale);
    std::memcpy(&b[i * block_bytes], &h, 2);
  }
  return b;
}

// Blocks that reach the corners of the direct block -> bfp arithmetic: zero, negative,
// denormal and largest scales; rows of zeros; |k| = 128 (q8_0) and 8 (q4_0).
void add_special_blocks(std::vector<uint8_t>& b, int64_t block_bytes) {
  const uint16_t scales[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3555};
  const int64_t n = static_cast<int64_t>(b.size()) / block_bytes;
  for (int64_t i = 0; i < n && i < 64; ++i) {
    uint8_t* blk = &b[i * block_bytes];
    std::memcpy(blk, &scales[i % 9], 2);
    const int pattern = static_cast<int>(i / 9);
    for (int j = 0; j < block_bytes - 2; ++j) {
      uint8_t& q = blk[2 + j];
      if (block_bytes == 34) {  // q8_0 codes
        if (pattern == 0) q = 0;                          // all zero
        if (pattern == 1) q = j < 16 ? 0 : 0x80;          // row 0 zero, row 1 all -128
        if (pattern == 2) q = j % 2 ? 0x7F : 0x81;        // 127, -127
        if (pattern == 3) q = static_cast<uint8_t>(j);    // 0..31
      } else {  // q4_0 nibbles, 8 = zero
        if (pattern == 0) q = 0x88;
        if (pattern == 1) q = 0x08;                       // row 0 zero, row 1 all -8
        if (pattern == 2) q = static_cast<uint8_t>(j | (15 - j) << 4);
        if (pattern == 3) q = 0xF0 | (j & 1 ? 0x0 : 0x9);
      }
    }
  }
}

TEST(GgufBlocks, Q4_0NibbleOrderAndOffset) {
  // Byte j holds value j (low nibble) and value j + 16 (high nibble); value = d * (n - 8).
  uint8_t block[18];
  uint16_t d = f32_to_f16(0.5f);
  std::memcpy(block, &d, 2);
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[32];
  dequant_q4_0_block(block, out);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * (j - 8));
    EXPECT_EQ(out[j + 16], 0.5f * (15 - j - 8));
  }
}

TEST(GgufBlocks, DequantizeRowsExactly) {
  const Shape s{3, 384};  // 36 blocks: the special ones, then random ones
  auto q8 = random_blocks(36, 34, 1), q4 = random_blocks(36, 18, 2);
  add_special_blocks(q8, 34);
  add_special_blocks(q4, 18);
  testing::for_each_simd_level([&](SimdLevel l) {
    std::vector<float> f(num_elements(s));
    ASSERT_TRUE(
        convert(Format::row_major(DType::q8_0, s), q8.data(), Format::row_major(DType::f32, s), f.data()).ok());
    for (int b = 0; b < 36; ++b) {
      uint16_t dh;
      std::memcpy(&dh, &q8[b * 34], 2);
      double d = f16_to_f32(dh);
      for (int i = 0; i < 32; ++i)
        ASSERT_EQ(f[b * 32 + i], d * static_cast<int8_t>(q8[b * 34 + 2 + i])) << simd_level_name(l) << " block " << b;
    }
    ASSERT_TRUE(
        convert(Format::row_major(DType::q4_0, s), q4.data(), Format::row_major(DType::f32, s), f.data()).ok());
    for (int b = 0; b < 36; ++b) {
      uint16_t dh;
      std::memcpy(&dh, &q4[b * 18], 2);
      double d = f16_to_f32(dh);
      for (int j = 0; j < 16; ++j) {
        ASSERT_EQ(f[b * 32 + j], d * ((q4[b * 18 + 2 + j] & 15) - 8)) << simd_level_name(l) << " block " << b;
        ASSERT_EQ(f[b * 32 + j + 16], d * ((q4[b * 18 + 2 + j] >> 4) - 8)) << simd_level_name(l) << " block " << b;
      }
    }
  });
  // q8_0 -> bf16 chains dequantize and cast.
  auto p = plan(Format::row_major(DType::q8_0, s), Format::row_major(DType::bf16, s));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 2u);
}

TEST(GgufBlocks, BlocksToBfpTilesEqualDequantizeThenPack) {
  testing::SimdGuard guard;
  // A GGUF weight [N, K] (K fastest), N not a multiple of 32, plus a batched rank-3 one.
  for (Shape s : {Shape{45, 96}, Shape{2, 33, 64}, Shape{70, 320}}) {
    const int64_t blocks = num_elements(s) / 32;
    for (auto [q, qb] : {std::pair{Encoding::q8_0, 34}, std::pair{Encoding::q4_0, 18}}) {
      auto data = random_blocks(blocks, qb, 7 + qb);
      add_special_blocks(data, qb);
      Format qf{q, Layout::row_major, s}, f32 = Format::row_major(DType::f32, s);
      std::vector<float> deq(num_elements(s));
      ASSERT_TRUE(convert(qf, data.data(), f32, deq.data()).ok());
      for (Encoding b : {Encoding::bfp8_b, Encoding::bfp4_b}) {
        Format t = Format::tiled(b, s);
        auto p = plan(qf, t);
        ASSERT_TRUE(p.ok());
        ASSERT_EQ(p->size(), 1u) << "the block path is one streaming step";
        std::vector<uint8_t> via_f32(*t.byte_size());
        ASSERT_TRUE(convert(f32, deq.data(), t, via_f32.data()).ok());
        testing::for_each_simd_level([&](SimdLevel l) {
          std::vector<uint8_t> direct(via_f32.size(), 0x5A);
          ASSERT_TRUE(convert(qf, data.data(), t, direct.data()).ok());
          EXPECT_EQ(direct, via_f32) << encoding_name(q) << "->" << encoding_name(b) << " " << shape_str(s) << " "
                                     << simd_level_name(l);
        });
      }
    }
  }
}

TEST(GgufBlocks, NonFiniteScaleIsRejected) {
  const Shape s{1, 32};
  auto q8 = random_blocks(1, 34, 5);
  uint16_t inf = 0x7C00;
  std::memcpy(q8.data(), &inf, 2);
  std::vector<uint8_t> out(1088);
  Status st = convert(Format::row_major(DType::q8_0, s), q8.data(), Format::tiled(Encoding::bfp8_b, s), out.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Inf or NaN"), std::string::npos);
  // A row not made of whole blocks is a clear error.
  EXPECT_FALSE(plan(Format::row_major(DType::q8_0, {2, 40}), Format::tiled(Encoding::bfp8_b, {2, 40})).ok());
}

}  // namespace
}  // namespace tessera::convert
