// GGUF q4_1, q5_0, q5_1, the K-quants q2_K ... q6_K and iq4_nl / iq4_xs: the decoders against a reference
// written here in double from the published block layouts (ggml's block_* structs and
// its dequantize_row_* loops, walked over a whole super-block the way the format
// describes it, not chunk by chunk as the library does).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "convert/dtype.h"
#include "convert/gguf_kquants.h"
#include "convert_test_util.h"
#include "tessera/backend/convert.h"

namespace tessera::convert {
namespace {

double f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// One block of `t` -> its values, plus for each value the magnitude of the terms that
// produce it (|scale * code| + |min|), which bounds the f32 rounding of the library's
// result.
void reference_block(DType t, const uint8_t* b, std::vector<double>& y, std::vector<double>& mag) {
  y.clear();
  mag.clear();
  auto put = [&](double scale_code, double min) {
    y.push_back(scale_code - min);
    mag.push_back(std::fabs(scale_code) + std::fabs(min));
  };
  switch (t) {
    case DType::q4_1: case DType::q5_1: case DType::q5_0: {
      const bool has_min = t != DType::q5_0;
      const double d = f16_at(b), m = has_min ? f16_at(b + 2) : 0.0;
      const bool five = t != DType::q4_1;
      uint32_t qh = 0;
      if (five) std::memcpy(&qh, b + (has_min ? 4 : 2), 4);
      const uint8_t* qs = b + (has_min ? 4 : 2) + (five ? 4 : 0);
      for (int i = 0; i < 32; ++i) {
        int code = i < 16 ? (qs[i] & 15) : (qs[i - 16] >> 4);
        if (five) code |= static_cast<int>((qh >> i) & 1) << 4;
        if (t == DType::q5_0) code -= 16;
        put(d * code, -m);
      }
      break;
    }
    case DType::q2_k: {  // block_q2_K {scales[16], qs[64], d, dmin}
      const uint8_t* scales = b;
      const uint8_t* q = b + 16;
      const double d = f16_at(b + 80), dmin = f16_at(b + 82);
      int is = 0;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
          for (int half = 0; half < 2; ++half, ++is)
            for (int l = 0; l < 16; ++l)
              put(d * (scales[is] & 15) * ((q[l + 16 * half] >> shift) & 3), dmin * (scales[is] >> 4));
      break;
    }
    case DType::q3_k: {  // block_q3_K {hmask[32], qs[64], scales[12], d}
      const uint8_t* hm = b;
      const uint8_t* q = b + 32;
      const uint8_t* s = b + 96;
      const double d = f16_at(b + 108);
      // Sixteen 6-bit scales: low nibbles in bytes 0..7 (low then high nibble), the top
      // two bits in bytes 8..11, two bits per scale, scale i in byte 8 + i % 4.
      int sc[16];
      for (int i = 0; i < 16; ++i) {
        int low = (s[i % 8] >> (4 * (i / 8))) & 15;
        int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        sc[i] = (low | high << 4) - 32;
      }
      int is = 0, m = 1;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m <<= 1)
          for (int half = 0; half < 2; ++half, ++is)
            for (int l = 16 * half; l < 16 * half + 16; ++l)
              put(d * sc[is] * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4)), 0.0);
      break;
    }
    case DType::q4_k: case DType::q5_k: {
      // block_q4_K {d, dmin, scales[12], qs[128]}; block_q5_K adds qh[32] before qs.
      const bool five = t == DType::q5_k;
      const double d = f16_at(b), dmin = f16_at(b + 2);
      const uint8_t* s = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* q = b + (five ? 48 : 16);
      auto scale_min = [&](int j, int& sc, int& mn) {
        if (j < 4) {
          sc = s[j] & 63;
          mn = s[j + 4] & 63;
        } else {
          sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
          mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
      };
      for (int j = 0; j < 8; ++j) {  // 8 sub-blocks of 32; pairs share 32 bytes of qs
        int sc, mn;
        scale_min(j, sc, mn);
        for (int l = 0; l < 32; ++l) {
          int code = (q[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
          if (five && (qh[l] >> j & 1)) code += 16;
          put(d * sc * code, dmin * mn);
        }
      }
      break;
    }
    case DType::q6_k: {  // block_q6_K {ql[128], qh[64], scales[16] int8, d}
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
      const double d = f16_at(b + 208);
      std::vector<double> vals(256), mags(256);
      for (int n = 0; n < 2; ++n, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int q1 = ((ql[l] & 15) | ((qh[l] >> 0 & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)) - 32;
          const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
          vals[128 * n + l] = d * sc[is] * q1;
          vals[128 * n + l + 32] = d * sc[is + 2] * q2;
          vals[128 * n + l + 64] = d * sc[is + 4] * q3;
          vals[128 * n + l + 96] = d * sc[is + 6] * q4;
        }
      for (double v : vals) put(v, 0.0);
      break;
    }
    case DType::iq4_nl: case DType::iq4_xs: {  // block_iq4_nl {d, qs[16]}; block_iq4_xs {d, scales_h, scales_l[4], qs[128]}
      static const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      const double d = f16_at(b);
      const bool xs = t == DType::iq4_xs;
      const int sub_blocks = xs ? 8 : 1;
      const uint16_t scales_h = static_cast<uint16_t>(b[2] | b[3] << 8);
      for (int ib = 0; ib < sub_blocks; ++ib) {
        const uint8_t* qs = xs ? b + 8 + 16 * ib : b + 2;
        int scale = 1;  // iq4_nl: d alone
        if (xs) scale = (((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf) | (((scales_h >> (2 * ib)) & 3) << 4)) - 32;
        for (int j = 0; j < 32; ++j) put(d * scale * kTable[j < 16 ? qs[j] & 15 : qs[j - 16] >> 4], 0.0);
      }
      break;
    }
    default: FAIL() << "no reference for " << dtype_name(t);
  }
}

// Offsets of the f16 fields of each type's block (scales that must stay finite).
std::vector<int> f16_fields(DType t) {
  switch (t) {
    case DType::q4_1: case DType::q5_1: case DType::q4_k: case DType::q5_k: return {0, 2};
    case DType::q5_0: return {0};
    case DType::q2_k: return {80, 82};
    case DType::q3_k: return {108};
    case DType::q6_k: return {208};
    case DType::iq4_nl: case DType::iq4_xs: return {0};
    default: return {};
  }
}

// Random blocks (every code pattern) with finite f16 scales of both signs over a wide range.
std::vector<uint8_t> random_blocks(DType t, int64_t n_blocks, uint32_t seed) {
  const int64_t bb = dtype_block_bytes(t);
  auto bytes = testing::random_bytes(n_blocks * bb, seed);
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<int> ex(-24, 8);
  for (int64_t i = 0; i < n_blocks; ++i)
    for (int off : f16_fields(t)) {
      float v = std::ldexp(1.0f + (rng() % 1024) / 1024.0f, ex(rng)) * (rng() % 2 ? -1.0f : 1.0f);
      if (i == 0) v = 0.0f;  // a zero scale: every value is then -min (or 0)
      uint16_t h = f32_to_f16(v);
      std::memcpy(&bytes[i * bb + off], &h, 2);
    }
  return bytes;
}

constexpr DType kTypes[] = {DType::q4_1, DType::q5_0, DType::q5_1, DType::q2_k,  DType::q3_k,
                            DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_nl, DType::iq4_xs};

TEST(GgufKQuants, BlockSizesAreTheFormats) {
  // sizeof(block_*) in the format: values per block and bytes.
  const std::pair<DType, std::pair<int64_t, int64_t>> sizes[] = {
      {DType::q4_1, {32, 20}},   {DType::q5_0, {32, 22}},   {DType::q5_1, {32, 24}},   {DType::q2_k, {256, 84}},
      {DType::q3_k, {256, 110}}, {DType::q4_k, {256, 144}}, {DType::q5_k, {256, 176}}, {DType::q6_k, {256, 210}},
      {DType::iq4_nl, {32, 18}}, {DType::iq4_xs, {256, 136}}};
  for (auto [t, vb] : sizes) {
    EXPECT_TRUE(dtype_is_block(t)) << dtype_name(t);
    EXPECT_EQ(dtype_block_values(t), vb.first) << dtype_name(t);
    EXPECT_EQ(dtype_block_bytes(t), vb.second) << dtype_name(t);
    EXPECT_EQ(*dtype_row_bytes(t, 3 * vb.first), 3 * vb.second) << dtype_name(t);
    EXPECT_FALSE(dtype_row_bytes(t, vb.first + 16).ok()) << dtype_name(t);
  }
  // Row sizes that would overflow are errors, not wrapped numbers.
  const int64_t huge = std::numeric_limits<int64_t>::max() / 256 * 256;
  EXPECT_FALSE(dtype_row_bytes(DType::q8_0, huge).ok());  // huge / 32 * 34 > INT64_MAX
  ASSERT_TRUE(dtype_row_bytes(DType::q6_k, huge).ok());   // huge / 256 * 210 fits
  EXPECT_EQ(*dtype_row_bytes(DType::q6_k, huge), huge / 256 * 210);
}

TEST(GgufKQuants, DecodersMatchThePublishedLayout) {
  for (DType t : kTypes) {
    const int64_t n_blocks = 64, bv = dtype_block_values(t), bb = dtype_block_bytes(t);
    auto blocks = random_blocks(t, n_blocks, 100 + static_cast<uint32_t>(t));
    std::vector<float> out(n_blocks * bv, -12345.0f);
    dequant_gguf_n(t, blocks.data(), out.data(), n_blocks);
    // Through the conversion registry too (row_major block type -> f32).
    const Shape s{n_blocks / 4, 4 * bv};
    std::vector<float> conv(out.size());
    ASSERT_TRUE(convert(Format::row_major(t, s), blocks.data(), Format::row_major(DType::f32, s), conv.data()).ok())
        << dtype_name(t);
    std::vector<double> y, mag;
    int64_t nonzero = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      reference_block(t, blocks.data() + b * bb, y, mag);
      ASSERT_EQ(static_cast<int64_t>(y.size()), bv);
      for (int64_t i = 0; i < bv; ++i) {
        const float got = out[b * bv + i];
        // Products of an f16 scale, a <= 8-bit scale and a <= 6-bit code are exact in f32;
        // only subtracting the min rounds (half an f32 ulp of the terms).
        ASSERT_NEAR(got, y[i], mag[i] * 0x1p-24) << dtype_name(t) << " block " << b << " value " << i;
        ASSERT_EQ(conv[b * bv + i], got) << dtype_name(t) << " block " << b << " value " << i;
        nonzero += got != 0.0f;
      }
    }
    EXPECT_GT(nonzero, n_blocks * bv / 2) << dtype_name(t);
  }
}

TEST(GgufKQuants, ChunksAreIndependent) {
  // Decoding chunk c of a super-block alone gives values [32c, 32c + 32) of the block.
  for (DType t : kTypes) {
    const int64_t bv = dtype_block_values(t);
    auto blocks = random_blocks(t, 2, 7);
    std::vector<float> whole(2 * bv);
    dequant_gguf_n(t, blocks.data(), whole.data(), 2);
    for (int c = 0; c < bv / 32; ++c) {
      float chunk[32];
      dequant_gguf_chunk(t, blocks.data() + dtype_block_bytes(t), c, chunk);
      for (int i = 0; i < 32; ++i) ASSERT_EQ(chunk[i], whole[bv + 32 * c + i]) << dtype_name(t) << " chunk " << c;
    }
  }
}

TEST(GgufKQuants, ConvertToBfpTilesInOneStreamingStep) {
  // The tile device's block floats straight from the blocks, 32 values at a time; the
  // bytes equal packing the dequantized values. Rows not a multiple of 32 tile rows and a
  // batched rank-3 tensor included.
  testing::SimdGuard guard;
  for (const Shape& s : {Shape{40, 512}, Shape{2, 7, 256}}) for (DType t : kTypes) {
    auto p = plan(Format::row_major(t, s), Format::tiled(Encoding::bfp8_b, s));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ(p->size(), 1u) << dtype_name(t);
    const int64_t blocks = num_elements(s) / dtype_block_values(t);
    auto data = random_blocks(t, blocks, 9);
    std::vector<float> f(num_elements(s));
    ASSERT_TRUE(convert(Format::row_major(t, s), data.data(), Format::row_major(DType::f32, s), f.data()).ok());
    for (Encoding e : {Encoding::bfp8_b, Encoding::bfp4_b}) {
      Format tiled = Format::tiled(e, s);
      std::vector<uint8_t> direct(*tiled.byte_size(), 0x5A), via(*tiled.byte_size());
      ASSERT_TRUE(convert(Format::row_major(t, s), data.data(), tiled, direct.data()).ok()) << dtype_name(t);
      testing::for_each_simd_level([&](SimdLevel) {
        ASSERT_TRUE(convert(Format::row_major(DType::f32, s), f.data(), tiled, via.data()).ok());
        EXPECT_EQ(direct, via) << dtype_name(t) << " -> " << encoding_name(e) << " " << shape_str(s);
      });
    }
  }
}

TEST(GgufKQuants, NonFiniteScaleIsRejectedByTheTilePack) {
  const Shape s{1, 256};
  auto q6 = random_blocks(DType::q6_k, 1, 5);
  const uint16_t inf = 0x7C00;
  std::memcpy(q6.data() + 208, &inf, 2);  // d of block_q6_K
  std::vector<uint8_t> out(*Format::tiled(Encoding::bfp8_b, s).byte_size());
  Status st = convert(Format::row_major(DType::q6_k, s), q6.data(), Format::tiled(Encoding::bfp8_b, s), out.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Inf or NaN"), std::string::npos) << st.to_string();
}

TEST(GgufKQuants, NamesRoundTrip) {
  for (DType t : kTypes) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(encoding_from_name(dtype_name(t)), encoding_of(t));
    EXPECT_EQ(dtype_of(encoding_of(t)), t);
    EXPECT_TRUE(encoding_is_gguf_block(encoding_of(t)));
  }
  EXPECT_FALSE(encoding_is_gguf_block(Encoding::bfp8_b));
  EXPECT_EQ(dtype_of(Encoding::bfp4_b), std::nullopt);
}

}  // namespace
}  // namespace tessera::convert
